"""``python -m fadsl`` is the ``fadsl`` console script."""

from fadsl.cli import console

console()
