"""Which folder is the vault, its notes folder and Obsidian's exclusions, where vaulteval's
``.vault-meta/vaulteval/`` is, the page listing, path confinement, the vault locks, and the one
atomic write and directory-descriptor access every writer of derived state goes through.

- ``vault.Vault``: selection (``--vault``, environment, marker files), the notes folder (``wiki/``, a
  plain Obsidian root, or ``--notes-dir``), page listing; ``layout`` and ``exclusions``: Obsidian's
  excluded files.
- ``paths``: confinement of a relative path to a folder (no ``..``, no symlink escape).
- ``sharedlock``: claude-obsidian's flock on the vault root and ``.vault-meta/mutation.lock``, and the
  check that the vault was not replaced mid-run; ``locking``: both plus vaulteval's own.
- ``atomic``: the one atomic write (temporary sibling, rename) used by every writer; ``metadir``:
  every write, rename and delete of derived state through directory descriptors opened without
  following symlinks, and non-blocking reads of regular files only.
- ``usercache``: the user's cache folder outside every vault (evaluation's, and the query path's
  per-vault embedding cache).
- ``bounded``: the one loader of YAML and JSON read from disk (nesting and alias expansion bounded,
  no NaN); ``testhooks``: the inert pause points of the crash suite.
"""
