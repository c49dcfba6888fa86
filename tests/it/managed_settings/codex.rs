//! `berth materialize codex DIR --managed-settings /etc/codex/requirements.toml`, read by
//! the real Codex at every pinned version (`BERTH_CODEX`, `BERTH_CODEX_NEWEST`).

use std::path::Path;
use std::process::Output;

use serde_json::Value;

use super::{bwrap_works, etc_copy, lock_hello, text, with_etc};
use crate::common::TestContext;
use crate::import_clients::{folder, market_of};
use crate::materialize::codex_bins;

/// `codex ARGS` on home `home`, run with `etc` bound over `/etc`.
fn codex_with(ctx: &TestContext, bin: &Path, home: &Path, etc: &Path, args: &[&str]) -> Output {
    with_etc(etc, bin)
        .args(args)
        .env("HOME", &ctx.home)
        .env("CODEX_HOME", home)
        .current_dir(&ctx.work)
        .output()
        .expect("run bwrap")
}

/// `codex ARGS` as [`codex_with`], which must succeed; its stdout.
fn codex_ok(ctx: &TestContext, bin: &Path, home: &Path, etc: &Path, args: &[&str]) -> String {
    let out = codex_with(ctx, bin, home, etc, args);
    assert!(out.status.success(), "codex {args:?}: {}", text(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What Codex loads from home `home` under `etc`: the installed plugins (`plugin list`),
/// and which of the skills `hello-skill` and `bye-skill` it offers the model (`debug
/// prompt-input`).
fn loaded(ctx: &TestContext, bin: &Path, home: &Path, etc: &Path) -> (Vec<String>, Vec<String>) {
    let list: Value = serde_json::from_str(&codex_ok(
        ctx,
        bin,
        home,
        etc,
        &["plugin", "list", "--json"],
    ))
    .expect("JSON");
    let mut plugins: Vec<String> = list["installed"]
        .as_array()
        .expect("installed")
        .iter()
        .filter(|p| p["enabled"] == true)
        .map(|p| p["pluginId"].as_str().expect("an id").to_owned())
        .collect();
    plugins.sort();
    let prompt = codex_ok(ctx, bin, home, etc, &["debug", "prompt-input"]);
    let skills = ["bye-skill", "hello-skill"]
        .into_iter()
        .filter(|s| prompt.contains(s))
        .map(str::to_owned)
        .collect();
    (plugins, skills)
}

#[test]
fn codex_refuses_a_marketplace_outside_the_lock_under_its_requirements() {
    for bin in codex_bins() {
        codex_refuses_a_marketplace_outside_the_lock_under_its_requirements_with(&bin);
    }
}

fn codex_refuses_a_marketplace_outside_the_lock_under_its_requirements_with(bin: &Path) {
    if !bwrap_works() {
        return;
    }
    let ctx = TestContext::new();
    lock_hello(&ctx);
    // The user's own marketplace, added and installed from before the requirements.
    let home = ctx.root.join("codex");
    std::fs::create_dir_all(&home).expect("mkdir");
    let plain = Path::new("/etc");
    let other = market_of(&ctx, "other", &[("bye", "2.1.0")]);
    let add = ["plugin", "marketplace", "add", folder(&other)];
    codex_ok(&ctx, bin, &home, plain, &add);
    codex_ok(&ctx, bin, &home, plain, &["plugin", "add", "bye@other"]);

    let etc = etc_copy(&ctx);
    let file = etc.join("codex/requirements.toml");
    std::fs::create_dir_all(file.parent().expect("a folder")).expect("mkdir");
    std::fs::write(&file, "allowed_approval_policies = [\"on-request\"]\n").expect("write");
    let (h, f) = (home.to_str().expect("UTF-8"), file.to_str().expect("UTF-8"));
    let run = ctx.ok(&["materialize", "codex", h, "--managed-settings", f]);
    assert!(run.stderr.contains("enforced by"), "{}", run.stderr);
    let market = home.join("berth-marketplace");
    assert_eq!(
        std::fs::read_to_string(&file).expect("the file"),
        format!(
            "allowed_approval_policies = [\"on-request\"]\n\n[marketplaces]\nrestrict_to_allowed_sources = true\n\n[marketplaces.allowed_sources.berth]\nsource = \"local\"\npath = \"{}\"\n",
            market.display()
        )
    );
    ctx.ok(&[
        "materialize",
        "codex",
        h,
        "--managed-settings",
        f,
        "--check",
    ]);

    // Without the requirements Codex loads the user's plugin; with them, only berth's.
    let both = (
        vec!["bye@other".to_owned(), "hello@berth".to_owned()],
        vec!["bye-skill".to_owned(), "hello-skill".to_owned()],
    );
    assert_eq!(loaded(&ctx, bin, &home, plain), both);
    let only_berth = (
        vec!["hello@berth".to_owned()],
        vec!["hello-skill".to_owned()],
    );
    assert_eq!(loaded(&ctx, bin, &home, &etc), only_berth);
    let install = codex_with(&ctx, bin, &home, &etc, &["plugin", "add", "bye@other"]);
    assert!(!install.status.success(), "{}", text(&install));

    // A marketplace from anywhere else is refused before it is read.
    let third = market_of(&ctx, "third", &[("more", "0.1.0")]);
    let add = codex_with(
        &ctx,
        bin,
        &home,
        &etc,
        &["plugin", "marketplace", "add", folder(&third)],
    );
    assert!(!add.status.success(), "{}", text(&add));
    assert!(
        text(&add).contains("is not allowed by requirements from /etc/codex/requirements.toml"),
        "{}",
        text(&add)
    );
}
