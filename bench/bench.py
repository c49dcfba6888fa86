#!/usr/bin/env python3
"""berth's benchmarks: builds its fixtures on /dev/shm, runs berth and each comparison in
the same run, prints a Markdown table of medians. Rerun with `bench/run.sh`.

Figures:
  1. (issue #2) `berth plugins sync --frozen --offline` with 100 and with 50 locked plugins
     already in the store, median of 20 runs, run in turn with uv's no-op `uv sync --frozen
     --offline` of 12 packages (issue #59: the goal is 5x uv's). (issue #17) Every run checks each entry against its stat record (one
     `lstat` per path); the second row times the same sync on a store without records
     (`meta-v1/` removed before each run, untimed), where every entry is re-hashed and
     gets its record, which is what checking by hashing would cost every time. The
     floor rows time `bench/noop_floor.c` in the same turns: a C program that only
     `lstat`s every recorded path (one or two threads, each folder opened once, or every
     `statx` through io_uring), the least any no-op that checks every path can cost.
  2. (issue #2) A cold `berth plugins lock` + `berth plugins sync` of 50 generated git
     repositories, next to a `git clone --depth 1` loop over the same repositories.
  7. (issue #13) A cold `berth plugins lock` of 50 plugins asked for as `NAME@bench` from
     one marketplace repository (relative entries, make_repo's files each), next to a
     cold `lock` of 50 plain git repositories; the row names how many git caches the
     marketplace lock made (one: the repository is fetched once).
  4. (issue #4) A cold `lock` + `sync` of 50 sources (25 git repositories over a real
     `git http-backend` on 127.0.0.1 and 25 `.tar.gz` archives over HTTP), with `--jobs 1`
     and with the default, next to the SDK's `Plugin.fetch` over the same 25 git
     repositories.
  5. (issues #5, #18) `berth serve` with the store warm: `POST /api/conversations` with a
     10-plugin lockfile and `GET .../plugin_set`, requests per second and p50/p99 latency
     at 64 concurrent clients (`wrk`, installed from Debian if missing), this build next to
     the build #18 started from (`--baseline`, which bench/run.sh builds from
     BERTH_BASELINE_REV), alternating, median of 3 rounds; the same POST with the
     conversations on a real S3 server (moto, BERTH_MOTO_SERVER); the `plugins` form (10
     git plugins by tag over `git http-backend`) with `--ref-ttl 60` next to without; and
     the time from starting the server to listening with 10,000 stored conversations
     (median of 5).
  6. (issue #7) A ready environment for a locked agent package with 10 dependencies (11
     wheels built from fixtures/agents by build_index.py --deps 10, served by Python's
     http.server on 127.0.0.1): cold (empty store and uv cache: `sync --frozen` then
     `agent exec --frozen`), from a store that has the wheels but no environment, and
     warm (a new conversation on the same lock: the environment is reused), next to
     `python -m venv` + `pip install --no-cache-dir --require-hashes` of the same pinned
     requirements from the same index, then calling the entry point. uv 0.13.9 comes from
     BERTH_UV or is installed into ~/.cache/berth-bench/uv-0.13.9.
  3. (issue #3) `berth plugins show --json` for a lock of 50 plugins (the conformance
     samples repeated under new names), next to the OpenHands SDK's `load_plugins` on the
     same 50 folders in a fresh Python process. The SDK is installed into a cached venv
     (~/.cache/berth-bench/ohsdk) the first time, as fixtures/conformance/README.md says,
     or taken from `--sdk-python`.
  8. (issue #40) `berth materialize TARGET DIR` for each target of a 100-plugin lock from
     a local marketplace shaped like the public ones (make_real_marketplace): the first
     run into an empty DIR and the no-op run again, store and DIR both on /dev/shm,
     median of --cold-runs each, alternating with `--baseline` when given.
  9. (issue #53) observation's cost: a relock of 50 local plugins without servers (lock
     removed each run, store warm), alternating with `--baseline` when given; and
     `plugins observe` of one small python3 stdio server in the sandbox against
     `--observe-unsandboxed`, median of --show-runs each.
  10. (issue #59) `berth.openhands.load_plugins(lock, agent)` inside one Python
     that has imported the SDK, the set built in-process by `berth._native` (and with the
     binary run instead), next to the SDK's own `load_plugins` over the same folders,
     interleaved, median of 4 x --sdk-runs calls each; on 50 sample copies, then on 50
     plugins that each have hooks for five events and two MCP servers of their own.
"""

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
}


def run(cmd, cwd=None, env=None, quiet=True):
    full_env = dict(os.environ, **GIT_ENV, **(env or {}))
    subprocess.run(
        cmd,
        cwd=cwd,
        env=full_env,
        check=True,
        stdout=subprocess.DEVNULL if quiet else None,
        stderr=subprocess.DEVNULL if quiet else None,
    )


def timed(cmds, cwd=None, env=None, before=None):
    """Wall time of running `cmds` one after the other (after `before`, untimed)."""
    if before:
        before()
    start = time.perf_counter()
    for cmd in cmds:
        run(cmd, cwd=cwd, env=env)
    return time.perf_counter() - start


def make_repo(path: Path, i: int):
    """A plugin repository with a few commits of history and ~40 files."""
    path.mkdir(parents=True)
    run(["git", "init", "-q", "-b", "main"], cwd=path)
    for commit in range(4):
        (path / ".claude-plugin").mkdir(exist_ok=True)
        (path / ".claude-plugin" / "plugin.json").write_text(f'{{"name": "bench-{i}"}}\n')
        for s in range(8):
            skill = path / "skills" / f"skill-{s}"
            skill.mkdir(parents=True, exist_ok=True)
            (skill / "SKILL.md").write_text(
                f"---\nname: skill-{i}-{s}\ndescription: skill {s} of plugin {i}\n---\n"
                + f"Revision {commit}.\n" * 200
            )
            (skill / "notes.md").write_text(f"notes {i} {s} {commit}\n" * 50)
        for c in range(6):
            (path / "commands").mkdir(exist_ok=True)
            (path / "commands" / f"cmd-{c}.md").write_text(f"command {c} rev {commit}\n")
        run(["git", "add", "-A"], cwd=path)
        run(["git", "commit", "-q", "-m", f"commit {commit}"], cwd=path)
    run(["git", "tag", "v1.0.0"], cwd=path)


def median_ms(samples):
    return statistics.median(samples) * 1000


def bench_noop(berth, scratch, repos, runs):
    """The no-op `sync --frozen --offline` of 100 and of 50 locked plugins, and uv's no-op
    sync, run in turn (berth 100, berth 50, uv) so drift hits all alike; then the 100 again
    with the stat records removed before each run (every entry re-hashed)."""
    cmd = [berth, "plugins", "sync", "--frozen", "--offline", "-q"]
    setups = {}
    for count in (100, 50):
        work = scratch / f"noop-{count}"
        work.mkdir()
        manifest = "".join(f'[[plugin]]\nsource = "file://{r}"\nref = "v1.0.0"\n\n' for r in repos[:count])
        (work / "plugins.toml").write_text(manifest)
        env = {"BERTH_STORE": str(scratch / f"noop-store-{count}")}
        run([berth, "plugins", "sync"], cwd=work, env=env)
        run(cmd, cwd=work, env=env)  # warm the page cache
        setups[count] = (work, env)
    print("uv no-op sync ...", file=sys.stderr)
    uv = setup_uv(scratch)
    floors = floor_commands(scratch, {count: scratch / f"noop-store-{count}" / "store-v1" for count in setups})
    times = {100: [], 50: [], "uv": [], **{key: [] for key in floors}}
    for _ in range(runs):
        for count, (work, env) in setups.items():
            times[count].append(timed([cmd], cwd=work, env=env))
        if uv:
            times["uv"].append(timed([uv[0]], cwd=uv[1], env=uv[2]))
        for key, (floor, paths) in floors.items():
            times[key].append(timed_stdin(floor, paths))
    work, env = setups[100]
    records = scratch / "noop-store-100" / "meta-v1"
    rehashed = [
        timed([cmd], cwd=work, env=env, before=lambda: shutil.rmtree(records))
        for _ in range(runs)
    ]
    entries = scratch / "noop-store-100" / "store-v1"
    # Every record line: each entry's folder and everything under it.
    paths = sum(len(dirs) + len(files) for _, dirs, files in os.walk(entries))
    return times, rehashed, paths


def floor_commands(scratch, stores):
    """`bench/noop_floor.c` built into `scratch` and the commands that time it on each
    store: `{(count, mode, threads): (command, paths file)}`; empty when there is no C
    compiler. The io_uring mode is built only where liburing's header is installed."""
    source = Path(__file__).with_name("noop_floor.c")
    binary = scratch / "noop_floor"
    base = ["cc", "-O2", "-pthread", str(source), "-o", str(binary)]
    attempts = [base + ["-static", "-DWITH_URING", "-luring"], base + ["-DWITH_URING", "-luring"], base + ["-static"], base]
    uring = False
    for attempt in attempts:
        if subprocess.run(attempt, capture_output=True).returncode == 0:
            uring = "-DWITH_URING" in attempt
            break
    else:
        print("noop_floor.c not built (no C compiler): the floor rows are left out", file=sys.stderr)
        return {}
    commands = {}
    for count, root in stores.items():
        listing = scratch / f"noop-paths-{count}.txt"
        paths = sorted(str(p.relative_to(root)) for p in root.rglob("*"))
        listing.write_text("".join(f"{path}\n" for path in paths))
        modes = [("paths", 1), ("paths", 2), ("dirs", 2)] + ([("uring", 1)] if uring else [])
        for mode, threads in modes:
            commands[(count, mode, threads)] = ([str(binary), mode, str(threads), str(root)], listing)
    return commands


def timed_stdin(cmd, stdin_path):
    """Wall time of running `cmd` with `stdin_path` as its standard input; its output must
    name the paths it checked."""
    with open(stdin_path, "rb") as stdin:
        start = time.perf_counter()
        done = subprocess.run(cmd, stdin=stdin, capture_output=True, text=True, check=True)
        elapsed = time.perf_counter() - start
    if " paths, " not in done.stdout:
        raise SystemExit(f"noop_floor printed {done.stdout!r}")
    return elapsed


def make_big_plugin(path: Path):
    """A 256 MiB plugin: four 48 MiB files and 1024 files of 64 KiB, random bytes."""
    (path / "small").mkdir(parents=True)
    for i in range(4):
        (path / f"big{i}.bin").write_bytes(os.urandom(48 << 20))
    for i in range(1024):
        (path / "small" / f"f{i}").write_bytes(os.urandom(64 << 10))


def openssl_sha256():
    """One core's SHA-256 by `openssl speed -evp sha256` (16 KiB blocks), in bytes/s."""
    out = subprocess.run(
        ["openssl", "speed", "-evp", "sha256", "-bytes", "16384", "-seconds", "2"],
        check=True, capture_output=True, text=True,
    ).stdout
    line = [l for l in out.splitlines() if l.startswith("sha256")][-1]
    return float(line.split()[-1].rstrip("k")) * 1000


def bench_hash(berth, scratch, runs, baseline=None):
    """The NAR hash of a 256 MiB plugin: `berth store verify` of a store holding only
    it (every byte read and hashed), next to `nix hash path` of the same folder, one
    core's `openssl speed -evp sha256` and, given one, an older build; interleaved."""
    plugin = scratch / "big-plugin"
    make_big_plugin(plugin)
    work = scratch / "hash"
    work.mkdir()
    (work / "plugins.toml").write_text(f'[[plugin]]\nsource = "{plugin}"\n')
    env = {"BERTH_STORE": str(scratch / "hash-store")}
    run([berth, "plugins", "sync"], cwd=work, env=env)
    nix = shutil.which("nix")
    builds = [("now", berth)] + ([("before", baseline)] if baseline else [])
    times = {name: [] for name, _ in builds}
    times["nix"] = []
    for _ in range(runs):
        for name, binary in builds:
            times[name].append(timed([[binary, "store", "verify", "-q"]], cwd=work, env=env))
        if nix:
            times["nix"].append(timed([[nix, "--extra-experimental-features", "nix-command", "hash", "path", str(plugin)]]))
    size = sum(f.stat().st_size for f in plugin.rglob("*") if f.is_file())
    return times, size, openssl_sha256()


def setup_uv(scratch):
    """uv's no-op sync of 12 packages, set up: `(command, project, env)`, or None when uv
    cannot be set up (no PyPI)."""
    venv = scratch / "uv-venv"
    try:
        run([sys.executable, "-m", "venv", str(venv)])
        run([str(venv / "bin" / "pip"), "install", "-q", "uv"])
        project = scratch / "uv-project"
        project.mkdir()
        (project / "pyproject.toml").write_text(
            '[project]\nname = "uvbench"\nversion = "0.1.0"\nrequires-python = ">=3.8"\n'
            'dependencies = ["six", "idna", "certifi", "charset-normalizer", "urllib3", '
            '"requests", "packaging", "attrs", "pyparsing", "click", "colorama", "tomli"]\n'
        )
        uv = str(venv / "bin" / "uv")
        env = {"UV_CACHE_DIR": str(scratch / "uv-cache")}
        run([uv, "sync", "-q"], cwd=project, env=env)
    except (subprocess.CalledProcessError, OSError):
        return None
    cmd = [uv, "sync", "--frozen", "--offline", "-q"]
    run(cmd, cwd=project, env=env)
    return cmd, project, env


def make_marketplace(path: Path, count: int):
    """One marketplace repository holding `count` plugins under plugins/p{i} (each with
    make_repo's files) and a catalog listing them by relative path."""
    path.mkdir(parents=True)
    run(["git", "init", "-q", "-b", "main"], cwd=path)
    entries = []
    for i in range(count):
        plugin = path / "plugins" / f"p{i}"
        (plugin / ".claude-plugin").mkdir(parents=True)
        (plugin / ".claude-plugin" / "plugin.json").write_text(f'{{"name": "bench-{i}"}}\n')
        for s in range(8):
            skill = plugin / "skills" / f"skill-{s}"
            skill.mkdir(parents=True)
            (skill / "SKILL.md").write_text(
                f"---\nname: skill-{i}-{s}\ndescription: skill {s} of plugin {i}\n---\n" + "Revision 3.\n" * 200
            )
            (skill / "notes.md").write_text(f"notes {i} {s} 3\n" * 50)
        (plugin / "commands").mkdir()
        for c in range(6):
            (plugin / "commands" / f"cmd-{c}.md").write_text(f"command {c} rev 3\n")
        entries.append({"name": f"bench-{i}", "source": f"./plugins/p{i}"})
    (path / ".claude-plugin").mkdir()
    (path / ".claude-plugin" / "marketplace.json").write_text(json.dumps({"name": "bench", "plugins": entries}))
    run(["git", "add", "-A"], cwd=path)
    run(["git", "commit", "-q", "-m", "marketplace"], cwd=path)


def bench_market(berth, scratch, repos, runs):
    """A cold `lock` of 50 plugins from one marketplace repository next to a cold `lock` of
    50 plain git sources (make_repo's repositories, the same files per plugin)."""
    market = scratch / "market.git"
    make_marketplace(market, 50)
    picks = scratch / "market-work"
    plain = scratch / "plain-work"
    picks.mkdir()
    plain.mkdir()
    (picks / "plugins.toml").write_text(
        f'[[marketplace]]\nname = "bench"\nsource = "file://{market}"\n\n'
        + "".join(f'[[plugin]]\nsource = "bench-{i}@bench"\n\n' for i in range(50))
    )
    (plain / "plugins.toml").write_text("".join(f'[[plugin]]\nsource = "file://{r}"\n\n' for r in repos[:50]))
    store = scratch / "market-store"

    def reset(work):
        def go():
            shutil.rmtree(store, ignore_errors=True)
            (work / "plugins.lock").unlink(missing_ok=True)
        return go

    env = {"BERTH_STORE": str(store)}
    cmd = [[berth, "plugins", "lock", "-q"]]
    market_times, plain_times = [], []
    caches = None
    for _ in range(runs):  # interleaved, so drift hits both alike
        market_times.append(timed(cmd, cwd=picks, env=env, before=reset(picks)))
        if caches is None:
            caches = len(list((store / "git-v1" / "db").iterdir()))
        plain_times.append(timed(cmd, cwd=plain, env=env, before=reset(plain)))
    return market_times, plain_times, caches


def bench_cold(berth, scratch, repos, runs):
    work = scratch / "cold"
    work.mkdir()
    (work / "plugins.toml").write_text(
        "".join(f'[[plugin]]\nsource = "file://{r}"\n\n' for r in repos[:50])
    )
    store = scratch / "cold-store"
    clones = scratch / "clones"

    def reset_berth():
        shutil.rmtree(store, ignore_errors=True)
        (work / "plugins.lock").unlink(missing_ok=True)

    def reset_git():
        shutil.rmtree(clones, ignore_errors=True)
        clones.mkdir()

    env = {"BERTH_STORE": str(store)}
    berth_cmds = [[berth, "plugins", "lock", "-q"], [berth, "plugins", "sync", "-q"]]
    berth_j1 = [[berth, "plugins", "lock", "-q", "-j", "1"], [berth, "plugins", "sync", "-q", "-j", "1"]]
    git_cmds = [
        ["git", "clone", "-q", "--depth", "1", f"file://{r}", str(clones / r.name)] for r in repos[:50]
    ]
    # `nix flake lock` of the same 50 repositories as `flake = false` inputs (the source
    # NAR-hashed into the Nix store, as berth's `lock` + `sync` does), each run with an
    # empty fetcher cache; the Nix store keeps what earlier runs added, which only helps it.
    flake = scratch / "flake"
    flake.mkdir()
    inputs = "".join(
        f'    p{i} = {{ url = "git+file://{r}?ref=refs/tags/v1.0.0"; flake = false; }};\n'
        for i, r in enumerate(repos[:50])
    )
    (flake / "flake.nix").write_text(f"{{\n  inputs = {{\n{inputs}  }};\n  outputs = {{ self, ... }}: {{ }};\n}}\n")
    nix = shutil.which("nix")
    nix_cache = scratch / "nix-cache"

    def reset_nix():
        (flake / "flake.lock").unlink(missing_ok=True)
        shutil.rmtree(nix_cache, ignore_errors=True)

    nix_cmd = [[nix, "--extra-experimental-features", "nix-command flakes", "flake", "lock"]] if nix else []
    berth_times, berth_j1_times, git_times, nix_times = [], [], [], []
    for _ in range(runs):  # interleaved, so drift hits all alike
        berth_times.append(timed(berth_cmds, cwd=work, env=env, before=reset_berth))
        berth_j1_times.append(timed(berth_j1, cwd=work, env=env, before=reset_berth))
        git_times.append(timed(git_cmds, before=reset_git))
        if nix:
            nix_times.append(timed(nix_cmd, cwd=flake, env={"XDG_CACHE_HOME": str(nix_cache)}, before=reset_nix))
    return berth_times, berth_j1_times, git_times, nix_times


def bench_cache(berth, scratch, repos, runs):
    """A cold `sync --frozen` of 50 plugins from a binary cache served over HTTP on
    127.0.0.1 next to the same sync from their git repositories, also served over HTTP on
    127.0.0.1 (`git http-backend`); an empty store each time, so no git cache either."""
    cache = scratch / "binary-cache"
    cache.mkdir()
    servers = Servers(scratch / "repos", cache, backlog=128)
    try:
        work = scratch / "cache"
        work.mkdir()
        (work / "plugins.toml").write_text("".join(
            f'[[plugin]]\nsource = "http://127.0.0.1:{servers.git_port}/{r.name}"\n\n' for r in repos[:50]
        ))
        seed = {"BERTH_STORE": str(scratch / "cache-seed-store")}
        run([berth, "plugins", "sync", "-q"], cwd=work, env=seed)
        run([berth, "store", "push", f"file://{cache}"], cwd=work, env=seed)
        store = scratch / "cache-cold-store"
        env = {"BERTH_STORE": str(store)}

        def reset():
            shutil.rmtree(store, ignore_errors=True)

        substituter = f"http://127.0.0.1:{servers.files_port}/"
        from_cache = [[berth, "--substituter", substituter, "plugins", "sync", "--frozen", "-q"]]
        from_folder = [[berth, "--substituter", f"file://{cache}", "plugins", "sync", "--frozen", "-q"]]
        from_git = [[berth, "plugins", "sync", "--frozen", "-q"]]
        cache_times, folder_times, git_times = [], [], []
        for _ in range(runs):
            cache_times.append(timed(from_cache, cwd=work, env=env, before=reset))
            folder_times.append(timed(from_folder, cwd=work, env=env, before=reset))
            git_times.append(timed(from_git, cwd=work, env=env, before=reset))
        return cache_times, folder_times, git_times
    finally:
        servers.close()


SDK_DEPS = [
    "certifi", "pydantic>=2.13.5", "python-frontmatter>=1.3.0", "fastmcp<4,>=3.2.0",
    "litellm<1.106,>=1.93.0", "jsonschema>=4.23.0", "filelock>=3.20.1", "httpx[socks]>=0.28.1",
    "tenacity>=9.1.2", "python-json-logger>=3.3.0", "websockets>=12", "deprecation>=2.1.0",
    "pillow>=12.3.0", "joserfc>=1.7.5", "fakeredis[lua]>=2.32.1",
    "agent-client-protocol<0.13.0,>=0.12.1", "lmnr<0.8.0,>=0.7.60", "tree-sitter>=0.25",
    "tree-sitter-bash>=0.25",
]


def ensure_sdk(given):
    """A Python with openhands-sdk 1.58.2, or None when it cannot be installed here."""
    if given:
        return given
    venv = Path.home() / ".cache" / "berth-bench" / "ohsdk"
    python = venv / "bin" / "python"
    if python.exists():
        return str(python)
    candidates = sorted(Path.home().glob(".pyenv/versions/3.1[2-9]*/bin/python"))
    base = str(candidates[-1]) if candidates else shutil.which("python3.12")
    if not base:
        return None
    try:
        run([base, "-m", "venv", str(venv)])
        run([str(python), "-m", "pip", "install", "-q", *SDK_DEPS])
        run([str(python), "-m", "pip", "install", "-q", "--no-deps", "openhands-sdk==1.58.2"])
    except subprocess.CalledProcessError:
        shutil.rmtree(venv, ignore_errors=True)
        return None
    return str(python)


SAMPLES = ("alpha", "beta", "gamma", "delta", "epsilon")


def make_sample_copies(dest: Path, count: int, bases=SAMPLES):
    """`count` plugins: the conformance samples in turn, each renamed `<sample>-<i>`
    (symlinks kept as links, so `epsilon`'s links out of the plugin stay links)."""
    samples = ROOT / "fixtures" / "conformance" / "samples"
    manifests = {"alpha": ".claude-plugin/plugin.json", "beta": ".plugin/plugin.json", "gamma": "plugin.json",
                 "delta": ".claude-plugin/plugin.json", "epsilon": ".claude-plugin/plugin.json"}
    dirs = []
    for i in range(count):
        base = bases[i % len(bases)]
        target = dest / f"{base}-{i}"
        shutil.copytree(samples / base, target, symlinks=True)
        for p in [target, *target.rglob("*")]:
            if not p.is_symlink():
                p.chmod(p.stat().st_mode | 0o200)
        manifest = target / manifests[base]
        data = json.loads(manifest.read_text())
        data["name"] = f"{base}-{i}"
        manifest.write_text(json.dumps(data))
        dirs.append(target)
    return dirs


SHOW_PLUGINS = 250


def bench_show(berth, scratch, sdk_python, runs, sdk_runs):
    work = scratch / "show"
    work.mkdir()
    dirs = make_sample_copies(work, SHOW_PLUGINS)
    (work / "plugins.toml").write_text("".join(f'[[plugin]]\nsource = "./{d.name}"\n\n' for d in dirs))
    env = {"BERTH_STORE": str(scratch / "show-store")}
    run([berth, "plugins", "sync", "-q"], cwd=work, env=env)
    # The set alone (what the SDK's load builds) and the set with the review's reading of
    # every file (`review`), in turn.
    cmd = [berth, "plugins", "show", "--json", "--max-skills", "100000", "--no-review"]
    reviewed = cmd[:-1]
    run(cmd, cwd=work, env=env)
    run(reviewed, cwd=work, env=env)
    berth_times, reviewed_times = [], []
    for _ in range(runs):
        berth_times.append(timed([cmd], cwd=work, env=env))
        reviewed_times.append(timed([reviewed], cwd=work, env=env))
    sdk_times, sdk_inner = None, None
    if sdk_python:
        sdk_cmd = [sdk_python, str(ROOT / "bench" / "sdk_load_plugins.py"), *map(str, dirs)]
        env = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "OPENHANDS_SUPPRESS_BANNER": "1"}
        run(sdk_cmd, cwd=work, env=env)
        sdk_times, sdk_inner = [], []
        for _ in range(sdk_runs):
            start = time.perf_counter()
            out = subprocess.run(sdk_cmd, cwd=work, env=dict(os.environ, **env), check=True,
                                 capture_output=True, text=True).stdout
            sdk_times.append(time.perf_counter() - start)
            sdk_inner.append(json.loads(out.strip().splitlines()[-1])["load_seconds"])
    return berth_times, reviewed_times, sdk_times, sdk_inner


PYTHON_PLUGINS = 50

# Where each sample's layout reads hooks and MCP servers.
HOOK_FILES = {"gamma": "dev.openhands/hooks/hooks.json"}
MCP_FILES = {"gamma": "mcp.json"}


def make_hooked_copies(dest: Path, count: int):
    """`count` sample copies (make_sample_copies: the same skills) where every plugin has
    hooks for five events (several matchers, several commands each, some with a timeout,
    `async` or `${CLAUDE_PLUGIN_ROOT}`) and exactly two MCP servers of its own (a stdio
    server with arguments and environment, an HTTP server with headers), in the files its
    layout reads (`hooks/hooks.json` and `.mcp.json`; `dev.openhands/hooks/hooks.json` and
    `mcp.json` for the Agent Plugins layout)."""
    dirs = make_sample_copies(dest, count)
    for d in dirs:
        base, name = d.name.split("-")[0], d.name
        root = "${CLAUDE_PLUGIN_ROOT}"

        def cmd(what, **extra):
            return {"type": "command", "command": f"{root}/hooks/{what}.sh {name}", **extra}

        hooks = {"hooks": {
            "PreToolUse": [
                {"matcher": "terminal", "hooks": [cmd("check-command", timeout=10), cmd("audit")]},
                {"matcher": "file_editor|str_replace_editor", "hooks": [cmd("check-path", timeout=5)]},
                {"matcher": "*", "hooks": [cmd("log-tool", **{"async": True})]},
            ],
            "PostToolUse": [
                {"matcher": "terminal", "hooks": [cmd("scan-output"), cmd("record", timeout=30)]},
                {"matcher": "/browser_.*/", "hooks": [cmd("screenshot")]},
            ],
            "UserPromptSubmit": [{"hooks": [cmd("redact", timeout=3), cmd("context")]}],
            "SessionStart": [{"hooks": [cmd("setup", timeout=120), cmd("warm-cache", **{"async": True})]}],
            "Stop": [
                {"matcher": "*", "hooks": [cmd("tests", timeout=300)]},
                {"hooks": [cmd("summary")]},
            ],
        }}
        servers = {"mcpServers": {
            f"{name}-tools": {
                **({"type": "stdio"} if base == "gamma" else {}),
                "command": "node",
                "args": [f"{root}/servers/tools.js", "--plugin", name, "--verbose"],
                "env": {"MODE": "bench", "PLUGIN": name, "LOG_LEVEL": "warn"},
            },
            f"{name}-api": {
                "type": "streamable-http" if base == "gamma" else "http",
                "url": f"https://mcp.example.com/{name}/mcp",
                "headers": {"X-Plugin": name, "X-Team": "bench"},
            },
        }}
        if base == "gamma":
            text = json.dumps(hooks).replace("${CLAUDE_PLUGIN_ROOT}", "${PLUGIN_ROOT}")
            servers["mcpServers"][f"{name}-tools"]["args"][0] = "./servers/tools.js"
            servers = {"$schema": "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json", **servers}
        else:
            text = json.dumps(hooks)
        hook_file = d / HOOK_FILES.get(base, "hooks/hooks.json")
        hook_file.parent.mkdir(parents=True, exist_ok=True)
        hook_file.write_text(text)
        (d / MCP_FILES.get(base, ".mcp.json")).write_text(json.dumps(servers))
    return dirs


def native_extension(berth):
    """The extension `berth._native` built next to `berth` (`cargo build --release -p
    berth-python`, which bench/run.sh does)."""
    path = Path(berth).parent / "libberth_native.so"
    if not path.is_file():
        sys.exit(f"{path} is missing: build it with `cargo build --release -p berth-python`")
    return path


def bench_python(berth, scratch, sdk_python, runs, fixture="samples"):
    """`berth.openhands.load_plugins` (in-process, and with the binary) next to the SDK's
    `load_plugins`, in one Python, on `PYTHON_PLUGINS` sample copies (`samples`) or the
    same with hooks and two MCP servers in every plugin (`hooks`: make_hooked_copies)."""
    work = scratch / f"python-{fixture}"
    work.mkdir()
    make = make_hooked_copies if fixture == "hooks" else make_sample_copies
    dirs = make(work, PYTHON_PLUGINS)
    (work / "plugins.toml").write_text("".join(f'[[plugin]]\nsource = "./{d.name}"\n\n' for d in dirs))
    env = {"BERTH_STORE": str(scratch / f"python-store-{fixture}")}
    run([berth, "plugins", "sync", "-q"], cwd=work, env=env)
    env.update({"BERTH_BIN": berth, "PYTHONPATH": str(ROOT / "python"),
                "BERTH_NATIVE": str(native_extension(berth)),
                "LITELLM_LOCAL_MODEL_COST_MAP": "True", "OPENHANDS_SUPPRESS_BANNER": "1"})
    cmd = [sdk_python, str(ROOT / "bench" / "sdk_python_load.py"), str(runs),
           str(work / "plugins.lock"), *map(str, dirs)]
    out = subprocess.run(cmd, cwd=work, env=dict(os.environ, **env), check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


class Servers:
    """`fixtures/git_http_server.py` over the repositories and a plain HTTP server over
    the archives, both on 127.0.0.1, stopped on exit."""

    def __init__(self, repos_root: Path, archives_root: Path, backlog: int = 5):
        # Python's servers listen with a queue of 5 by default: past it a connection is
        # dropped and the client retries a second later. `backlog` raises it (the cache
        # rows use 128, as production servers do); the older HTTP rows kept the default.
        self.git = subprocess.Popen(
            [sys.executable, str(ROOT / "fixtures" / "git_http_server.py"), str(repos_root),
             "--backlog", str(backlog)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )
        self.git_port = int(self.git.stdout.readline())
        serve_files = (
            "import socketserver, sys\n"
            "socketserver.TCPServer.request_queue_size = int(sys.argv[1])\n"
            "sys.argv = [sys.argv[0], '0', '--bind', '127.0.0.1', '--directory', sys.argv[2]]\n"
            "import runpy; runpy.run_module('http.server', run_name='__main__')\n"
        )
        self.files = subprocess.Popen(
            [sys.executable, "-c", serve_files, str(backlog), str(archives_root)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )
        line = self.files.stdout.readline()  # "Serving HTTP on 127.0.0.1 port N ..."
        self.files_port = int(line.split(" port ")[1].split()[0])

    def close(self):
        for p in (self.git, self.files):
            p.kill()
            p.wait()


def bench_mixed(berth, scratch, repos, sdk_python, runs):
    archives = scratch / "archives"
    archives.mkdir()
    for repo in repos[50:75]:
        subprocess.run(
            ["tar", "-czf", str(archives / f"{repo.stem}.tar.gz"), "--exclude=.git", "-C", str(repo.parent), repo.name],
            check=True,
        )
    servers = Servers(scratch / "repos", archives)
    try:
        git_sources = [f"http://127.0.0.1:{servers.git_port}/{r.name}" for r in repos[:25]]
        archive_sources = [f"http://127.0.0.1:{servers.files_port}/{r.stem}.tar.gz" for r in repos[50:75]]
        work = scratch / "mixed"
        work.mkdir()
        (work / "plugins.toml").write_text(
            "".join(f'[[plugin]]\nsource = "{s}"\n\n' for s in git_sources + archive_sources)
        )
        store = scratch / "mixed-store"

        def reset():
            shutil.rmtree(store, ignore_errors=True)
            (work / "plugins.lock").unlink(missing_ok=True)

        env = {"BERTH_STORE": str(store)}
        default = [[berth, "plugins", "lock", "-q"], [berth, "plugins", "sync", "-q"]]
        one = [[berth, "plugins", "lock", "-q", "-j", "1"], [berth, "plugins", "sync", "-q", "-j", "1"]]
        berth_times, berth_j1, sdk_times, sdk_inner = [], [], [], []
        for _ in range(runs):
            berth_times.append(timed(default, cwd=work, env=env, before=reset))
            berth_j1.append(timed(one, cwd=work, env=env, before=reset))
            if sdk_python:
                cache = scratch / "sdk-cache"
                shutil.rmtree(cache, ignore_errors=True)
                cmd = [sdk_python, str(ROOT / "bench" / "sdk_fetch_plugins.py"), str(cache), *git_sources]
                sdk_env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True", OPENHANDS_SUPPRESS_BANNER="1")
                start = time.perf_counter()
                out = subprocess.run(cmd, env=sdk_env, check=True, capture_output=True, text=True).stdout
                sdk_times.append(time.perf_counter() - start)
                sdk_inner.append(json.loads(out.strip().splitlines()[-1])["fetch_seconds"])
        return berth_times, berth_j1, (sdk_times or None), (sdk_inner or None)
    finally:
        servers.close()


def ensure_wrk():
    if shutil.which("wrk"):
        return "wrk"
    try:
        run(["apt-get", "install", "-y", "-q", "wrk"])
    except (subprocess.CalledProcessError, OSError):
        return None
    return shutil.which("wrk")


def parse_wrk(text):
    """Requests/s, p50 and p99 in ms from `wrk --latency` output."""
    def ms(value):
        for unit, scale in (("us", 0.001), ("ms", 1.0), ("s", 1000.0)):
            if value.endswith(unit):
                return float(value[: -len(unit)]) * scale
        return float(value)
    rps = p50 = p99 = None
    for line in text.splitlines():
        parts = line.split()
        if line.startswith("Requests/sec:"):
            rps = float(parts[1])
        elif len(parts) == 2 and parts[0] == "50%":
            p50 = ms(parts[1])
        elif len(parts) == 2 and parts[0] == "99%":
            p99 = ms(parts[1])
    return rps, p50, p99


class BerthServer:
    def __init__(self, berth, data, store, extra=(), env=None):
        self.proc = subprocess.Popen(
            [berth, "--store", str(store), "serve", "--addr", "127.0.0.1:0", "--data-dir", str(data),
             "--allow-local-sources", *extra],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            env=dict(os.environ, BERTH_LOG="warn", **(env or {})),
        )
        for line in self.proc.stderr:
            if "Listening on " in line:
                self.base = line.split("Listening on ")[1].strip()
                break
        else:
            raise RuntimeError(f"{berth} serve did not start")
        threading.Thread(target=lambda: [None for _ in self.proc.stderr], daemon=True).start()

    def post(self, body):
        import urllib.error
        import urllib.request
        request = urllib.request.Request(f"{self.base}/api/conversations", data=body.encode(),
                                         headers={"content-type": "application/json"}, method="POST")
        try:
            return json.loads(urllib.request.urlopen(request, timeout=120).read())["id"]
        except urllib.error.HTTPError as e:
            raise RuntimeError(f"POST {self.base}: {e.code} {e.read().decode(errors='replace')}") from None

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


class Moto:
    """moto's S3 server (`moto[server]`: BERTH_MOTO_SERVER, else `moto_server` on PATH) on
    127.0.0.1, with one bucket."""

    def __init__(self, bucket):
        import urllib.request
        binary = os.environ.get("BERTH_MOTO_SERVER") or shutil.which("moto_server")
        if not binary:
            raise FileNotFoundError("moto_server (pip install 'moto[server]', or set BERTH_MOTO_SERVER)")
        import socket
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.proc = subprocess.Popen([binary, "-H", "127.0.0.1", "-p", str(port)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.endpoint = f"http://127.0.0.1:{port}"
        for _ in range(600):
            try:
                urllib.request.urlopen(self.endpoint + "/", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        urllib.request.urlopen(urllib.request.Request(f"{self.endpoint}/{bucket}", method="PUT"))
        self.env = {"AWS_ACCESS_KEY_ID": "AKIABENCH", "AWS_SECRET_ACCESS_KEY": "bench", "AWS_REGION": "us-east-1"}

    def close(self):
        self.proc.kill()
        self.proc.wait()


def wrk_run(wrk, url, body=None, scratch=None, seconds=10, clients=64):
    extra = []
    if body is not None:
        script = Path(tempfile.mkstemp(suffix=".lua", dir=scratch)[1])
        script.write_text(
            'wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\n'
            f"wrk.body = {json.dumps(body)}\n"
        )
        extra = ["-s", str(script)]
    out = subprocess.run([wrk, "-t2", f"-c{clients}", f"-d{seconds}s", "--timeout", "30s", "--latency", *extra, url],
                         check=True, capture_output=True, text=True).stdout
    return parse_wrk(out)


def bench_server(berth, scratch, runs, repos, baseline=None, rounds=3):
    """`berth serve` under `wrk`, 64 clients, warm store: this build and, with `baseline`,
    the build the fleet issue (#18) started from, alternating, `rounds` times each; the
    median round by p99 is reported. Then this build with its conversations on a real S3
    server (moto on 127.0.0.1), and the `plugins` form (10 git plugins over `git
    http-backend` on 127.0.0.1, resolved by tag) with `--ref-ttl 60` next to without."""
    wrk = ensure_wrk()
    if not wrk:
        raise FileNotFoundError("wrk")
    work = scratch / "server"
    work.mkdir()
    dirs = make_sample_copies(work / "plugins", 10, ("alpha", "beta", "gamma"))
    (work / "plugins.toml").write_text("".join(f'[[plugin]]\nsource = "{d}"\n\n' for d in dirs))
    store = scratch / "server-store"
    run([berth, "--store", str(store), "plugins", "sync", "-q", "--manifest", str(work / "plugins.toml")])
    lockfile = (work / "plugins.lock").read_text()
    body = json.dumps({"lockfile": lockfile})
    builds = [("now", berth)] + ([("today", baseline)] if baseline else [])
    results = {}  # (build, route) -> [(rps, p50, p99)]
    for r in range(rounds):
        for name, binary in builds:
            data = scratch / f"server-data-{name}-{r}"
            server = BerthServer(binary, data, store)
            try:
                conversation = server.post(body)
                results.setdefault((name, "post"), []).append(
                    wrk_run(wrk, f"{server.base}/api/conversations", body, scratch))
                results.setdefault((name, "get"), []).append(
                    wrk_run(wrk, f"{server.base}/api/conversations/{conversation}/plugin_set"))
            finally:
                server.stop()
            shutil.rmtree(data, ignore_errors=True)
    # Conversations on object storage: every start is two PUTs to the S3 server.
    try:
        moto = Moto("bench")
    except FileNotFoundError as e:
        print(f"skipping the S3 row: {e}", file=sys.stderr)
        moto = None
    if moto:
        try:
            for r in range(rounds):
                url = f"s3://bench/r{r}?endpoint={moto.endpoint}"
                server = BerthServer(berth, url, store, env=moto.env)
                try:
                    server.post(body)
                    results.setdefault(("now", "post-s3"), []).append(
                        wrk_run(wrk, f"{server.base}/api/conversations", body, scratch))
                finally:
                    server.stop()
        finally:
            moto.close()
    # The `plugins` form: every start resolves 10 tags over HTTP unless --ref-ttl says a
    # recent resolution may be reused.
    github = scratch / "server-github"
    github.mkdir()
    (github / "acme").symlink_to(repos[0].parent)
    servers = Servers(github, scratch, backlog=128)
    plugins_body = json.dumps({"plugins": [
        {"source": f"github:acme/{repo.name.removesuffix('.git')}", "ref": "v1.0.0"} for repo in repos[:10]
    ]})
    try:
        env = {"BERTH_GITHUB_URL": f"http://127.0.0.1:{servers.git_port}"}
        forms = [("now", berth, ["--ref-ttl", "60"], "plugins-ttl"), ("now", berth, [], "plugins")]
        if baseline:
            forms.append(("today", baseline, [], "plugins"))
        for r in range(rounds):
            for name, binary, extra, key in forms:
                data = scratch / f"server-plugins-{name}-{key}-{r}"
                # 8 skills each: 80 skills plus the 10 sample plugins' over the default 100.
                server = BerthServer(binary, data, store, extra=[*extra, "--max-skills", "1000"], env=env)
                try:
                    server.post(plugins_body)
                    results.setdefault((name, key), []).append(
                        wrk_run(wrk, f"{server.base}/api/conversations", plugins_body, scratch))
                finally:
                    server.stop()
                shutil.rmtree(data, ignore_errors=True)
    finally:
        servers.close()
    # 10,000 stored conversations, written in the on-disk format the server keeps.
    big = scratch / "server-10k"
    conversations = big / "conversations"
    conversations.mkdir(parents=True)
    import uuid
    for i in range(10_000):
        cid = str(uuid.uuid4())
        d = conversations / cid
        d.mkdir()
        (d / "plugins.lock").write_text(lockfile)
        (d / "meta.json").write_text(json.dumps({"id": cid, "created_at": 1_700_000_000 + i, "metadata": None}))
    starts = []
    for _ in range(runs):
        start = time.perf_counter()
        server = BerthServer(berth, big, store, extra=["--offline"])
        starts.append(time.perf_counter() - start)
        server.stop()
    median_round = {key: sorted(rounds_, key=lambda x: x[2])[len(rounds_) // 2] for key, rounds_ in results.items()}
    return median_round, starts


UV_VERSION = "0.13.9"


def ensure_uv():
    given = os.environ.get("BERTH_UV")
    if given:
        return given
    venv = Path.home() / ".cache" / "berth-bench" / f"uv-{UV_VERSION}"
    uv = venv / "bin" / "uv"
    if not uv.exists():
        run([sys.executable, "-m", "venv", str(venv)])
        run([str(venv / "bin" / "pip"), "install", "-q", f"uv=={UV_VERSION}"])
    return str(uv)


def bench_agent(berth, scratch, runs):
    """Cold, wheels-only and warm agent environments next to pip into a fresh venv."""
    import tomllib

    index = scratch / "agent-index"
    run([sys.executable, str(ROOT / "fixtures" / "agents" / "build_index.py"), str(index), "--deps", "10"])
    port_probe = __import__("socket").socket()
    port_probe.bind(("127.0.0.1", 0))
    port = port_probe.getsockname()[1]
    port_probe.close()
    http = subprocess.Popen(
        [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(port), "--directory", str(index)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        time.sleep(0.5)
        index_url = f"http://127.0.0.1:{port}/simple"
        work = scratch / "agent-project"
        work.mkdir()
        (work / "plugins.toml").write_text('[agent]\nsource = "bench-agent==1.0.0"\n')
        store = scratch / "agent-store"
        uv_cache = scratch / "agent-uv-cache"
        env = {
            "BERTH_UV": ensure_uv(),
            "BERTH_INDEX_URL": index_url,
            "BERTH_STORE": str(store),
            "UV_CACHE_DIR": str(uv_cache),
        }
        run([berth, "plugins", "lock", "-q"], cwd=work, env=env)
        lock = tomllib.loads((work / "plugins.lock").read_text())
        wheels = lock["agent"]["wheel"]
        reqs = scratch / "agent-requirements.txt"
        reqs.write_text("".join(f"{w['name']}=={w['version']} --hash=sha256:{w['sha256']}\n" for w in wheels))
        ready = [[berth, "plugins", "sync", "--frozen", "-q"], [berth, "agent", "exec", "--frozen", "-q"]]

        def empty():
            shutil.rmtree(store, ignore_errors=True)
            shutil.rmtree(uv_cache, ignore_errors=True)

        def no_env():
            shutil.rmtree(store / "envs-v1", ignore_errors=True)
            shutil.rmtree(uv_cache, ignore_errors=True)

        venv = scratch / "pip-venv"
        call = (
            "from importlib.metadata import entry_points; "
            "[ep.load()() for ep in entry_points(group='openhands.agents')]"
        )

        def pip_fresh():
            shutil.rmtree(venv, ignore_errors=True)

        pip_cmds = [
            [sys.executable, "-m", "venv", str(venv)],
            [str(venv / "bin" / "pip"), "install", "-q", "--no-cache-dir", "--disable-pip-version-check",
             "--index-url", index_url, "--only-binary", ":all:", "--require-hashes", "-r", str(reqs)],
            [str(venv / "bin" / "python"), "-c", call],
        ]
        def pip_venv_only():
            pip_fresh()
            run(pip_cmds[0])

        cold, wheels_only, warm, pip, pip_install = [], [], [], [], []
        for _ in range(runs):  # interleaved, so drift hits both sides alike
            cold.append(timed(ready, cwd=work, env=env, before=empty))
            wheels_only.append(timed(ready, cwd=work, env=env, before=no_env))
            warm.append(timed(ready, cwd=work, env=env))
            pip.append(timed(pip_cmds, cwd=work, before=pip_fresh))
            pip_install.append(timed(pip_cmds[1:], cwd=work, before=pip_venv_only))
        return cold, wheels_only, warm, pip, pip_install, len(wheels)
    finally:
        http.terminate()
        http.wait()


def make_real_marketplace(path: Path, count: int):
    """A local marketplace folder of `count` plugins shaped like the public ones
    (anthropics/claude-plugins-official, anthropics/skills): each has a manifest, a README
    and a licence, skills with reference files and scripts, commands, agents,
    `hooks/hooks.json` with its scripts, and an `.mcp.json` (stdio and http servers); every
    fifth an `.lsp.json`; every 25th a large skill set (four skills of ~120 files each:
    schemas, templates, scripts, ~3 MiB a skill, as the document skills are). No runner
    lines (`npx`), which `lock` would pin from npm."""
    entries = []
    words = "the plugin reads the files and writes a short report for the user ".split()
    prose = lambda n, seed: " ".join(words[(seed + k) % len(words)] for k in range(n)) + "\n"
    for i in range(count):
        name = f"plugin-{i}"
        plugin = path / "plugins" / name
        write = lambda rel, text, mode=None: (
            (plugin / rel).parent.mkdir(parents=True, exist_ok=True),
            (plugin / rel).write_text(text) if isinstance(text, str) else (plugin / rel).write_bytes(text),
            mode and (plugin / rel).chmod(mode),
        )
        write(".claude-plugin/plugin.json", json.dumps(
            {"name": name, "version": f"1.{i}.0", "description": f"Plugin {i} of the bench marketplace",
             "author": {"name": "bench"}, "keywords": ["bench"]}, indent=2))
        write("README.md", f"# {name}\n\n" + prose(400, i))
        write("LICENSE", "MIT License\n\n" + prose(160, 3))
        big = i % 25 == 7
        for s in range(4 if big else 1 + i % 4):
            skill = f"skills/{name}-skill-{s}"
            write(f"{skill}/SKILL.md", f"---\nname: {name}-skill-{s}\ndescription: Use when the user asks for "
                  f"report {s} of {name}\n---\n# Skill {s}\n\n" + prose(600, s))
            write(f"{skill}/reference.md", prose(1500, s + i))
            write(f"{skill}/scripts/run.py", "#!/usr/bin/env python3\nprint('run')\n" + "# " + prose(200, s), 0o755)
            if big:
                for k in range(40):
                    write(f"{skill}/schemas/part-{k}.xsd", "<xsd:schema>\n" + prose(3000, k) + "</xsd:schema>\n")
                    write(f"{skill}/templates/t-{k}.xml", "<t>" + prose(600, k) + "</t>\n")
                    write(f"{skill}/scripts/lib/m{k}.py", "# " + prose(800, k), 0o644)
                write(f"{skill}/assets/logo.bin", os.urandom(256 << 10))
        for c in range(2 + i % 3):
            write(f"commands/{name}-cmd-{c}.md", f"---\ndescription: command {c} of {name}\n"
                  "argument-hint: [path]\n---\nReview $ARGUMENTS. " + prose(300, c))
        for a in range(i % 3):
            write(f"agents/{name}-agent-{a}.md", f"---\nname: {name}-agent-{a}\ndescription: agent {a} of {name}\n"
                  "tools: Read, Grep, Glob\nmodel: sonnet\n---\n" + prose(500, a))
        if i % 2 == 0:
            write("hooks/hooks.json", json.dumps({"hooks": {
                "PreToolUse": [{"matcher": "Bash", "hooks": [
                    {"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/hooks/check.sh", "timeout": 10}]}],
                "SessionStart": [{"hooks": [
                    {"type": "command", "command": "python3 ${CLAUDE_PLUGIN_ROOT}/hooks/start.py"}]}],
            }}, indent=2))
            write("hooks/check.sh", "#!/bin/sh\nexit 0\n", 0o755)
            write("hooks/start.py", "print('{}')\n")
        servers = {f"{name}-local": {"command": "${CLAUDE_PLUGIN_ROOT}/servers/run.sh", "args": ["--stdio"],
                                     "env": {"LOG_LEVEL": "info"}}}
        if i % 3 == 0:
            servers[f"{name}-web"] = {"type": "http", "url": f"https://mcp.example.com/{name}/mcp"}
        write(".mcp.json", json.dumps({"mcpServers": servers}, indent=2))
        write("servers/run.sh", "#!/bin/sh\nexec python3 \"$(dirname \"$0\")/server.py\"\n", 0o755)
        write("servers/server.py", "# " + prose(1200, i))
        if i % 5 == 0:
            write(".lsp.json", json.dumps({f"{name}-lsp": {
                "command": "${CLAUDE_PLUGIN_ROOT}/servers/lsp.sh", "extensionToLanguage": {f".x{i}": f"x{i}"}}}))
            write("servers/lsp.sh", "#!/bin/sh\nexit 0\n", 0o755)
        entries.append({"name": name, "source": f"./plugins/{name}", "description": f"Plugin {i}"})
    (path / ".claude-plugin").mkdir(parents=True)
    (path / ".claude-plugin" / "marketplace.json").write_text(
        json.dumps({"name": "bench", "owner": {"name": "bench"}, "plugins": entries}, indent=2))


MATERIALIZE_TARGETS = ("claude", "codex", "gemini", "copilot", "opencode", "agent-plugins")


def bench_materialize(berth, scratch, runs, baseline=None):
    """`berth materialize TARGET DIR` of a 100-plugin lock (make_real_marketplace's),
    store and DIR on the same filesystem: the first run into a new DIR and a no-op run
    again over it, for each target, this build and `baseline` alternating."""
    work = scratch / "materialize"
    make_real_marketplace(work / "mk", 100)
    (work / "plugins.toml").write_text(
        '[[marketplace]]\nname = "bench"\nsource = "./mk"\n\n'
        + "".join(f'[[plugin]]\nsource = "plugin-{i}@bench"\n\n' for i in range(100))
    )
    env = {"BERTH_STORE": str(scratch / "materialize-store"), "HOME": str(work / "home")}
    run([berth, "plugins", "sync", "-q"], cwd=work, env=env)
    builds = [("now", berth)] + ([("before", baseline)] if baseline else [])
    times = {(b, t, k): [] for b, _ in builds for t in MATERIALIZE_TARGETS for k in ("first", "noop")}
    sizes = {}
    for n in range(runs + 1):  # the first round warms the page cache, untimed
        for target in MATERIALIZE_TARGETS:
            for build, binary in builds:
                out = scratch / "materialized" / f"{build}-{target}-{n}"
                cmd = [binary, "materialize", target, str(out), "--frozen", "-q"]
                first = timed([cmd], cwd=work, env=env)
                noop = timed([cmd], cwd=work, env=env)
                if n:
                    times[(build, target, "first")].append(first)
                    times[(build, target, "noop")].append(noop)
                if build == "now" and target not in sizes:
                    paths = list(out.rglob("*"))
                    written = [f for f in paths if f.is_file() and not f.is_symlink()]
                    links = sum(1 for f in paths if f.is_symlink())
                    sizes[target] = (len(written), sum(f.stat().st_size for f in written), links)
                shutil.rmtree(out)
    files = [f for f in (work / "mk").rglob("*") if f.is_file()]
    fixture = (len(files), sum(f.stat().st_size for f in files))
    return times, sizes, fixture


ECHO_SERVER = """import json, sys
for line in sys.stdin:
    r = json.loads(line)
    if "id" not in r:
        continue
    if r["method"] == "initialize":
        result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                  "serverInfo": {"name": "bench", "version": "1"}}
    elif r["method"] == "tools/list":
        result = {"tools": [{"name": "echo", "description": "Echo", "inputSchema": {"type": "object"}}]}
    else:
        result = {}
    print(json.dumps({"jsonrpc": "2.0", "id": r["id"], "result": result}), flush=True)
"""


def bench_observe(berth, scratch, runs, baseline=None):
    """Observation's cost: a relock of 50 local plugins without servers (the lock removed
    each run, the store warm), this build and `baseline` alternating; and `plugins observe`
    of one plugin with a small stdio server (python3), in the sandbox and outside it."""
    work = scratch / "observe"
    for i in range(50):
        skill = work / "plugins" / f"p{i}" / "skills" / "s"
        skill.mkdir(parents=True)
        (skill / "SKILL.md").write_text(f"---\nname: s{i}\ndescription: skill {i}\n---\nDo {i}.\n")
    (work / "plugins.toml").write_text(
        "".join(f'[[plugin]]\nsource = "./plugins/p{i}"\n\n' for i in range(50)))
    env = {"BERTH_STORE": str(scratch / "observe-store"), "HOME": str(work / "home")}
    run([berth, "plugins", "lock", "-q"], cwd=work, env=env)
    lock = work / "plugins.lock"
    builds = [("now", berth)] + ([("before", baseline)] if baseline else [])
    relock = {b: [] for b, _ in builds}
    for n in range(runs + 1):
        for build, binary in builds:
            took = timed([[binary, "plugins", "lock", "-q"]], cwd=work, env=env,
                         before=lambda: lock.unlink(missing_ok=True))
            if n:
                relock[build].append(took)
    one = scratch / "observe-one"
    plugin = one / "echo"
    (plugin / ".claude-plugin").mkdir(parents=True)
    (plugin / ".claude-plugin" / "plugin.json").write_text('{"name": "echo"}\n')
    (plugin / "server.py").write_text(ECHO_SERVER)
    (plugin / ".mcp.json").write_text(json.dumps(
        {"mcpServers": {"echo": {"command": "python3", "args": ["${CLAUDE_PLUGIN_ROOT}/server.py"]}}}))
    (one / "plugins.toml").write_text('[[plugin]]\nsource = "./echo"\n')
    run([berth, "plugins", "lock", "-q", "--no-observe"], cwd=one, env=env)
    observe = {"sandbox": [], "unsandboxed": []}
    for n in range(runs + 1):
        for kind, extra in (("sandbox", []), ("unsandboxed", ["--observe-unsandboxed"])):
            took = timed([[berth, "plugins", "observe", "-q", *extra]], cwd=one, env=env)
            if n:
                observe[kind].append(took)
    return relock, observe


def machine():
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    git = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.strip()
    return f"{os.cpu_count()} cores ({cpu}), {mem:.0f} GiB, {platform.system()} {platform.release()}, {git}"


SECTIONS = ("noop", "hash", "cold", "market", "cache", "http", "server", "show", "python", "agent", "materialize", "observe")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--berth", required=True, help="the berth binary (release build)")
    parser.add_argument("--only", action="append", choices=SECTIONS, help="run only these figures (repeatable)")
    parser.add_argument("--noop-runs", type=int, default=20)
    parser.add_argument("--cold-runs", type=int, default=5)
    parser.add_argument("--show-runs", type=int, default=20)
    parser.add_argument("--sdk-runs", type=int, default=5)
    parser.add_argument("--sdk-python", help="a Python with openhands-sdk 1.58.2 installed")
    parser.add_argument("--baseline", help="an older berth build for the server and materialize rows' comparison (bench/run.sh builds it)")
    parser.add_argument("--baseline-rev", default="", help="the revision --baseline was built from")
    args = parser.parse_args()
    wanted = set(args.only or SECTIONS)
    base = Path("/dev/shm") if Path("/dev/shm").is_dir() else Path(tempfile.gettempdir())
    scratch = Path(tempfile.mkdtemp(prefix="berth-bench-", dir=base))
    rows = []
    try:
        repos = [scratch / "repos" / f"plugin-{i}.git" for i in range(100)]
        if wanted & {"noop", "cold", "market", "cache", "http", "server"}:
            print(f"building 100 git repositories in {scratch} ...", file=sys.stderr)
            for i, repo in enumerate(repos):
                make_repo(repo, i)
        sdk_python = ensure_sdk(args.sdk_python) if wanted & {"http", "show", "python"} else None
        if "noop" in wanted:
            print("no-op sync ...", file=sys.stderr)
            times, rehashed, paths = bench_noop(args.berth, scratch, repos, args.noop_runs)
            uv = times["uv"]
            for count in (100, 50):
                noop = times[count]
                uv_cell = f"{median_ms(uv):.1f} ms (uv no-op sync, 12 packages)" if uv else "n/a (uv not installable)"
                uv_ratio = f"{median_ms(uv) / median_ms(noop):.1f}x faster" if uv else "n/a"
                rows.append(
                    f"| no-op `sync --frozen --offline`, {count} plugins (median of {len(noop)}, in turn with uv) "
                    f"| {median_ms(noop):.1f} ms | {uv_cell} | {uv_ratio} | 5x uv's |"
                )
            floor_labels = {
                ("paths", 1): "one thread",
                ("paths", 2): "two threads",
                ("dirs", 2): "two threads, each folder opened once and its children `lstat`ed by name",
                ("uring", 1): "every `statx` batched through one io_uring",
            }
            for key in sorted((k for k in times if isinstance(k, tuple)), key=lambda k: (-k[0], list(floor_labels).index(k[1:]))):
                count, mode, threads = key
                floor = median_ms(times[key])
                peers = f"berth's no-op {median_ms(times[count]):.1f} ms" + (f"; uv's {median_ms(uv):.1f} ms" if uv else "")
                rows.append(
                    f"| floor: only `lstat` every recorded path of the {count} plugins, {floor_labels[(mode, threads)]} "
                    f"(`bench/noop_floor.c`, median of {len(times[key])}) | {floor:.1f} ms | {peers} "
                    f"| {f'{median_ms(uv) / floor:.1f}x faster than uv' if uv else 'n/a'} | 5x uv's (a bound, not a goal) |"
                )
            noop = times[100]
            rows.append(
                f"| same, 100 plugins, each entry checked against its stat record ({paths:,} paths `lstat`ed) "
                f"(median of {len(noop)}) | {median_ms(noop):.1f} ms "
                f"| {median_ms(rehashed):.1f} ms (no records: every entry re-hashed, records written) "
                f"| {median_ms(rehashed) / median_ms(noop):.1f}x faster | ≤ 5 ms |"
            )
        if "hash" in wanted:
            print("NAR hash of a 256 MiB plugin ...", file=sys.stderr)
            times, size, core = bench_hash(args.berth, scratch, 11, args.baseline)
            rate = lambda samples: size / statistics.median(samples) / 1e9
            cells = f"openssl {core / 1e9:.2f} GB/s"
            if times["nix"]:
                cells += f"; `nix hash path` {rate(times['nix']):.2f} GB/s"
            if "before" in times:
                cells += f"; build {args.baseline_rev} {rate(times['before']):.2f} GB/s"
            rows.append(
                f"| NAR hash of a 256 MiB plugin, `store verify` (median of {len(times['now'])}) "
                f"| {rate(times['now']):.2f} GB/s | {cells} "
                f"| {rate(times['now']) * 1e9 / core:.0%} of one core's SHA-256 | ≥ 90% of one core's SHA-256 |"
            )
        if "cold" in wanted:
            print("cold lock + sync ...", file=sys.stderr)
            cold, cold_j1, clone, nix_lock = bench_cold(args.berth, scratch, repos, args.cold_runs)
            rows.append(
                f"| cold `lock` + `sync`, 50 git repos (median of {len(cold)}) "
                f"| {median_ms(cold):.0f} ms | {median_ms(clone):.0f} ms (`git clone --depth 1` loop) "
                f"| {median_ms(clone) / median_ms(cold):.2f}x faster | faster than the loop |"
            )
            if nix_lock:
                rows.append(
                    f"| same, next to Nix (median of {len(cold)}) "
                    f"| {median_ms(cold):.0f} ms | {median_ms(nix_lock):.0f} ms (`nix flake lock`, the 50 repositories as `flake = false` inputs) "
                    f"| {median_ms(nix_lock) / median_ms(cold):.2f}x faster | at least 10x faster |"
                )
            rows.append(
                f"| same, `--jobs 1` (median of {len(cold_j1)}) "
                f"| {median_ms(cold_j1):.0f} ms | {median_ms(clone):.0f} ms (`git clone --depth 1` loop) "
                f"| {median_ms(clone) / median_ms(cold_j1):.2f}x faster | |"
            )
        if "cache" in wanted:
            print("cold sync of 50 plugins from a binary cache ...", file=sys.stderr)
            from_cache, from_folder, from_git = bench_cache(args.berth, scratch, repos, args.cold_runs)
            rows.append(
                f"| cold `sync --frozen`, 50 plugins from a binary cache over HTTP on 127.0.0.1 (median of {len(from_cache)}) "
                f"| {median_ms(from_cache):.0f} ms | {median_ms(from_git):.0f} ms (same sync from the 50 git repositories over HTTP) "
                f"| {median_ms(from_git) / median_ms(from_cache):.2f}x faster | faster than upstream |"
            )
            rows.append(
                f"| same cache read as a `file://` folder (median of {len(from_folder)}) "
                f"| {median_ms(from_folder):.0f} ms | {median_ms(from_git):.0f} ms (same sync from git over HTTP) "
                f"| {median_ms(from_git) / median_ms(from_folder):.2f}x faster | |"
            )
        if "market" in wanted:
            print("cold lock of 50 plugins from one marketplace ...", file=sys.stderr)
            market, plain, caches = bench_market(args.berth, scratch, repos, args.cold_runs)
            rows.append(
                f"| cold `lock`, 50 plugins from one marketplace repository, {caches} git cache fetched (median of {len(market)}) "
                f"| {median_ms(market):.0f} ms | {median_ms(plain):.0f} ms (cold `lock` of 50 plain git repositories) "
                f"| {median_ms(market) / median_ms(plain):.2f}x the plain lock | within 2x of the plain lock |"
            )
        if "http" in wanted:
            print("cold lock + sync of 50 sources over HTTP ...", file=sys.stderr)
            mixed, mixed_j1, sdk_fetch, sdk_fetch_inner = bench_mixed(args.berth, scratch, repos, sdk_python, args.cold_runs)
            rows.append(
                f"| cold `lock` + `sync`, 50 sources over HTTP (25 git, 25 archives), default jobs (median of {len(mixed)}) "
                f"| {median_ms(mixed):.0f} ms | {median_ms(mixed_j1):.0f} ms (berth `--jobs 1`) "
                f"| {median_ms(mixed_j1) / median_ms(mixed):.2f}x faster | |"
            )
            if sdk_fetch:
                rows.append(
                    f"| same 25 git sources: SDK `Plugin.fetch` one by one (median of {len(sdk_fetch)}) "
                    f"| {median_ms(mixed):.0f} ms (all 50, berth) | {median_ms(sdk_fetch):.0f} ms with start-up, "
                    f"{median_ms(sdk_fetch_inner):.0f} ms in-process (25 git only) "
                    f"| {median_ms(sdk_fetch_inner) / median_ms(mixed):.2f}x (in-process) | |"
                )
        if "server" in wanted:
            print("server ...", file=sys.stderr)
            server_results, server_starts = bench_server(args.berth, scratch, 5, repos, args.baseline)
            def cell(key):
                if key not in server_results:
                    return "n/a"
                rps, p50, p99 = server_results[key]
                return f"{rps:.0f} req/s, p50 {p50:.1f} ms, p99 {p99:.1f} ms"
            today = f"(build {args.baseline_rev})" if args.baseline else "(no baseline build given)"
            for key, label, target in (
                (("now", "post"), "`POST /api/conversations`, 10-plugin lockfile, data folder", "p99 < 10 ms"),
                (("now", "get"), "`GET .../plugin_set`, 10 plugins", "p99 < 20 ms"),
            ):
                rows.append(
                    f"| {label}, warm store, 64 clients, 10 s (`wrk`, median of 3 rounds) | {cell(key)} "
                    f"| {cell(('today', key[1]))} {today} | | {target} |"
                )
            rows.append(
                "| same `POST`, conversations on S3 (`--data-dir s3://`, moto on 127.0.0.1) "
                f"| {cell(('now', 'post-s3'))} | {cell(('today', 'post'))} (data folder) {today} | | |"
            )
            rows.append(
                "| `POST` of the `plugins` form, 10 git plugins by tag over `git http-backend`, `--ref-ttl 60` "
                f"| {cell(('now', 'plugins-ttl'))} | {cell(('now', 'plugins'))} (this build, no TTL); "
                f"{cell(('today', 'plugins'))} {today} | | |"
            )
            rows.append(
                f"| `berth serve` start to listening, 10,000 conversations (median of {len(server_starts)}) "
                f"| {median_ms(server_starts):.0f} ms | | | < 2 s |"
            )
        if "python" in wanted and sdk_python:
            for fixture, what in (("samples", ""), ("hooks", ", each with hooks for 5 events and 2 MCP servers")):
                print(f"berth.openhands.load_plugins, {PYTHON_PLUGINS} plugins{what} ...", file=sys.stderr)
                result = bench_python(args.berth, scratch, sdk_python, args.sdk_runs * 4, fixture)
                skills, theirs = result["skills"], result["sdk"]
                counted = f"{skills[0]} skills" + (f", {result['hooks'][0]} hook matchers, {result['servers'][0]} MCP servers" if fixture == "hooks" else "")
                for key, how in (("berth", "in one running Python, the set built in-process by `berth._native`"),
                                 ("berth_binary", "the same with the berth binary run instead (`BERTH_NATIVE=0`)")):
                    ours = result[key]
                    rows.append(
                        f"| `berth.openhands.load_plugins`, {PYTHON_PLUGINS} plugins{what} ({counted}), "
                        f"{how} (median of {len(ours)}) | {median_ms(ours):.1f} ms "
                        f"| {median_ms(theirs):.0f} ms (SDK `load_plugins`, same folders, {skills[2]} skills) "
                        f"| {median_ms(theirs) / median_ms(ours):.1f}x faster | "
                        f"{'at least 10x faster' if key == 'berth' else ''} |"
                    )
                rows.append(
                    f"| of which `berth.openhands.plugin_set` in-process, the set as Python objects "
                    f"(median of {len(result['plugin_set'])}) | {median_ms(result['plugin_set']):.1f} ms | | | |"
                )
        if "show" in wanted:
            print(f"plugin set of {SHOW_PLUGINS} plugins ...", file=sys.stderr)
            show, reviewed, sdk, sdk_inner = bench_show(args.berth, scratch, sdk_python, args.show_runs, args.sdk_runs)
            sdk_cell = f"{median_ms(sdk):.0f} ms (SDK `load_plugins`, median of {len(sdk)}, with start-up)" if sdk else "n/a (SDK not installable)"
            sdk_ratio = f"{median_ms(sdk) / median_ms(show):.0f}x faster" if sdk else "n/a"
            rows.append(
                f"| `plugins show --json --no-review`, {SHOW_PLUGINS} plugins (median of {len(show)}) "
                f"| {median_ms(show):.1f} ms | {sdk_cell} | {sdk_ratio} | at least 50x faster |"
            )
            rows.append(
                f"| same with `review` (every file of every plugin read for it; median of {len(reviewed)}, in turn) "
                f"| {median_ms(reviewed):.1f} ms | {median_ms(show):.1f} ms (`--no-review`) | "
                f"{median_ms(reviewed) / median_ms(show):.1f}x the set alone | |"
            )
            if sdk_inner:
                rows.append(
                    f"| same, the SDK's `load_plugins` call alone, in-process (median of {len(sdk_inner)}) "
                    f"| {median_ms(show):.1f} ms | {median_ms(sdk_inner):.0f} ms | "
                    f"{median_ms(sdk_inner) / median_ms(show):.1f}x faster | |"
                )
        if "agent" in wanted:
            print("agent environment ...", file=sys.stderr)
            agent_cold, wheels_only, warm, pip, pip_install, count = bench_agent(args.berth, scratch, args.cold_runs)
            pip_cell = f"{median_ms(pip):.0f} ms (`venv` + `pip install --require-hashes`, no cache)"
            for label, samples in (
                (f"agent env ready, {count} wheels, cold: empty store and uv cache, `sync` + `agent exec`", agent_cold),
                ("same, wheels in the store, no environment yet", wheels_only),
                ("same, warm: a new conversation on the same lock reuses the environment", warm),
            ):
                rows.append(
                    f"| {label} (median of {len(samples)}) | {median_ms(samples):.0f} ms | {pip_cell} "
                    f"| {median_ms(pip) / median_ms(samples):.1f}x faster | |"
                )
            rows.append(
                f"| same cold run, next to `pip install` alone into an existing venv (median of {len(pip_install)}) "
                f"| {median_ms(agent_cold):.0f} ms | {median_ms(pip_install):.0f} ms (`pip install --require-hashes` + call, no cache) "
                f"| {median_ms(pip_install) / median_ms(agent_cold):.1f}x faster | |"
            )
        if "materialize" in wanted:
            print("materialize of 100 plugins ...", file=sys.stderr)
            times, sizes, (fixture_files, fixture_bytes) = bench_materialize(
                args.berth, scratch, args.cold_runs, args.baseline)
            before = f"build {args.baseline_rev}" if args.baseline else None
            for target in MATERIALIZE_TARGETS:
                files, size, links = sizes[target]
                for kind, label, goal in (("first", "first run into an empty DIR", "< 500 ms"),
                                          ("noop", "no-op run again", "< 50 ms")):
                    ours = times[("now", target, kind)]
                    theirs = times.get(("before", target, kind))
                    rows.append(
                        f"| `materialize {target}`, 100 plugins ({fixture_files:,} files, {fixture_bytes / 2**20:.0f} MiB), "
                        f"{label}; DIR: {files:,} files ({size / 2**20:.1f} MiB), {links:,} links (median of {len(ours)}) "
                        f"| {median_ms(ours):.0f} ms "
                        f"| {f'{median_ms(theirs):.0f} ms ({before})' if theirs else ''} "
                        f"| {f'{median_ms(theirs) / median_ms(ours):.1f}x faster' if theirs else ''} | {goal} |"
                    )
        if "observe" in wanted:
            print("observation ...", file=sys.stderr)
            relock, observe = bench_observe(args.berth, scratch, args.show_runs, args.baseline)
            ours, theirs = relock["now"], relock.get("before")
            before = f"build {args.baseline_rev}" if args.baseline else None
            rows.append(
                f"| relock of 50 local plugins without servers, store warm (median of {len(ours)}) "
                f"| {median_ms(ours):.1f} ms "
                f"| {f'{median_ms(theirs):.1f} ms ({before})' if theirs else ''} "
                f"| {f'{median_ms(theirs) / median_ms(ours):.2f}x' if theirs else ''} | no more than before |"
            )
            rows.append(
                f"| `plugins observe`, one small stdio server (python3), in the sandbox (median of {len(observe['sandbox'])}) "
                f"| {median_ms(observe['sandbox']):.0f} ms "
                f"| {median_ms(observe['unsandboxed']):.0f} ms (`--observe-unsandboxed`) "
                f"| +{median_ms(observe['sandbox']) - median_ms(observe['unsandboxed']):.0f} ms | |"
            )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    print(f"Machine: {machine()}\n")
    print("| figure | berth | comparison | ratio | goal |")
    print("|---|---|---|---|---|")
    for row in rows:
        print(row)


if __name__ == "__main__":
    main()
