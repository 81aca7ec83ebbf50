"""What the cube and the vector class emitters share: the plan, names and the task loop."""

from __future__ import annotations

from fadsl.backends.ascendc.names import Names
from fadsl.backends.ascendc.view import Stmt
from fadsl.plan.plan_buffers import Lowering


class CoreEmitter:
    """Base of CubeEmitter and VectorEmitter: one core class of the kernel.

    ``flags`` and ``ws`` name the cross-core flags and GM workspaces both sides use;
    ``task_header``, ``task_loop`` and ``prologue`` open the loop over the grid's tasks.
    """

    def __init__(
        self,
        low: Lowering,
        names: Names,
        flags: dict[str, str],
        ws: dict[str, str],
        task_header: list[Stmt],
        task_loop: str,
        prologue: list[Stmt],
    ) -> None:
        self.low = low
        self.sides = low.sides
        self.names = names
        self.flags = flags
        self.ws = ws
        self.task_header = task_header
        self.task_loop = task_loop
        self.prologue = prologue
        self.pos = 0
        self.last_loc: tuple[str, int] | None = None
        self.setup()

    def setup(self) -> None:
        """State of the subclass, made after the shared fields are set."""
