"""What a kernel looks like to PyTorch: its operator schema, and its outputs' shapes and
dtypes from its inputs' shapes (the kernel's own declarations, so the fake (meta)
implementation and the interpreter agree)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fadsl.errors import Loc, UsageError
from fadsl.ir import nodes as ir
from fadsl.ir.types import DType, ScalarType, TensorType

TORCH_DTYPE = {
    DType.F16: "float16",
    DType.BF16: "bfloat16",
    DType.F32: "float32",
    DType.I32: "int32",
    DType.I8: "int8",
    DType.U8: "uint8",
    DType.BOOL: "bool",
}


@dataclass(frozen=True)
class Spec:
    name: str
    inputs: tuple[str, ...]
    input_dtypes: tuple[str, ...]
    outputs: tuple[str, ...]
    output_dtypes: tuple[str, ...]
    scalars: tuple[str, ...]
    int_scalars: frozenset[str]
    kernel: ir.Kernel
    derived: tuple[str, ...] = ()
    """Inputs the CPU implementation computes when not given (an attention block
    mask): optional tensors after the required ones, passed by keyword."""
    given: tuple[tuple[str, int], ...] = ()
    """Shape symbols fixed at registration (``op(..., shape=)``) that no input's
    dims hold: MLA's ``Dv`` with ``v_from_k`` (only ``o`` is Dv wide)."""

    @property
    def schema(self) -> str:
        """``name(Tensor q, ..., Tensor? kv_num_blocks=None, ..., *, float?
        scale=None) -> Tensor`` (or a tuple). The optional tensors are not
        keyword-only: torch.library's autograd refuses keyword-only tensors."""
        args = [f"Tensor {n}" for n in self.inputs]
        args += [f"Tensor? {n}=None" for n in self.derived]
        if self.scalars:
            kinds = ["int" if s in self.int_scalars else "float" for s in self.scalars]
            args += ["*"] + [f"{k}? {s}=None" for k, s in zip(kinds, self.scalars)]
        outs = ", ".join("Tensor" for _ in self.outputs)
        ret = outs if len(self.outputs) == 1 else f"({outs})"
        return f"{self.name}({', '.join(args)}) -> {ret}"

    @property
    def all_inputs(self) -> tuple[str, ...]:
        """Every input tensor, in the kernel's parameter order (the aclnn call's)."""
        return tuple(
            p.name
            for p in self.kernel.params
            if p.name in self.inputs or p.name in self.derived
        )

    def output_shapes(
        self, shapes: Sequence[Sequence[int]], loc: Loc | None = None
    ) -> list[list[int]]:
        """The outputs' shapes for inputs of ``shapes`` (as the interpreter makes them);
        a UsageError at ``loc`` (default: the kernel) if the kernel cannot read them."""
        from fadsl.ir.expr import evaluate

        env = self.symbols(shapes, loc)
        return [
            [int(evaluate(d, env)) for d in self._param(n).type.shape]
            for n in self.outputs
        ]

    def symbols(
        self, shapes: Sequence[Sequence[int]], loc: Loc | None = None
    ) -> dict[Any, int]:
        """The shape symbols (sympy) and constants read from the inputs' shapes."""
        from fadsl.ir.dims import solve
        from fadsl.ir.expr import evaluate, isym

        k = self.kernel
        fixed = {
            isym(n): v
            for n, v in k.consts
            if isinstance(v, int) and not isinstance(v, bool)
        }
        fixed.update({isym(n): v for n, v in self.given})
        decl = [self._param(n).type.shape for n in self.inputs]
        given = dict(self.given)
        syms = [isym(s) for s in k.shape_syms if s not in given]
        ranks = all(len(d) == len(s) for d, s in zip(decl, shapes))
        env = solve(syms, decl, shapes, fixed) if ranks else None
        if env is not None:
            env.update(given)
            full = {**env, **dict(k.consts)}
            want = [[int(evaluate(d, full)) for d in dims] for dims in decl]
            env = env if want == [list(s) for s in shapes] else None
        if env is None:
            raise UsageError(
                f"fadsl.torch: the inputs' shapes {[list(s) for s in shapes]} do not "
                f"give kernel `{k.name}`'s shape symbols {', '.join(k.shape_syms)}",
                loc or k.loc,
                hint="pass tensors with the dims the kernel declares",
                notes=[f"`{k.name}` takes {', '.join(_declared(k, self.inputs))}"],
                code="torch_input_shape",
            )
        env.update({n: v for n, v in k.consts})
        return env

    def _param(self, name: str) -> ir.Param:
        return next(p for p in self.kernel.params if p.name == name)


def _declared(kernel: ir.Kernel, names: Sequence[str]) -> list[str]:
    """``q[B, N, Sq, D]`` for each input of ``names``."""
    from fadsl.ir.types import shape_text

    params = {p.name: p for p in kernel.params}
    return [f"{n}{shape_text(params[n].type.shape)}" for n in names]


def spec_of(
    kernel: ir.Kernel, loc: Loc | None = None, derived: Sequence[str] = ()
) -> Spec:
    """The kernel as an operator; a UsageError at ``loc`` if PyTorch cannot hold one
    of its tensors (fp8: numpy has no such dtype for the interpreter). ``derived``
    inputs become optional keyword tensors."""
    ins = [
        p
        for p in kernel.params
        if p.kind is ir.ParamKind.IN and isinstance(p.type, TensorType)
    ]
    outs = [
        p
        for p in kernel.params
        if p.kind is ir.ParamKind.OUT and isinstance(p.type, TensorType)
    ]
    scalars = [p for p in kernel.params if p.kind is ir.ParamKind.SCALAR]
    for p in ins + outs:
        if p.type.dtype not in TORCH_DTYPE:
            raise UsageError(
                f"fadsl.torch.op: `{kernel.name}` has the {p.type.dtype.value} tensor "
                f"`{p.name}`, which fadsl.torch cannot pass",
                loc or kernel.loc,
                hint="fadsl.torch takes fp16, bf16, fp32, i32, u8 and bool tensors; "
                "run fp8 kernels with fadsl run or fd.interpret",
            )
    ints = frozenset(
        p.name
        for p in scalars
        if isinstance(p.type, ScalarType) and not p.type.dtype.is_float
    )
    positional = [p for p in ins if p.name not in derived]
    return Spec(
        kernel.name,
        tuple(p.name for p in positional),
        tuple(TORCH_DTYPE[p.type.dtype] for p in positional),
        tuple(p.name for p in outs),
        tuple(TORCH_DTYPE[p.type.dtype] for p in outs),
        tuple(p.name for p in scalars),
        ints,
        kernel,
        tuple(p.name for p in ins if p.name in derived),
    )


def given_scalars(spec: Spec, values: Mapping[str, Any]) -> dict[str, Any]:
    """The scalars the caller passed (None means: the kernel's default)."""
    return {n: v for n, v in values.items() if v is not None and n in spec.scalars}
