//! e: a read-only store (a shared cache, a container image's) gave raw `Permission denied`,
//! and `sync --frozen` and `run` failed even with every entry present. Now every read is
//! served from it, and what must write names the folder and what to do.

use std::path::Path;
use std::process::Output;

use crate::common;

use super::fixed::local_plugin;
use common::TestContext;

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_read_only_store_serves_every_read_and_names_what_it_could_not_write() {
    let ctx = TestContext::new();
    local_plugin(&ctx, "notes");
    let review = ctx.repo("review");
    review.copy_fixture("review", "");
    review.commit("first");
    let manifest =
        "[[plugin]]\nsource = \"./notes\"\n\n[[plugin]]\nsource = \"github:acme/review\"\n";
    ctx.write_manifest(manifest);
    ctx.ok(&["plugins", "sync"]);
    // As an image is built: synced, and its set's view made once by a read.
    ctx.ok(&["plugins", "show"]);
    let ro = ctx.root.join("ro-store");
    let Some(_mount) = common::mount::read_only_view(&ctx.store, &ro) else {
        return;
    };
    let runtime = ctx.root.join("runtime");
    std::fs::create_dir_all(&runtime).expect("mkdir");
    let berth = |args: &[&str]| {
        ctx.berth()
            .env("BERTH_STORE", &ro)
            .env("XDG_RUNTIME_DIR", &runtime)
            .args(args)
            .output()
            .expect("run berth")
    };
    for args in [
        &["plugins", "sync", "--frozen"][..],
        &["plugins", "sync", "--locked"],
        &["plugins", "show", "--json"],
        &["plugins", "list"],
    ] {
        let out = berth(args);
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{args:?}: {stdout}{stderr}");
        assert!(
            !stderr.contains("error") && !stderr.contains("os error"),
            "{args:?}: {stderr}"
        );
    }
    // `run` writes the set's document where this user can: the runtime folder.
    let out = berth(&[
        "run",
        "--",
        "sh",
        "-c",
        "cat \"$BERTH_PLUGIN_SET\"; echo; echo \"$BERTH_PLUGIN_SET\"",
    ]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "run: {stdout}{stderr}");
    assert!(stdout.contains("\"notes\""), "the set: {stdout}");
    let written = stdout.lines().last().expect("the path");
    assert!(
        Path::new(written).starts_with(runtime.join("berth").join("run-v1")),
        "{written}"
    );
    // `materialize` writes the harness's folder only.
    let claude = ctx.root.join("claude");
    let out = berth(&[
        "materialize",
        "claude",
        claude.to_str().expect("utf-8"),
        "--frozen",
    ]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "materialize: {stdout}{stderr}");
    assert!(
        claude.join("plugins/installed_plugins.json").is_file(),
        "{stderr}"
    );

    // A new plugin must be added to the store: the error names where, and what to do.
    local_plugin(&ctx, "extra");
    ctx.write_manifest(&format!("{manifest}\n[[plugin]]\nsource = \"./extra\"\n"));
    let out = berth(&["plugins", "sync"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    let error = stderr
        .lines()
        .find(|l| l.starts_with("error:"))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(
        error.contains(ro.to_str().expect("utf-8")),
        "names the folder: {stderr}"
    );
    assert!(
        stderr.contains("hint: that folder is read-only to berth")
            && stderr.contains("BERTH_STORE"),
        "says what to do: {stderr}"
    );
}
