"""The numpy interpreter: the executable meaning of every IR op (golden outputs)."""

from fadsl.backends.interp.interpreter import InterpResult, interpret

__all__ = ["InterpResult", "interpret"]
