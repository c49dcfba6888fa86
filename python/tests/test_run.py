"""Finding and running the berth binary: ``berth.find_berth_bin``, ``berth.run`` and
``python -m berth``, with a fake binary that records how it was called."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import berth
from conftest import REPO, FakeBerth


def executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_berth_bin_names_the_binary(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("BERTH_BIN", str(tmp_path / "dev" / "berth"))
    # Taken as given: a development build need not exist yet to be named.
    assert berth.find_berth_bin() == tmp_path / "dev" / "berth"


def scripts_at(
    monkeypatch: pytest.MonkeyPatch, default: Path, user: Path | None
) -> list[str | None]:
    """Points sysconfig's scripts folders at ``default`` and (the user scheme) ``user``;
    returns the schemes asked for."""
    asked: list[str | None] = []

    def get_path(name: str, scheme: str | None = None) -> str:
        assert name == "scripts"
        asked.append(scheme)
        if scheme is None:
            return str(default)
        if user is None:
            raise KeyError(scheme)
        return str(user)

    monkeypatch.delenv("BERTH_BIN", raising=False)
    monkeypatch.setattr(sysconfig, "get_path", get_path)
    return asked


def test_the_binary_is_found_where_pip_puts_scripts(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    venv, user = tmp_path / "venv" / "bin", tmp_path / "user" / "bin"
    asked = scripts_at(monkeypatch, venv, user)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python" / "bin" / "python3"))
    beside = executable(tmp_path / "python" / "bin" / "berth")
    assert berth.find_berth_bin() == beside
    assert asked == [None, f"{os.name}_user"]
    in_user = executable(user / "berth")
    assert berth.find_berth_bin() == in_user
    in_venv = executable(venv / "berth")
    assert berth.find_berth_bin() == in_venv


def test_a_file_that_cannot_run_is_passed_over(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    venv = tmp_path / "venv" / "bin"
    scripts_at(monkeypatch, venv, None)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python" / "bin" / "python3"))
    executable(venv / "berth").chmod(0o644)
    beside = executable(tmp_path / "python" / "bin" / "berth")
    assert berth.find_berth_bin() == beside


def test_a_missing_binary_names_the_places_tried(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    scripts_at(monkeypatch, tmp_path / "venv" / "bin", None)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python" / "bin" / "python3"))
    with pytest.raises(FileNotFoundError) as raised:
        berth.find_berth_bin()
    assert str(raised.value) == (
        f"the berth binary is not installed (looked at {tmp_path}/venv/bin/berth, "
        f"{tmp_path}/python/bin/berth)"
    )


def test_run_passes_the_store_and_folder_and_returns_the_output(
    fake_berth: FakeBerth, tmp_path: Path
) -> None:
    fake_berth.answer(stdout="out\n", stderr="status\n")
    done = berth.run(["plugins", "list"], cwd=tmp_path, store=tmp_path / "store")
    assert (done.returncode, done.stdout, done.stderr) == (0, "out\n", "status\n")
    assert done.args == [
        str(fake_berth.path),
        "--store",
        str(tmp_path / "store"),
        "plugins",
        "list",
    ]
    berth.run(["--version"])
    assert fake_berth.calls == [
        [str(tmp_path), "--store", str(tmp_path / "store"), "plugins", "list"],
        [str(Path.cwd()), "--version"],
    ]


def test_a_failure_is_a_berth_error_with_its_message(fake_berth: FakeBerth) -> None:
    fake_berth.answer(stderr="error: no lockfile\n  hint: run `berth plugins lock`\n", status=1)
    with pytest.raises(berth.BerthError) as raised:
        berth.run(["plugins", "show"])
    assert raised.value.returncode == 1
    assert str(raised.value) == "error: no lockfile\n  hint: run `berth plugins lock`"
    assert raised.value.message == "error: no lockfile\n  hint: run `berth plugins lock`\n"
    fake_berth.answer(status=3)
    with pytest.raises(berth.BerthError, match=r"^berth exited with status 3$"):
        berth.run(["x"])
    assert berth.run(["x"], check=False).returncode == 3


def test_python_m_berth_runs_the_binary(fake_berth: FakeBerth, tmp_path: Path) -> None:
    fake_berth.answer(stdout="berth 0.1.0\n", status=7)
    done = subprocess.run(
        [sys.executable, "-m", "berth", "--version", "a b"],
        cwd=tmp_path,
        env=dict(os.environ, PYTHONPATH=str(REPO / "python")),
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stdout) == (7, "berth 0.1.0\n")
    assert fake_berth.calls == [[str(tmp_path), "--version", "a b"]]
