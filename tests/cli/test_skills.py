"""The agent skills in skills/*/SKILL.md: their commands exist, run, and keep their promises.

Usage: ``.venv/bin/python -m pytest tests/cli/test_skills.py -q``

Every ```sh / ```bash block of a skill is run with bash, in order, against a
temporary copy of the sample vault; shell variables carry over from one block
to the next (a state file is sourced before and written after each block).
Inputs come from the test: SKILL_DIR (the skill's own folder), VAULT, QUERY,
PAGE (refreshed from each retrieve result), KEYWORD, QUERYSET, RUNS, RUN_ID.

Block annotations (comments inside the block):

- ``# expect-exit: 0 1``   the exit codes the block may end with (default: 0);
- ``# optional: ...``      situational (e.g. a rerank); run anyway, with
  OLLAMA_HOST pointed at a closed local port so nothing leaves the machine;
- ``# example-only: ...``  never run (e.g. an egress example); still checked
  against the CLI's parser.

A block may run at most one ``vaulteval`` command that prints JSON; when it
exits 0 its stdout must parse, and retrieve output must match the schema.
No test needs a network or a running Ollama.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from vaulteval.cli.main import build_parser
from vaulteval.cli.sample import copy_sample
from vaulteval.vault.metadir import META_REL

from shared_data import SHARED

REPO = Path(__file__).resolve().parents[2]
SKILLS_DIR = REPO / "skills"
SKILL_NAMES = ("wiki-retrieve", "wiki-query", "wiki-eval")
VENV_BIN = Path(sys.executable).parent
SEEDS_DIR = SHARED / "seeds"

QUERY = "how do I descale the espresso machine"
KEYWORD = "descale"
DESCALING = "wiki/howto/Descaling.md"

TRIGGERS = {
    "wiki-retrieve": ["search the vault", "provision retrieval", "index the vault", "rebuild the search index"],
    "wiki-query": ["query the wiki", "answer from the wiki", "find in the wiki", "deep query"],
    "wiki-eval": ["measure retrieval", "build a query set", "did this change help retrieval"],
}
DEPTH_TOP = {"quick": 3, "standard": 5, "deep": 10}

RETRIEVE_KEYS = {"schema", "query", "strategy", "label", "pipeline", "top_k", "candidates"}
CANDIDATE_KEYS = {"chunk_id", "page_address", "page_path", "absolute_path", "chunk_index", "score", "scores",
                  "rerank_source", "snippet", "matched_terms", "heading_path",
                  "first_line", "last_line", "modified", "snippet_line", "snippet_heading_path"}
EXPLAIN_KEYS = {"bm25_candidate_count", "post_rerank_count", "deduped_count", "bm25_top_param", "rerank_model",
                "stale_candidates_skipped"}
PRIVACY_FLAGS = ("--allow-egress", "--allow-remote-ollama")
# Environment that could select a vault, a model or a provider behind the test's back.
SCRUB = ("VAULTEVAL_VAULT", "CLAUDE_OBSIDIAN_VAULT", "OLLAMA_HOST", "OLLAMA_URL", "ANTHROPIC_API_KEY",
         "ANTHROPIC_BASE_URL", "VAULTEVAL_CACHE", "SKILL_DIR", "VAULT", "QUERY", "PAGE", "KEYWORD", "QUERYSET",
         "RUNS", "RUN_ID", "DEPTH")


# -- reading skills ----------------------------------------------------------

@dataclass
class Block:
    skill: str
    lang: str
    code: str
    line: int
    expect: frozenset[int] = frozenset({0})
    optional: bool = False
    example_only: bool = False
    writer_step: bool = False  # after it runs, the test writes the worksheet's questions (the agent's part)

    @property
    def runnable(self) -> bool:
        return self.lang in ("sh", "bash") and not self.example_only

    @property
    def where(self) -> str:
        return f"skills/{self.skill}/SKILL.md:{self.line}"


@dataclass
class Skill:
    name: str
    path: Path
    text: str
    frontmatter: dict
    blocks: list[Block] = field(default_factory=list)
    inline: list[tuple[str, int]] = field(default_factory=list)  # (code span, line)

    def shell_blocks(self) -> list[Block]:
        return [b for b in self.blocks if b.lang in ("sh", "bash")]


_FENCE = re.compile(r"^\s*```(\S*)\s*$")
_EXPECT = re.compile(r"#\s*expect-exit:\s*([0-9][0-9 ,|]*)")
_INLINE = re.compile(r"`([^`\n]+)`")


def load_skill(name: str) -> Skill:
    path = SKILLS_DIR / name / "SKILL.md"
    text = path.read_text(encoding="utf-8")
    match = re.match(r"---\n(.*?)\n---\n", text, re.DOTALL)
    assert match, f"{path}: no YAML frontmatter"
    skill = Skill(name, path, text, yaml.safe_load(match.group(1)) or {})
    lines = text.splitlines()
    in_block, lang, start, body = False, "", 0, []
    prose: list[tuple[str, int]] = []
    for number, line in enumerate(lines, 1):
        fence = _FENCE.match(line)
        if fence and not in_block:
            in_block, lang, start, body = True, fence.group(1).lower(), number, []
        elif fence and in_block and not fence.group(1):
            code = "\n".join(body)
            block = Block(name, lang, code, start)
            expect = _EXPECT.search(code)
            if expect:
                block.expect = frozenset(int(x) for x in re.findall(r"\d+", expect.group(1)))
            block.optional = bool(re.search(r"#\s*optional:", code))
            block.example_only = bool(re.search(r"#\s*example-only:", code))
            block.writer_step = bool(re.search(r"#\s*writer-step:", code))
            skill.blocks.append(block)
            in_block = False
        elif in_block:
            body.append(line)
        else:
            prose.append((line, number))
    assert not in_block, f"{path}: unclosed code fence opened at line {start}"
    skill.inline = [(m.group(1), number) for line, number in prose for m in _INLINE.finditer(line)]
    return skill


@pytest.fixture(scope="module")
def skills() -> dict[str, Skill]:
    return {name: load_skill(name) for name in SKILL_NAMES}


# -- finding vaulteval invocations -------------------------------------------

_COMMAND_START = {None, ";", "&&", "||", "|", "&", "(", ")", ";;", "{", "}", "!", "then", "do", "else", "elif", "if",
                  "while", "until", "time", "$", "$("}
_STOP = {";", "&&", "||", "|", "&", "(", ")", ";;", ">", ">>", "<", "<<", ">&", "2>", "&>", "}"}
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def logical_lines(code: str) -> list[str]:
    return code.replace("\\\n", " ").splitlines()


def tokens_of(line: str) -> list[str]:
    lex = shlex.shlex(line, posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    return list(lex)


def is_program(token: str) -> bool:
    if _ASSIGNMENT.match(token):
        return False
    return token in ("$VAULTEVAL", "${VAULTEVAL}", "vaulteval") or token.endswith("/vaulteval")


def invocations(text: str) -> list[list[str]]:
    """Each vaulteval command in ``text`` (shell code), as its tokens after the program name.

    The first element of each list is the program token itself.
    """
    found = []
    for line in logical_lines(text):
        toks = tokens_of(line)
        prev = None
        for i, tok in enumerate(toks):
            if is_program(tok) and (prev in _COMMAND_START or (prev is not None and _ASSIGNMENT.match(prev))):
                args = []
                for t in toks[i + 1:]:
                    if t in _STOP:
                        break
                    args.append(t)
                found.append([tok, *args])
            prev = tok
    return found


def _subparsers(parser: argparse.ArgumentParser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return None


def _options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {opt: a for a in parser._actions for opt in a.option_strings}


def _placeholder(token: str) -> bool:
    return "$" in token or token.isupper() or token[:1] in "[<{" or token.endswith("...")


def walk(args: list[str]) -> tuple[tuple[str, ...], set[str], list[str]]:
    """Walk an invocation through the real parser: (subcommand path, flags used, problems)."""
    parser: argparse.ArgumentParser = build_parser()
    path: list[str] = []
    flags: set[str] = set()
    problems: list[str] = []
    i = 0
    while i < len(args):
        tok = args[i]
        if tok == "--":
            break
        if tok.startswith("-") and len(tok) > 1 and not re.fullmatch(r"-?\d+(\.\d+)?", tok):
            name = tok.split("=", 1)[0]
            opts = _options(parser)
            if name not in opts:
                problems.append(f"`vaulteval {' '.join(path)}` has no option {name}")
            else:
                flags.add(name)
                action = opts[name]
                if "=" not in tok and action.nargs != 0:
                    if action.nargs in ("+", "*"):
                        while i + 1 < len(args) and not args[i + 1].startswith("-"):
                            i += 1
                    else:
                        i += 1
            i += 1
            continue
        sub = _subparsers(parser)
        if sub is not None:
            if tok in sub.choices:
                parser = sub.choices[tok]
                path.append(tok)
            elif not _placeholder(tok):
                problems.append(f"`vaulteval {' '.join(path)}` has no subcommand {tok!r} "
                                f"(known: {', '.join(sub.choices)})")
                break
        i += 1
    return tuple(path), flags, problems


def parse_strictly(args: list[str]) -> str | None:
    """Parse an invocation (variables replaced by sample values) with the real parser; the error, if any."""
    values = {"$TOP": "5", "$BM25_TOP": "20"}
    argv = [values.get(a, "x") if "$" in a else a for a in args]
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            build_parser().parse_args(argv)
    except SystemExit as exc:
        if exc.code not in (0, None):
            return err.getvalue().strip() or f"exit {exc.code}"
    return None


def json_kind(path: tuple[str, ...], flags: set[str]) -> str | None:
    """What JSON an invocation prints on success, or None when it prints text."""
    if path == ("retrieve",):
        return "retrieve"
    if path == ("rerank",):
        return "peek" if "--peek" in flags else "retrieve"
    if path in (("prefix",), ("provision",), ("index", "build"), ("index", "stats"), ("index", "query"),
                ("import", "beir")):
        return "json"
    if path in (("doctor",), ("bench",)) and "--json" in flags:
        return "doctor" if path == ("doctor",) else "json"
    if path in (("read",), ("search",), ("ledgers",)) and "--json" in flags:
        return path[0]
    return None


def block_invocations(block: Block) -> list[tuple[list[str], tuple[str, ...], set[str]]]:
    out = []
    for inv in invocations(block.code):
        path, flags, _ = walk(inv[1:])
        out.append((inv, path, flags))
    return out


# -- running skills ----------------------------------------------------------

WRAPPER = r"""
__state="$1"; __block="$2"
if [ -s "$__state" ]; then source "$__state"; fi
__save() {
  local __rc=$? __v
  {
    for __v in $(compgen -v); do
      case "$__v" in
        BASH*|_*|PIPESTATUS|SHELLOPTS|BASHOPTS|EUID|PPID|UID|GROUPS|FUNCNAME|LINENO|RANDOM|SRANDOM|SECONDS) continue ;;
        EPOCH*|HIST*|COMP*|OPT*|DIRSTACK|COLUMNS|LINES|IFS|PS1|PS2|PS4|PWD|OLDPWD|SHLVL|HOSTNAME|HOSTTYPE) continue ;;
        MACHTYPE|OSTYPE|MAILCHECK|READLINE*) continue ;;
      esac
      declare -p "$__v" 2>/dev/null || true
    done
    declare -f
  } > "$__state.tmp" && mv -f "$__state.tmp" "$__state"
  exit "$__rc"
}
trap __save EXIT
set -eu -o pipefail
source "$__block"
"""


@dataclass
class Outcome:
    block: Block
    rc: int
    stdout: str
    stderr: str
    data: object = None
    kind: str | None = None

    def describe(self) -> str:
        return (f"{self.block.where} exited {self.rc} (expected {sorted(self.block.expect)})\n"
                f"--- block ---\n{self.block.code}\n--- stdout ---\n{self.stdout[-3000:]}\n"
                f"--- stderr ---\n{self.stderr[-3000:]}")


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Runner:
    """Runs the shell blocks of one skill in order, carrying variables between them."""

    def __init__(self, tmp: Path, skill_dir: Path, inputs: dict[str, str], path_env: str | None = None):
        self.tmp = tmp
        self.state = tmp / "state.sh"
        self.wrapper = tmp / "wrapper.sh"
        self.wrapper.write_text(WRAPPER)
        self.cwd = tmp / "cwd"  # neither the vault nor the product: skills must not depend on it
        self.cwd.mkdir(exist_ok=True)
        home = tmp / "home"
        home.mkdir(exist_ok=True)
        env = {k: v for k, v in os.environ.items() if k not in SCRUB}
        env.update(HOME=str(home), VAULTEVAL_CACHE=str(tmp / "cache"), OLLAMA_HOST=f"http://127.0.0.1:{closed_port()}",
                   HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONDONTWRITEBYTECODE="1")
        if path_env is not None:
            env["PATH"] = path_env
        self.env = env
        self.count = 0
        self.set(SKILL_DIR=str(skill_dir), **inputs)

    def set(self, **values: str) -> None:
        with self.state.open("a") as fh:
            for key, value in values.items():
                fh.write(f"export {key}={shlex.quote(value)}\n")

    def var(self, name: str) -> str | None:
        proc = subprocess.run(["bash", "-c", f'source "$1"; printf %s "${{{name}-}}"', "_", str(self.state)],
                              capture_output=True, text=True, env=self.env, timeout=30)
        return proc.stdout if proc.returncode == 0 else None

    def run(self, block: Block) -> Outcome:
        self.count += 1
        script = self.tmp / f"block-{self.count:02d}.sh"
        script.write_text(block.code + "\n")
        proc = subprocess.run(["bash", str(self.wrapper), str(self.state), str(script)], cwd=self.cwd, env=self.env,
                              capture_output=True, text=True, timeout=120)
        return Outcome(block, proc.returncode, proc.stdout, proc.stderr)


def check_retrieve(data: object, vault: Path, args: list[str], where: str) -> None:
    assert isinstance(data, dict), where
    explained = "--explain" in args or args[1:2] == ["rerank"]
    assert set(data) == RETRIEVE_KEYS | ({"explain"} if explained else set()), f"{where}: keys {sorted(data)}"
    assert isinstance(data["query"], str) and isinstance(data["strategy"], str), where
    assert set(data["pipeline"]) == {"text", "source"} and data["pipeline"]["text"], where  # what ran, and why
    assert isinstance(data["top_k"], int) and 1 <= data["top_k"] <= 1000, where
    cands = data["candidates"]
    assert isinstance(cands, list) and len(cands) <= data["top_k"], where
    wiki = (vault / "wiki").resolve()
    pages = set()
    for c in cands:
        assert set(c) == CANDIDATE_KEYS, f"{where}: candidate keys {sorted(c)}"
        assert c["page_path"].startswith("wiki/") and c["page_path"].endswith(".md"), f"{where}: {c['page_path']}"
        assert ".." not in Path(c["page_path"]).parts, where
        absolute = Path(c["absolute_path"])
        assert absolute.is_absolute() and absolute.resolve() == (vault / c["page_path"]).resolve(), where
        assert absolute.resolve().is_relative_to(wiki) and absolute.is_file(), where
        assert isinstance(c["chunk_index"], int) and c["chunk_index"] >= 0, where
        assert c["chunk_id"] == f"{c['page_address']}:{c['chunk_index']}", where
        assert isinstance(c["snippet"], str) and len(c["snippet"]) <= 200, where
        assert isinstance(c["score"], (int, float)), where
        if data["label"]["reranker"] is None:  # BM25 order: scores never mixed with cosines
            assert c["score"] == c["scores"]["bm25"] and set(c["scores"]) == {"bm25"}, where
        else:
            assert c["score"] == c["scores"]["rerank"], where
        pages.add(c["page_path"])
    assert len(pages) == len(cands), f"{where}: candidates are not deduplicated by page"
    scores = [c["score"] for c in cands]
    assert scores == sorted(scores, reverse=True), f"{where}: candidates out of order"
    if "--no-rerank" in args:
        assert data["strategy"] == "bm25-only", where
        assert all(c["rerank_source"] == "skipped" for c in cands), where
    if explained:
        ex = data["explain"]
        assert EXPLAIN_KEYS <= set(ex), f"{where}: explain keys {sorted(ex)}"
        assert isinstance(ex["stale_candidates_skipped"], int) and ex["stale_candidates_skipped"] >= 0, where
        assert ex["deduped_count"] >= len(cands), where


def run_skill(skill: Skill, runner: Runner, vault: Path, writer=None) -> list[Outcome]:
    """Run every runnable block in order; check exit codes and JSON output of each. After a ``# writer-step:``
    block, ``writer(runner)`` does what the agent does there (writes the questions)."""
    outcomes = []
    for block in skill.shell_blocks():
        if not block.runnable:
            continue
        out = runner.run(block)
        assert out.rc in block.expect, out.describe()
        emitting = [(inv, path, flags) for inv, path, flags in block_invocations(block) if json_kind(path, flags)]
        assert len(emitting) <= 1, f"{block.where}: one JSON-printing vaulteval command per block"
        if emitting and out.rc == 0:
            inv, path, flags = emitting[0]
            out.kind = json_kind(path, flags)
            try:
                out.data = json.loads(out.stdout)
            except json.JSONDecodeError as exc:
                pytest.fail(f"{block.where}: stdout is not JSON ({exc})\n{out.describe()}")
            if out.kind == "retrieve":
                check_retrieve(out.data, vault, inv, block.where)
                if out.data["candidates"]:
                    runner.set(PAGE=out.data["candidates"][0]["page_path"])
            elif out.kind == "peek":
                assert {"backend", "model", "reachable", "error"} <= set(out.data), block.where
                assert out.data["reachable"] is False, f"{block.where}: the test's Ollama host must be unreachable"
            elif out.kind == "doctor":
                assert out.data["state"] in ("available", "configured", "verified", "degraded"), block.where
        if block.writer_step:
            assert writer is not None, f"{block.where}: a writer step needs the test's writer"
            writer(runner)
        outcomes.append(out)
    return outcomes


def outcomes_for(outcomes: list[Outcome], subcommand: tuple[str, ...]) -> list[Outcome]:
    return [o for o in outcomes if any(path == subcommand for _, path, _ in block_invocations(o.block))]


def snapshot(root: Path) -> dict[str, tuple]:
    """Every entry under root (notes, .vault-meta, markers): kind and content hash or link target."""
    state: dict[str, tuple] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            p = Path(dirpath, name)
            rel = str(p.relative_to(root))
            if p.is_symlink():
                state[rel] = ("link", os.readlink(p))
            elif p.is_dir():
                state[rel] = ("dir",)
            else:
                state[rel] = ("file", hashlib.sha256(p.read_bytes()).hexdigest())
    return state


def queryset_path() -> Path:
    for candidate in (REPO / "querysets" / "sample-vault.yaml",
                      REPO / "vaulteval" / "data" / "querysets" / "sample-vault.yaml"):
        if candidate.is_file():
            return candidate
    pytest.fail("no sample query set found")


def provision(vault: Path) -> None:
    subprocess.run([str(VENV_BIN / "vaulteval"), "provision", "--vault", str(vault), "--no-llm"], check=True,
                   capture_output=True, env={k: v for k, v in os.environ.items() if k not in SCRUB})


def make_runner(tmp: Path, skill: str, vault: Path, **extra: str) -> Runner:
    inputs = dict(VAULT=str(vault), QUERY=QUERY, KEYWORD=KEYWORD, PAGE="wiki/index.md",
                  QUERYSET=str(queryset_path()), RUNS=str(tmp / "runs"), RUN_ID="skilltest")
    inputs.update(extra)
    return Runner(tmp, SKILLS_DIR / skill, inputs)


# -- static checks -----------------------------------------------------------

@pytest.mark.parametrize("name", SKILL_NAMES)
def test_frontmatter_names_triggers_and_limits(skills, name):
    fm = skills[name].frontmatter
    assert fm.get("name") == name
    description = " ".join(str(fm.get("description", "")).split())
    assert 100 < len(description) <= 1024
    for phrase in TRIGGERS[name]:
        assert phrase in description, f"{name}: trigger {phrase!r} missing from the description"
    assert "Do not use" in description, f"{name}: the description must say when not to use the skill"


@pytest.mark.parametrize("name", SKILL_NAMES)
def test_product_is_resolved_from_the_skill_location(skills, name):
    first = skills[name].shell_blocks()[0]
    assert first.runnable
    code = first.code
    assert '"${SKILL_DIR:?' in code
    assert 'PRODUCT_ROOT="$(cd "$SKILL_DIR/../.." && pwd -P)"' in code
    assert 'VAULTEVAL="$PRODUCT_ROOT/.venv/bin/vaulteval"' in code
    assert "$PWD" not in code and "git " not in code
    for block in skills[name].shell_blocks()[1:]:
        assert "PRODUCT_ROOT=" not in block.code and "VAULTEVAL=" not in block.code, block.where


@pytest.mark.parametrize("name", SKILL_NAMES)
def test_every_vaulteval_command_and_flag_exists(skills, name):
    skill = skills[name]
    problems = []
    seen = 0
    for block in skill.blocks:
        if block.lang not in ("sh", "bash"):
            continue
        for inv in invocations(block.code):
            seen += 1
            _, _, found = walk(inv[1:])
            problems += [f"{block.where}: {p}" for p in found]
            if not found:
                error = parse_strictly(inv[1:])
                if error:
                    problems.append(f"{block.where}: {' '.join(inv)}: {error}")
    for span, line in skill.inline:
        if "vaulteval" in span or "$VAULTEVAL" in span:
            try:
                invs = invocations(span)
            except ValueError as exc:
                problems.append(f"skills/{name}/SKILL.md:{line}: cannot read `{span}` as shell: {exc}")
                continue
            for inv in invs:
                seen += 1
                problems += [f"skills/{name}/SKILL.md:{line}: {p}" for p in walk(inv[1:])[2]]
        elif span.startswith("--"):
            flag = span.split()[0].split("=")[0]
            if not any(flag in _options(p) for p in all_parsers()):
                problems.append(f"skills/{name}/SKILL.md:{line}: no vaulteval command has {flag}")
    assert seen >= 3, f"{name}: found only {seen} vaulteval commands"
    assert not problems, "\n".join(problems)


def all_parsers() -> list[argparse.ArgumentParser]:
    out, todo = [], [build_parser()]
    while todo:
        p = todo.pop()
        out.append(p)
        sub = _subparsers(p)
        if sub is not None:
            todo.extend(sub.choices.values())
    return out


@pytest.mark.parametrize("name", SKILL_NAMES)
def test_runnable_blocks_use_the_resolved_binary_and_an_explicit_vault(skills, name):
    problems = []
    for block in skills[name].shell_blocks():
        if not block.runnable:
            continue
        for inv, path, flags in block_invocations(block):
            if inv[0] not in ("$VAULTEVAL", "${VAULTEVAL}"):
                problems.append(f"{block.where}: call \"$VAULTEVAL\", not {inv[0]}")
            if path and "--vault" in _options(parser_for(path)) and "--vault" not in flags:
                problems.append(f"{block.where}: `{' '.join(path)}` without --vault")
    assert not problems, "\n".join(problems)


def parser_for(path: tuple[str, ...]) -> argparse.ArgumentParser:
    parser = build_parser()
    for name in path:
        parser = _subparsers(parser).choices[name]
    return parser


@pytest.mark.parametrize("name", SKILL_NAMES)
def test_privacy_and_network_stay_opt_in(skills, name):
    problems = []
    for block in skills[name].shell_blocks():
        for inv, path, flags in block_invocations(block):
            if block.runnable and flags & set(PRIVACY_FLAGS):
                problems.append(f"{block.where}: {sorted(flags & set(PRIVACY_FLAGS))} outside an example-only block")
            if block.runnable and "--prefix-tier" in flags and not block.example_only:
                problems.append(f"{block.where}: LLM prefix tiers only in example-only blocks")
            reranks = (path == ("retrieve",) and "--no-rerank" not in flags) or (
                path == ("rerank",) and "--peek" not in flags)
            if reranks and not (block.optional or block.example_only):
                problems.append(f"{block.where}: a rerank must be marked optional (or use rerank --peek)")
            strategies = [inv[i + 1] for i, t in enumerate(inv[:-1]) if t == "--strategy"]
            if any(s.startswith("rerank") for s in strategies) and not (block.optional or block.example_only):
                problems.append(f"{block.where}: a rerank strategy must be marked optional")
    assert not problems, "\n".join(problems)


def test_wiki_query_commands_are_read_only_by_construction(skills):
    allowed = {("doctor",), ("retrieve",), ("index", "stats"), ("index", "query"), ("rerank",), ("read",), ("search",),
               ("ledgers",), ()}
    for block in skills["wiki-query"].shell_blocks():
        assert not re.search(r"(^|[^0-9&])>(?!&)", block.code.replace("2>", "")), f"{block.where}: no redirections"
        assert not re.search(r"\b(rm|mv|cp|touch|mkdir|tee|sed -i|ln)\b", block.code), block.where
        # Notes are opened and searched only through vaulteval's confined commands.
        assert not re.search(r"\b(cat|grep|rg|head|tail|less|find)\b", block.code), f"{block.where}: use read/search"
        for inv, path, flags in block_invocations(block):
            assert path in allowed, f"{block.where}: wiki-query may not run `{' '.join(path)}`"
            if path == ("rerank",):
                assert "--peek" in flags, block.where


SEED_SHINGLES = Path(__file__).with_name("data") / "seed_shingles.txt"


def _shingles(text: str, n: int = 9) -> set[str]:
    """Hashes of the text's 9-word shingles (lowercase words), as stored in data/seed_shingles.txt."""
    words = re.findall(r"[a-z0-9']+", text.lower())
    return {hashlib.sha256(" ".join(words[i:i + n]).encode()).hexdigest()[:12] for i in range(len(words) - n + 1)}


def seed_shingle_hashes() -> set[str]:
    """The stored fingerprints of the seed documents; the seeds themselves are not needed."""
    lines = SEED_SHINGLES.read_text(encoding="utf-8").splitlines()
    return {line for line in lines if line and not line.startswith("#")}


def test_stored_seed_fingerprints_match_the_seeds() -> None:
    stored = seed_shingle_hashes()
    assert len(stored) > 2000
    if SEEDS_DIR.is_dir():  # where the seeds are at hand, the stored hashes must be exactly theirs
        seeds = set().union(*(_shingles(p.read_text(encoding="utf-8", errors="replace"))
                              for p in sorted(SEEDS_DIR.glob("*.txt"))))
        assert stored == seeds


@pytest.mark.parametrize("name", SKILL_NAMES)
def test_skills_are_written_in_our_own_words(skills, name):
    # Prose only: commands necessarily echo the seed's command-line interface.
    prose = re.sub(r"```.*?```", " ", skills[name].text, flags=re.DOTALL)
    prose = _INLINE.sub(" ", prose)
    common = _shingles(prose) & seed_shingle_hashes()
    assert not common, f"{name} repeats {len(common)} nine-word runs of the seed text"


# -- running the skills ------------------------------------------------------

def test_wiki_retrieve_provisions_queries_and_measures(skills, tmp_path):
    vault = copy_sample(tmp_path / "vault")
    notes_before = snapshot(vault / "wiki")
    runner = make_runner(tmp_path, "wiki-retrieve", vault)
    outcomes = run_skill(skills["wiki-retrieve"], runner, vault)

    assert runner.var("VAULTEVAL") == str(REPO / ".venv" / "bin" / "vaulteval")
    doctors = [o.rc for o in outcomes_for(outcomes, ("doctor",)) if o.kind is None]
    assert doctors[0] == 1 and doctors[-1] == 0, "doctor: not verified before provisioning, verified after"
    peek = outcomes_for(outcomes, ("prefix",))[0]
    assert peek.data["peek"] is True and peek.data["tier"] == "synthetic"
    assert (vault / META_REL / "bm25" / "index.vti").is_file()

    retrieved = [o for o in outcomes if o.kind == "retrieve"]
    plain = next(o for o in retrieved if not o.block.optional)
    assert DESCALING in [c["page_path"] for c in plain.data["candidates"]]
    reranked = next(o for o in retrieved if o.block.optional)
    assert reranked.data["label"]["reranker"] is None, "a dead embedding server must fall back"
    assert [f["stage"] for f in reranked.data["label"]["fallbacks"]] == ["rerank"]
    assert all(c["rerank_source"] != "skipped" for c in reranked.data["candidates"])

    run_dirs = list((tmp_path / "runs").iterdir())
    assert len(run_dirs) == 1 and (run_dirs[0] / "manifest.json").is_file()
    assert "cause" in (run_dirs[0] / "misses.csv").read_text().splitlines()[0]
    assert snapshot(vault / "wiki") == notes_before, "provisioning must never touch the notes"


@pytest.mark.parametrize("state, depth", [("verified", "standard"), ("verified", "quick"), ("verified", "deep"),
                                          ("unprovisioned", "standard"), ("stale", "standard")])
def test_wiki_query_answers_without_changing_the_vault(skills, tmp_path, state, depth):
    vault = copy_sample(tmp_path / "vault")
    if state != "unprovisioned":
        provision(vault)
    if state == "stale":
        with (vault / DESCALING).open("a", encoding="utf-8") as fh:
            fh.write("\nEdited after the index was built: descale every two months.\n")
    before = snapshot(vault)
    runner = make_runner(tmp_path, "wiki-query", vault, DEPTH=depth)
    outcomes = run_skill(skills["wiki-query"], runner, vault)
    assert snapshot(vault) == before, "wiki-query changed the vault"

    doctor = outcomes_for(outcomes, ("doctor",))[0]
    retrieve = outcomes_for(outcomes, ("retrieve",))[0]
    search = outcomes_for(outcomes, ("search",))[0]
    assert search.rc == 0 and f"{DESCALING}:" in search.stdout
    ledgers = next(o for o in outcomes if o.kind == "ledgers")
    assert ledgers.data["status"] == "ok" and ledgers.data["summary"]["claims"] == 4
    assert [o.rc for o in outcomes_for(outcomes, ("read",)) if "[[" in o.block.code] == [0, 0]  # hot, index
    if state == "verified":
        assert doctor.rc == 0 and retrieve.rc == 0
        assert retrieve.data["top_k"] == DEPTH_TOP[depth]
        assert retrieve.data["candidates"], "the sample vault answers this query"
        page = retrieve.data["candidates"][0]["page_path"]
        reader = next(o for o in outcomes if o.kind == "read")
        assert reader.data["page_path"] == page and reader.data["headings"]
        assert reader.data["text"] in (vault / page).read_text(encoding="utf-8")
    elif state == "unprovisioned":
        assert doctor.rc == 1 and retrieve.rc == 10
        assert f"vaulteval provision --vault {vault}" in retrieve.stderr
    else:
        assert doctor.rc == 1 and retrieve.rc == 0
        assert retrieve.data["explain"]["stale_candidates_skipped"] >= 1
        assert DESCALING not in [c["page_path"] for c in retrieve.data["candidates"]]


def test_read_refuses_paths_outside_the_notes(skills, tmp_path):
    vault = copy_sample(tmp_path / "vault")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("not a note\n")
    (vault / "wiki" / "escape.md").symlink_to(outside / "secret.md")
    (vault / "wiki" / "elsewhere").symlink_to(outside, target_is_directory=True)
    runner = make_runner(tmp_path, "wiki-query", vault)
    setup = skills["wiki-query"].shell_blocks()[0]
    assert runner.run(setup).rc == 0

    def check(path: str) -> int:
        return runner.run(Block("wiki-query", "sh", f'"$VAULTEVAL" read --vault "$VAULT" {shlex.quote(path)} --json',
                                0)).rc

    assert check(DESCALING) == 0
    assert check("wiki/travel/京都の紅葉.md") == 0
    for bad in ("/etc/passwd", str(vault / DESCALING), "../outside/secret.md", "wiki/../.vaulteval.json",
                "wiki/howto/../../.vaulteval.json", ".vault-meta/chunk-catalog.json", "wiki/escape.md",
                "wiki/elsewhere/secret.md", "wiki/howto", "wiki/no such page.md", ""):
        assert check(bad) in (2, 3), f"read accepted {bad!r}"


def write_questions(runner: Runner) -> None:
    """The agent's part of the written path: one question per note from words of its text (not its title), a
    question no note answers, and the writer."""
    path = Path(runner.var("WORKSHEET") or "")
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert data["task"].splitlines()[0].startswith("Write questions") and data["notes"]
    for note in data["notes"]:
        title = {w.casefold() for w in re.findall(r"\w+", note["title"])}
        words = [w.lower() for w in re.findall(r"[A-Za-z]{5,}", note["text"]) if w.casefold() not in title]
        picked = list(dict.fromkeys(words))[:3]
        if note["language"] == "en" and picked:
            note["questions"] = [f"What should I know about {' and '.join(picked)} when I use this?"]
    data["unanswerable"] = ["How do I renew a passport at the embassy in Lima?"]
    data["writer"] = "agent"
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")


def test_wiki_eval_measures_verifies_and_compares_read_only(skills, tmp_path):
    vault = copy_sample(tmp_path / "vault")
    provision(vault)
    before = snapshot(vault)
    runner = make_runner(tmp_path, "wiki-eval", vault)
    outcomes = run_skill(skills["wiki-eval"], runner, vault, writer=write_questions)
    assert snapshot(vault) == before, "evaluation must not write into the vault"

    runs = tmp_path / "runs"
    names = sorted(p.name for p in runs.iterdir())
    assert names == ["skilltest-after", "skilltest-analyzers", "skilltest-baseline", "skilltest-rerank",
                     "skilltest-written", "written-skilltest"]
    for name in names[:-1]:
        assert (runs / name / "manifest.json").is_file()
    written = sorted(p.name for p in (runs / "written-skilltest").iterdir())
    assert written == ["worksheet.yaml", "written.yaml"]
    tuned = json.loads((runs / "skilltest-written" / "tune.json").read_text(encoding="utf-8"))
    evidence = tuned["decision"]["evidence"]
    assert evidence["basis"] == "questions" and set(evidence["writers"]) == {"agent"}
    tune_out = outcomes_for(outcomes, ("tune",))[0]
    assert "the verdict rests on" in tune_out.stderr
    # The written path is at most five commands: worksheet, add-written, tune (and the writer's own step).
    path_blocks = [o for o in outcomes if any(p in (("queryset", "worksheet"), ("queryset", "add-written"), ("tune",))
                                              for _, p, _ in block_invocations(o.block))]
    assert len(path_blocks) == 3
    verify = outcomes_for(outcomes, ("eval", "verify"))[0]
    assert verify.rc == 0 and "verified" in verify.stdout
    assert "fallback" in (runs / "skilltest-rerank" / "report.md").read_text(), "a fallen-back rerank is flagged"
    compare = outcomes_for(outcomes, ("eval", "compare"))[0]
    assert "skilltest-after" in compare.stdout


def test_wiki_eval_query_set_example_is_valid(skills, tmp_path):
    vault = copy_sample(tmp_path / "vault")
    examples = [b for b in skills["wiki-eval"].blocks if b.lang in ("yaml", "yml")]
    assert examples, "wiki-eval shows the query set format"
    for i, block in enumerate(examples):
        data = yaml.safe_load(block.code)
        assert any(q["relevant"] == {} and "negative" in q.get("tags", []) for q in data["queries"]), block.where
        path = tmp_path / f"example-{i}.yaml"
        path.write_text(block.code, encoding="utf-8")
        proc = subprocess.run([str(VENV_BIN / "vaulteval"), "queryset", "check", "--vault", str(vault), str(path)],
                              capture_output=True, text=True, env={k: v for k, v in os.environ.items() if k not in SCRUB})
        assert proc.returncode == 0, f"{block.where}: {proc.stderr}"


def test_skill_falls_back_to_vaulteval_on_path(skills, tmp_path):
    """Installed away from the checkout (no .venv two levels up), the skill uses `vaulteval` from PATH."""
    vault = copy_sample(tmp_path / "vault")
    elsewhere = tmp_path / "agent-skills" / "skills" / "wiki-query"
    elsewhere.mkdir(parents=True)
    shutil.copy(SKILLS_DIR / "wiki-query" / "SKILL.md", elsewhere)
    setup = skills["wiki-query"].shell_blocks()[0]
    system_path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep)
                                  if p and not (Path(p) / "vaulteval").exists())

    (tmp_path / "a").mkdir()
    found = Runner(tmp_path / "a", elsewhere, {"VAULT": str(vault)}, path_env=f"{VENV_BIN}{os.pathsep}{system_path}")
    assert found.run(setup).rc == 0
    assert found.var("VAULTEVAL") == str(VENV_BIN / "vaulteval")
    assert found.var("PRODUCT_ROOT") == str((tmp_path / "agent-skills").resolve())

    (tmp_path / "b").mkdir()
    missing = Runner(tmp_path / "b", elsewhere, {"VAULT": str(vault)}, path_env=system_path)
    out = missing.run(setup)
    assert out.rc != 0 and "not installed" in out.stderr

    (tmp_path / "c").mkdir()
    product = Runner(tmp_path / "c", elsewhere, {"VAULT": str(REPO)}, path_env=f"{VENV_BIN}{os.pathsep}{system_path}")
    assert product.run(setup).rc != 0, "the product checkout is not a vault"


@pytest.mark.parametrize("where", ["inside", "vault", "missing-parent"])
def test_wiki_eval_refuses_a_runs_folder_in_the_vault(skills, tmp_path, where):
    vault = copy_sample(tmp_path / "vault")
    runs = {"inside": vault / "runs", "vault": vault, "missing-parent": tmp_path / "no" / "such" / "runs"}[where]
    before = snapshot(vault)
    runner = make_runner(tmp_path, "wiki-eval", vault, RUNS=str(runs))
    out = runner.run(skills["wiki-eval"].shell_blocks()[0])
    assert out.rc != 0, out.describe()
    assert snapshot(vault) == before and not (tmp_path / "no").exists()
