"""The package list, found from the tree so that no package folder can be left out.

pyproject.toml holds everything else. It cannot both discover packages and ship the
top-level ``codegen_templates/`` folder as ``fadsl.codegen_templates``, so the list is
made here; ``tests/test_packaging.py`` checks that a built wheel holds every tracked
file under ``fadsl/`` and ``codegen_templates/``. The error catalogue
``docs/errors.md`` ships as ``fadsl/docs/errors.md`` (package data of ``fadsl.docs``,
a folder without code) for ``fadsl explain``.
"""

from setuptools import find_packages, setup

setup(
    packages=[
        *find_packages(include=["fadsl", "fadsl.*"]),
        "fadsl.codegen_templates",
        "fadsl.docs",
    ],
    package_dir={"fadsl.codegen_templates": "codegen_templates", "fadsl.docs": "docs"},
)
