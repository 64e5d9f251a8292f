"""The Claude Code plugin files: a manifest, the skills beside it, and an MCP config that starts ``vaulteval mcp``."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path

from vaulteval.cli.main import build_parser

REPO = Path(__file__).resolve().parents[2]


def test_the_manifest_names_the_plugin_and_its_skills_sit_where_claude_code_finds_them() -> None:
    manifest = json.loads((REPO / ".claude-plugin" / "plugin.json").read_text(encoding="utf-8"))
    assert manifest["name"] == "vaulteval" and re.fullmatch(r"[a-z0-9-]+", manifest["name"])
    assert manifest["description"]
    skills = sorted(p.parent.name for p in (REPO / "skills").glob("*/SKILL.md"))
    assert skills == ["wiki-eval", "wiki-query", "wiki-retrieve"]


def test_the_mcp_config_starts_the_stdio_server_with_the_checkout_or_the_installed_command(tmp_path: Path) -> None:
    servers = json.loads((REPO / ".mcp.json").read_text(encoding="utf-8"))["mcpServers"]
    assert list(servers) == ["vaulteval"]
    server = servers["vaulteval"]
    assert server["type"] == "stdio" and server["command"] == "sh" and server["args"][0] == "-c"
    # Expand the config's variables as Claude Code would, then run the script with `vaulteval` replaced by
    # an echo of its arguments: it must hand `mcp` to the checkout's binary when there is one, else to PATH's.
    script = server["args"][1].replace("${CLAUDE_PLUGIN_ROOT:-.}", str(tmp_path))
    fake = tmp_path / ".venv" / "bin"
    fake.mkdir(parents=True)
    (fake / "vaulteval").write_text("#!/bin/sh\necho checkout \"$@\"\n")
    (fake / "vaulteval").chmod(0o755)
    assert subprocess.run(["sh", "-c", script], capture_output=True, text=True).stdout.split() == ["checkout", "mcp"]
    # VAULTEVAL_EVAL_DIR, when set, serves the evaluation tools over that folder.
    evals = tmp_path / "evals dir"
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True,
                         env={"PATH": "/usr/bin:/bin", "VAULTEVAL_EVAL_DIR": str(evals)})
    assert out.stdout.rstrip("\n") == f"checkout mcp --eval-dir {evals}"
    (fake / "vaulteval").unlink()
    path_bin = tmp_path / "bin"
    path_bin.mkdir()
    (path_bin / "vaulteval").write_text("#!/bin/sh\necho path \"$@\"\n")
    (path_bin / "vaulteval").chmod(0o755)
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True, env={"PATH": f"{path_bin}:/usr/bin:/bin"})
    assert out.stdout.split() == ["path", "mcp"]
    args = build_parser("mcp").parse_args(shlex.split("mcp"))
    assert args.command == "mcp" and not args.http
