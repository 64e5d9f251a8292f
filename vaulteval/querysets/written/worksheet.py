"""A worksheet: sampled notes with their text, and the task of writing questions they answer.

Usage::

    summary = make_worksheet(vault, "ws.yaml", n=30, seed=7)   # {"out", "notes", "by_language", ...}

Notes are drawn so that every folder, length band, link-degree band and
language gets its share: at each step the note whose four strata are the
furthest below their share of the vault is taken next (ties broken in a seeded
order). Stubs (fewer than ``STUB_LETTERS`` letters shown), templates (a folder
named like templates, or ``{{placeholders}}``/``<% %>`` in the body) and
Obsidian's excluded paths are never drawn. The same vault, ``n`` and seed give
a byte-identical file.
"""

from __future__ import annotations

import os
import random
import re
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaulteval.errors import UsageError
from vaulteval.querysets.written.notes import NoteFacts, read_notes

if TYPE_CHECKING:
    from vaulteval.vault.vault import Vault

TEXT_BUDGET = 1500  # characters of a note's text shown to the writer: a minute's reading
TUNE_SHARE = 0.3
LENGTH_BANDS = ((1_000, "short"), (4_000, "medium"), (None, "long"))  # shown characters
DEGREE_BANDS = ((0, "unlinked"), (3, "few links"), (None, "many links"))  # links in and out
MAX_N = 1000

# The task's opening and its rules for each question: the llm kind's prompt states them too (generate/llm.py).
TASK_INTRO = "Write questions that the notes below answer, as someone would ask them who has not read the note."
QUESTION_RULES = """\
- Ask in the note's language (its `language:`).
- Do not use the note's title or its rare words (names, jargon): say what you want in your own
  words, as a person who does not know what the note is called would."""
TASK = f"""\
{TASK_INTRO}
Rules:
- Write the questions before you run any search or look at any ranking of this vault.
- For each note, write one or two questions into its `questions:` list. Leave it empty when the
  note answers nothing a person would ask.
{QUESTION_RULES}
- Under `unanswerable:`, write a few questions (three or more) that a user of this vault might ask
  and that no note in it answers.
- Fill in `writer:`: agent, person, or model:<name> (the model that wrote them).
Then run: vaulteval queryset add-written THIS-FILE --out SET.yaml"""


def _band(value: int, bands: tuple) -> str:
    for limit, name in bands:
        if limit is None or value <= limit:
            return name
    return bands[-1][1]


def strata(note: NoteFacts) -> tuple[str, str, str, str]:
    """(folder, length band, link-degree band, language): the four ways a sample must be spread."""
    return (note.folder, _band(len(note.text), LENGTH_BANDS), _band(note.degree, DEGREE_BANDS), note.language)


def sample_notes(notes: list[NoteFacts], n: int, seed: int) -> list[NoteFacts]:
    """``n`` notes spread over the strata in proportion to the vault, each value drawn before any is overfilled."""
    pool = [note for note in notes if not note.stub and not note.template]
    random.Random(f"worksheet:{seed}").shuffle(pool)
    keys = [strata(note) for note in pool]
    share = [Counter(key[d] for key in keys) for d in range(4)]
    taken = [Counter() for _ in range(4)]
    chosen: list[int] = []
    left = list(range(len(pool)))
    while left and len(chosen) < n:
        target = len(chosen) + 1

        def deficit(i: int) -> float:  # smoothed fill of each stratum against its share; lower = more wanted
            return sum((taken[d][keys[i][d]] + 1) / (target * share[d][keys[i][d]] / len(pool) + 1) for d in range(4))

        best = min(left, key=deficit)  # min keeps the first (seeded) note on a tie
        left.remove(best)
        chosen.append(best)
        for d in range(4):
            taken[d][keys[best][d]] += 1
    return [pool[i] for i in chosen]


def tidy(text: str) -> str:
    """Lines without trailing blanks and at most one empty line in a row: easier to read, and YAML can
    show it as a literal block."""
    return re.sub(r"\n{3,}", "\n\n", "\n".join(line.rstrip() for line in text.split("\n"))).strip()


def cut(text: str, budget: int = TEXT_BUDGET) -> str:
    """``text`` up to ``budget`` characters, ended at a paragraph or sentence break when one is near."""
    text = tidy(text)
    if len(text) <= budget:
        return text
    head = text[:budget]
    for mark in ("\n\n", ". ", "。", "\n"):
        at = head.rfind(mark)
        if at >= budget // 2:
            return head[:at + len(mark)].rstrip() + " …"
    return head.rstrip() + " …"


def split_for(position: int) -> str:
    """tune for about TUNE_SHARE of the notes, spread evenly over the sample's order (which follows the strata)."""
    return "tune" if int((position + 1) * TUNE_SHARE) > int(position * TUNE_SHARE) else "test"


def dump_readable(data: dict[str, Any]) -> str:
    """Block-style YAML whose multi-line texts are literal blocks (``|``), so a writer reads them as written."""
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    def text(dumper: yaml.SafeDumper, value: str) -> Any:
        style = "|" if "\n" in value else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    Dumper.add_representer(str, text)
    return yaml.dump(data, Dumper=Dumper, sort_keys=False, allow_unicode=True, width=1_000_000,
                     default_flow_style=False)


def make_worksheet(vault: "Vault", out: str | os.PathLike[str], *, n: int = 30, seed: int = 0) -> dict[str, Any]:
    """Sample ``n`` notes and write the worksheet YAML to ``out`` (outside the vault)."""
    from vaulteval.vault.atomic import write_output
    from vaulteval.vault.paths import home_path, is_inside

    if not 1 <= n <= MAX_N:
        raise UsageError(f"--n must be from 1 to {MAX_N}, got {n}")
    target = home_path(out)
    if is_inside(vault.root, target.resolve()):
        raise UsageError(f"--out {out} is inside the vault; write the worksheet outside it")
    notes = read_notes(vault)
    languages = Counter(note.language for note in notes if not note.stub and note.language != "und")
    chosen = sample_notes(notes, n, seed)
    if not chosen:
        raise UsageError(f"{vault.root} has no note with enough text to ask about (every note is a stub, a "
                         "template or excluded)")
    data = {
        "task": TASK,
        "writer": "",
        "vault": str(vault.root),
        "notes_dir": vault.notes_rel or ".",
        "seed": seed,
        "languages": dict(sorted(languages.items(), key=lambda kv: (-kv[1], kv[0]))),
        "notes": [{"path": note.path, "note_hash": note.note_hash, "split": split_for(i),
                   "language": note.language, "title": note.title, "text": cut(note.text), "questions": []}
                  for i, note in enumerate(chosen)],
        "unanswerable": [],
    }
    write_output(target, dump_readable(data))
    return {"out": str(target), "notes": len(chosen), "eligible": sum(1 for x in notes if not x.stub and not x.template),
            "skipped_stubs": sum(1 for x in notes if x.stub), "skipped_templates": sum(1 for x in notes if x.template and not x.stub),
            "by_language": dict(Counter(note.language for note in chosen)),
            "by_folder": dict(Counter(note.folder for note in chosen))}
