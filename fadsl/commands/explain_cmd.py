"""``fadsl explain E21``: the error catalogue's entry for a code, as messages print it.

The catalogue is docs/errors.md (rendered by tests/errors/test_error_catalogue.py):
one section per kind of error, opened by ``<a id="NAME"></a>`` and headed
``## E21 title``. A wheel ships it as ``fadsl/docs/errors.md`` (setup.py); a source
checkout reads it from ``docs/``. ``fadsl explain`` alone lists every code.
"""

from __future__ import annotations

import argparse
import os
import re

from fadsl.commands import flags
from fadsl.error_codes import CODES, name_of
from fadsl.errors import InternalError, UsageError

_FADSL = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_HEADING = re.compile(r"^## (E\d+) (.*)$", re.MULTILINE)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "code",
        nargs="?",
        help="an error code as a message prints it (E21), or leave it out for the list",
    )


def main(args: argparse.Namespace) -> int:
    text = _catalogue()
    if args.code is None:
        for code, title in _HEADING.findall(text):
            print(f"{code}  {title}")
        return 0
    name = name_of(args.code.strip())
    if name is None:
        raise _unknown(args.code)
    print(_section(text, name))
    return 0


def catalogue_path() -> str:
    """docs/errors.md: shipped inside the package, or beside it in a checkout."""
    shipped = os.path.join(_FADSL, "docs", "errors.md")
    if os.path.isfile(shipped):
        return shipped
    return os.path.join(os.path.dirname(_FADSL), "docs", "errors.md")


def _catalogue() -> str:
    path = catalogue_path()
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as exc:
        raise InternalError(
            f"the error catalogue {path} cannot be read ({exc.strerror}): "
            "this installation of fadsl lacks docs/errors.md"
        ) from None


def _section(text: str, name: str) -> str:
    """The entry of kind ``name``: from its heading to the next entry's anchor."""
    anchor = f'<a id="{name}"></a>'
    start = text.find(anchor)
    if start < 0:
        raise InternalError(f"the error catalogue has no entry `{name}`")
    end = text.find('<a id="', start + len(anchor))
    body = text[start + len(anchor) : end if end >= 0 else len(text)]
    lines = [ln for ln in body.strip("\n").split("\n") if not ln.startswith("<!--")]
    return "\n".join(lines).rstrip("\n")


def _unknown(given: str) -> UsageError:
    return UsageError(
        f"{given!r} is not an error code",
        flags.arg_loc("explain", given, 0, len(given)),
        hint=f"codes run from E01 to E{max(CODES.values()):02d}, as messages print "
        "them (`fadsl: usage error[E21]: ...`); `fadsl explain` lists them all",
        code="explain_unknown_code",
    )
