"""fd.attention_backward's library kernel (fadsl/lib/flash_bwd.py) as one kernel file,
for bench/timer_agreement.py: its KV-block task loops over the heads of a GQA group
and the Q blocks, a loop nest the model reads as one loop (fadsl/perf/loop_nest.py)."""

import fadsl as fd

lib_bwd = fd.attention_backward(name="lib_bwd")
