//! The runtime builds plugin sets from the lock and the store alone, so neither it nor the
//! reader below it nor the review and the harness targets above it may even link a network
//! crate.

use std::process::Command;

#[test]
fn runtime_links_no_network_crate() {
    for krate in [
        "berth-plugin",
        "berth-runtime",
        "berth-review",
        "berth-harness",
    ] {
        links_no_network_crate(krate);
    }
}

fn links_no_network_crate(krate: &str) {
    let out = Command::new(env!("CARGO"))
        .args([
            "tree",
            "--offline",
            "-p",
            krate,
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
    assert!(tree.contains("berth-store"), "the tree is real: {tree}");
    for forbidden in ["gix", "reqwest", "hyper"] {
        let found: Vec<&str> = tree
            .lines()
            .filter(|l| {
                l.split_whitespace().next().is_some_and(|name| {
                    name == forbidden || name.starts_with(&format!("{forbidden}-"))
                })
            })
            .collect();
        assert!(
            found.is_empty(),
            "{krate} depends on {forbidden}: {found:?}"
        );
    }
}
