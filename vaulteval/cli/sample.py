"""The bundled sample vault, in the claude-obsidian layout or as a plain Obsidian vault.

Usage: ``copy_sample("/tmp/my-sample")`` -> the new vault's path;
``copy_sample("/tmp/plain", layout="plain")`` puts the notes at the root beside
``.obsidian/`` with the things a real vault has: an excluded folder, a ``.trash/``,
attachments, and the sample query set rewritten for root-relative paths.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from vaulteval.errors import UsageError
from vaulteval.vault.paths import home_path
from vaulteval.vault.vault import BUNDLED_SAMPLE, PACKAGE_DIR

LAYOUTS = ("wiki", "plain")
SAMPLE_QUERYSET = PACKAGE_DIR / "data" / "querysets" / "sample-vault.yaml"

# What the plain layout adds; none of it may ever be indexed (the words are unique on purpose).
PLAIN_EXTRAS = {
    ".obsidian/app.json": json.dumps({"userIgnoreFilters": ["Archive/", "/^Templates/.*draft/"]}, indent=2) + "\n",
    "Archive/Old espresso notes.md": "# Old espresso notes\n\nThe zanzibarite descaler is retired.\n",
    "Templates/Weekly draft.md": "# Weekly draft\n\nFill in the quokkaberry checklist.\n",
    ".trash/Deleted note.md": "# Deleted\n\nA trashed note about the marmalite grinder.\n",
    "attachments/receipt.txt": "Receipt for the vellichor kettle.\n",
}
PLAIN_ATTACHMENT = ("attachments/descaler.png", bytes.fromhex("89504e470d0a1a0a"))


def copy_sample(dest: str | Path, layout: str = "wiki") -> Path:
    """Copy the sample vault (notes and marker, no derived state) to a new folder."""
    if layout not in LAYOUTS:
        raise UsageError(f"unknown layout {layout!r}; choose one of {', '.join(LAYOUTS)}")
    target = home_path(dest)
    if target.exists() and any(target.iterdir()):
        raise UsageError(f"{target} exists and is not empty; choose a new folder")
    skip = shutil.ignore_patterns(".vault-meta", "__pycache__")
    if layout == "wiki":
        shutil.copytree(BUNDLED_SAMPLE, target, dirs_exist_ok=True, ignore=skip)
        return target.resolve()
    shutil.copytree(BUNDLED_SAMPLE / "wiki", target, dirs_exist_ok=True, ignore=skip)
    shutil.copy2(BUNDLED_SAMPLE / ".vaulteval.json", target / ".vaulteval.json")
    for rel, text in PLAIN_EXTRAS.items():
        (target / rel).parent.mkdir(parents=True, exist_ok=True)
        (target / rel).write_text(text, encoding="utf-8")
    (target / PLAIN_ATTACHMENT[0]).write_bytes(PLAIN_ATTACHMENT[1])
    (target / "querysets").mkdir(exist_ok=True)
    (target / "querysets" / "sample-vault.yaml").write_text(plain_queryset_text(), encoding="utf-8")
    return target.resolve()


def plain_queryset_text() -> str:
    """The sample query set with ``wiki/`` page keys made root-relative and without its ``vault:`` line."""
    text = SAMPLE_QUERYSET.read_text(encoding="utf-8")
    text = re.sub(r"^vault:.*\n", "", text, flags=re.MULTILINE)
    return text.replace('"wiki/', '"')
