"""A served-only BM25 query ranks a shallow list first: the same answer as the full depth, stale chunks included.

Usage: ``.venv/bin/python -m pytest tests/pipeline/test_shallow_first.py -q``
"""

from __future__ import annotations

from pathlib import Path

import pytest

from vaulteval import Vault
from vaulteval.index.reader import BM25Index
from vaulteval.pipeline.provision import provision
from vaulteval.pipeline.retrieve import Retriever, retrieve

PARAGRAPH = "The zebra grazes on the savanna; zebra herds move at dawn and the zebra foals follow. " * 22
OTHERS = ("Horses", "Savanna", "Dawn", "Stripes", "Herds")


@pytest.fixture
def zebra_vault(tmp_path: Path) -> Path:
    """One page of many chunks that all outrank the pages after it."""
    root = tmp_path / "vault"
    (root / ".obsidian").mkdir(parents=True)
    (root / "Zebras.md").write_text("# Zebras\n\n" + "\n\n".join(f"Part {i}. {PARAGRAPH}" for i in range(30)),
                                    encoding="utf-8")
    for name in OTHERS:
        (root / f"{name}.md").write_text(f"# {name}\n\nA zebra was seen once near the {name.lower()}.\n",
                                         encoding="utf-8")
    provision(Vault(root))
    return root


def _served(result) -> list[dict]:
    return [c.to_dict() for c in result.candidates]


def test_a_page_of_many_chunks_leaves_room_for_the_pages_after_it(zebra_vault: Path, monkeypatch) -> None:
    depths: list[int] = []
    real = BM25Index.search
    monkeypatch.setattr(BM25Index, "search", lambda self, q, k=20: depths.append(k) or real(self, q, k))
    warm = Retriever(Vault(zebra_vault))
    for top in (1, 2, 4, 6):
        depths.clear()
        shallow = retrieve(Vault(zebra_vault), "zebra herds", top=top)
        assert depths[0] == 4 * top and (top == 1 or depths[1:] == [100])  # top 1: the first hit is the page
        full = retrieve(Vault(zebra_vault), "zebra herds", top=top, explain=True)  # explain ranks the full depth
        assert _served(shallow) == _served(full) == _served(warm.retrieve("zebra herds", top=top))
        assert len(shallow.candidates) == top and shallow.candidates[0].page_path == "Zebras.md"


def test_stale_chunks_filling_the_shallow_list_send_the_query_to_the_full_depth(zebra_vault: Path) -> None:
    with open(zebra_vault / "Zebras.md", "a", encoding="utf-8") as note:
        note.write("\nEdited after provisioning.\n")
    for top in (1, 3, 5):
        shallow = retrieve(Vault(zebra_vault), "zebra herds", top=top)
        full = retrieve(Vault(zebra_vault), "zebra herds", top=top, explain=True)
        assert _served(shallow) == _served(full)
        assert [c.page_path for c in shallow.candidates] == [c.page_path for c in full.candidates]
        assert len(shallow.candidates) == top and "Zebras.md" not in [c.page_path for c in shallow.candidates]
