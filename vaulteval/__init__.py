"""vaulteval: read-only retrieval over an Obsidian vault, and a workbench that measures it.

Usage::

    from vaulteval import Vault
    vault = Vault("path/to/vault")
    vault.provision()
    result = vault.retrieve("how do I descale the espresso machine", top=5)
    print(result.to_json())
"""

from __future__ import annotations

__version__ = "0.1.0"

from vaulteval.errors import (  # noqa: E402
    DuplicateAddress,
    NotProvisioned,
    UsageError,
    VaultBusy,
    VaultevalError,
    VaultSelectionError,
)
from vaulteval.vault.vault import Vault  # noqa: E402

__all__ = [
    "Vault",
    "VaultevalError",
    "UsageError",
    "NotProvisioned",
    "VaultBusy",
    "VaultSelectionError",
    "DuplicateAddress",
    "__version__",
]
