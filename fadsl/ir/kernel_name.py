"""The rule every kernel name obeys, in Python kernels and in textual IR alike.

A kernel's name is the symbol of its C++ entry point (an ``extern "C"`` function that
the host launches by name) and the stem of its file names. Every other C++ identifier
of a generated kernel is chosen by the Ascend C backend and renamed when it would
clash (``fadsl/backends/ascendc/mangle.py``); the kernel name cannot be, so it must be
an identifier that any C++ program may declare at global scope: ASCII letters, digits
and ``_``, starting with a letter, no ``__``, not a C++ keyword, not ``main``. The
backend refuses, when it generates code, the few names its project itself declares
(``AscendC``, ``GM_ADDR``, ...).
"""

from __future__ import annotations

import re

from fadsl.errors import Loc, UsageError

CXX_KEYWORDS = frozenset(
    "alignas alignof and and_eq asm auto bitand bitor bool break case catch char "
    "char8_t char16_t char32_t class compl concept const consteval constexpr constinit "
    "const_cast continue co_await co_return co_yield decltype default delete do double "
    "dynamic_cast else enum explicit export extern false float for friend goto if "
    "inline int long mutable namespace new noexcept not not_eq nullptr operator or "
    "or_eq private protected public register reinterpret_cast requires return short "
    "signed sizeof static static_assert static_cast struct switch template this "
    "thread_local throw true try typedef typeid typename union unsigned using virtual "
    "void volatile wchar_t while xor xor_eq final override import module".split()
)
"""C++20 keywords, alternative tokens and identifiers with special meaning."""

_C_IDENT = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")

HINT = (
    "use ASCII letters, digits and '_', starting with a letter, no '__', no path "
    "separators, not a C++ keyword or `main` (e.g. 'flash_attn_fwd')"
)


def kernel_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a kernel's C symbol and file stem, or None."""
    if not _C_IDENT.match(name) or "__" in name:
        return "is not a usable C identifier"
    if name in CXX_KEYWORDS:
        return "is a C++ keyword"
    if name == "main":
        return "is the entry point of every C++ program"
    return None


def check_kernel_name(name: str, loc: Loc | None) -> None:
    """Refuse a kernel name that cannot be a C symbol and a file name."""
    problem = kernel_name_problem(name)
    if problem is not None:
        raise UsageError(
            f"kernel name {name!r} {problem}", loc, hint=HINT, code="kernel_name_path"
        )
