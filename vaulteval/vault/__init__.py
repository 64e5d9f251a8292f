"""The bottom stage: which folder is the vault, where its notes and derived state live.

- ``vault.Vault``: selection (``--vault``, environment, marker files), layout, page listing.
- ``paths``: confinement of a relative path to a folder (no ``..``, no symlink escape).
- ``locking``: the vault-wide write lock and atomic file replacement.

Imports nothing from vaulteval but ``errors``.
"""
