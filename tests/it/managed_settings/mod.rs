//! `berth materialize claude|codex|copilot DIR --managed-settings FILE`: an organisation
//! enforces the lock. Each real client reads its managed settings from `/etc` on Linux
//! (Claude Code `/etc/claude-code/`, Codex `/etc/codex/requirements.toml`, Copilot CLI
//! `/etc/github-copilot/managed-settings.json`), with no variable naming another path; the
//! tests give it a copy of `/etc` holding berth's file, bound over `/etc` with bubblewrap,
//! so the machine's own `/etc` is never touched.

mod codex;
mod copilot;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::common::{TestContext, require_or_skip};
use crate::import_clients::{folder, market_of};
use crate::materialize::{claude, claude_bins};

/// `bin`, to be run with `etc` bound over `/etc` (read-only), everything else as it is.
fn with_etc(etc: &Path, bin: &Path) -> Command {
    let mut command = Command::new("bwrap");
    command
        .args(["--bind", "/", "/", "--ro-bind"])
        .arg(etc)
        .args(["/etc", "--dev", "/dev", "--proc", "/proc", "--"])
        .arg(bin);
    command
}

/// Whether `bwrap` runs here; if not, the test is skipped (failed under `CI`), saying so.
fn bwrap_works() -> bool {
    let works = with_etc(Path::new("/etc"), Path::new("true"))
        .output()
        .is_ok_and(|o| o.status.success());
    if !works {
        require_or_skip(
            "a working `bwrap` (bubblewrap; run as root or with user namespaces)",
            "install bubblewrap (`apt-get install bubblewrap`; .ci/run does)",
        );
    }
    works
}

/// A lock of plugin `hello` from marketplace `acme`, synced.
fn lock_hello(ctx: &TestContext) {
    let acme = market_of(ctx, "acme", &[("hello", "1.0.0")]);
    ctx.write_manifest(&format!(
        "[[marketplace]]\nname = \"acme\"\nsource = \"{}\"\n\n[[plugin]]\nsource = \"hello@acme\"\n",
        folder(&acme)
    ));
    ctx.ok(&["plugins", "sync"]);
}

/// `claude ARGS` on configuration folder `dir`, run with `etc` bound over `/etc`.
fn claude_managed(ctx: &TestContext, bin: &Path, dir: &Path, etc: &Path, args: &[&str]) -> Output {
    with_etc(etc, bin)
        .args(args)
        .env("CLAUDE_CONFIG_DIR", dir)
        .env("HOME", &ctx.home)
        .env("DISABLE_AUTOUPDATER", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_TELEMETRY", "1")
        .current_dir(&ctx.work)
        .output()
        .expect("run bwrap")
}

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

/// A copy of the machine's `/etc` (what Claude Code and its libraries read there), for
/// berth to write the managed settings into.
fn etc_copy(ctx: &TestContext) -> PathBuf {
    let etc = ctx.root.join("etc");
    let out = Command::new("cp")
        .args(["-a", "/etc"])
        .arg(&etc)
        .output()
        .expect("run cp");
    assert!(etc.join("passwd").exists(), "copied /etc: {out:?}");
    etc
}

#[test]
fn claude_code_refuses_a_marketplace_outside_the_lock_under_managed_settings() {
    insta::allow_duplicates! {
        for bin in claude_bins() {
            claude_code_refuses_a_marketplace_outside_the_lock_under_managed_settings_with(&bin);
        }
    }
}

fn claude_code_refuses_a_marketplace_outside_the_lock_under_managed_settings_with(bin: &Path) {
    let bin = bin.to_path_buf();
    if !bwrap_works() {
        return;
    }
    let ctx = TestContext::new();
    lock_hello(&ctx);
    // The user's own marketplace, added and installed from before the policy.
    let other = market_of(&ctx, "other", &[("bye", "2.1.0")]);
    let dir = ctx.root.join("claude");
    std::fs::create_dir_all(&dir).expect("mkdir");
    claude(
        &ctx,
        &bin,
        &dir,
        &["plugin", "marketplace", "add", folder(&other)],
    );
    claude(&ctx, &bin, &dir, &["plugin", "install", "bye@other"]);

    let etc = etc_copy(&ctx);
    let file = etc.join("claude-code/managed-settings.d/berth.json");
    let d = dir.to_str().expect("UTF-8");
    let run = ctx.ok(&[
        "materialize",
        "claude",
        d,
        "--managed-settings",
        file.to_str().expect("UTF-8"),
    ]);
    assert!(run.stderr.contains("enforced by"), "{}", run.stderr);
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(&file).expect("the file")).expect("JSON");
    let market = dir.join("plugins/marketplaces/berth").display().to_string();
    assert_eq!(
        written["strictKnownMarketplaces"],
        serde_json::json!([{"source": "directory", "path": market}])
    );
    assert_eq!(
        written["enabledPlugins"],
        serde_json::json!({"hello@berth": true})
    );
    // A second run changes nothing; `--check` sees the file as written.
    ctx.ok(&[
        "materialize",
        "claude",
        d,
        "--managed-settings",
        file.to_str().expect("UTF-8"),
        "--check",
    ]);

    claude_refuses_the_users_plugin(&ctx, &bin, &dir, &etc);

    // A marketplace from anywhere else is refused before it is read.
    let third = market_of(&ctx, "third", &[("more", "0.1.0")]);
    let add = claude_managed(
        &ctx,
        &bin,
        &dir,
        &etc,
        &["plugin", "marketplace", "add", folder(&third)],
    );
    assert!(!add.status.success(), "{}", text(&add));
    assert!(
        text(&add).contains("blocked by enterprise policy"),
        "{}",
        text(&add)
    );
}

/// Without the policy Claude Code loads the user's plugin `bye@other` from configuration
/// folder `dir`; with it (`etc`), it refuses it and loads berth's.
fn claude_refuses_the_users_plugin(ctx: &TestContext, bin: &Path, dir: &Path, etc: &Path) {
    let list = |etc: &Path| -> Vec<Value> {
        let out = claude_managed(ctx, bin, dir, etc, &["plugin", "list", "--json"]);
        assert!(out.status.success(), "{}", text(&out));
        let listed: Value = serde_json::from_slice(&out.stdout).expect("JSON");
        listed.as_array().expect("a list").clone()
    };
    let plain = list(Path::new("/etc"));
    let bye = |listed: &[Value]| {
        listed
            .iter()
            .find(|p| p["id"] == "bye@other")
            .cloned()
            .expect("bye@other is listed")
    };
    assert!(bye(&plain).get("errors").is_none(), "{plain:#?}");
    let managed = list(etc);
    let errors = bye(&managed)["errors"].to_string();
    assert!(
        errors.contains("not in the allowed marketplace list"),
        "{managed:#?}"
    );
    let hello = managed
        .iter()
        .find(|p| p["id"] == "hello@berth")
        .expect("berth's plugin");
    assert_eq!(hello["enabled"], true, "{managed:#?}");
    assert!(hello.get("errors").is_none(), "{managed:#?}");
    let details = claude_managed(ctx, bin, dir, etc, &["plugin", "details", "bye@other"]);
    assert!(!details.status.success(), "{}", text(&details));
    let details = claude_managed(ctx, bin, dir, etc, &["plugin", "details", "hello@berth"]);
    assert!(
        details.status.success() && text(&details).contains("hello-skill"),
        "{}",
        text(&details)
    );
}

#[test]
fn managed_settings_are_for_claude_codex_and_copilot_and_keep_the_files_other_keys() {
    let ctx = TestContext::new();
    lock_hello(&ctx);
    let file = ctx.root.join("policy/managed-settings.json");
    std::fs::create_dir_all(file.parent().expect("a folder")).expect("mkdir");
    std::fs::write(&file, "{\"permissions\": {\"deny\": [\"WebFetch\"]}}\n").expect("write");
    let f = file.to_str().expect("UTF-8");
    let gemini = ctx.root.join("gemini");
    let run = ctx.run(&[
        "materialize",
        "gemini",
        gemini.to_str().expect("UTF-8"),
        "--managed-settings",
        f,
    ]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("`--managed-settings` is for the claude, codex and copilot targets only"),
        "{}",
        run.stderr
    );
    let dir = ctx.root.join("claude");
    ctx.ok(&[
        "materialize",
        "claude",
        dir.to_str().expect("UTF-8"),
        "--managed-settings",
        f,
    ]);
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(&file).expect("the file")).expect("JSON");
    assert_eq!(written["permissions"]["deny"][0], "WebFetch", "{written:#}");
    assert_eq!(
        written["extraKnownMarketplaces"]["berth"]["source"]["source"],
        "directory"
    );
}
