"""Planning and proof for the Ascend target: which unit runs each op, the buffer plan
the emitter declares, and the sympy proof that it fits the chip (with hints and report).
"""
