"""Turn a filled-in worksheet into a query set of written questions (docs/querysets.md, "Written questions").

Usage::

    summary = add_written("ws.yaml", "written.yaml")   # {"out", "questions", "unanswerable", "flagged", ...}

Every question is checked (``checks``), its overlap with its note's title and
text is stored, and a question that repeats the title is flagged, never
dropped. A note that is missing, or whose content changed since the worksheet
was written, stops the whole set: the questions were written about text the
vault no longer holds. Nothing in the vault is written.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaulteval.errors import UsageError, VaultevalError
from vaulteval.querysets.written import checks

if TYPE_CHECKING:
    from collections.abc import Callable

    from vaulteval.vault.vault import Vault

MAX_WORKSHEET_BYTES = 20_000_000
MAX_QUESTIONS_PER_NOTE = 5
GRADE = 2  # the note answers the question its writer wrote from it


class WorksheetInvalid(UsageError):
    """The worksheet cannot be read as one, or one of its questions or notes cannot be used."""


def read_worksheet(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The worksheet as a mapping, read through the bounded loader; unreadable, oversized or malformed YAML
    is one WorksheetInvalid line."""
    from vaulteval.vault.bounded import Refused, load_yaml
    from vaulteval.vault.metadir import read_capped
    from vaulteval.vault.paths import home_path

    src = home_path(path)
    try:
        text = read_capped(src, MAX_WORKSHEET_BYTES).decode("utf-8")
    except OSError as exc:
        raise WorksheetInvalid(f"cannot read worksheet {src}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise WorksheetInvalid(f"worksheet {src} is not UTF-8 text; save it as UTF-8") from None
    try:
        data = load_yaml(text)
    except Refused as exc:
        where = f" at line {exc.line}" if exc.line else ""
        raise WorksheetInvalid(f"worksheet {src}{where}: {exc.problem}; fix the edit there (quote a question "
                               "that holds ': ' or starts with a symbol)") from None
    if not isinstance(data, dict) or not isinstance(data.get("notes"), list):
        raise WorksheetInvalid(f"worksheet {src} has no notes: list; write a worksheet with `vaulteval queryset "
                               "worksheet`")
    return data


def _vault(data: dict[str, Any], vault: "Vault | None", src: Path) -> "Vault":
    from vaulteval.vault.vault import Vault

    if vault is not None:
        return vault
    root, notes_dir = data.get("vault"), data.get("notes_dir")
    if not isinstance(root, str) or not root.strip():
        raise WorksheetInvalid(f"worksheet {src} names no vault; pass --vault")
    return Vault(root, notes_dir=notes_dir if isinstance(notes_dir, str) and notes_dir.strip() else None)


def _strings(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list):
        raise WorksheetInvalid(f"{where} must be a list of questions, got {type(value).__name__}")
    return value


def _languages(data: dict[str, Any]) -> set[str]:
    found = data.get("languages")
    return {str(code) for code in found} if isinstance(found, dict) else set()


def _checked(text: Any, languages: set[str], where: str) -> str:
    problem = checks.question_problem(text, languages)
    if problem is not None:
        raise WorksheetInvalid(f"{where}: the question {str(text)[:60]!r} {problem}")
    return " ".join(text.split())


def _read_notes(vault: "Vault", notes: list[Any], src: Path) -> list[tuple[dict[str, Any], Any]]:
    """Each worksheet note with its facts now; missing or changed notes are named, note by note, in one error."""
    from vaulteval.querysets.written.notes import MAX_NOTE_BYTES, note_facts
    from vaulteval.vault.notefiles import read_note_file

    out, missing, changed = [], [], []
    for i, item in enumerate(notes, 1):
        if not isinstance(item, dict) or not isinstance(item.get("path"), str):
            raise WorksheetInvalid(f"worksheet {src}: note {i} has no path:; keep each note as `queryset worksheet` "
                                   "wrote it")
        try:
            raw = read_note_file(vault.note_path(item["path"]), MAX_NOTE_BYTES)
        except (OSError, VaultevalError):
            missing.append(item["path"])
            continue
        facts = note_facts(item["path"], raw)
        if facts.note_hash != item.get("note_hash"):
            changed.append(item["path"])
        out.append((item, facts))
    if missing:
        raise WorksheetInvalid(f"worksheet {src}: {len(missing)} note(s) are missing from {vault.root}: "
                               f"{'; '.join(missing)}; write a new worksheet")
    if changed:
        raise WorksheetInvalid(f"worksheet {src}: {len(changed)} note(s) changed since the worksheet was written: "
                               f"{'; '.join(changed)}; check their questions still fit, then write a new worksheet")
    return out


def add_written(worksheet: str | os.PathLike[str], out: str | os.PathLike[str], *, vault: "Vault | None" = None,
                writer: str | None = None) -> dict[str, Any]:
    """Check the worksheet's questions and write them as a YAML query set at ``out`` (outside the vault)."""
    from vaulteval.querysets.generate.lexical import band
    from vaulteval.querysets.written.worksheet import dump_readable
    from vaulteval.vault.atomic import write_output
    from vaulteval.vault.paths import home_path, is_inside

    src = home_path(worksheet)
    data = read_worksheet(src)
    who = writer if writer is not None else data.get("writer")
    if (problem := checks.writer_problem(who)) is not None:
        raise WorksheetInvalid(f"worksheet {src}: {problem}")
    chosen = _vault(data, vault, src)
    target = home_path(out)
    if is_inside(chosen.root, target.resolve()):
        raise WorksheetInvalid(f"--out {out} is inside the vault; write the query set outside it")
    languages = _languages(data)
    queries: list[dict[str, Any]] = []
    flagged: list[str] = []
    next_id = _id_maker(data.get("seed"))
    for item, facts in _read_notes(chosen, data["notes"], src):
        asked = _strings(item.get("questions"), f"worksheet {src}: questions of {item['path']}")
        if len(asked) > MAX_QUESTIONS_PER_NOTE:
            raise WorksheetInvalid(f"worksheet {src}: {item['path']} has {len(asked)} questions; write at most "
                                   f"{MAX_QUESTIONS_PER_NOTE} per note")
        split = item.get("split") if item.get("split") in ("tune", "test") else "test"
        for text in asked:
            question = _checked(text, languages, f"worksheet {src}: {item['path']}")
            overlap = checks.measure_overlap(question, facts.title, facts.text)
            entry = {"id": next_id(len(queries) + 1), "query": question, "relevant": {facts.path: GRADE},
                     "kind": "written", "writer": who, "note_hash": facts.note_hash, "split": split,
                     "overlap": overlap, "overlap_band": band(overlap["text"]),
                     "flags": checks.flags_of(question, facts.title)}
            if entry["flags"]:
                flagged.append(f"{entry['id']} {question!r} ({', '.join(entry['flags'])}: {facts.title!r})")
            queries.append(entry)
    written = len(queries)
    for n, text in enumerate(_strings(data.get("unanswerable"), f"worksheet {src}: unanswerable"), 1):
        question = _checked(text, languages, f"worksheet {src}: unanswerable question {n}")
        queries.append({"id": next_id(len(queries) + 1), "query": question, "relevant": {}, "kind": "written",
                        "writer": who, "split": "tune" if n % 3 == 1 else "test", "flags": []})
    if not written:
        raise WorksheetInvalid(f"worksheet {src} holds no questions yet; write one or two under each note's "
                               "questions:")
    set_data = {"name": target.stem, "vault": _vault_ref(chosen.root, target),
                "written": {"worksheet": str(src), "writer": who, "notes": len(data["notes"]),
                            "seed": data.get("seed")},
                "queries": queries}
    write_output(target, dump_readable(set_data))
    return {"out": str(target), "questions": written, "unanswerable": len(queries) - written,
            "flagged": len(flagged), "flagged_lines": flagged,
            "tune": sum(1 for q in queries if q["split"] == "tune"),
            "test": sum(1 for q in queries if q["split"] == "test")}


def _id_maker(seed: object) -> Callable[[int], str]:
    """Ids carry the worksheet's seed, so sets written from worksheets of other seeds merge without clashes."""
    if isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0:
        return lambda n: f"w{seed}-{n:03d}"
    return lambda n: f"w{n:03d}"


def _vault_ref(root: Path, target: Path) -> str:
    try:
        return Path(os.path.relpath(root, target.resolve().parent)).as_posix()
    except ValueError:  # another drive
        return str(root)
