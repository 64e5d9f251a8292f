"""Chunk size limits, apart from the chunker: validating tuned settings on the retrieve path must not load it.

Usage: ``from vaulteval.chunks.limits import MAX_PREFIX_CHARS``
"""

TARGET_CHARS = 2_000
OVERLAP_CHARS = 200
HARD_MAX_CHARS = 4_000
MAX_PREFIX_CHARS = 1_000
