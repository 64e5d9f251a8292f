"""``vaulteval demo``: the bundled sample vault, end to end, in a temporary folder.

Usage: ``run_demo(out=None)`` prints what it does and returns the folder it used.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

DEMO_QUERY = "how do I descale the espresso machine"


def _say(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def run_demo(out: str | None = None) -> Path:
    from .sample import copy_sample
    from .vault import Vault

    base = Path(out) if out else Path(tempfile.mkdtemp(prefix="vaulteval-demo-"))
    vault_dir = copy_sample(base / "sample-vault")
    _say(f"== sample vault copied to {vault_dir}")
    vault = Vault(vault_dir)
    report = vault.provision()
    _say(f"== provisioned: {report['prefix']['pages_seen']} pages, {report['index']['docs']} chunks, "
         f"{report['index']['terms']} terms in {report['seconds']['total']:.2f} s")
    result = vault.retrieve(DEMO_QUERY, top=3, explain=True)
    _say(f"== vaulteval retrieve --vault {vault_dir} {DEMO_QUERY!r} --top 3 --no-rerank --explain")
    _say(result.to_json())
    for extra in DEMO_STEPS:
        extra(vault, base)
    return base


# Later stages (evaluation notebooks) append steps here: fn(vault, base_dir).
DEMO_STEPS: list = []
