"""What the API returns: ``CheckReport`` (``fd.check``) and ``Project``
(``fd.compile``)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fadsl.driver.lower import Lowered
    from fadsl.errors import ResourceError


@dataclass(frozen=True)
class Memory:
    """One memory space of the resource report: bytes used per core, capacity."""

    space: str
    core: str
    used: int
    capacity: int

    @property
    def fits(self) -> bool:
        return self.used <= self.capacity


@dataclass(frozen=True)
class CheckReport:
    """The resource proof of a kernel at one shape on one chip."""

    fits: bool
    memories: tuple[Memory, ...]
    table: str
    """The text ``fadsl check`` prints."""
    explanation: str
    """Why it does not fit, as the CLI prints it ("" when it fits)."""
    resources: dict[str, Any] = field(repr=False)
    """The same report as JSON data (``fadsl check --json``, resources.json)."""
    error: ResourceError | None = field(default=None, repr=False)

    def __str__(self) -> str:
        return self.table + (f"\n\n{self.explanation}" if self.explanation else "")


@dataclass(frozen=True)
class Project:
    """A written Ascend C project (``fadsl compile``'s output folder)."""

    out_dir: str
    files: tuple[str, ...]
    """Paths of the files written, relative to ``out_dir``."""
    report: CheckReport

    def path(self, name: str) -> str:
        return os.path.join(self.out_dir, name)


def check_report(low: Lowered) -> CheckReport:
    """The CheckReport of a lowered kernel (it must have been planned)."""
    from fadsl.errors import render
    from fadsl.plan.resources.resource_report import report_json
    from fadsl.plan.resources.resource_text import table

    b, report = low.binding, low.report
    assert report is not None, "lowered without a target"
    source = b.kernel.loc.file
    memories = tuple(Memory(s.space, s.core, s.used, s.capacity) for s in report.spaces)
    return CheckReport(
        fits=low.fits,
        memories=memories,
        table=table(report, low.plan, low.target, source, b.shape, b.consts),
        explanation="" if low.error is None else render(low.error),
        resources=report_json(report, low.plan, low.target, source, b.shape, b.consts),
        error=low.error,
    )
