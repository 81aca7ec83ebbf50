"""``@fd.kernel``: parameter annotations, tile constants, and the KernelDef handle.

A kernel function's parameters are tensors (``fd.In`` / ``fd.Out`` / ``fd.Scratch``
with shape symbols), runtime scalars (``fd.Scalar``) and compile-time constants (plain
``int``/``bool``/``float``/``str`` parameters with defaults, overridden with --set).
``KernelDef.build`` reads the function's AST with chosen constants and returns IR.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from fadsl.errors import DTypeError, FadslError, KernelSyntaxError, Loc, UsageError
from fadsl.ir.kernel_name import check_kernel_name
from fadsl.frontend.source import user_frame_loc
from fadsl.ir.dtype import DType

_EXPR_DIM = re.compile(r"[-+*/%()]")


class In:
    """Annotation of an input tensor: ``q: fd.In("B", "N", "Sq", "D")``.

    Dims are shape-symbol names or integers (one string may hold several: "B N Sq D"),
    or one expression per string over symbols and tile constants ("N * D", "B + 1",
    "cdiv(Sq, block_q)"): a string holding an operator or a call is one dimension.
    ``dtype`` fixes the tensor's element type (``fd.f32`` or its name ``"fp32"``,
    likewise ``f16``, ``bf16``, ``i32``); without it the tensor has the kernel's
    element dtype, which ``--dtype`` changes. ``fd.Out`` and ``fd.Scratch`` take the
    same arguments, e.g. ``lse: fd.Out("B", "N", "Sq", dtype=fd.f32)`` keeps a
    float32 output in an fp16 kernel.
    """

    kind = "in"

    def __init__(self, *dims: str | int, dtype: DType | str | None = None) -> None:
        parsed: list[str | int] = []
        for d in dims:
            if isinstance(d, str) and _EXPR_DIM.search(d):
                parsed.append(d.strip())
            elif isinstance(d, str):
                parsed += [x for x in re.split(r"[\s,]+", d) if x]
            else:
                parsed.append(int(d))
        self.dims = tuple(parsed)
        self.dtype = _annotation_dtype(dtype, type(self).__name__)

    def __repr__(self) -> str:
        return f"fd.{type(self).__name__}{self.dims}"


class Out(In):
    """Annotation of an output tensor (written with fd.store); arguments as ``In``.

    ``alias="k_cache"`` makes it an in-place update of that input (same dims and
    dtype): it starts as the input's data, and on a device it is that memory; the
    kernel must not read a position of the input that it writes (fadsl/ir/aliases.py).
    """

    kind = "out"

    def __init__(
        self,
        *dims: str | int,
        dtype: DType | str | None = None,
        alias: str | None = None,
    ) -> None:
        super().__init__(*dims, dtype=dtype)
        self.alias = alias


class Scratch(In):
    """Annotation of a global-memory work tensor the host allocates (read and written)."""

    kind = "scratch"


def _annotation_dtype(dtype: Any, what: str) -> DType | None:
    if dtype is None or isinstance(dtype, DType):
        return dtype
    if isinstance(dtype, str):
        try:
            return DType.parse(dtype)
        except ValueError:
            pass
    raise DTypeError(
        f"fd.{what}(..., dtype={dtype!r}): not a dtype",
        user_frame_loc(),
        hint="use fd.f16, fd.bf16, fd.f32 or fd.i32 (or the names 'fp16', 'bf16', "
        "'fp32', 'i32'); leave dtype out for the kernel's element dtype",
        code="tensor_dtype_unknown",
    )


class Scalar:
    """Annotation of a runtime float scalar: ``scale: fd.Scalar = "D ** -0.5"``.

    The default may be a number or an expression over shape symbols.
    """

    def __init__(self, dtype: DType = DType.F32) -> None:
        self.dtype = dtype


@dataclass(frozen=True)
class ParamSpec:
    name: str
    kind: str
    """in / out / scratch / scalar / const"""
    dims: tuple[str | int, ...] = ()
    dtype: DType | None = None
    default: Any = None
    has_default: bool = False
    alias: str | None = None
    """out only: the input it updates in place (``ir.Param.alias``)."""


class KernelDef:
    """A kernel function plus how to turn it into IR."""

    is_backward = False
    """A gradient kernel (``fd.attention_backward``): the CLI picks the forward of a
    file holding both (``driver/source.py``)."""

    def __init__(
        self,
        fn: Callable[..., Any],
        name: str | None = None,
        dtype: DType = DType.F16,
        consts: Mapping[str, Any] | None = None,
        default_shape: Mapping[str, int] | None = None,
        reference: Callable[..., Any] | None = None,
        inputs: Callable[..., Any] | None = None,
    ) -> None:
        self.fn = fn
        self.input_maker = inputs
        self.name = name or fn.__name__
        self.dtype = dtype
        self.fixed_consts = dict(consts or {})
        self.default_shape = dict(default_shape or {})
        self.reference = reference
        self.loc = frame_loc_of(fn)
        check_kernel_name(self.name, self.loc)
        self.specs = _param_specs(fn, self.loc)

    def __repr__(self) -> str:
        return f"<fadsl kernel {self.name} from {self.loc.short()}>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        inputs = "".join(f", {s.name}=..." for s in self.specs if s.kind == "in")
        raise KernelSyntaxError(
            f"kernel `{self.name}` is not called from Python",
            self.loc,
            hint=f"run it with `fd.interpret({self.name}{inputs})` (numpy arrays by "
            "parameter name; docs/api.md), or `fadsl run FILE.py --shape ... -o DIR`",
        )

    def make_inputs(
        self, shape: Mapping[str, int], consts: Mapping[str, Any], rng: Any
    ) -> dict[str, Any]:
        """Seeded inputs the kernel makes itself (``inputs=`` of ``fd.kernel``); the
        rest are N(0, 1)."""
        if self.input_maker is None:
            return {}
        return dict(self.input_maker(dict(shape), dict(consts), rng))

    def block_mask_inputs(
        self,
        block_mask: Any,
        shape: Mapping[str, int],
        consts: Mapping[str, Any],
        loc: Loc | None,
    ) -> dict[str, Any]:
        """The block-mask inputs a ``BlockMask`` gives this kernel at ``shape``
        (E106 / E107 when it does not fit; a kernel without one refuses it)."""
        from fadsl.frontend.block_mask_inputs import block_mask_inputs

        return block_mask_inputs(block_mask, self, shape, consts, loc)

    @property
    def const_defaults(self) -> dict[str, Any]:
        out = {s.name: s.default for s in self.specs if s.kind == "const"}
        out.update(self.fixed_consts)
        return out

    def allows(self, consts: Mapping[str, int]) -> bool:
        """Whether tile constants ``consts`` (a configuration ``fadsl tune`` tries)
        are values the kernel takes; a kernel with rules of its own says so."""
        return True

    def build(self, consts: Mapping[str, Any] | None = None, dtype: DType | None = None):  # type: ignore[no-untyped-def]
        """Read the kernel with ``consts`` overriding the defaults; return ir.Kernel."""
        from fadsl.frontend.parser import build_kernel

        values = self.const_defaults
        for key, val in (consts or {}).items():
            if key not in values:
                known = ", ".join(sorted(values)) or "none"
                raise UsageError(
                    f"--set {key}: kernel `{self.name}` has no constant `{key}`",
                    None,
                    hint=f"its constants are: {known}",
                )
            values[key] = val
        from fadsl.ir.aliases import check_aliases

        kernel = build_kernel(self, values, dtype or self.dtype)
        check_aliases(kernel)
        return kernel


def frame_loc_of(fn: Callable[..., Any]) -> Loc:
    code = fn.__code__
    return Loc(code.co_filename, code.co_firstlineno, 0, None)


def _param_specs(fn: Callable[..., Any], loc: Loc) -> tuple[ParamSpec, ...]:
    try:
        sig = inspect.signature(fn, eval_str=True)
    except Exception as exc:  # the user's annotation raised while being evaluated
        raise KernelSyntaxError(
            f"cannot evaluate the parameter annotations of `{fn.__name__}`: {exc}", loc
        ) from None
    return tuple(_spec(p, fn, loc) for p in sig.parameters.values())


def _spec(p: inspect.Parameter, fn: Callable[..., Any], loc: Loc) -> ParamSpec:
    ann = p.annotation
    has_default = p.default is not inspect.Parameter.empty
    default = p.default if has_default else None
    if isinstance(ann, In):
        alias = getattr(ann, "alias", None)
        return ParamSpec(p.name, ann.kind, ann.dims, ann.dtype, alias=alias)
    if ann is Scalar or isinstance(ann, Scalar):
        dtype = ann.dtype if isinstance(ann, Scalar) else DType.F32
        return ParamSpec(
            p.name, "scalar", dtype=dtype, default=default, has_default=has_default
        )
    if has_default:
        return ParamSpec(p.name, "const", default=default, has_default=True)
    raise KernelSyntaxError(
        f"parameter `{p.name}` of kernel `{fn.__name__}` needs an annotation",
        _param_loc(fn, loc, p.name),
        hint='tensors: fd.In("B", "N", "Sq", "D") / fd.Out(...); runtime '
        "scalars: fd.Scalar; constants: a default value, e.g. block_q: int = 128",
        code="missing_annotation",
    )


def _param_loc(fn: Callable[..., Any], loc: Loc, name: str) -> Loc:
    """Where parameter ``name`` of ``fn`` is written (``loc`` if the source is not there)."""
    import ast
    import textwrap

    try:
        lines, start = inspect.getsourcelines(fn)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError):
        return loc
    indent = len(lines[0]) - len(lines[0].lstrip())
    fdef = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)), None)
    args = [] if fdef is None else fdef.args.args + fdef.args.kwonlyargs
    for a in args:
        if a.arg == name:
            col = a.col_offset + indent
            return Loc(loc.file, a.lineno + start - 1, col, col + len(name))
    return loc


def kernel(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    dtype: str | DType = "fp16",
    default_shape: Mapping[str, int] | None = None,
    reference: Callable[..., Any] | None = None,
    inputs: Callable[..., Any] | None = None,
) -> Any:
    """Declare a tile kernel.

    Args:
        name: kernel name (a C identifier); defaults to the function name.
        dtype: element dtype of tensors that do not name one (overridden by --dtype).
        default_shape: shape used by `fadsl compile` when --shape is not given.
        reference: float64 numpy reference ``ref(inputs: dict, shape: dict) -> dict``.
        inputs: ``make(shape: dict, consts: dict, rng) -> dict`` of seeded inputs that
            must agree with each other (a backward's ``o`` and ``lse``); the inputs it
            leaves out are N(0, 1).

    Example::

        @fd.kernel
        def fa2(q: fd.In("B N Sq D"), ..., block_q: int = 128): ...
    """
    dt = DType.parse(dtype) if isinstance(dtype, str) else dtype

    def wrap(f: Callable[..., Any]) -> KernelDef:
        try:
            return KernelDef(f, name, dt, None, default_shape, reference, inputs)
        except FadslError:
            raise

    if fn is not None:
        return wrap(fn)
    return wrap
