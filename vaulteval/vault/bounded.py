"""YAML and JSON read from disk at a cost bounded by their bytes: the one loader of every such file.

Usage::

    try:
        data = load_yaml(text)                       # or load_yaml(text, loader=MyLoader)
        data = load_json(raw)                        # bytes or text
    except Refused as exc:
        print(f"{path}:{exc.line or 1}: {exc.problem}")

YAML aliases share one node, so a few hundred bytes can name a value with
billions of items (``a1: &a1 [*a0, *a0, ...]``), and a value nested a few
thousand levels deep breaks every recursive reader after it. Before anything
is built, the event stream is walked once, without recursion: a node nested
deeper than ``MAX_DEPTH`` (aliases counted as expanded), an alias to a node
still open (a cycle) or aliases that would add more than ``ALIAS_BUDGET``
items and characters are refused. What passes is at most the text's size
plus the budget, so a reader of the value, or a message quoting it, stays
proportionate. JSON gets the same depth bound and refuses NaN and Infinity
(not JSON, and not a number any field can hold).

``yaml`` is imported on first use: the retrieve path imports this module without it.
"""

from __future__ import annotations

MAX_DEPTH = 64  # deeper than any file vaulteval reads or writes needs
ALIAS_BUDGET = 100_000  # items plus characters that aliases may add to a document
_PROBLEM_CHARS = 200  # a parser's message can quote an anchor name; it is cut here


class Refused(ValueError):
    """The text is not YAML (or JSON) vaulteval will read; ``problem`` says why, ``line`` counts from 1."""

    def __init__(self, problem: str, line: int | None = None):
        self.problem = problem if len(problem) <= _PROBLEM_CHARS else problem[:_PROBLEM_CHARS] + "…"
        self.line = line
        super().__init__(self.problem if line is None else f"line {line}: {self.problem}")


def load_yaml(text: str, *, loader: type | None = None, max_depth: int = MAX_DEPTH,
              alias_budget: int = ALIAS_BUDGET):
    """The one document in ``text``, built by ``loader`` (default: the C safe loader) once it passed the bounds."""
    import yaml

    loader = loader or getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        check_yaml_events(yaml.parse(text, Loader=loader), max_depth=max_depth, alias_budget=alias_budget)
        return yaml.load(text, Loader=loader)  # noqa: S506 - a safe loader, or a subclass of one
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or (str(exc).splitlines() or ["a parser error"])[0]
        raise Refused(f"not valid YAML: {problem}", mark.line + 1 if mark is not None else None) from None
    except (ValueError, OverflowError) as exc:  # a timestamp out of range, an integer of too many digits
        if isinstance(exc, Refused):
            raise
        raise Refused(f"holds a value YAML cannot build ({type(exc).__name__})") from None


def check_yaml_events(events, *, max_depth: int = MAX_DEPTH, alias_budget: int = ALIAS_BUDGET) -> None:
    """Walk a YAML event stream; raise Refused at the first node past the bounds (see the module's text)."""
    import yaml

    anchors: dict[str, tuple[int, int]] = {}  # anchor -> (expanded size, expanded height) of its node
    open_anchors: set[str] = set()
    stack: list[list] = []  # per open collection: [anchor, size, height of its tallest child]
    added = 0

    def close(anchor: str | None, size: int, height: int) -> None:
        if anchor is not None:
            anchors[anchor] = (size, height)
            open_anchors.discard(anchor)
        if stack:
            parent = stack[-1]
            parent[1] += size
            parent[2] = max(parent[2], height)

    for event in events:
        line = event.start_mark.line + 1 if event.start_mark is not None else None
        if isinstance(event, yaml.DocumentStartEvent):
            anchors.clear()
        elif isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            if len(stack) >= max_depth:
                raise Refused(f"nests deeper than {max_depth} levels", line)
            if event.anchor is not None:
                open_anchors.add(event.anchor)
            stack.append([event.anchor, 1, 0])
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            anchor, size, height = stack.pop()
            close(anchor, size, height + 1)
        elif isinstance(event, yaml.ScalarEvent):
            close(event.anchor, 1 + len(event.value), 1)
        elif isinstance(event, yaml.AliasEvent):
            if event.anchor in open_anchors:
                raise Refused("an alias refers to a node that contains it", line)
            if event.anchor not in anchors:
                raise Refused("an alias names no anchor defined before it", line)
            size, height = anchors[event.anchor]
            added += size
            if added > alias_budget:
                raise Refused(f"aliases expand past {alias_budget:,} items and characters", line)
            if len(stack) + height > max_depth:
                raise Refused(f"aliases nest deeper than {max_depth} levels", line)
            close(None, size, height)


def load_json(data: str | bytes, *, max_depth: int = MAX_DEPTH):
    """The JSON value in ``data``; Refused for invalid JSON, NaN, Infinity or a number past a float, or nesting
    past ``max_depth``."""
    import json

    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError:
            raise Refused("is not UTF-8 text") from None
    _check_json_depth(data, max_depth)
    try:
        return json.loads(data, parse_constant=_no_constant, parse_float=_finite)
    except json.JSONDecodeError as exc:
        raise Refused(f"not valid JSON: {exc.msg}", exc.lineno) from None
    except ValueError as exc:  # an integer of too many digits
        if isinstance(exc, Refused):
            raise
        raise Refused(f"holds a number JSON cannot hold ({type(exc).__name__})") from None


def _finite(text: str) -> float:
    import math

    value = float(text)
    if not math.isfinite(value):  # 1e999 reads as inf
        raise Refused(f"holds {text[:40]}, which is past the largest number")
    return value


def _no_constant(name: str):
    raise Refused(f"holds {name}, which is not a JSON number")


def _check_json_depth(text: str, max_depth: int) -> None:
    """Refuse brackets nested past ``max_depth``; strings are skipped whole, so a bracket in one is not counted."""
    import re

    depth = 0
    for match in re.finditer(r'"(?:[^"\\]|\\.)*+"|[\[\]{}]', text):
        token = match.group(0)
        if token in "[{":
            depth += 1
            if depth > max_depth:
                raise Refused(f"nests deeper than {max_depth} levels", text.count("\n", 0, match.start()) + 1)
        elif token in "]}":
            depth -= 1
