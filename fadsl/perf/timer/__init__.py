"""The pipe-level timer over the executed-instruction record (issue 26): ``instr``
(the rows it reads), ``charge`` (one call's cost from ``perf/costs.py``), ``memory``
(shared L2 and HBM), ``engine`` (the pipes, flags and cores), ``trace`` (Chrome
trace-event JSON), ``summary`` (per-pipe figures), ``profile`` (the files
``fadsl sim --profile`` writes)."""
