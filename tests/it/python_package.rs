//! The Python package (`pyproject.toml`, maturin, `python/berth`): a wheel built from this
//! checkout (through the in-tree backend, as `pip install .` builds it) carries the binary
//! and the extension `berth._native`, installs into a fresh venv with the pinned uv it
//! depends on, `berth` runs from it, `python -m berth` and `berth.find_berth_bin()` find
//! it, `berth.openhands` builds a plugin set in-process equal to the binary's `show
//! --json`, and berth finds that uv without `BERTH_UV`.
//!
//! Needs maturin (`BERTH_MATURIN`, else `maturin` on PATH, with the Python it is installed
//! in beside it: the backend imports it) and a folder holding the uv
//! 0.13.9 wheel (`BERTH_WHEELHOUSE`): the test installs without any index, so nothing
//! leaves this machine. `.ci/run` provides both.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{TestContext, require_or_skip};

fn maturin() -> Option<PathBuf> {
    match std::env::var_os("BERTH_MATURIN") {
        Some(path) if !path.is_empty() => Some(PathBuf::from(path)),
        _ => std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join("maturin"))
                .find(|p| p.is_file())
        }),
    }
}

fn run(cmd: &mut Command) -> std::process::Output {
    let out = cmd.output().expect("run");
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn text(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// `berth plugins lock` of an `[agent]` from an index on a closed loopback port, with
/// `BERTH_UV` unset and a `PATH` without uv: its stderr.
fn lock_agent_without_berth_uv(berth: &Path, project: &Path) -> String {
    std::fs::create_dir_all(project).expect("mkdir");
    std::fs::write(
        project.join("plugins.toml"),
        "[agent]\nsource = \"some-agent==1.0.0\"\nentry_point = \"a\"\n",
    )
    .expect("write");
    let out = Command::new(berth)
        .current_dir(project)
        .env_remove("BERTH_UV")
        .env("PATH", "/usr/bin:/bin")
        .env("BERTH_INDEX_URL", "http://127.0.0.1:9/simple")
        .env("UV_HTTP_RETRIES", "0")
        .env("BERTH_STORE", project.join("store"))
        .args(["plugins", "lock"])
        .output()
        .expect("run berth");
    assert!(!out.status.success(), "the index is closed: lock fails");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_wheel_from_this_checkout_installs_and_finds_its_uv() {
    let Some(maturin) = maturin() else {
        require_or_skip(
            "maturin",
            "install it (`pip install maturin`) or set BERTH_MATURIN",
        );
        return;
    };
    let Some(wheelhouse) = std::env::var_os("BERTH_WHEELHOUSE").map(PathBuf::from) else {
        require_or_skip(
            "BERTH_WHEELHOUSE",
            "point it at a folder with the uv 0.13.9 wheel (`pip download uv==0.13.9 -d DIR`)",
        );
        return;
    };
    let ctx = TestContext::new();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the repository")
        .to_owned();
    let out_dir = ctx.root.join("wheels");
    // The wheel is built as `pip install .` builds it: through the in-tree backend
    // (build-backend/), which builds the extension before maturin packs the binary. The
    // dev profile reuses what `cargo test` built; the release wheel is the same files.
    let build_python = maturin.with_file_name("python");
    let path = std::env::join_paths(
        std::iter::once(maturin.parent().expect("maturin's folder").to_owned()).chain(
            std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
        ),
    )
    .expect("PATH");
    run(Command::new(&build_python)
        .current_dir(&root)
        .env("PATH", path)
        .env("MATURIN_PEP517_ARGS", "--profile dev")
        .args([
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-build-isolation",
            "--no-deps",
            "--no-index",
            "--wheel-dir",
        ])
        .arg(&out_dir)
        .arg(&root));
    let wheels = common::list_dir(&out_dir);
    assert_eq!(wheels.len(), 1, "{wheels:?}");
    assert!(
        wheels[0].starts_with("berth-0.1.0-") && wheels[0].ends_with(".whl"),
        "{wheels:?}"
    );
    let listing = text(&run(Command::new(&build_python)
        .args(["-m", "zipfile", "-l"])
        .arg(out_dir.join(&wheels[0]))));
    for file in [
        "berth/_native.abi3.so",
        "berth/openhands.py",
        "scripts/berth",
    ] {
        assert!(
            listing.contains(file),
            "{file} is not in the wheel:\n{listing}"
        );
    }
    assert!(
        !root.join("python/berth/_native.abi3.so").exists(),
        "the backend leaves the checkout as it was"
    );

    let venv = ctx.root.join("venv");
    run(Command::new("python3").args(["-m", "venv"]).arg(&venv));
    run(Command::new(venv.join("bin/pip"))
        .args(["install", "--quiet", "--no-index", "--find-links"])
        .arg(&wheelhouse)
        .arg("--find-links")
        .arg(&out_dir)
        .arg("berth"));
    let bin = venv.join("bin");
    assert_eq!(
        text(&run(Command::new(bin.join("berth")).arg("--version"))),
        "berth 0.1.0"
    );
    assert_eq!(
        text(&run(Command::new(bin.join("python")).args([
            "-m",
            "berth",
            "--version"
        ]))),
        "berth 0.1.0"
    );
    assert_eq!(
        text(&run(Command::new(bin.join("python"))
            .args(["-c", "import berth; print(berth.find_berth_bin())"]))),
        bin.join("berth").display().to_string()
    );
    assert!(
        text(&run(Command::new(bin.join("uv")).arg("--version"))).starts_with("uv 0.13.9"),
        "the pinned uv came with it"
    );

    // The installed package builds plugin sets in-process, the same as the binary shows.
    let project = ctx.root.join("project");
    common::copy_tree(
        &common::fixtures().join("conformance/samples/alpha"),
        &project.join("alpha"),
    );
    std::fs::write(
        project.join("plugins.toml"),
        "[[plugin]]\nsource = \"./alpha\"\n",
    )
    .expect("write manifest");
    let store = ctx.root.join("store");
    run(Command::new(bin.join("berth"))
        .current_dir(&project)
        .env("BERTH_STORE", &store)
        .args(["plugins", "sync"]));
    let shown = text(&run(Command::new(bin.join("berth"))
        .current_dir(&project)
        .env("BERTH_STORE", &store)
        .args(["plugins", "show", "--json", "--max-skills", "4294967296"])));
    let in_process = text(&run(Command::new(bin.join("python"))
        .current_dir(&project)
        .env("BERTH_STORE", &store)
        .env_remove("BERTH_NATIVE")
        .env_remove("BERTH_BIN")
        .args([
            "-c",
            "import json, berth.openhands as b\nassert b.native() is not None, 'the extension loads'\nprint(json.dumps(b.plugin_set('plugins.lock')))",
        ])));
    let mut shown: serde_json::Value = serde_json::from_str(&shown).expect("show --json");
    let in_process: serde_json::Value = serde_json::from_str(&in_process).expect("JSON");
    // `show --json` adds what the review reads (`review`); the set is the rest.
    assert!(
        shown["review"]["alpha"]["capabilities"].is_array(),
        "{shown}"
    );
    shown.as_object_mut().expect("an object").remove("review");
    assert_eq!(in_process, shown);
    assert_eq!(shown["plugins"][0]["name"], "alpha");

    // berth finds the uv beside it: the failure is the closed index, not a missing uv.
    let installed = lock_agent_without_berth_uv(&bin.join("berth"), &ctx.root.join("p1"));
    assert!(!installed.contains("BERTH_UV is not set"), "{installed}");
    // The same binary away from its uv says where it looked.
    let alone = ctx.root.join("alone");
    std::fs::create_dir_all(&alone).expect("mkdir");
    std::fs::copy(bin.join("berth"), alone.join("berth")).expect("copy");
    let missing = lock_agent_without_berth_uv(&alone.join("berth"), &ctx.root.join("p2"));
    assert!(
        missing.contains("BERTH_UV is not set, there is no `uv` next to berth and none on PATH"),
        "{missing}"
    );
}
