"""Imports flow one way: frontend -> ir -> passes -> plan -> driver -> backends, with
the commands and the API on top (house style 3.1); no command imports another.

Parsed with ast, so lazy imports inside functions count too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "fadsl"

# layer -> layers (and base modules) it may import. Every package and top-level module of
# fadsl is listed: test_every_module_has_a_layer fails on one that is not.
# The pipeline reads top to bottom: frontend -> ir -> passes -> plan -> backends; the
# driver binds a kernel and lowers it through passes and plan, and the backends consume
# what it lowered; perf models what plan and the backends decide; the commands and the
# Python API (api) drive it all.
BASE = {
    "errors",
    "error_codes",
    "version",
    "numerics",
    "rng",
    "io",
    "target",
    "progress",
    "user_site",
}
ALLOWED: dict[str, set[str]] = {
    "error_codes": set(),
    "errors": {"error_codes"},
    "progress": {"errors"},
    "user_site": {"errors"},
    "version": set(),
    "__main__": {"cli"},
    "numerics": {"errors", "ir"},
    "rng": {"errors"},
    "io": {"io", "errors", "numerics", "version", "ir"},
    "target": {"errors", "io"},
    "ir": {"ir", "errors", "rng"},
    "frontend": {"frontend", "ir", "errors", "numerics", "lib", "rng", "version", "io"},
    "lib": {"lib", "frontend", "ir", "errors", "__init__"},
    "passes": {"passes", "ir", "errors", "target", "version"},
    "plan": {"plan", "passes", "ir", "errors", "target", "version", "user_site"},
    "driver": {"driver", "frontend", "ir", "passes", "plan"} | BASE,
    "backends": {
        "backends",
        "driver",
        "plan",
        "passes",
        "ir",
        "codegen_templates",
        "runtime",
    }
    | BASE,
    "perf": {"perf", "plan", "passes", "ir", "errors", "target", "user_site"},
    "runtime": set(),
    "commands": {
        "commands",
        "driver",
        "frontend",
        "lib",
        "ir",
        "passes",
        "plan",
        "backends",
        "perf",
        "runtime",
    }
    | BASE,
    "api": {"api", "driver", "frontend", "ir", "passes", "plan", "backends", "perf"}
    | BASE,
    "cli": {"commands", "errors", "version"},
    # the PyTorch operator: the interpreter through the Python API
    "torch": {"torch", "__init__", "ir"} | BASE,
    "__init__": {"api", "frontend", "errors", "version", "numerics", "lib"},
}


def _layer(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "fadsl":
        return None
    return parts[1] if len(parts) > 1 else "__init__"


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append(node.module)
            out += [
                f"{node.module}.{a.name}" for a in node.names if node.module == "fadsl"
            ]
    return out


@pytest.mark.smoke
def test_imports_flow_one_way() -> None:
    bad = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG.parent).with_suffix("")
        own = _layer(".".join(rel.parts))
        assert own in ALLOWED, f"{rel}: layer {own!r} is missing from ALLOWED"
        for mod in _imports(path):
            target = _layer(mod)
            if target is None or target == own:
                continue
            if target not in ALLOWED[own]:
                bad.append(f"{rel} ({own}) imports {mod} ({target})")
    assert not bad, "layering violations:\n" + "\n".join(bad)


def test_nothing_but_the_surface_the_driver_and_commands_import_the_frontend() -> None:
    users = []
    for path in sorted(PKG.rglob("*.py")):
        rel = ".".join(path.relative_to(PKG.parent).with_suffix("").parts)
        if rel.startswith(
            (
                "fadsl.frontend",
                "fadsl.commands",
                "fadsl.lib",
                "fadsl.driver",
                "fadsl.api",
            )
        ) or rel in (
            "fadsl.__init__",
            "fadsl.cli",
        ):
            continue
        if any(_layer(m) == "frontend" for m in _imports(path)):
            users.append(rel)
    assert not users, f"modules importing fadsl.frontend: {users}"


def _fadsl_imports(path: Path) -> set[str]:
    """Every fadsl module ``path`` imports, ``from fadsl.x import y`` counted as both
    ``fadsl.x`` and ``fadsl.x.y`` (y may be a module)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("fadsl")}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
            "fadsl"
        ):
            out.add(node.module)
            out |= {f"{node.module}.{a.name}" for a in node.names}
    return out


def test_no_command_imports_another_command() -> None:
    """Commands are argv -> driver -> print: what two commands share lives below them
    (the driver, plan/resources/resource_text.py, io/runio.py), never in another command.
    """
    bad = []
    for path in sorted((PKG / "commands").glob("*_cmd.py")):
        own = f"fadsl.commands.{path.stem}"
        for mod in sorted(_fadsl_imports(path)):
            if (
                mod.startswith("fadsl.commands.")
                and mod.endswith("_cmd")
                and mod != own
            ):
                bad.append(f"{path.name} imports {mod}")
    assert not bad, "commands importing commands:\n" + "\n".join(bad)
