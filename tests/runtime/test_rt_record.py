"""The executed-instruction record (FADSL_RECORD; README "Executed-instruction record"):
one row per executed call per core, the kernel line of each call, the work sizes, and the
Set each Wait consumed. These tests pin the format that fadsl/backends/sim/record.py
parses and the pipe-level timer reads.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fadsl.backends.sim.record import (
    COLUMNS,
    Record,
    RecordError,
    Row,
    parse_record,
    read_record,
)
from rtutil import CPP_DIR, ROOT, assert_ok, run

pytestmark = pytest.mark.cpu_runtime
SOURCE = CPP_DIR / "record.cpp"


def marker_lines() -> dict[str, int]:
    """The line of every `// @name` marker in record.cpp."""
    out = {}
    for no, text in enumerate(SOURCE.read_text().splitlines(), 1):
        m = re.search(r"// @(\w+)", text)
        if m:
            out[m.group(1)] = no
    return out


@pytest.fixture(scope="module")
def exe(program):
    return program("record.cpp")


@pytest.fixture(scope="module")
def record(exe, tmp_path_factory) -> Record:
    path = tmp_path_factory.mktemp("record") / "mix.rec"
    assert "done" in assert_ok(run(exe, "mix", env={"FADSL_RECORD": str(path)}))
    assert not Path(str(path) + ".tmp").exists()
    return read_record(path)


def at(record: Record, core: str, marker: str) -> list[Row]:
    line = marker_lines()[marker]
    return [r for r in record.cores()[core] if r.line == line]


def test_the_record_is_off_unless_FADSL_RECORD_names_a_file(exe, tmp_path):
    assert "done" in assert_ok(run(exe, "mix", env={"FADSL_RECORD": ""}))
    assert list(tmp_path.iterdir()) == []


def test_every_core_has_its_rows_in_program_order(record):
    cores = record.cores()
    assert set(cores) == {"AIC0", "AIV0", "AIV1"}
    for rows in cores.values():
        assert [r.seq for r in rows] == list(range(len(rows)))
    assert record.kernel == "record_mix" and record.soc == "ascend910b1"
    assert {(r.block, r.sub) for r in cores["AIV1"]} == {(1, 1)}


def test_each_row_names_the_kernel_line_of_its_call(record):
    (mmad,) = at(record, "AIC0", "mmad")
    assert (mmad.api, mmad.pipe) == ("Mmad", "M")
    assert mmad.file is not None and mmad.file.endswith(
        ".cpp"
    )  # the compiled copy of record.cpp
    assert (mmad.m, mmad.k, mmad.n, mmad.src, mmad.dst) == (16, 16, 16, "L0A", "L0C")
    (fix,) = at(record, "AIC0", "fixpipe")
    assert (fix.api, fix.pipe, fix.src, fix.dst, fix.bytes, fix.gm, fix.gmoff) == (
        "Fixpipe",
        "FIX",
        "L0C",
        "GM",
        1024,
        2,
        0,
    )
    # one burst per row of the 16 x 16 float tile, back to back (dstStride = nSize)
    assert (fix.blocks, fix.blocklen, fix.gmend) == (16, 64, 1024)
    (nd,) = at(record, "AIC0", "nd2nz")
    assert (nd.pipe, nd.src, nd.dst, nd.dtype, nd.blocks, nd.blocklen) == (
        "MTE2",
        "GM",
        "L1",
        "half",
        16,
        32,
    )
    (loadb,) = at(record, "AIC0", "loadb")
    assert (loadb.pipe, loadb.dst, loadb.repeats, loadb.bytes) == (
        "MTE1",
        "L0B",
        1,
        512,
    )


def test_work_sizes_of_vector_and_copy_rows(record):
    (pad,) = at(record, "AIV1", "pad_in")
    assert (pad.api, pad.pipe, pad.src, pad.dst) == ("DataCopyPad", "MTE2", "GM", "UB")
    assert (pad.blocks, pad.blocklen, pad.bytes, pad.elems) == (2, 256, 512, 128)
    assert (pad.gm, pad.gmoff) == (2, 512)  # sub-block 1 reads the second half of ws
    assert pad.gmend == 1024  # two bursts back to back: the span is the bytes
    (add,) = at(record, "AIV0", "add0")
    assert (add.api, add.pipe, add.repeats, add.elems, add.dtype) == (
        "Add",
        "V",
        2,
        128,
        "float",
    )
    (out,) = at(record, "AIV0", "copy_out")
    assert (out.pipe, out.src, out.dst, out.blocks, out.blocklen) == (
        "MTE3",
        "UB",
        "GM",
        1,
        512,
    )


def test_a_waitflag_names_the_setflag_it_pairs_with(record):
    (s,) = at(record, "AIC0", "set")
    (w,) = at(record, "AIC0", "wait")
    assert (s.api, s.event, s.id, s.pipe) == ("SetFlag", "MTE2_MTE1", 1, "MTE2")
    assert (w.api, w.event, w.id, w.pipe) == ("WaitFlag", "MTE2_MTE1", 1, "MTE1")
    assert w.sources == (("AIC0", s.seq),)


def test_queue_operations_record_their_sets_and_waits_with_the_queue_label(record):
    enq = at(record, "AIV0", "enque")
    assert [r.api for r in enq] == ["EnQue", "SetFlag"]
    assert enq[1].event == "MTE2_V" and enq[1].queue == "TQue<VECIN> #0 buffer 1/1"
    deq = at(record, "AIV0", "deque")
    assert [r.api for r in deq] == ["DeQue", "WaitFlag"]
    assert deq[1].sources == (("AIV0", enq[1].seq),)
    # the TPipe's own M_MTE1 sets on an AIC, at the line that constructs it
    tp = at(record, "AIC0", "tpipe")
    assert [(r.api, r.event, r.id, r.queue) for r in tp] == [
        ("SetFlag", "M_MTE1", i, "TPipe") for i in range(3)
    ]


def test_cross_core_waits_name_the_sets_they_consumed(record):
    (aic_set,) = at(record, "AIC0", "aic_set")
    assert (aic_set.api, aic_set.pipe, aic_set.mode, aic_set.flag) == (
        "CrossCoreSetFlag",
        "FIX",
        2,
        1,
    )
    for aiv in ("AIV0", "AIV1"):
        (w,) = at(record, aiv, "aiv_wait")
        assert (w.api, w.flag, w.sources) == (
            "CrossCoreWaitFlag",
            1,
            (("AIC0", aic_set.seq),),
        )
    # SyncAll<false>: the AIC's first wait consumes one Set of each AIV
    steps = [r for r in at(record, "AIC0", "syncall") if r.api == "SyncAll"]
    aiv_sets = [
        (aiv, r.seq)
        for aiv in ("AIV0", "AIV1")
        for r in at(record, aiv, "syncall")
        if r.api == "SyncAll" and r.mode == 2
    ]
    assert steps[0].flag == 12 and steps[0].sources == tuple(aiv_sets)
    assert [r.api for r in at(record, "AIV0", "syncall")][0] == "PipeBarrier"


def test_the_parser_refuses_what_is_not_a_record():
    head = "# fadsl executed-instruction record, format 2\n# kernel k\n# soc s\n"
    ok = head + "\t".join(COLUMNS) + "\n"
    assert parse_record(ok).rows == ()
    with pytest.raises(RecordError, match="header line"):
        parse_record(head + "core\tseq\n")
    with pytest.raises(RecordError, match=r"x:5: 3 columns"):
        parse_record(ok + "AIV0\t0\t0\n", "x")
    row = ["AIV0", "0", "0", "0", "V", "Exp"] + ["-"] * (len(COLUMNS) - 6)
    assert parse_record(ok + "\t".join(row) + "\n").rows[0].elems is None
    row[4] = "Q"
    with pytest.raises(RecordError, match="column pipe"):
        parse_record(ok + "\t".join(row) + "\n")
    with pytest.raises(RecordError, match="format"):
        parse_record(ok.replace("format 2", "format 9"))


def test_generated_code_never_takes_the_address_of_an_api_function():
    """The call-site parameter (fadsl_rt/site.h) changes only an API function's type; a
    kernel that stored `&AscendC::Add<float>` in a pointer of the documented type would
    notice. fadsl's generated code and its helper header never do."""
    files = list((ROOT / "generated").glob("*/*.cpp")) + list(
        (ROOT / "generated").glob("*/include/*.h")
    )
    assert files
    for f in files:
        assert not re.search(
            r"&\s*AscendC::[A-Z]\w*\s*(<[^;()]*>)?\s*[;,)]", f.read_text()
        ), f
