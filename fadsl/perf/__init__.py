"""Performance modelling: the engines of an AI core, the L2, the kernel's schedule over
cores and rounds, and a reference schedule of CANN's own FlashAttention forward.

Every figure these modules produce is MODELLED from the target's rates
(fadsl/targets/*.json); docs/cost-model.md states the model and its calibration.
"""
