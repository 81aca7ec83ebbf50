"""The fuzz harness's hang limit counts CPU time, so a busy machine does not trip it
(issue 32: `fadsl compile fa2.py` was reported as a hang at load 5-10)."""

from __future__ import annotations

import time

import pytest
from fuzzkit import Hang, time_limit


@pytest.mark.smoke
def test_waiting_is_not_a_hang() -> None:
    # What load does to an example: wall time passes while it gets no CPU.
    with time_limit(0.2):
        time.sleep(0.5)


@pytest.mark.smoke
def test_spinning_past_the_limit_is_a_hang() -> None:
    with pytest.raises(Hang, match="within 0.2 s of CPU time"):
        with time_limit(0.2):
            while True:
                pass
