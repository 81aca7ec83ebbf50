"""The generated Ascend C run on the CPU: ``run.py`` builds the project of a lowered
kernel with cmake and g++ against fadsl's CPU runtime (``fadsl/runtime``) and runs it,
``cache.py`` keeps the builds, ``progress.py`` shows a run on a terminal. Used by
``fadsl sim`` and ``fd.sim``."""
