//! `berth plugins import --from claude|codex`: a user's own install (the real client,
//! offline: `BERTH_CLAUDE`, `BERTH_CODEX`) becomes a manifest and a lock, and `materialize`
//! of that lock gives a fresh client the same plugins; a git marketplace is pinned to the
//! commit of Claude Code's copy of it.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::common::{self, GitRepo, TestContext};
use crate::materialize::{claude, claude_bins, claude_inventory, codex_bins, not_builtin};

/// A marketplace `acme` whose repository holds two plugins, `hello` and `bye`.
fn market(ctx: &TestContext, name: &str) -> GitRepo {
    market_of(ctx, name, &[("hello", "1.0.0"), ("bye", "2.1.0")])
}

/// A marketplace `name` whose repository holds `plugins` (name, version), each with a
/// skill and a command.
pub(crate) fn market_of(ctx: &TestContext, name: &str, plugins: &[(&str, &str)]) -> GitRepo {
    let repo = ctx.repo(name);
    let entries: Vec<String> = plugins
        .iter()
        .map(|(plugin, _)| {
            format!("{{\"name\": \"{plugin}\", \"source\": \"./plugins/{plugin}\"}}")
        })
        .collect();
    repo.write(
        ".claude-plugin/marketplace.json",
        &format!(
            "{{\"name\": \"{name}\", \"owner\": {{\"name\": \"acme\"}}, \"plugins\": [{}]}}\n",
            entries.join(", ")
        ),
    );
    for &(plugin, version) in plugins {
        repo.write(
            &format!("plugins/{plugin}/.claude-plugin/plugin.json"),
            &format!("{{\"name\": \"{plugin}\", \"version\": \"{version}\"}}\n"),
        );
        repo.write(
            &format!("plugins/{plugin}/skills/{plugin}-skill/SKILL.md"),
            &format!("---\nname: {plugin}-skill\ndescription: says {plugin}\n---\nSay {plugin}.\n"),
        );
        repo.write(
            &format!("plugins/{plugin}/commands/{plugin}.md"),
            &format!("---\ndescription: {plugin} command\n---\nRun {plugin}.\n"),
        );
    }
    repo.commit("two plugins");
    repo
}

/// Every file under `dir` with its bytes, to show a folder was left as it was.
pub(crate) fn contents(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("read a folder") {
            let path = entry.expect("an entry").path();
            let meta = std::fs::symlink_metadata(&path).expect("stat");
            if meta.is_dir() {
                stack.push(path);
            } else if meta.is_file() {
                let rel = path.strip_prefix(dir).expect("below").display().to_string();
                out.insert(rel, std::fs::read(&path).expect("read"));
            }
        }
    }
    out
}

/// The enabled plugins `claude plugin list --json` shows in `dir`, by name, with version
/// (not Claude Code's own built-in ones).
fn enabled(ctx: &TestContext, bin: &Path, dir: &Path) -> BTreeMap<String, String> {
    let list: Value =
        serde_json::from_str(&claude(ctx, bin, dir, &["plugin", "list", "--json"])).expect("JSON");
    list.as_array()
        .expect("a list")
        .iter()
        .filter(|p| p["enabled"] == true && not_builtin(p))
        .map(|p| {
            let id = p["id"].as_str().expect("id");
            let name = id.split('@').next().expect("a name").to_owned();
            (name, p["version"].as_str().unwrap_or_default().to_owned())
        })
        .collect()
}

#[test]
fn claude_codes_own_install_round_trips_through_import_and_materialize() {
    insta::allow_duplicates! {
        for bin in claude_bins() {
            claude_codes_own_install_round_trips_through_import_and_materialize_with(&bin);
        }
    }
}

fn claude_codes_own_install_round_trips_through_import_and_materialize_with(bin: &Path) {
    let bin = bin.to_path_buf();
    let ctx = TestContext::new();
    let repo = market(&ctx, "acme");
    let own = ctx.root.join("claude");
    std::fs::create_dir_all(&own).expect("mkdir");
    let folder = repo.path.to_str().expect("UTF-8");
    claude(&ctx, &bin, &own, &["plugin", "marketplace", "add", folder]);
    claude(&ctx, &bin, &own, &["plugin", "install", "hello@acme"]);
    claude(&ctx, &bin, &own, &["plugin", "install", "bye@acme"]);
    claude(&ctx, &bin, &own, &["plugin", "disable", "bye@acme"]);
    let before = contents(&own);

    let run = ctx.ok(&[
        "plugins",
        "import",
        "--from",
        "claude",
        own.to_str().expect("UTF-8"),
    ]);
    assert!(run.stderr.contains("Imported 1 plugin"), "{}", run.stderr);
    let manifest = std::fs::read_to_string(ctx.manifest_path()).expect("the manifest");
    assert!(manifest.contains("source = \"hello@acme\""), "{manifest}");
    assert!(
        manifest.contains("# `bye@acme` is installed but disabled there; left out."),
        "{manifest}"
    );
    assert_eq!(
        contents(&own),
        before,
        "Claude Code's folder is left as it was"
    );

    ctx.ok(&["plugins", "sync"]);
    let fresh = ctx.root.join("fresh");
    ctx.ok(&["materialize", "claude", fresh.to_str().expect("UTF-8")]);
    let theirs = enabled(&ctx, &bin, &own);
    assert_eq!(theirs.keys().collect::<Vec<_>>(), ["hello"], "{theirs:?}");
    assert_eq!(enabled(&ctx, &bin, &fresh), theirs);
    let details = |dir: &Path, id: &str| claude(&ctx, &bin, dir, &["plugin", "details", id]);
    let own_view = claude_inventory(&details(&own, "hello@acme"));
    assert!(
        own_view
            .values()
            .any(|names| names.iter().any(|n| n.contains("hello-skill"))),
        "Claude Code's own view was read: {own_view:?}"
    );
    assert_eq!(claude_inventory(&details(&fresh, "hello@berth")), own_view);
}

#[test]
fn a_git_marketplace_is_pinned_to_the_commit_of_claude_codes_copy() {
    let ctx = TestContext::new();
    let repo = market(&ctx, "market");
    let installed_at = repo.head();
    repo.write(
        "plugins/hello/skills/hello-skill/SKILL.md",
        "---\nname: hello-skill\ndescription: newer\n---\nNewer.\n",
    );
    repo.commit("a newer hello");
    // Claude Code's copy of the marketplace, at the commit it installed from.
    let own = ctx.root.join("claude");
    let copy = own.join("plugins/marketplaces/market");
    git(
        &ctx.root,
        &["clone", "-q", folder(&repo), copy.to_str().expect("UTF-8")],
    );
    git(&copy, &["checkout", "-q", "--detach", &installed_at]);
    let record = |scope: &str| {
        serde_json::json!([{"scope": scope, "installPath": own.join("cache/x").display().to_string(),
            "version": "1.0.0", "gitCommitSha": installed_at}])
    };
    write_json(
        &own.join("plugins/installed_plugins.json"),
        &serde_json::json!({
            "version": 2,
            "plugins": {"hello@market": record("user"), "bye@market": record("user")}
        }),
    );
    write_json(
        &own.join("plugins/known_marketplaces.json"),
        &serde_json::json!({
            "market": {"source": {"source": "github", "repo": "acme/market"},
                       "installLocation": copy.display().to_string()}
        }),
    );
    write_json(
        &own.join("settings.json"),
        &serde_json::json!({
            "enabledPlugins": {"hello@market": true, "bye@market": false, "gone@market": true}
        }),
    );

    let run = ctx.ok(&[
        "plugins",
        "import",
        "--from",
        "claude",
        own.to_str().expect("UTF-8"),
    ]);
    assert!(
        run.stderr
            .contains("`gone@market` is enabled but Claude Code has not installed it"),
        "{}",
        run.stderr
    );
    let manifest = std::fs::read_to_string(ctx.manifest_path()).expect("the manifest");
    assert!(
        manifest.contains(&format!(
            "source = \"github:acme/market\"\nref = \"{installed_at}\"\n"
        )),
        "{manifest}"
    );
    let lock = ctx.lock_text();
    assert!(
        lock.contains(&installed_at),
        "the lock reads the catalog there: {lock}"
    );
    assert!(!lock.contains(&repo.head()), "not the newer commit: {lock}");
    let plugins = common::lock_plugins(&lock);
    assert_eq!(plugins.len(), 1, "{lock}");
    assert_eq!(
        plugins[0]["rev"].as_str(),
        Some(installed_at.as_str()),
        "{lock}"
    );

    // No Claude Code folder here: said so, nothing written.
    let elsewhere = ctx.root.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).expect("mkdir");
    let run = common::Run::from(
        ctx.berth()
            .current_dir(&elsewhere)
            .args([
                "plugins",
                "import",
                "--from",
                "claude",
                "/nonexistent/claude",
            ])
            .output()
            .expect("run berth"),
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("Claude Code's configuration folder"),
        "{}",
        run.stderr
    );
    assert!(!elsewhere.join("plugins.toml").exists());
}

pub(crate) fn folder(repo: &GitRepo) -> &str {
    repo.path.to_str().expect("UTF-8")
}

fn write_json(path: &Path, value: &Value) {
    std::fs::create_dir_all(path.parent().expect("a folder")).expect("mkdir");
    std::fs::write(path, format!("{value:#}\n")).expect("write");
}

fn git(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .expect("run git");
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// Runs the real `codex` with `CODEX_HOME=home`; its stdout.
fn codex(ctx: &TestContext, bin: &Path, home: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new(bin)
        .args(args)
        .env("HOME", &ctx.home)
        .env("CODEX_HOME", home)
        .current_dir(&ctx.work)
        .output()
        .expect("run codex");
    assert!(
        out.status.success(),
        "codex {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What Codex offers from home `home`: each enabled installed plugin's name and version,
/// and the skills of `hello` and `bye` it puts before the model.
fn codex_view(ctx: &TestContext, bin: &Path, home: &Path) -> (Vec<String>, Vec<String>) {
    let list: Value =
        serde_json::from_str(&codex(ctx, bin, home, &["plugin", "list", "--json"])).expect("JSON");
    let mut plugins: Vec<String> = list["installed"]
        .as_array()
        .expect("installed")
        .iter()
        .filter(|p| p["enabled"] == true)
        .map(|p| {
            let id = p["pluginId"].as_str().expect("id");
            format!("{} {}", id.split('@').next().expect("name"), p["version"])
        })
        .collect();
    plugins.sort();
    let prompt = codex(ctx, bin, home, &["debug", "prompt-input"]);
    let mut skills: Vec<String> = prompt
        .split("\\n")
        .flat_map(|chunk| chunk.lines())
        .filter_map(|line| line.trim().strip_prefix("- "))
        .filter(|rest| rest.starts_with("hello:") || rest.starts_with("bye:"))
        .map(|rest| rest.split(": ").next().unwrap_or(rest).to_owned())
        .collect();
    skills.sort();
    skills.dedup();
    (plugins, skills)
}

#[test]
fn codexs_own_install_round_trips_through_import_and_materialize() {
    insta::allow_duplicates! {
        for bin in codex_bins() {
            codexs_own_install_round_trips_through_import_and_materialize_with(&bin);
        }
    }
}

fn codexs_own_install_round_trips_through_import_and_materialize_with(bin: &Path) {
    let bin = bin.to_path_buf();
    let ctx = TestContext::new();
    let repo = market(&ctx, "acme");
    let own = ctx.root.join("codex-own");
    std::fs::create_dir_all(&own).expect("mkdir");
    codex(
        &ctx,
        &bin,
        &own,
        &["plugin", "marketplace", "add", folder(&repo)],
    );
    codex(&ctx, &bin, &own, &["plugin", "add", "hello@acme"]);
    codex(&ctx, &bin, &own, &["plugin", "add", "bye@acme"]);
    // The user turns `bye` off in their configuration.
    let config = own.join("config.toml");
    let text = std::fs::read_to_string(&config).expect("config.toml");
    let off = text.replace(
        "[plugins.\"bye@acme\"]\nenabled = true",
        "[plugins.\"bye@acme\"]\nenabled = false",
    );
    assert_ne!(off, text, "Codex wrote the plugin's table: {text}");
    std::fs::write(&config, off).expect("write config.toml");
    let before = contents(&own);

    let run = ctx.ok(&[
        "plugins",
        "import",
        "--from",
        "codex",
        own.to_str().expect("UTF-8"),
    ]);
    assert!(run.stderr.contains("Imported 1 plugin"), "{}", run.stderr);
    let manifest = std::fs::read_to_string(ctx.manifest_path()).expect("the manifest");
    assert!(manifest.contains("source = \"hello@acme\""), "{manifest}");
    assert!(
        manifest.contains("# `bye@acme` is not enabled there; left out."),
        "{manifest}"
    );
    assert_eq!(contents(&own), before, "Codex's folder is left as it was");

    ctx.ok(&["plugins", "sync"]);
    let fresh = ctx.root.join("codex-fresh");
    std::fs::create_dir_all(&fresh).expect("mkdir");
    ctx.ok(&["materialize", "codex", fresh.to_str().expect("UTF-8")]);
    let theirs = codex_view(&ctx, &bin, &own);
    assert_eq!(theirs.0, ["hello \"1.0.0\""], "{theirs:?}");
    assert!(!theirs.1.is_empty(), "Codex's skills were read: {theirs:?}");
    assert_eq!(codex_view(&ctx, &bin, &fresh), theirs);
}
