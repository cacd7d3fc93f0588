"""MemoryArena (He et al., arXiv 2602.16313): Formal Reasoning, Bundled Web Shopping, Group Travel Planning."""
