"""The PrivateUse1 (NPU, through torch_npu) implementation: the CANN operator package
``fadsl compile`` writes under ``op/``, called through its aclnn two-stage API.

UNVERIFIED: written from CANN's documentation (aclCreateTensor, aclnn<Op>GetWorkspaceSize,
aclnn<Op>; docs/pytorch.md) without an NPU, torch_npu or CANN to run it. It registers
only when torch_npu imports, and needs the package built and installed
(op/README.md) with its op_api/lib on LD_LIBRARY_PATH, or FADSL_OPAPI_LIB naming it.
"""

from __future__ import annotations

import ctypes
import os
from typing import Any

ACL_DTYPE = {
    "float32": 0,
    "float16": 1,
    "int32": 3,
    "uint8": 4,
    "bool": 12,
    "bfloat16": 27,
}
ACL_FORMAT_ND = 2


def register_npu(op: Any, lib: Any) -> None:
    try:
        import torch_npu  # noqa: F401
    except ImportError:
        return
    lib.impl(op.name, lambda *t, **s: run_aclnn(op, t, s), "PrivateUse1")


def run_aclnn(op: Any, args: tuple, scalars: dict) -> Any:
    """UNVERIFIED: aclnn<Op>GetWorkspaceSize, then aclnn<Op> on torch_npu's stream."""
    import torch
    import torch_npu

    tensors, blocks = op.split(args, scalars)
    api = ctypes.CDLL(os.environ.get("FADSL_OPAPI_LIB", "libcust_opapi.so"))
    base = ctypes.CDLL("libnnopbase.so")
    base.aclCreateTensor.restype = ctypes.c_void_p
    kind = "".join(p[:1].upper() + p[1:] for p in op.name.split("_") if p)
    shapes = op.spec.output_shapes([list(t.shape) for t in tensors])
    outs = [
        torch.empty(s, dtype=getattr(torch, dt), device=tensors[0].device)
        for s, dt in zip(shapes, op.spec.output_dtypes)
    ]
    ins = [t.contiguous() for t in _all_inputs(op, tensors, blocks)]
    made = [_acl_tensor(base, t) for t in ins + outs]
    values = [_scalar(op, n, scalars.get(n), tensors) for n in op.spec.scalars]
    size, executor = ctypes.c_uint64(0), ctypes.c_void_p()
    first = getattr(api, f"aclnn{kind}GetWorkspaceSize")
    _check(
        first(
            *made[: len(ins)],
            *values,
            *made[len(ins) :],
            ctypes.byref(size),
            ctypes.byref(executor),
        ),
        kind,
    )
    work = torch.empty(max(size.value, 1), dtype=torch.uint8, device=tensors[0].device)
    stream = ctypes.c_void_p(torch_npu.npu.current_stream().npu_stream)
    _check(
        getattr(api, f"aclnn{kind}")(
            ctypes.c_void_p(work.data_ptr()), size, executor, stream
        ),
        kind,
    )
    for t in made:
        base.aclDestroyTensor(ctypes.c_void_p(t))
    return outs[0] if len(outs) == 1 else tuple(outs)


def _all_inputs(op: Any, tensors: tuple, blocks: dict) -> list:
    """Every input in the kernel's order: the block-mask tensors given, or computed
    on the host from the mods and copied to the inputs' device."""
    import torch

    from fadsl.torch.convert import to_numpy

    have = dict(zip(op.spec.inputs, tensors))
    have.update(blocks)
    missing = [n for n in op.spec.derived if n not in have]
    if missing:
        consts = {**op.kernel.const_defaults, **op.consts}
        arrays = {n: to_numpy(t) for n, t in zip(op.spec.inputs, tensors)}
        made = op.kernel.derived_inputs(op.block_shape(tensors), consts, arrays)
        device = tensors[0].device
        have.update({n: torch.from_numpy(made[n]).to(device) for n in missing})
    return [have[n] for n in op.spec.all_inputs]


def _acl_tensor(base: Any, t: Any) -> int:
    n = t.dim()
    dims = (ctypes.c_int64 * n)(*t.shape)
    strides = (ctypes.c_int64 * n)(*t.stride())
    dtype = ACL_DTYPE[str(t.dtype).replace("torch.", "")]
    return base.aclCreateTensor(
        dims,
        ctypes.c_uint64(n),
        dtype,
        strides,
        ctypes.c_int64(0),
        ACL_FORMAT_ND,
        dims,
        ctypes.c_uint64(n),
        ctypes.c_void_p(t.data_ptr()),
    )


def _scalar(op: Any, name: str, value: Any, tensors: tuple) -> Any:
    """An attribute: a float is a double in aclnn, an int an int64_t; None: the
    kernel's default for these shapes (as the interpreter computes it)."""
    if value is None:
        from fadsl.errors import UsageError
        from fadsl.torch.checks import caller

        raise UsageError(
            f"fadsl.torch: `{op.name}` on NPU tensors needs the scalar `{name}`, "
            "which the aclnn call takes as a value",
            caller(),
            hint=f"pass {name}=... (on CPU tensors None means the kernel's default)",
        )
    if name in op.spec.int_scalars:
        return ctypes.c_int64(int(value))
    return ctypes.c_double(float(value))


def _check(status: int, kind: str) -> None:
    if status != 0:
        from fadsl.errors import ExecutionError
        from fadsl.torch.checks import caller

        raise ExecutionError(
            f"fadsl.torch: aclnn{kind} returned status {status}",
            caller(),
            hint="CANN's log (ASCEND_GLOBAL_LOG_LEVEL=1) tells why; the NPU path is "
            "UNVERIFIED (docs/pytorch.md)",
        )
