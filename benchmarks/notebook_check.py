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


def browse(binary: str, html: Path, png: Path) -> tuple[int, int]:
    """Screenshot ``html`` at WIDTH px (full page height) and return (widest table's right edge, page width)."""
    with tempfile.TemporaryDirectory(prefix="vaulteval-chromium-") as profile:
        base = [binary, *FLAGS, f"--user-data-dir={profile}", f"--window-size={WIDTH},1000"]
        dom = subprocess.run([*base, "--virtual-time-budget=5000", "--dump-dom", html.as_uri()],
                             capture_output=True, text=True, timeout=180).stdout
        m = re.search(r"<title>WIDTH (\d+) PAGE (\d+) HEIGHT (\d+)</title>", dom)
        widest, page, height = (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else (-1, WIDTH, 1000)
        subprocess.run([*base[:-1], f"--window-size={WIDTH},{max(height, 1000)}", f"--screenshot={png}",
                        html.as_uri()], capture_output=True, timeout=180)
    return widest, page


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
    for name in chosen:
        declared = parameters(name)
        params = {k: v for k, v in {"vault": args.vault, "queryset": args.queryset, **extra}.items() if k in declared}
        nb_path = out / f"{name}.ipynb"
        started = time.perf_counter()
        try:
            execute(name, nb_path, params, cwd=out)
        except Exception as exc:  # the executed copy is kept; report and go on to the next notebook
            problems.append(f"{name}: {exc}")
        found = [f"{name}: {p}" for p in outputs_html(nb_path)] if nb_path.is_file() else []
        if nb_path.is_file():
            text = output_text(nb_path)
            for m in MISSING.finditer(text):
                found.append(f"{name}: a missing value shown as {m.group(0)[:40]!r}")
                break
            html = render(nb_path)
            widest, page = browse(binary, html, nb_path.with_suffix(".png"))
            if widest < 0:
                found.append(f"{name}: the page did not report its table widths (did the browser load it?)")
            elif widest > page:
                found.append(f"{name}: a table is {widest} px wide on a {page} px page")
            print(f"{name}: {time.perf_counter() - started:.0f} s, widest table {widest} px of {page}, "
                  f"screenshot {nb_path.with_suffix('.png').name}")
        problems += found
    for p in problems:
        print(f"PROBLEM {p}")
    print(f"{len(chosen)} notebooks in {out}: {'ok' if not problems else f'{len(problems)} problem(s)'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
