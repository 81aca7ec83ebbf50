"""Backends: consumers of checked IR (the numpy interpreter, the Ascend C generator)."""
