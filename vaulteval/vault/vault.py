"""A vault: how one is selected, where its notes and derived state live, and its pages.

Usage::

    vault = Vault.select(explicit=None)        # --vault, env, or marker file
    for page in vault.iter_pages(): ...

This is the bottom of the package: it imports nothing above ``vaulteval.vault``.
Opening the index, retrieving and provisioning live in ``vaulteval.pipeline``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from vaulteval.errors import UsageError, VaultSelectionError
from vaulteval.vault.paths import confine, is_inside

MARKERS = (".vaulteval.json", ".claude-obsidian.json")
ENV_VARS = ("VAULTEVAL_VAULT", "CLAUDE_OBSIDIAN_VAULT")
PACKAGE_DIR = Path(__file__).resolve().parent.parent  # the vaulteval package folder
BUNDLED_SAMPLE = PACKAGE_DIR / "data" / "sample-vault"


def _product_roots() -> set[Path]:
    roots = {PACKAGE_DIR}
    repo = PACKAGE_DIR.parent
    if (repo / "pyproject.toml").is_file() and (repo / "vaulteval").resolve() == PACKAGE_DIR:
        roots.add(repo)
    return roots


@dataclass(frozen=True)
class Page:
    """A note under ``wiki/``: its vault-relative POSIX path and absolute path."""

    rel: str
    abspath: str

    @property
    def path(self) -> Path:
        return Path(self.abspath)


class Vault:
    """A folder with ``wiki/`` (notes) and ``.vault-meta/`` (derived state)."""

    def __init__(self, root: str | os.PathLike[str], *, meta_dir: str | os.PathLike[str] | None = None):
        root_path = Path(root).expanduser()
        if not root_path.is_dir():
            raise VaultSelectionError(f"vault {root_path} is not a directory; pass --vault PATH to an existing vault")
        self.root = root_path.resolve()
        if self.root in _product_roots():
            raise VaultSelectionError(
                f"{self.root} is vaulteval's own folder, not a vault; pass --vault PATH to your vault"
            )
        self.wiki_dir = self.root / "wiki"
        if not self.wiki_dir.is_dir():
            raise VaultSelectionError(f"{self.root} has no wiki/ folder; a vault keeps its notes in wiki/")
        # meta_dir may point outside the vault: evaluation builds variants in a cache.
        self.meta_dir = Path(meta_dir).resolve() if meta_dir else self.root / ".vault-meta"

    # -- selection -------------------------------------------------------
    @classmethod
    def select(cls, explicit: str | os.PathLike[str] | None = None, *, cwd: Path | None = None) -> "Vault":
        """Usage: ``Vault.select(args.vault)``: --vault, then env vars, then the nearest marker file."""
        if explicit:
            return cls(explicit)
        for var in ENV_VARS:
            value = os.environ.get(var)
            if value:
                return cls(value)
        here = (cwd or Path.cwd()).resolve()
        products = _product_roots()
        for folder in (here, *here.parents):
            if any((folder / marker).is_file() for marker in MARKERS):
                return cls(folder)
            if folder in products:
                # Working inside vaulteval itself: never fall through to a marker further up.
                raise VaultSelectionError(
                    f"{folder} is vaulteval's own folder, not a vault; pass --vault PATH to your vault"
                )
        raise VaultSelectionError(
            "no vault selected: pass --vault PATH, set VAULTEVAL_VAULT, "
            "or run inside a folder holding .vaulteval.json"
        )

    @property
    def is_bundled(self) -> bool:
        """True for the sample vault shipped inside the package (never written to)."""
        return is_inside(PACKAGE_DIR, self.root)

    @property
    def meta_is_external(self) -> bool:
        return not is_inside(self.root, self.meta_dir)

    def require_writable(self) -> None:
        """Refuse provisioning inside the installed product."""
        if self.is_bundled and not self.meta_is_external:
            raise UsageError(
                "the bundled sample vault is read-only; copy it first with: vaulteval sample DEST"
            )

    # -- paths -----------------------------------------------------------
    def page_path(self, rel: str) -> Path:
        """Usage: ``vault.page_path("wiki/a.md")``: the confined absolute path of a note."""
        return confine(self.wiki_dir, rel, strip="wiki")

    def meta_path(self, rel: str) -> Path:
        """Usage: ``vault.meta_path("chunks/c-1/chunk-000.json")``: a confined path under .vault-meta."""
        return confine(self.meta_dir, rel)

    def iter_pages(self) -> Iterator[Page]:
        """Every ``*.md`` under wiki/, sorted, skipping dot-folders and links that leave wiki/."""
        wiki = str(self.wiki_dir)
        real_wiki = os.path.realpath(wiki)
        found: list[Page] = []
        for dirpath, dirnames, filenames in os.walk(wiki):
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            rel_dir = "wiki" + dirpath[len(wiki):].replace(os.sep, "/")
            for name in filenames:
                if not name.endswith(".md") or name.startswith("."):
                    continue
                full = dirpath + os.sep + name
                if os.path.islink(full):
                    real = os.path.realpath(full)
                    if not real.startswith(real_wiki + os.sep) or not os.path.isfile(real):
                        continue
                found.append(Page(rel_dir + "/" + name, full))
        found.sort(key=lambda p: p.rel)
        return iter(found)

    # -- pipeline --------------------------------------------------------
    def rebuild_command(self) -> str:
        """The exact shell command that re-provisions this vault."""
        import shlex

        return f"vaulteval provision --vault {shlex.quote(str(self.root))}"

    def __repr__(self) -> str:
        return f"Vault({str(self.root)!r})"
