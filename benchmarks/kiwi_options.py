"""Kiwi options against the Korean analyzer's own set-up: CPU seconds on the tldr Korean pages, and how many
pages get other tokens (every token's form and tag, and the forms the Korean analyzer keeps).

Usage::

    mkdir -p /tmp/tldr && tar -xzf "$TLDR" -C /tmp/tldr
    .venv/bin/python benchmarks/kiwi_options.py --tldr-dir /tmp/tldr [--pages 0] \\
        [--variant 'allomorph off' '{"integrate_allomorph": false}' '{}']

A variant is a name, ``Kiwi(...)`` keyword arguments (``"attrs"``: attributes set afterwards, such as
``cutoff_threshold``) and ``tokenize(...)`` keyword arguments, as JSON. Each page is NFKC-normalized as
the analyzer does; all pages go to Kiwi in one call (its worker threads), except with ``num_workers=0``
(one call per page). CPU is the process's (all threads): on the shared machine wall time says little.
Without ``--variant`` the options measured in docs/benchmarks.md run.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import unicodedata
from pathlib import Path

DEFAULT_VARIANTS = [
    ("one call per page, num_workers=0", {"num_workers": 0}, {}),
    ("num_workers=1", {"num_workers": 1}, {}),
    ("load_default_dict=False", {"load_default_dict": False}, {}),
    ("integrate_allomorph=False", {"integrate_allomorph": False}, {}),
    ("z_coda=False", {}, {"z_coda": False}),
    ("match URL|EMAIL|SERIAL only", {}, {"match_options": 1 | 2 | 16}),
    ("cutoff_threshold=4", {"attrs": {"cutoff_threshold": 4.0}}, {}),
    ("max_unk_form_size=3", {"attrs": {"max_unk_form_size": 3}}, {}),
]


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def tokens(texts: list[str], kiwi_kw: dict, tokenize_kw: dict) -> tuple[float, list[list[tuple[str, str]]]]:
    """(CPU seconds of Kiwi's analysis, each page's (form, tag) tokens) with the analyzer's dictionaries off."""
    import kiwipiepy

    kiwi_kw = dict(kiwi_kw)
    attrs = kiwi_kw.pop("attrs", {})
    kiwi = kiwipiepy.Kiwi(**{"load_typo_dict": False, "load_multi_dict": False, **kiwi_kw})
    for name, value in attrs.items():
        setattr(kiwi, name, value)
    kiwi.tokenize("시작")  # loads the model before the clock starts
    t = cpu()
    if kiwi_kw.get("num_workers") == 0:  # Kiwi takes many texts at once only with worker threads
        analyses = [kiwi.tokenize(text, **tokenize_kw) for text in texts]
    else:
        analyses = list(kiwi.tokenize(texts, **tokenize_kw))
    spent = cpu() - t
    return spent, [[(tok.form, str(tok.tag)) for tok in analysis] for analysis in analyses]


def kept(page: list[tuple[str, str]]) -> list[str]:
    from vaulteval.index.langs.segmenters import _KO_CONTENT

    return [form for form, tag in page if tag.split("-", 1)[0] in _KO_CONTENT]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tldr-dir", required=True, help="the unpacked tldr archive (its pages.ko/ folder)")
    ap.add_argument("--pages", type=int, default=0, help="the first N Korean pages only (0: all)")
    ap.add_argument("--variant", nargs=3, action="append", metavar=("NAME", "KIWI_JSON", "TOKENIZE_JSON"))
    args = ap.parse_args()
    paths = sorted(Path(args.tldr_dir).glob("pages.ko/**/*.md"))
    texts = [unicodedata.normalize("NFKC", p.read_text("utf-8")) for p in paths if p.is_file()]
    texts = texts[:args.pages] if args.pages else texts
    variants = [(n, json.loads(k), json.loads(t)) for n, k, t in args.variant] if args.variant else DEFAULT_VARIANTS
    base_s, base = tokens(texts, {}, {})
    base_kept = [kept(page) for page in base]
    report: dict = {"pages": len(texts), "characters": sum(map(len, texts)), "analyzer's set-up (CPU s)": round(base_s, 2)}
    for name, kiwi_kw, tokenize_kw in variants:
        spent, pages = tokens(texts, kiwi_kw, tokenize_kw)
        report[name] = {"cpu_s": round(spent, 2),
                        "pages with other tokens": sum(a != b for a, b in zip(pages, base)),
                        "pages with other kept forms": sum(kept(a) != b for a, b in zip(pages, base_kept))}
        print(name, report[name], file=sys.stderr, flush=True)
    print(json.dumps(report, ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
