"""The evaluation tools' schemas: the loop worksheet -> written questions -> query set -> runs -> verdict over MCP.

Usage: ``args.TOOLS`` holds these beside the read-only tools; ``vaulteval.server.evaltools`` runs them.

Every path a tool takes is a file name under the server's ``--eval-dir``
(relative to it, or absolute inside it); nothing else is read or written.
"""

from __future__ import annotations

from typing import Any

MAX_STRATEGIES = 12
MAX_QUESTIONS = 2000
MAX_QUESTION_CHARS = 300
_FILE = {"type": "string", "minLength": 1, "maxLength": 1000}
_STRATEGIES = {"type": "array", "minItems": 1, "maxItems": MAX_STRATEGIES,
               "items": {"type": "string", "minLength": 1, "maxLength": 500}}
_QUESTION = {"type": "string", "minLength": 1, "maxLength": MAX_QUESTION_CHARS}
_MEASURE = {"type": "string", "default": "nDCG@10", "description": "what to compare on (ir-measures name)"}
WRITES = {"readOnlyHint": False, "idempotentHint": True, "destructiveHint": True, "openWorldHint": False}

EVAL_TOOLS: dict[str, dict[str, Any]] = {
    "eval_worksheet": {
        "title": "Sample notes to write questions from",
        "description": (
            "Step 1 of the evaluation loop: sample notes of the vault (stratified by folder, length, links and "
            "language; stubs and templates skipped) and write a worksheet under the server's evaluation folder, "
            "as `vaulteval queryset worksheet` does. Returns the task and each note's path, language, title and "
            "text. Write the questions from this text alone, before any search or ranking of the vault."),
        "properties": {
            "out": {**_FILE, "default": "worksheet.yaml", "description": "worksheet file name under the evaluation "
                                                                          "folder (overwritten)"},
            "n": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 60, "description": "notes to sample"},
            "seed": {"type": "integer", "minimum": 0, "default": 0, "description": "the same seed gives the same "
                                                                                  "notes"},
        },
        "required": [],
        "annotations": WRITES,
    },
    "eval_add_questions": {
        "title": "Add the written questions",
        "description": (
            "Step 2: the questions written from the worksheet, checked (non-empty, at most 300 characters, in a "
            "language the vault has; overlap with the note's title and text measured, title repeats flagged) and "
            "written as a query set under the evaluation folder, as `vaulteval queryset add-written` does. Pass "
            "`questions` ({note path: [one or two questions]}) and `unanswerable` (questions no note answers); "
            "they are saved into the worksheet first. Without them the worksheet file is read as it is."),
        "properties": {
            "worksheet": {**_FILE, "default": "worksheet.yaml", "description": "the worksheet under the "
                                                                                "evaluation folder"},
            "questions": {"type": "object", "maxProperties": MAX_QUESTIONS,
                          "additionalProperties": {"type": "array", "maxItems": 2, "items": _QUESTION},
                          "description": "note path (as the worksheet lists it) -> its questions"},
            "unanswerable": {"type": "array", "maxItems": MAX_QUESTIONS, "items": _QUESTION,
                             "description": "questions a user might ask that no note answers"},
            "writer": {"type": "string", "default": "agent",
                       "description": "who wrote them: agent, person or model:<name>"},
            "out": {**_FILE, "default": "written.yaml", "description": "query set file name under the evaluation "
                                                                        "folder (overwritten)"},
        },
        "required": [],
        "annotations": WRITES,
    },
    "eval_run": {
        "title": "Compare strategies on a query set",
        "description": (
            "Run strategies (bm25, dense, hybrid:rrf, bm25:analyzer=english, ...; docs/strategies.md) over a query "
            "set under the evaluation folder, as `vaulteval eval run` does, and return each one's mean with its "
            "95% bootstrap CI, and against the first the comparison as eval run prints it: the paired "
            "difference with its interval, p and verdict from one paired t-test (Bonferroni across the "
            "strategies), and the smallest difference the set can detect. Writes nothing."),
        "properties": {
            "queryset": {**_FILE, "description": "query set file under the evaluation folder"},
            "strategies": {**_STRATEGIES, "description": "the first is the baseline"},
            "measure": _MEASURE,
        },
        "required": ["queryset", "strategies"],
        "annotations": {"readOnlyHint": True, "idempotentHint": True, "destructiveHint": False,
                        "openWorldHint": False},
    },
    "tune": {
        "title": "Pick a strategy, with a verdict",
        "description": (
            "Search a grid of strategies on the query set's tune split and confirm the best against the vault's "
            "current default on its test split, as `vaulteval tune` does (never --write: the vault is not "
            "changed). Written or real questions decide; generated queries only check for regressions. Returns "
            "the verdict (adopt, keep, inconclusive), its one-line summary, what it rests on (how many "
            "questions, who wrote them, the smallest difference they detect) and the search; the run folder is "
            "written under the evaluation folder."),
        "properties": {
            "queryset": {**_FILE, "description": "query set file under the evaluation folder"},
            "grid": {**_STRATEGIES, "description": "strategies to search (default: tune's grid for this vault)"},
            "measure": _MEASURE,
            "seed": {"type": "integer", "minimum": 0, "default": 0, "description": "split, bootstrap and "
                                                                                  "randomization seed"},
        },
        "required": ["queryset"],
        "annotations": WRITES,
    },
}
