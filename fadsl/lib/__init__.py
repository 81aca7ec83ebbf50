"""fadsl's own kernels, written in the DSL (their frames count as user code)."""
