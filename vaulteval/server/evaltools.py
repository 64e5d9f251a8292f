"""The evaluation loop as MCP tools: worksheet, written questions, runs and the verdict, in one folder.

Usage::

    evals = EvalTools(warm, eval_folder(DIR, vault))   # ``vaulteval mcp --eval-dir DIR`` (outside the vault)
    evals.handlers()["eval_worksheet"](n=20)   # what the server calls; results are JSON-ready dicts

Each tool is a thin layer over the API the CLI uses (``make_worksheet``,
``add_written``, ``evaluate``, ``tune``) with the CLI's messages. Every file a
tool reads or writes is named relative to the evaluation folder (or
absolutely, inside it); a name that leads elsewhere, through ``..`` or a
symbolic link, or into the vault, is refused with one line. The vault is only
read: ``tune`` never writes ``.vaulteval.json`` and its run folder goes under
the evaluation folder.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaulteval.errors import UsageError
from vaulteval.server.args import checked, shown, whole_number
from vaulteval.server.evalargs import EVAL_TOOLS, MAX_QUESTION_CHARS

if TYPE_CHECKING:
    from vaulteval.vault.vault import Vault

RUNS = "runs"
MAX_SEARCH_ROWS = 20


def eval_folder(folder: str | os.PathLike[str], vault: "Vault") -> Path:
    """``--eval-dir``: created when missing; refused (exit 2) inside the vault or when not a folder."""
    from vaulteval.vault.paths import home_path, is_inside

    path = home_path(folder)
    if is_inside(vault.root, path):
        raise UsageError(f"--eval-dir {folder} is inside the vault; name a folder outside it (the vault is only read)")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--eval-dir {folder}: cannot create it ({exc.strerror or exc})") from None
    if not path.is_dir():
        raise UsageError(f"--eval-dir {folder} is not a folder")
    return Path(os.path.realpath(path))


class EvalTools:
    """The four evaluation tools over the warm server's vault and one evaluation folder (None: every call says
    how to start the server)."""

    def __init__(self, warm: Any, folder: Path | None):
        self.warm, self.folder = warm, folder

    @property
    def vault(self) -> "Vault":
        """The vault as the server opened it for this call (``WarmVault.check_vault`` may have opened it anew)."""
        return self.warm.vault

    def handlers(self) -> dict[str, Callable[..., dict[str, Any]]]:
        return {"eval_worksheet": self.worksheet, "eval_add_questions": self.add_questions, "eval_run": self.run,
                "tune": self.tune}

    # ------------------------------------------------------------------ paths

    def file(self, name: Any, what: str) -> Path:
        """``name`` under the evaluation folder, as its real path; UsageError for anything else."""
        from vaulteval.vault.paths import is_inside, path_text_problem

        if self.folder is None:
            raise UsageError("the evaluation tools need a folder to work in: start the server with "
                             "`vaulteval mcp --eval-dir DIR` (a folder outside the vault)")
        if not isinstance(name, str) or not name.strip():
            raise UsageError(f"{what} must be a file name under the evaluation folder, got {name!r}")
        problem = path_text_problem(name)
        if problem is not None:
            raise UsageError(f"{what} {name!r}: {problem}")
        given = Path(name)
        real = Path(os.path.realpath(given if given.is_absolute() else self.folder / given))
        if not is_inside(self.folder, real) or real == self.folder:
            raise UsageError(f"{what} {name} is outside the evaluation folder {self.folder}; name a file under it")
        if is_inside(self.vault.root, real):
            raise UsageError(f"{what} {name} is inside the vault; the evaluation tools never write the vault")
        return real

    def _shown(self, path: Path) -> str:
        assert self.folder is not None
        return path.relative_to(self.folder).as_posix()

    def _output(self, name: Any, what: str) -> Path:
        path = self.file(name, what)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"{what} {name}: cannot create its folder ({exc.strerror or exc})") from None
        return path

    # ------------------------------------------------------------------ tools

    def worksheet(self, **arguments: Any) -> dict[str, Any]:
        from vaulteval.querysets.written.add import read_worksheet
        from vaulteval.querysets.written.worksheet import make_worksheet

        args = _defaults("eval_worksheet", checked("eval_worksheet", arguments))
        n, seed = whole_number("n", args["n"], 1, 1000), whole_number("seed", args["seed"], 0)
        out = self._output(args["out"], "out")
        summary = make_worksheet(self.vault, out, n=n, seed=seed)
        data = read_worksheet(out)
        notes = [{key: item.get(key) for key in ("path", "language", "title", "text")} for item in data["notes"]]
        summary["out"] = self._shown(out)
        return {"schema": "vaulteval.mcp.eval_worksheet.v1", "worksheet": self._shown(out), "summary": summary,
                "task": data.get("task"), "notes": notes,
                "next": "write one or two questions per note from its text alone (no search first), a few that no "
                        "note answers, then call eval_add_questions"}

    def add_questions(self, **arguments: Any) -> dict[str, Any]:
        from vaulteval.querysets.written.add import add_written

        args = _defaults("eval_add_questions", checked("eval_add_questions", arguments))
        worksheet = self.file(args["worksheet"], "worksheet")
        writer = _text("writer", args["writer"])
        out = self._output(args["out"], "out")
        if args.get("questions") is not None or args.get("unanswerable") is not None:
            self._fill(worksheet, args.get("questions") or {}, args.get("unanswerable") or [], writer)
        summary = add_written(worksheet, out, vault=self.vault, writer=writer)
        summary["out"] = self._shown(out)
        flagged = summary.pop("flagged_lines")
        return {"schema": "vaulteval.mcp.eval_add_questions.v1", "queryset": self._shown(out), "summary": summary,
                "flagged": flagged,
                "next": "call tune with this query set (or eval_run with the strategies to compare)"}

    def _fill(self, worksheet: Path, questions: Any, unanswerable: Any, writer: str) -> None:
        """Save the questions into the worksheet, so the file records what was written and by whom."""
        from vaulteval.querysets.written.add import WorksheetInvalid, read_worksheet
        from vaulteval.querysets.written.worksheet import dump_readable
        from vaulteval.vault.atomic import write_output

        if not isinstance(questions, dict):
            raise UsageError("questions must be an object: {note path: [questions]}")
        data = read_worksheet(worksheet)
        items = {item.get("path"): item for item in data["notes"] if isinstance(item, dict)}
        unknown = sorted(str(p) for p in questions if p not in items)
        if unknown:
            raise WorksheetInvalid(f"questions name notes the worksheet does not hold: {', '.join(unknown[:5])}; use "
                                   "the paths eval_worksheet returned")
        for path, asked in questions.items():
            items[path]["questions"] = [_question(q, f"a question of {path}") for q in _list(asked, path)]
        data["unanswerable"] = [_question(q, "an unanswerable question") for q in _list(unanswerable, "unanswerable")]
        data["writer"] = writer
        write_output(worksheet, dump_readable(data))

    def run(self, **arguments: Any) -> dict[str, Any]:
        from vaulteval.workbench.evaluate import evaluate

        args = _defaults("eval_run", checked("eval_run", arguments))
        strategies = _strategies(args["strategies"], "strategies")  # usage errors before any file is read
        measure = _text("measure", args["measure"])
        qs = self._queryset(args["queryset"])
        ev = evaluate(self.vault, qs, strategies, measures=[measure], baseline=None)
        return {"schema": "vaulteval.mcp.eval_run.v1", "queryset": _set_facts(qs), "measure": measure,
                "strategies": _means(ev, measure)}

    def tune(self, progress: Callable[[str], None] | None = None, /, **arguments: Any) -> dict[str, Any]:
        """``progress`` (positional only, never an argument of the call) is told each strategy's run as it ends."""
        from vaulteval.workbench.evidence import evidence_line
        from vaulteval.workbench.tune import tune
        from vaulteval.workbench.verdict import verdict_line

        args = _defaults("tune", checked("tune", arguments))
        grid = _strategies(args["grid"], "grid") if args.get("grid") is not None else None
        measure = _text("measure", args["measure"])
        seed = whole_number("seed", args["seed"], 0)
        qs = self._queryset(args["queryset"])
        runs = self._output(RUNS, "the run folder")
        on_run = None if progress is None else (lambda name: progress(f"tune: ran {name}"))
        result = tune(self.vault, qs, grid=grid, measure=measure, seed=seed, out=runs, on_run=on_run)
        d = result.decision
        return {"schema": "vaulteval.mcp.tune.v1", "verdict": d["verdict"],
                "line": verdict_line(d, result.best, result.baseline),
                "evidence_line": evidence_line(d["evidence"], d.get("regression")),
                "baseline": result.baseline, "best": result.best, "decision": d,
                "search": result.search[:MAX_SEARCH_ROWS],
                "run_dir": self._shown(Path(os.path.realpath(result.run_dir))) if result.run_dir else None}

    def _queryset(self, name: Any) -> Any:
        from vaulteval.querysets.queryset import load_queryset

        return load_queryset(self.file(name, "queryset"), self.vault)


def _defaults(tool: str, args: dict[str, Any]) -> dict[str, Any]:
    props = EVAL_TOOLS[tool]["properties"]
    return {**{k: spec["default"] for k, spec in props.items() if "default" in spec}, **args}


def _text(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise UsageError(f"{name} must be a non-empty string, got {shown(value)}")
    return value.strip()


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise UsageError(f"{where}: expected a list of questions, got {type(value).__name__}")
    return value


def _question(value: Any, where: str) -> str:
    text = _text(where, value)
    if len(text) > MAX_QUESTION_CHARS:
        raise UsageError(f"{where} is longer than {MAX_QUESTION_CHARS} characters; shorten it")
    return text


def _strategies(value: Any, name: str) -> list[str]:
    from vaulteval.server.evalargs import MAX_STRATEGIES
    from vaulteval.workbench.strategy import Strategy

    if not isinstance(value, list) or not 1 <= len(value) <= MAX_STRATEGIES:
        raise UsageError(f"{name} must be a list of 1 to {MAX_STRATEGIES} strategy strings")
    for text in value:
        Strategy.parse(_text(f"each of {name}", text))  # StrategyError (exit 2) with the grammar's message
    return [text.strip() for text in value]


def _set_facts(qs: Any) -> dict[str, Any]:
    return {"name": qs.name, "queries": len(qs), "positive": len(qs.positive), "negative": len(qs.negative)}


def _means(ev: Any, measure: str) -> list[dict[str, Any]]:
    """Per strategy: mean and 95% CI; against the first, the comparison as ``eval run`` prints it (one procedure)."""
    from vaulteval.workbench.procedure import comparison_tail

    metrics = ev.metrics[ev.metrics.measure == measure].set_index("run")
    summary = ev.report.tables.get("summary")
    versus = summary[summary.measure == measure].set_index("run") if summary is not None and len(summary) else None
    out = []
    for number, (strategy, run) in enumerate(zip(ev.strategies, ev.runs)):
        row = metrics.loc[run.name]
        entry: dict[str, Any] = {"strategy": strategy.text(), "name": run.name, "mean": _num(row["value"]),
                                 "ci95": [_num(row["ci_low"]), _num(row["ci_high"])], "queries": int(row["n"])}
        if number and versus is not None and run.name in versus.index:
            c = versus.loc[run.name]
            entry["vs_first"] = {"delta": _num(c["delta"]), "ci95": [_num(c["delta_ci_low"]), _num(c["delta_ci_high"])],
                                 "p": _num(c["p"]), "comparisons": int(c["comparisons"]), "verdict": c["verdict"],
                                 "mde": _num(c["mde"]), "more_queries": _num(c["more_queries"]),
                                 "line": comparison_tail({**c.to_dict(), "measure": measure})}
        out.append(entry)
    return out


def _num(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if number == number and abs(number) != float("inf") else None
