"""Where ``analyzer=auto``'s build time goes on the tldr pages: CPU seconds of identifying every page, of
analyzing the pages of each language with its analyzer, and of the ``default`` tokenizer on the same
pages, in one process.

Usage::

    mkdir -p /tmp/tldr && tar -xzf "$TLDR" -C /tmp/tldr
    .venv/bin/python benchmarks/languages_parts.py --tldr-dir /tmp/tldr [--top 10]

Each page is one text (a tldr page is one chunk but for a few), read as UTF-8. Loading a model or
dictionary is timed apart (``load``), the first text of each language being analyzed once before
the clock starts. This is the budget ``languages_cost.py``'s provision ratio is made of: whatever
``auto`` spends beyond ``default`` is here, the rest of provisioning (chunking, records, index
files) being the same for both.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
from collections import defaultdict
from pathlib import Path


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tldr-dir", required=True, help="the unpacked tldr archive (its pages*/ folders)")
    ap.add_argument("--top", type=int, default=10, help="languages to list, costliest first")
    args = ap.parse_args()
    from vaulteval.index.langs.identify import identifier, identify
    from vaulteval.index.langs.registry import code_analyzer
    from vaulteval.index.tokenize import get_analyzer

    texts = [p.read_text("utf-8") for p in sorted(Path(args.tldr_dir).glob("pages*/**/*.md")) if p.is_file()]
    report: dict = {"pages": len(texts), "load_s": {}}
    t = cpu()
    identifier()
    report["load_s"]["py3langid"] = round(cpu() - t, 2)
    t = cpu()
    codes = [identify(text) for text in texts]
    report["identify_s"] = round(cpu() - t, 2)
    by_code: dict[str, list[str]] = defaultdict(list)
    for code, text in zip(codes, texts):
        by_code[code].append(text)
    per_language = {}
    for code, group in by_code.items():
        analyze = code_analyzer(code)
        t = cpu()
        analyze(group[0])
        report["load_s"][code] = round(cpu() - t, 2)
        t = cpu()
        for text in group:
            analyze(text)
        per_language[code] = (len(group), round(cpu() - t, 2))
    report["analyze_s"] = round(sum(s for _, s in per_language.values()), 2)
    report["costliest (pages, s)"] = dict(sorted(per_language.items(), key=lambda kv: -kv[1][1])[:args.top])
    report["load_s"] = {k: v for k, v in sorted(report["load_s"].items(), key=lambda kv: -kv[1]) if v >= 0.05}
    default = get_analyzer("default")
    t = cpu()
    for text in texts:
        default(text, bounded=False)
    report["default_analyze_s"] = round(cpu() - t, 2)
    print(json.dumps(report, ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
