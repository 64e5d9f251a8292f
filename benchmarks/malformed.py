"""How many queries of a generated set are no text a person would type? An independent check, for measurement.

Usage (from the repo root, with the venv):

    .venv/bin/python benchmarks/malformed.py q-help.yaml q-hub.yaml [--show 5]

It shares no code with the generator's filter (``querysets/generate/wellformed.py``):
its own patterns flag markup (links, URLs, HTML, comments, code, braces, tables,
tags), cut sentence edges (a function word, comma or lone letter at the end, a
connective or punctuation at the start), texts without a word, and typo
variants shorter than 5 characters. It prints, per file, the malformed share
(target: at most 1%), counts per flag and kind, the script share (target: at
most 5%) and a few examples of each flag.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

MARKUP = {
    "link": re.compile(r"\[\[|\]\]|\]\(|!\[|\[[^\]]*\]\s*$"),
    "url": re.compile(r"https?:|www\.|://|\.(com|org|io|net|md)\b|\w=\w|@\w+\.\w", re.I),
    "html": re.compile(r"<[/a-z!]|&\w+;", re.I),
    "comment": re.compile(r"%%|-->"),
    "code": re.compile(r"`|\{|\}|::|\|"),
    "tag": re.compile(r"(^|\s)#\w"),
}
FUNCTION_WORDS = set("""the a an of to for with and or but at by from as is are was were be your my our their this
that these those which who than into about via de la el los las y o en con por para que un una le les des du et
ou der die das und oder mit von""".split())
CONNECTIVES = {"and", "or", "of", "but", "nor"}


def flags(query: dict) -> list[str]:
    text = str(query.get("query", "")).strip()
    out = [name for name, pattern in MARKUP.items() if pattern.search(text)]
    words = text.split()
    last = words[-1] if words else ""
    bare = last.rstrip(".!?").lower()
    if len(words) > 1 and not text.endswith("?") and bare in FUNCTION_WORDS and last.rstrip(".!?").islower():
        out.append("ends-mid-sentence")
    if re.search(r"[,:;(\-–]$", text) or re.search(r"\s[a-z]\.$", text):
        out.append("ends-mid-sentence")
    if words and (words[0].lower() in CONNECTIVES or not re.match(r"[\w\"'“¿¡(]", text)):
        out.append("starts-mid-sentence")
    if not re.search(r"[^\W\d_]{2,}", text) and not re.search(r"[\u3040-\u9fff\uac00-\ud7af]", text):
        out.append("no-word")
    if query.get("variant") == "typo" and len(text) < 5:
        out.append("short-typo")
    return sorted(set(out))


def check(path: Path, show: int) -> None:
    import yaml

    queries = yaml.safe_load(path.read_text(encoding="utf-8"))["queries"]
    bad: dict[str, list[str]] = defaultdict(list)
    by_kind: Counter = Counter()
    n_bad = 0
    for q in queries:
        found = flags(q)
        if found:
            n_bad += 1
            by_kind[q.get("kind", "?")] += 1
        for f in found:
            bad[f].append(str(q["query"]))
    scripts = sum(1 for q in queries if q.get("kind") == "script")
    print(f"{path}: {len(queries)} queries, malformed {n_bad} ({n_bad / len(queries):.1%}); "
          f"script {scripts} ({scripts / len(queries):.1%})")
    for f, texts in sorted(bad.items()):
        print(f"  {f}: {len(texts)}   e.g. " + " | ".join(repr(t) for t in texts[:show]))
    if by_kind:
        print("  by kind: " + ", ".join(f"{k} {v}" for k, v in sorted(by_kind.items())))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("querysets", nargs="+", type=Path)
    ap.add_argument("--show", type=int, default=4)
    args = ap.parse_args()
    for path in args.querysets:
        check(path, args.show)
    return 0


if __name__ == "__main__":
    sys.exit(main())
