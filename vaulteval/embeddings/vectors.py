"""Dot products and cosines whose value for a row depends only on that row.

Usage::

    from vaulteval.embeddings.vectors import cosines, row_dots
    row_dots(matrix, q)          # float64 [matrix[i] . q]
    cosines(q, [d1, d2, d1])     # [cos(q, d1), cos(q, d2), cos(q, d1)]: the first and last are equal bits

A BLAS matrix-vector product (``matrix @ q``) adds up a row in an order that
depends on where the row falls in the kernel's blocks, so the same vector at
two rows of one batch, or in batches of two sizes, can score differently in the
last bit, and ties then break by accident. Here every row is multiplied
elementwise and summed along the row by numpy's pairwise reduction (plain C,
no SIMD-width-dependent order), which does the same operations for every row of
the same length, whatever its position, the batch size or the BLAS library.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

# Rows per step of a long scan: bounds the temporary of products (1024 x 1024 dims x 8 bytes = 8 MiB).
BLOCK_ROWS = 1024


def row_dots(matrix: np.ndarray, vector: np.ndarray, dtype: type = np.float64) -> np.ndarray:
    """Usage: ``row_dots(m, q)`` -> array of ``m[i] . q`` in ``dtype``, each row summed on its own.

    ``dtype=np.float32`` keeps a float32 matrix's scan as fast as the BLAS product it replaces
    (the dense first stage over the whole store); float64 products of float32 inputs are exact.
    """
    m = np.asarray(matrix)
    v = np.asarray(vector, dtype=dtype)
    if m.ndim != 2 or v.shape != (m.shape[1],):
        raise ValueError(f"row_dots needs an (n, {v.size}) matrix, got shape {m.shape}")
    out = np.empty(m.shape[0], dtype=dtype)
    products = np.empty((min(BLOCK_ROWS, m.shape[0]), m.shape[1]), dtype=dtype)
    for start in range(0, m.shape[0], BLOCK_ROWS):
        block = m[start:start + BLOCK_ROWS]
        part = products[: block.shape[0]]
        np.multiply(block, v, out=part)
        np.sum(part, axis=1, out=out[start:start + block.shape[0]])
    return out


def norm(vector: np.ndarray) -> float:
    """Usage: ``norm(q)`` -> the Euclidean length, summed the way ``row_dots`` sums (not BLAS ``nrm2``)."""
    v = np.asarray(vector, dtype=np.float64).ravel()
    return math.sqrt(float(np.sum(v * v)))


def cosines(query: np.ndarray, docs: Sequence[np.ndarray]) -> list[float]:
    """Usage: ``cosines(q, [d1, d2])`` -> [cos(q, d1), cos(q, d2)] in float64 from float32 inputs, clipped to [-1, 1].

    Equal document vectors get equal bits wherever they stand in ``docs``.
    """
    if not docs:
        return []
    q = np.asarray(query, dtype=np.float32).astype(np.float64)
    m = np.stack([np.asarray(d, dtype=np.float32) for d in docs]).astype(np.float64)
    lengths = np.sqrt(np.sum(m * m, axis=1))  # per row, like row_dots
    out = row_dots(m, q) / (lengths * norm(q))
    return [float(min(1.0, max(-1.0, x))) for x in out.tolist()]
