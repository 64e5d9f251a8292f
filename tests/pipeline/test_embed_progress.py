"""provision's embedding progress bar: on a terminal unless --quiet; never in a pipe or a log."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from pipeline_fixtures import copy_sample, run_main


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("terminal, flags, bar", [
    (True, [], True), (True, ["--quiet"], False), (False, [], False),
])
def test_the_bar_goes_to_a_terminal_unless_quiet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, terminal: bool,
                                                 flags: list[str], bar: bool) -> None:
    import vaulteval.pipeline.provision as provision_module

    seen = {}

    def fake_provision(vault, **kwargs):
        seen["progress"] = kwargs["progress"]
        raise SystemExit(0)

    monkeypatch.setattr(provision_module, "provision", fake_provision)
    stderr = Terminal() if terminal else io.StringIO()
    monkeypatch.setattr(sys, "stderr", stderr)
    from vaulteval.cli.main import main

    root = copy_sample(tmp_path / "vault")
    with pytest.raises(SystemExit):
        main(["provision", "--embed", "--embedder", "st", *flags, "--vault", str(root)])
    assert (seen["progress"] is stderr) is bar and (seen["progress"] is None) is not bar


def test_quiet_is_a_provision_flag(tmp_path: Path) -> None:
    code, _, err = run_main("provision", "--quiet", "--no-embed", "--vault", copy_sample(tmp_path / "vault"))
    assert code == 0, err
    assert "embedding chunks" not in err
