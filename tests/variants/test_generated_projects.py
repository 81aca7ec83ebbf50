"""The generated projects of the examples: gen_data.py asks fadsl run for every shape
symbol (the runtime ones and those fixed at compile time), so run.sh works as written.
"""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

from fadsl.driver.source import load_source

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(
    p for p in (ROOT / "examples").glob("*.py") if not p.name.startswith("test_")
)  # examples/test_*.py are the examples' pytest tests, not kernel files


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_gen_data_names_every_shape_symbol(example: Path) -> None:
    for kdef in load_source(str(example)).defs:
        script = ROOT / "generated" / kdef.name / "scripts" / "gen_data.py"
        ns = runpy.run_path(str(script), run_name="not_main")
        symbols = set(kdef.build().shape_syms)
        assert set(ns["SHAPE"]) | set(ns["FIXED"]) == symbols
        assert ns["KERNEL"] == kdef.name
