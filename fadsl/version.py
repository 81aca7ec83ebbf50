"""The fadsl version (a module of its own so that any layer may import it)."""

__version__ = "0.1.0"
