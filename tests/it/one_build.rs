//! The binary, the Python extension and the tests share one build of every dependency.
//!
//! Cargo picks a dependency's features from the packages one command builds, so a
//! dev-dependency (proptest's rand) or the extension's pyo3 turning a feature on made
//! `cargo build -p berth` and the wheel's build (build-backend/, which builds the binary
//! and the extension each on its own) compile most of the graph a second and a third time
//! beside what `cargo test --workspace` compiled. The crate `berth-workspace-hack`
//! (workspace-hack/Cargo.toml) turns those features on for the binary and the extension
//! too; this test asks `cargo tree` that each dependency of the binary and the extension is
//! built with a feature set the workspace's test build also builds it with.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

/// Each package `cargo tree ARGS` lists (`name vX.Y.Z`), with every feature set it is
/// built with (a package built for the host and for the target can have two).
fn features(args: &[&str]) -> BTreeMap<String, BTreeSet<String>> {
    let out = Command::new(env!("CARGO"))
        .args(["tree", "--offline", "--prefix", "none", "-f", "{p} [{f}]"])
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run cargo tree");
    assert!(
        out.status.success(),
        "cargo tree {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut packages: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some((package, rest)) = line.trim_end_matches(" (*)").split_once(" [") else {
            continue;
        };
        let Some((features, _)) = rest.split_once(']') else {
            continue;
        };
        let name = package.split(" (").next().unwrap_or(package);
        packages
            .entry(name.to_owned())
            .or_default()
            .insert(features.to_owned());
    }
    packages
}

#[test]
fn the_binary_and_the_extension_build_every_dependency_as_the_tests_do() {
    let workspace = features(&["--workspace", "-e", "normal,build,dev"]);
    assert!(
        workspace.keys().any(|p| p.starts_with("gix ")),
        "the tree is real: {workspace:?}"
    );
    let mut differ = Vec::new();
    for package in ["berth", "berth-python"] {
        for (dependency, sets) in features(&["-p", package, "-e", "normal,build"]) {
            let built = workspace.get(&dependency).cloned().unwrap_or_default();
            for set in sets.difference(&built) {
                differ.push(format!(
                    "{package}: {dependency} [{set}], the tests' build has {built:?}"
                ));
            }
        }
    }
    assert!(
        differ.is_empty(),
        "these dependencies would be compiled again for the binary or the wheel: add the \
         features the tests' build has to workspace-hack/Cargo.toml\n{}",
        differ.join("\n")
    );
}
