"""A stand-in for claude-obsidian's chunk and index writers, written for these tests from its documented behaviour.

Usage::

    python tests/fake_claude_obsidian.py prefix VAULT      # chunk every note, prune unknown records (exit 6: busy)
    python tests/fake_claude_obsidian.py index VAULT       # .vault-meta/bm25/index.json from the records
    python tests/fake_claude_obsidian.py retrieve VAULT WORD    # page paths whose current chunk holds WORD
    python tests/fake_claude_obsidian.py hold VAULT READY RELEASE   # hold the lock until RELEASE exists

What it reproduces (not its code): the lock protocol, a ``flock(LOCK_EX|LOCK_NB)``
on a descriptor of the vault root followed by ``mkdir .vault-meta/mutation.lock``
holding an ``owner.json``, both tried once (busy is exit 6); chunk records in
the seed schema under ``.vault-meta/chunks/<address>/chunk-NNN.json``, with
``syn-`` plus the full SHA-256 of the page path when a note has no
``address:``; and ``--all``'s pruning of every record it did not produce.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import socket
import sys
import time
from pathlib import Path

EXIT_BUSY = 6
EXIT_UNAVAILABLE = 10
ADDRESS = re.compile(r"^address:\s*(\S+)\s*$", re.M)


class Busy(Exception):
    pass


@contextlib.contextmanager
def mutation_lock(root: Path):
    """The vault root flock, then the ``mutation.lock`` folder with an owner record; Busy when either is taken."""
    root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        try:
            fcntl.flock(root_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise Busy("vault advisory lock is held") from None
        meta = root / ".vault-meta"
        meta.mkdir(exist_ok=True)
        lock = meta / "mutation.lock"
        try:
            lock.mkdir(mode=0o700)
        except FileExistsError:
            raise Busy("vault mutation lock is held") from None
        token = os.urandom(8).hex()
        owner = {"schema": "claude-obsidian.mutation-lock.v1", "pid": os.getpid(), "token": token,
                 "host": socket.gethostname(), "started_epoch": time.time()}
        (lock / ".owner.tmp").write_text(json.dumps(owner))
        os.rename(lock / ".owner.tmp", lock / "owner.json")
        try:
            yield
        finally:
            if json.loads((lock / "owner.json").read_text()).get("token") == token:
                (lock / "owner.json").unlink()
                lock.rmdir()
    finally:
        os.close(root_fd)


def _sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _notes(root: Path) -> list[Path]:
    wiki = root / "wiki"
    return sorted(p for p in wiki.rglob("*.md")
                  if not any(part.startswith(".") for part in p.relative_to(wiki).parts) and not p.is_symlink())


def prefix_all(root: Path) -> int:
    """One record per note (its whole body), then every record under chunks/ it did not write is deleted."""
    chunks = root / ".vault-meta" / "chunks"
    written: set[Path] = set()
    for page in _notes(root):
        raw = page.read_bytes()
        text = raw.decode("utf-8", errors="replace")
        body = re.sub(r"\A---\n.*?\n---\n", "", text, flags=re.S).strip()
        if not body:
            continue
        rel = page.relative_to(root).as_posix()
        front = re.match(r"\A---\n(.*?)\n---\n", text, re.S)
        found = ADDRESS.search(front.group(1)) if front else None
        address = found.group(1) if found else "syn-" + hashlib.sha256(rel.encode("utf-8")).hexdigest()
        record = {"schema_version": 1, "page_path": rel, "page_address": address, "chunk_index": 0,
                  "raw_text": body, "contextualized_text": f"{page.stem}.\n\n{body}", "prefix": f"{page.stem}.",
                  "prefix_source": "synthetic", "char_count": len(body), "body_hash": _sha(body.encode("utf-8")),
                  "page_body_hash": _sha(raw), "created_at": "2026-01-01T00:00:00Z"}
        path = chunks / address / "chunk-000.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record, ensure_ascii=False, indent=2), encoding="utf-8")
        written.add(path)
    for path in chunks.glob("*/chunk-*.json"):  # what --all does with records it did not produce
        if path not in written:
            path.unlink()
            with contextlib.suppress(OSError):
                path.parent.rmdir()
    with contextlib.suppress(FileNotFoundError):
        (root / ".vault-meta" / "bm25" / "index.json").unlink()  # invalidated: the records changed
    return len(written)


def build_index(root: Path) -> int:
    docs = {}
    for path in sorted((root / ".vault-meta" / "chunks").glob("*/chunk-*.json")):
        rec = json.loads(path.read_text(encoding="utf-8"))
        words = sorted(set(re.findall(r"\w+", rec["contextualized_text"].lower())))
        docs[f"{rec['page_address']}:{rec['chunk_index']}"] = {
            "path": path.relative_to(root).as_posix(), "terms": words}
    out = root / ".vault-meta" / "bm25" / "index.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"docs": docs}), encoding="utf-8")
    return len(docs)


def retrieve(root: Path, word: str) -> list[str]:
    """Pages whose indexed chunk holds ``word`` and whose record and page are still current (exit 10 unindexed)."""
    index = json.loads((root / ".vault-meta" / "bm25" / "index.json").read_text(encoding="utf-8"))
    pages = []
    for doc in index["docs"].values():
        if word.lower() not in doc["terms"]:
            continue
        try:
            rec = json.loads((root / doc["path"]).read_text(encoding="utf-8"))
            current = _sha((root / rec["page_path"]).read_bytes()) == rec["page_body_hash"]
        except (OSError, ValueError, KeyError):
            continue
        if current:
            pages.append(rec["page_path"])
    return sorted(set(pages))


def main(argv: list[str]) -> int:
    command, root = argv[0], Path(argv[1]).resolve()
    if command == "retrieve":
        try:
            print(json.dumps(retrieve(root, argv[2])))
        except FileNotFoundError:
            return EXIT_UNAVAILABLE
        return 0
    try:
        with mutation_lock(root):
            if command == "prefix":
                print(prefix_all(root))
            elif command == "index":
                print(build_index(root))
            elif command == "hold":
                Path(argv[2]).write_text(str(os.getpid()))
                while not Path(argv[3]).exists():
                    time.sleep(0.02)
            else:
                return 2
    except Busy as exc:
        print(f"ERR LOCK_TIMEOUT: {exc}", file=sys.stderr)
        return EXIT_BUSY
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
