"""Whether a vault a benchmark reuses was provisioned by a chunk store writer like the current one.

Usage: ``warning = older_store(vault_root)`` -> a line to print, or None.

Benchmarks keep their provisioned vaults between runs (``--work``), and a
provision reuses every unchanged chunk record, so a store written before a
change to the block size is measured as it was written. The mean raw size of
the store's blocks tells: above 1.5 times ``BLOCK_TARGET``, the store is an
older writer's, and what is timed is not the current code's store.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def older_store(root: Path) -> str | None:
    from vaulteval.chunks.blocks import BLOCK_TARGET
    from vaulteval.chunks.segcheck import scan_segment
    from vaulteval.chunks.segments import MAGIC

    folder = Path(root) / ".vault-meta" / "vaulteval" / "store"
    raw = 0
    blocks: set[tuple[str, int]] = set()
    for segment in sorted(folder.glob("seg-*.vcs")):
        data = segment.read_bytes()
        if data[: len(MAGIC)] != MAGIC:
            return f"{root}: the store holds a segment of an older format ({segment.name}); remove .vault-meta to measure the current one"
        records, _ = scan_segment(data, deep=False)
        raw += sum(size for _, size, _ in records)
        blocks.update((segment.name, key[0]) for key, _, _ in records)
    if blocks and raw / len(blocks) > 1.5 * BLOCK_TARGET:
        return (f"{root}: its store's blocks hold {raw / len(blocks):,.0f} raw bytes on average, the writer's target is "
                f"{BLOCK_TARGET:,}: an older writer's store; remove {root}/.vault-meta to measure the current one")
    return None
