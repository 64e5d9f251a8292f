"""Execute every bundled notebook on a vault, render it with nbconvert, screenshot it in headless Chromium.

Usage::

    python benchmarks/notebook_check.py --out runs/notebook-check                       # the sample vault
    python benchmarks/notebook_check.py --vault ~/help --queryset q.yaml --out runs/nc    # any vault
    make notebook-check                                                                  # the sample vault

Needs Chromium (the Debian package): ``sudo apt-get install chromium``; ``--chromium PATH`` names
another binary. For each notebook the run folder gets ``<name>.ipynb`` (executed), ``<name>.html``
(nbconvert) and ``<name>.png`` (a 1400 px wide screenshot of the whole page), so a person can look.
The check fails (exit 1, one line per problem) when a page shows a traceback or an error output,
a NaN / None / <NA> in a table cell or in text, or a table wider than the page (measured in the
browser after layout, through a small script that writes the widest table's width into the title).
Only tables are measured: a long code line may scroll, a table of results may not.

The first screen of ``evaluate`` and ``tune`` (WIDTH x FIRST_SCREEN px, also saved as
``<name>.first.png``) must show the headline's first line, naming the best strategy (the one the
ranking puts first) with its mean and interval. Every printed comparison is read back as a person
reads it (``procedure.printed_contradictions``): in every notebook's output, in the report.md and
headline of an ``eval run`` on the same vault, and in the report.md of the tune run; a
contradictory line is a problem.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WIDTH = 1400
FIRST_SCREEN = 900
ANSWERS = ("evaluate", "tune")  # notebooks whose first screen must name the best strategy and its interval
BEST = re.compile(r"^best for .+?: (?P<run>\S+?)(?: \(the default\))?,(?: held-out)? \S+ \d\.\d{3} "
                  r"\[\d\.\d{3}, \d\.\d{3}\]")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars"]
# A missing value shown as text, in a table cell or in printed output (not in prose or code).
MISSING = re.compile(r"<td[^>]*>\s*(NaN|nan|None|&lt;NA&gt;|<NA>)\s*</td>|(?<![\w-])(NaN|&lt;NA&gt;)(?![\w-])")
MEASURE = """<script>window.addEventListener('load', () => {
  const page = document.documentElement.clientWidth;
  let widest = 0;
  document.querySelectorAll('.jp-OutputArea-output table, .output_area table').forEach(t => {
    widest = Math.max(widest, t.getBoundingClientRect().right);
  });
  const best = [...document.querySelectorAll('.vaulteval-headline p')].find(p => p.textContent.startsWith('best'));
  const first = [...document.querySelectorAll('.vaulteval-headline p')].find(p => /^1\. /.test(p.textContent));
  document.body.setAttribute('data-best', best ? best.textContent : '');
  document.body.setAttribute('data-best-bottom', best ? Math.ceil(best.getBoundingClientRect().bottom) : -1);
  document.body.setAttribute('data-first-ranked', first ? first.textContent : '');
  document.title = 'WIDTH ' + Math.ceil(widest) + ' PAGE ' + page + ' HEIGHT ' + document.documentElement.scrollHeight;
});</script>"""


def chromium(path: str | None) -> str:
    found = path or shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if not found:
        sys.exit("notebook-check: no Chromium found; install it with `sudo apt-get install chromium` "
                 "(Debian/Ubuntu) or pass --chromium PATH")
    return found


def outputs_html(nb_path: Path) -> list[str]:
    """Problems in the executed notebook itself: error outputs, stderr tracebacks."""
    nb = json.loads(nb_path.read_text(encoding="utf-8"))
    problems = []
    for i, cell in enumerate(nb.get("cells", [])):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                problems.append(f"cell {i}: error output {out.get('ename')}: {out.get('evalue', '')[:120]}")
            if "Traceback (most recent call last)" in "".join(out.get("text", "")):
                problems.append(f"cell {i}: a traceback in its output")
    return problems


def output_text(nb_path: Path) -> str:
    nb = json.loads(nb_path.read_text(encoding="utf-8"))
    parts = []
    for cell in nb.get("cells", []):
        for out in cell.get("outputs", []):
            parts.append("".join(out.get("text", "")))
            data = out.get("data", {})
            parts.append("".join(data.get("text/html", "")) if "text/html" in data else "".join(data.get("text/plain", "")))
    return "\n".join(parts)


def render(nb_path: Path) -> Path:
    """nbconvert's HTML of the executed notebook. The saved widget state is left out of the copy rendered, so
    a widget shows its static HTML form (the grader's card) instead of a view that needs a live kernel."""
    html = nb_path.with_suffix(".html")
    nb = json.loads(nb_path.read_text(encoding="utf-8"))
    nb.get("metadata", {}).pop("widgets", None)
    static = nb_path.with_name(f".{nb_path.stem}.static.ipynb")
    static.write_text(json.dumps(nb), encoding="utf-8")
    try:
        subprocess.run([sys.executable, "-m", "nbconvert", "--to", "html", "--log-level", "ERROR",
                        "--output", html.stem, "--output-dir", str(html.parent), str(static)],
                       check=True, capture_output=True)
    finally:
        static.unlink(missing_ok=True)
    text = html.read_text(encoding="utf-8")
    html.write_text(text.replace("</body>", MEASURE + "</body>", 1), encoding="utf-8")
    return html


def browse(binary: str, html: Path, png: Path) -> tuple[int, int, dict[str, str]]:
    """Screenshot ``html`` at WIDTH px (full page height, and the first WIDTH x FIRST_SCREEN screen as
    ``<name>.first.png``); return the widest table's right edge, the page width and the headline's best line
    (``best``, its ``bottom`` in px, and the ranking's ``first`` line)."""
    import html as entities

    with tempfile.TemporaryDirectory(prefix="vaulteval-chromium-") as profile:
        base = [binary, *FLAGS, f"--user-data-dir={profile}", f"--window-size={WIDTH},{FIRST_SCREEN}"]
        dom = subprocess.run([*base, "--virtual-time-budget=5000", "--dump-dom", html.as_uri()],
                             capture_output=True, text=True, timeout=180).stdout
        m = re.search(r"<title>WIDTH (\d+) PAGE (\d+) HEIGHT (\d+)</title>", dom)
        widest, page, height = (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else (-1, WIDTH, 1000)
        subprocess.run([*base[:-1], f"--window-size={WIDTH},{max(height, FIRST_SCREEN)}", f"--screenshot={png}",
                        html.as_uri()], capture_output=True, timeout=180)
        subprocess.run([*base, f"--screenshot={png.with_suffix('.first.png')}", html.as_uri()],
                       capture_output=True, timeout=180)
    attrs = {key: entities.unescape(value) for key, value in
             re.findall(r'data-(best|best-bottom|first-ranked)="([^"]*)"', dom)}
    return widest, page, {"best": attrs.get("best", ""), "bottom": attrs.get("best-bottom", "-1"),
                          "first": attrs.get("first-ranked", "")}


def first_screen_problems(name: str, seen: dict[str, str]) -> list[str]:
    """The first screen must hold the headline's best line, naming the ranking's first strategy with an interval."""
    m = BEST.match(seen["best"])
    if not m:
        return [f"{name}: the first screen names no best strategy with its interval (headline: {seen['best'][:80]!r})"]
    problems = []
    if int(seen["bottom"]) > FIRST_SCREEN:
        problems.append(f"{name}: the best strategy's line ends at {seen['bottom']} px, below the first "
                        f"{FIRST_SCREEN} px screen")
    if seen["first"] and not seen["first"].startswith(f"1. {m.group('run')}:"):
        problems.append(f"{name}: the best line names {m.group('run')}, the ranking puts {seen['first'][:60]!r} first")
    return problems


def evaluation_texts(vault: str, queryset: str, out: Path) -> dict[str, str]:
    """An ``eval run`` of three strategies on the same vault: its report.md stays in ``out/eval-run``; returns
    its headline (eval run's first lines) to be scanned with the notebooks' output."""
    from vaulteval.notebooks.support import resolve_inputs
    from vaulteval.workbench.evaluate import evaluate
    from vaulteval.workbench.headline import headline_of_dir

    shutil.rmtree(out / "eval-run", ignore_errors=True)  # a re-run replaces the last check's run
    v, qs = resolve_inputs(vault, queryset)
    ev = evaluate(v, qs, ["bm25", "bm25:analyzer=english", "bm25:top=3"], k=10)
    path = ev.save(out / "eval-run", run_id="check")
    return {"eval run headline": headline_of_dir(path).text()}


def contradictions(out: Path, texts: dict[str, str]) -> tuple[int, list[str]]:
    """Every printed comparison in the report.md files under ``out`` and in ``texts``: (how many were read,
    the contradictory ones)."""
    from vaulteval.workbench.procedure import PRINTED, printed_contradictions

    sources = {str(md.relative_to(out)): md.read_text(encoding="utf-8") for md in sorted(out.rglob("report.md"))}
    sources.update(texts)
    read, found = 0, []
    for where, text in sources.items():
        read += len(PRINTED.findall(text))
        found += [f"{where}: contradictory: {p}" for p in printed_contradictions(text)]
    return read, found


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vault", default="sample")
    ap.add_argument("--queryset", default="sample")
    ap.add_argument("--out", required=True, help="run folder for the executed notebooks, HTML and screenshots")
    ap.add_argument("--notebooks", default="", help="comma-separated names (default: all)")
    ap.add_argument("--param", action="append", default=[], help="NAME=VALUE for every notebook that declares NAME")
    ap.add_argument("--chromium", default=None)
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from vaulteval.notebooks.run import execute, names, parameters

    binary = chromium(args.chromium)
    out = Path(args.out).expanduser().resolve()
    out.mkdir(parents=True, exist_ok=True)
    chosen = [n for n in args.notebooks.split(",") if n] or names()
    import yaml

    extra = {k: yaml.safe_load(v) for k, v in (p.split("=", 1) for p in args.param)}
    problems: list[str] = []
    texts: dict[str, str] = {}
    for name in chosen:
        declared = parameters(name)
        params = {k: v for k, v in {"vault": args.vault, "queryset": args.queryset, **extra}.items() if k in declared}
        if name == "tune" and "out" not in extra:
            shutil.rmtree(out / "tune-run", ignore_errors=True)
            params["out"] = str(out / "tune-run")  # keep its run folder: its report.md is scanned below
        nb_path = out / f"{name}.ipynb"
        started = time.perf_counter()
        try:
            execute(name, nb_path, params, cwd=out)
        except Exception as exc:  # the executed copy is kept; report and go on to the next notebook
            problems.append(f"{name}: {exc}")
        found = [f"{name}: {p}" for p in outputs_html(nb_path)] if nb_path.is_file() else []
        if nb_path.is_file():
            text = output_text(nb_path)
            texts[f"{name}.ipynb output"] = text
            for m in MISSING.finditer(text):
                found.append(f"{name}: a missing value shown as {m.group(0)[:40]!r}")
                break
            html = render(nb_path)
            widest, page, seen = browse(binary, html, nb_path.with_suffix(".png"))
            if name in ANSWERS:
                found += first_screen_problems(name, seen)
            if widest < 0:
                found.append(f"{name}: the page did not report its table widths (did the browser load it?)")
            elif widest > page:
                found.append(f"{name}: a table is {widest} px wide on a {page} px page")
            first = f", best line ends at {seen['bottom']} px of {FIRST_SCREEN}" if name in ANSWERS else ""
            print(f"{name}: {time.perf_counter() - started:.0f} s, widest table {widest} px of {page}{first}, "
                  f"screenshot {nb_path.with_suffix('.png').name}")
        problems += found
    texts.update(evaluation_texts(args.vault, args.queryset, out))
    read, contradictory = contradictions(out, texts)
    problems += contradictory
    print(f"printed comparisons read back: {read}, contradictory: {len(contradictory)}")
    for p in problems:
        print(f"PROBLEM {p}")
    print(f"{len(chosen)} notebooks in {out}: {'ok' if not problems else f'{len(problems)} problem(s)'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
