"""Memory planning: the buffers of UB, L1 and L0, their sizes, homes and instruction forms."""
