//! berth's Python extension (`python-ext`, `berth._native`), built for the tests that load
//! it into a Python (`BERTH_NATIVE=PATH`): `cargo build -p berth-python`, with the cargo and
//! the target folder that built this test, once per test binary.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The built extension (`libberth_native.so`).
pub fn native_extension() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| super::pinned(&build())).clone()
}

fn build() -> PathBuf {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the repository");
    let out = Command::new(env!("CARGO"))
        .current_dir(repo)
        .args([
            "build",
            "--locked",
            "-p",
            "berth-python",
            "--message-format=json-render-diagnostics",
        ])
        .env("PYO3_BUILD_EXTENSION_MODULE", "1")
        .output()
        .expect("run cargo");
    assert!(
        out.status.success(),
        "building berth's Python extension failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == "berth_native")
        .flat_map(|m| {
            m["filenames"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .filter_map(|f| f.as_str().map(PathBuf::from))
        })
        .find(|f| f.extension().is_some_and(|e| e == "so"))
        .expect("cargo names the extension it built")
}
