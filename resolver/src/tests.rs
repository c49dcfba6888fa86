//! The dependency direction of ARCHITECTURE.md: the resolver fetches and the runtime reads
//! the store; the resolver does not depend on the runtime (what both need, the plugin
//! manifest rules and the pinned uv, lives below them).

use std::process::Command;

#[test]
fn the_resolver_does_not_depend_on_the_runtime() {
    let out = Command::new(env!("CARGO"))
        .args([
            "tree",
            "--offline",
            "-p",
            "berth-resolver",
            "-e",
            "normal",
            "--prefix",
            "none",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run cargo tree");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tree = String::from_utf8_lossy(&out.stdout);
    let crates: Vec<&str> = tree
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    for needed in ["berth-store", "berth-uv", "berth-lockfile-schema"] {
        assert!(crates.contains(&needed), "the tree is real: {tree}");
    }
    assert!(
        !crates.contains(&"berth-runtime"),
        "berth-resolver depends on berth-runtime: {tree}"
    );
}
