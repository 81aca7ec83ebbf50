"""The compile driver: the one path from a kernel to what every command and the
Python API consume.

- ``source.py``: a kernel file -> ``KernelSource`` (imports a ``.py``, parses a
  ``.fir``); ``select`` picks one kernel of it.
- ``binding.py``: ``Binding``, a kernel bound to a shape, constants, scalars, a dtype
  and (optionally) a target; ``bind`` makes one from a definition or an IR kernel.
- ``lower.py``: ``lower(binding) -> Lowered``: the pass pipeline, the buffer plan,
  the resource proof and the lint, run once; the interpreter runs ``Lowered.ir``, the
  Ascend C backend emits from ``Lowered.lowering``.

The backends consume ``Lowered`` (``backends/ascendc/project.py`` emits from it,
``backends/sim`` builds and runs that project on the CPU runtime). Commands
(``fadsl/commands``) turn argv into these calls and print; the Python API
(``fadsl/api``) turns keyword arguments into them and returns values.
"""
