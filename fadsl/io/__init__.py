"""Everything that touches the user's disk: safe file writes, output folders and their
manifests, run folders (inputs/outputs .npy), and the content-addressed build cache.
"""
