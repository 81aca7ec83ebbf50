"""AscendC::printf and ascendc_assert on the CPU runtime (fadsl_rt/debug.h): only the documented
conversions, each core's lines together after the launch, an assert stops the core like Trap().
"""

import pytest

from rtutil import assert_aborted, assert_ok, run

pytestmark = pytest.mark.cpu_runtime


@pytest.fixture(scope="module")
def exe(program):
    return program("debug_print.cpp")


def test_printf_lines_grouped_by_core_after_the_launch(exe):
    out = assert_ok(run(exe, "prints"))
    assert out.splitlines() == [
        "[AIV Block 0/3] core 0 first 1.500000",
        "[AIV Block 0/3] core 0 hex ff end",
        "[AIV Block 1/3] core 1 first 2.500000 and 16 on one line",
        "[AIV Block 1/3] core 1 hex ff end",
        "[AIV Block 2/3] core 2 first 3.500000",
        "[AIV Block 2/3] core 2 hex ff end",
        "done",
    ]


@pytest.mark.parametrize(
    "case, fragment",
    [
        ("bad_conversion", '"%5" in "%5d\\n" is not a documented conversion'),
        ("too_few", "has more conversions than the 1 argument(s)"),
        ("wrong_type", 'argument 1 of "%f\\n" does not suit %f'),
    ],
)
def test_printf_refuses_what_the_docs_do_not_list(exe, case, fragment):
    msg = assert_aborted(run(exe, case), "printf on AIV 0")
    assert fragment in msg


def test_assert_that_holds_prints_nothing(exe):
    out = assert_ok(run(exe, "assert_holds"))
    assert out.splitlines() == ["[AIV Block 0/1] before on 0", "done"]


def test_assert_failure_names_the_core_and_aborts(exe):
    res = run(exe, "assert_fails")
    msg = assert_aborted(
        res, "ascendc_assert on AIV 1", "GetBlockIdx() == 0", ".cpp:28)"
    )
    assert (
        "[ASSERT] " in res.stdout and "Assertion `GetBlockIdx() == 0' " in res.stdout
    ), res.stdout
    assert "[AIV Block 1/2] before on 1\n[ASSERT] " in res.stdout


def test_the_record_shows_printf_and_assert_as_scalar_work(exe, tmp_path):
    from fadsl.backends.sim.record import read_record

    path = tmp_path / "debug.rec"
    assert_ok(run(exe, "assert_holds", env={"FADSL_RECORD": str(path)}))
    rows = read_record(path).cores()["AIV0"]
    assert [(r.api, r.pipe) for r in rows] == [
        ("printf", "S"),
        ("ascendc_assert", "S"),
        ("ascendc_assert", "S"),
    ]
