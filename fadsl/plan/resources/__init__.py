"""Resource proofs and reports: whether a kernel's buffers, cores and API fields fit the chip."""
