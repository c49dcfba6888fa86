"""What the package's tests share: the rule for a missing tool, the berth binary, the
OpenHands SDK, a fake ``berth`` and a ``berth serve`` on 127.0.0.1.

The tests are hermetic: servers listen on 127.0.0.1 only, nothing is fetched, and the SDK's
LiteLLM is told to keep its price list local. A test whose tool is missing (the berth
binary, the SDK) skips, except when ``CI`` is set: then it fails, as the Rust tests do
(``require_or_skip`` in tests/it/common/skip.rs).

The SDK is the one this Python has, else the one of ``BERTH_SDK_PYTHON`` (the venv the Rust
tests run it in, see docs/testing.md): its packages are added after this Python's own, so
pytest need not be installed into it. That needs the same Python version on both sides.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import site
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, NoReturn

import pytest

# Before anything imports urllib's opener or the SDK: loopback never goes through a proxy,
# and LiteLLM (imported by the SDK) must not download its price list.
os.environ["NO_PROXY"] = "127.0.0.1,localhost,::1"
os.environ["no_proxy"] = os.environ["NO_PROXY"]
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ["OPENHANDS_SUPPRESS_BANNER"] = "1"

REPO = Path(__file__).resolve().parents[2]


def _sdk_from_berth_sdk_python() -> str | None:
    """Adds the packages of ``BERTH_SDK_PYTHON`` when this Python lacks the SDK; returns
    why it could not."""
    python = os.environ.get("BERTH_SDK_PYTHON")
    if not python or importlib.util.find_spec("openhands") is not None:
        return None
    query = (
        "import sys, sysconfig; print(*sys.version_info[:2]); print(sysconfig.get_path('purelib'))"
    )
    done = subprocess.run([python, "-c", query], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return f"BERTH_SDK_PYTHON={python} does not run: {done.stderr.strip()}"
    version, purelib = done.stdout.splitlines()
    here = f"{sys.version_info[0]} {sys.version_info[1]}"
    if version != here:
        return (
            f"BERTH_SDK_PYTHON={python} is Python {version.replace(' ', '.')}, and pytest runs "
            f"on {here.replace(' ', '.')}: run pytest with a Python of the SDK's version"
        )
    site.addsitedir(purelib)
    return None


_SDK_UNUSABLE = _sdk_from_berth_sdk_python()


def in_ci() -> bool:
    """Whether this is a CI run, by the same rule as the Rust tests."""
    return os.environ.get("CI", "") not in ("", "0", "false")


def require(what: str, why: str) -> NoReturn:
    """Skips the test because ``what`` is missing, or fails it in CI."""
    if in_ci():
        pytest.fail(f"{what} is missing, and tests cannot skip in CI (`CI` is set): {why}")
    pytest.skip(f"{what} is missing; {why}")


@pytest.fixture(scope="session")
def berth_bin() -> Path:
    """The berth binary under test: ``BERTH_BIN``, else cargo's debug build."""
    named = os.environ.get("BERTH_BIN")
    if named:
        return Path(named)
    target = Path(os.environ.get("CARGO_TARGET_DIR") or REPO / "target")
    built = target / "debug" / "berth"
    if built.is_file():
        return built
    require("the berth binary", "run `cargo build -p berth` or set BERTH_BIN")


@pytest.fixture(scope="session")
def sdk() -> None:
    """The OpenHands SDK (openhands-sdk 1.58.2, Python 3.12), importable."""
    try:
        import openhands.sdk  # noqa: F401
    except ImportError:
        require(
            "openhands-sdk",
            _SDK_UNUSABLE
            or "set BERTH_SDK_PYTHON to a Python 3.12 with openhands-sdk==1.58.2, or run "
            "pytest with one (docs/testing.md says how)",
        )


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A HOME of the test's own, so no store or config of the machine is read; berth's
    extension is not loaded (the binary builds plugin sets); returns the HOME."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("BERTH_STORE", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("BERTH_NATIVE", "0")
    from berth.openhands import native

    native.cache_clear()
    return home


@dataclass
class FakeBerth:
    """A stand-in for the berth binary: records its arguments, working folder and
    ``BERTH_STORE`` in ``calls``, prints ``stdout`` and ``stderr``, exits ``status``."""

    path: Path
    log: Path

    def answer(self, stdout: str = "", stderr: str = "", status: int = 0) -> None:
        (self.path.parent / "stdout").write_text(stdout)
        (self.path.parent / "stderr").write_text(stderr)
        (self.path.parent / "status").write_text(str(status))

    @property
    def calls(self) -> list[list[str]]:
        """Each call: its working folder, then its arguments."""
        if not self.log.exists():
            return []
        return [line.split("\0")[:-1] for line in self.log.read_text().splitlines()]


@pytest.fixture
def fake_berth(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeBerth:
    """A fake berth binary, named by ``BERTH_BIN``."""
    folder = tmp_path / "fake-berth"
    folder.mkdir()
    script = folder / "berth"
    log = folder / "calls"
    script.write_text(
        textwrap.dedent(
            f"""\
            #!{sys.executable}
            import os, sys
            here = {str(folder)!r}
            with open(os.path.join(here, "calls"), "a") as log:
                log.write("\\0".join([os.getcwd(), *sys.argv[1:]]) + "\\0\\n")
            def read(name, default=""):
                try:
                    with open(os.path.join(here, name)) as f:
                        return f.read()
                except FileNotFoundError:
                    return default
            sys.stdout.write(read("stdout"))
            sys.stderr.write(read("stderr"))
            sys.exit(int(read("status", "0")))
            """
        )
    )
    script.chmod(0o755)
    monkeypatch.setenv("BERTH_BIN", str(script))
    return FakeBerth(script, log)


@dataclass
class Served:
    """A ``berth serve`` on 127.0.0.1: its base URL and API key."""

    base: str
    api_key: str
    process: subprocess.Popen[str]


def _address(stderr: IO[str]) -> str:
    for line in stderr:
        if "Listening on " in line:
            return line.split("Listening on ", 1)[1].strip()
    raise AssertionError("berth serve ended without printing its address")


@pytest.fixture
def serve(berth_bin: Path, tmp_path: Path, env: Path) -> Iterator[Served]:
    """``berth serve`` on a free port of 127.0.0.1, with an API key and local sources
    allowed, its data and store in the test's folder."""
    key = "k3y"
    process = subprocess.Popen(
        [
            str(berth_bin),
            "--store",
            str(tmp_path / "store"),
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--allow-local-sources",
            "--offline",
            "--data-dir",
            str(tmp_path / "data"),
        ],
        env=dict(os.environ, BERTH_API_KEY=key),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        base = _address(process.stderr)
        # Keep reading its log, so the server never blocks on a full pipe.
        threading.Thread(target=process.stderr.read, daemon=True).start()
        yield Served(base, key, process)
    finally:
        process.terminate()
        process.wait(timeout=30)


@dataclass
class Project:
    """A folder with a manifest of plugin folders copied into it, and a store."""

    folder: Path
    store: Path
    berth_bin: Path

    @property
    def lockfile(self) -> Path:
        return self.folder / "plugins.lock"

    def add(self, source: Path, name: str | None = None) -> Path:
        """Copies the plugin folder ``source`` into the project (as ``name``)."""
        copy = self.folder / (name or source.name)
        shutil.copytree(source, copy)
        return copy

    def sync(self, *names: str) -> None:
        """Writes a manifest of the copied folders ``names``, in this order, and syncs it."""
        self.folder.joinpath("plugins.toml").write_text(
            "".join(f'[[plugin]]\nsource = "./{n}"\n\n' for n in names)
        )
        self.berth("plugins", "sync")

    def berth(self, *args: str) -> str:
        """Runs the berth binary in the project with its store; returns stdout."""
        done = subprocess.run(
            [str(self.berth_bin), "--store", str(self.store), *args],
            cwd=self.folder,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, f"berth {' '.join(args)} failed:\n{done.stderr}"
        return done.stdout


@pytest.fixture
def project(berth_bin: Path, tmp_path: Path, env: Path, monkeypatch: pytest.MonkeyPatch) -> Project:
    """A project in the test's folder; ``berth.run`` runs the binary under test."""
    monkeypatch.setenv("BERTH_BIN", str(berth_bin))
    folder = tmp_path / "project"
    folder.mkdir()
    return Project(folder, tmp_path / "store", berth_bin)


SAMPLES = REPO / "fixtures" / "conformance" / "samples"
PLUGINS = REPO / "fixtures" / "plugins"
