"""How a child frame's points relate to its parent's: the batch transforms.

Every batched array has the frame's batch axes first (``[*batch, *tile]``); a batch
axis of size 1 means "the same at every point along that axis". A transform maps an
array of the parent frame to the child's points; ``lead`` skips leading non-batch axes
(the ``buffers`` axis of queue slot arrays).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Along:
    """The child's points are ``sel`` along batch axis ``axis`` of the parent's."""

    axis: int
    sel: slice | np.ndarray

    def take(self, x: np.ndarray, lead: int = 0) -> np.ndarray:
        ax = lead + self.axis
        if x.shape[ax] == 1:
            return x
        if isinstance(self.sel, np.ndarray):  # C-contiguous, unlike x[..., sel, ...]
            return np.take(x, self.sel, axis=ax)
        return x[(slice(None),) * ax + (self.sel,)]

    def put(self, dst: np.ndarray, x: np.ndarray, lead: int = 0) -> None:
        dst[(slice(None),) * (lead + self.axis) + (self.sel,)] = x


@dataclass(frozen=True)
class Flat:
    """The child's one batch axis lists parent points by their coordinates."""

    coords: tuple[np.ndarray, ...]

    def take(self, x: np.ndarray, lead: int = 0) -> np.ndarray:
        idx = tuple(
            c if x.shape[lead + a] > 1 else 0 for a, c in enumerate(self.coords)
        )
        out = x[(slice(None),) * lead + idx]
        if all(isinstance(i, int) for i in idx):
            out = np.expand_dims(out, lead)
        return out

    def put(self, dst: np.ndarray, x: np.ndarray, lead: int = 0) -> None:
        dst[(slice(None),) * lead + self.coords] = x


@dataclass(frozen=True)
class Fork:
    """A grid frame: ``k`` batch axes in front of the batch-less top level."""

    k: int

    def take(self, x: np.ndarray, lead: int = 0) -> np.ndarray:
        return x.reshape(x.shape[:lead] + (1,) * self.k + x.shape[lead:])


Transform = Along | Flat | Fork | None
