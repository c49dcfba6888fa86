//! `berth materialize` (issue #28): the locked set written where a harness reads it, and
//! read back by the real harness: Claude Code from npm (`BERTH_CLAUDE`; `.ci/run` installs
//! a pinned version), offline, through `CLAUDE_CONFIG_DIR`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{GitRepo, TestContext, copy_tree, fixtures, require_or_skip};
use serde_json::Value;

fn claude_bin() -> Option<PathBuf> {
    std::env::var_os("BERTH_CLAUDE")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
}

/// Runs the real `claude` on configuration folder `dir`; returns stdout.
fn claude(ctx: &TestContext, bin: &Path, dir: &Path, args: &[&str]) -> String {
    let out = Command::new(bin)
        .args(args)
        .env("CLAUDE_CONFIG_DIR", dir)
        .env("HOME", &ctx.home)
        .env("DISABLE_AUTOUPDATER", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_TELEMETRY", "1")
        .current_dir(&ctx.work)
        .output()
        .expect("run claude");
    assert!(
        out.status.success(),
        "claude {args:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A plugin with every component Claude Code counts.
fn review_repo(ctx: &TestContext) -> GitRepo {
    let repo = ctx.repo("review");
    repo.write(
        ".claude-plugin/plugin.json",
        "{\"name\": \"review\", \"version\": \"1.2.0\", \"description\": \"Review tools\"}\n",
    );
    repo.write(
        "skills/rv/SKILL.md",
        "---\nname: rv\ndescription: Reviews a change\n---\nRead the diff.\n",
    );
    repo.write(
        "agents/helper.md",
        "---\nname: helper\ndescription: Helps review\n---\nYou help.\n",
    );
    repo.write(
        "hooks/hooks.json",
        "{\"hooks\": {\"PreToolUse\": [{\"matcher\": \"Bash\", \"hooks\": [{\"type\": \"command\", \"command\": \"echo checked\"}]}]}}\n",
    );
    repo.write(
        ".mcp.json",
        "{\"mcpServers\": {\"fetch\": {\"command\": \"uvx\", \"args\": [\"mcp-server-fetch\"]}}}\n",
    );
    repo.commit("review");
    repo
}

/// Every file and link under `dir` with its bytes or target, to compare two states.
fn snapshot(dir: &Path) -> Vec<(String, String)> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, String)>) {
        for entry in std::fs::read_dir(dir).expect("read_dir") {
            let path = entry.expect("entry").path();
            let rel = path
                .strip_prefix(root)
                .expect("inside")
                .display()
                .to_string();
            let meta = std::fs::symlink_metadata(&path).expect("lstat");
            if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&path).expect("readlink");
                out.push((rel, format!("-> {}", target.display())));
            } else if meta.is_dir() {
                walk(root, &path, out);
            } else {
                let bytes = std::fs::read(&path).expect("read");
                out.push((rel, String::from_utf8_lossy(&bytes).into_owned()));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

fn project(ctx: &TestContext) {
    review_repo(ctx);
    copy_tree(
        &fixtures().join("plugins/house-rules"),
        &ctx.work.join("house-rules"),
    );
    ctx.write_manifest(
        "[[plugin]]\nsource = \"github:acme/review\"\n\n[[plugin]]\nsource = \"./house-rules\"\n",
    );
    ctx.ok(&["plugins", "sync"]);
}

#[test]
fn claude_code_lists_and_details_exactly_the_locked_plugins() {
    let Some(bin) = claude_bin() else {
        require_or_skip(
            "BERTH_CLAUDE",
            "point it at a `claude` from `npm install @anthropic-ai/claude-code` (.ci/run does)",
        );
        return;
    };
    let ctx = TestContext::new();
    project(&ctx);
    let dir = ctx.root.join("claude");
    std::fs::create_dir_all(&dir).expect("mkdir");
    // A user's own settings stay.
    std::fs::write(dir.join("settings.json"), "{\"theme\": \"dark\"}\n").expect("write");
    ctx.ok(&["materialize", "claude", dir.to_str().expect("utf-8")]);

    let list: Value =
        serde_json::from_str(&claude(&ctx, &bin, &dir, &["plugin", "list", "--json"]))
            .expect("JSON");
    let mut ids: Vec<&str> = list
        .as_array()
        .expect("a list")
        .iter()
        .map(|p| p["id"].as_str().expect("id"))
        .collect();
    ids.sort_unstable();
    let names: Vec<String> = common::lock_plugins(&ctx.lock_text())
        .iter()
        .map(|p| format!("{}@berth", p["name"].as_str().expect("name")))
        .collect();
    let mut expected: Vec<&str> = names.iter().map(String::as_str).collect();
    expected.sort_unstable();
    assert_eq!(ids, expected, "{list}");
    for plugin in list.as_array().expect("a list") {
        assert_eq!(plugin["enabled"], true, "{plugin}");
        let path = plugin["installPath"].as_str().expect("installPath");
        assert!(
            std::fs::canonicalize(path)
                .expect("the install exists")
                .starts_with(ctx.store.join("store-v1")),
            "installed from the store: {path}"
        );
    }
    let review = list
        .as_array()
        .expect("a list")
        .iter()
        .find(|p| p["id"] == "review@berth")
        .expect("review");
    assert_eq!(review["version"], "1.2.0");
    assert_eq!(review["mcpServers"]["fetch"]["command"], "uvx");

    let details = claude(&ctx, &bin, &dir, &["plugin", "details", "review@berth"]);
    for needle in [
        "Skills (1)  rv",
        "Agents (1)  helper",
        "Hooks (1)  PreToolUse",
        "MCP servers (1)  fetch",
    ] {
        assert!(details.contains(needle), "{needle} not in {details}");
    }
    let settings: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("settings.json")).expect("read"))
            .expect("JSON");
    assert_eq!(settings["theme"], "dark", "{settings}");

    // Again with nothing changed: nothing is written.
    let before = snapshot(&dir.join("plugins"));
    let again = ctx.ok(&["materialize", "claude", dir.to_str().expect("utf-8")]);
    assert!(again.stderr.contains("(0 written"), "{}", again.stderr);
    assert_eq!(snapshot(&dir.join("plugins")), before);

    // A plugin removed from the lock leaves Claude Code's list too.
    ctx.write_manifest("[[plugin]]\nsource = \"github:acme/review\"\n");
    ctx.ok(&["plugins", "sync"]);
    let run = ctx.ok(&["materialize", "claude", dir.to_str().expect("utf-8")]);
    assert!(run.stderr.contains("2 removed"), "{}", run.stderr);
    let list: Value =
        serde_json::from_str(&claude(&ctx, &bin, &dir, &["plugin", "list", "--json"]))
            .expect("JSON");
    let ids: Vec<&str> = list
        .as_array()
        .expect("a list")
        .iter()
        .map(|p| p["id"].as_str().expect("id"))
        .collect();
    assert_eq!(ids, ["review@berth"], "{list}");
}

#[test]
fn check_finds_an_edited_an_added_and_a_removed_file() {
    let ctx = TestContext::new();
    project(&ctx);
    let dir = ctx.root.join("claude");
    let d = dir.to_str().expect("utf-8");
    ctx.ok(&["materialize", "claude", d]);
    ctx.ok(&["materialize", "claude", d, "--check"]);

    let installed = dir.join("plugins/installed_plugins.json");
    let text = std::fs::read_to_string(&installed).expect("read");
    std::fs::write(&installed, text.replace("1.2.0", "9.9.9")).expect("edit");
    std::fs::write(dir.join("plugins/marketplaces/berth/extra.md"), "x").expect("add");
    std::fs::remove_file(dir.join("plugins/cache/berth/review/1.2.0")).expect("remove");
    let check = ctx.run(&["materialize", "claude", d, "--check"]);
    assert_eq!(check.code, 1, "{}", check.stderr);
    for needle in [
        "edited: plugins/installed_plugins.json",
        "added: plugins/marketplaces/berth/extra.md",
        "removed: plugins/cache/berth/review/1.2.0",
        "drifted",
    ] {
        assert!(
            check.stderr.contains(needle),
            "{needle} not in {}",
            check.stderr
        );
    }
    // Materializing again repairs exactly that.
    let repair = ctx.ok(&["materialize", "claude", d]);
    assert!(
        repair.stderr.contains("2 written") && repair.stderr.contains("1 removed"),
        "{}",
        repair.stderr
    );
    ctx.ok(&["materialize", "claude", d, "--check"]);
}
