//! `berth materialize` (issue #28): the locked set written where a harness reads it, and
//! read back by the real harness, offline: Claude Code from npm through `CLAUDE_CONFIG_DIR`
//! and Codex through `CODEX_HOME`, each test at every version `.ci/run` pins (`BERTH_CLAUDE`,
//! `BERTH_CLAUDE_PREVIOUS`, `BERTH_CLAUDE_NEWEST`; `BERTH_CODEX`, `BERTH_CODEX_NEWEST`).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{GitRepo, TestContext, copy_tree, fixtures, require_or_skip};
use serde_json::Value;

pub(crate) fn gemini_bin() -> Option<PathBuf> {
    std::env::var_os("BERTH_GEMINI")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
}

/// The Python with the OpenHands SDK (`BERTH_SDK_PYTHON`; `.ci/run` makes that venv).
pub(crate) fn sdk_python() -> Option<PathBuf> {
    std::env::var_os("BERTH_SDK_PYTHON")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
}

pub(crate) fn claude_bin() -> Option<PathBuf> {
    std::env::var_os("BERTH_CLAUDE")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
}

/// The pinned binaries of a client, each from its variable (`.ci/run` sets them all); a
/// missing one fails under `CI` and is skipped elsewhere.
pub(crate) fn pinned_bins(vars: &[&str]) -> Vec<PathBuf> {
    let mut bins = Vec::new();
    for var in vars {
        match std::env::var_os(var).filter(|p| !p.is_empty()) {
            Some(bin) => bins.push(PathBuf::from(bin)),
            None => require_or_skip(var, "see .ci/run, which pins it"),
        }
    }
    bins
}

/// The Claude Code binaries to test: every version `.ci/run` pins.
pub(crate) fn claude_bins() -> Vec<PathBuf> {
    pinned_bins(&[
        "BERTH_CLAUDE",
        "BERTH_CLAUDE_PREVIOUS",
        "BERTH_CLAUDE_NEWEST",
    ])
}

/// The Codex binaries to test: every version `.ci/run` pins.
pub(crate) fn codex_bins() -> Vec<PathBuf> {
    pinned_bins(&["BERTH_CODEX", "BERTH_CODEX_NEWEST"])
}

/// Runs the real `claude` on configuration folder `dir`; returns stdout.
pub(crate) fn claude(ctx: &TestContext, bin: &Path, dir: &Path, args: &[&str]) -> String {
    claude_in(ctx, bin, dir, &ctx.work, args)
}

/// Runs the real `claude` on configuration folder `dir` in folder `cwd`; returns stdout.
fn claude_in(ctx: &TestContext, bin: &Path, dir: &Path, cwd: &Path, args: &[&str]) -> String {
    let out = Command::new(bin)
        .args(args)
        .env("CLAUDE_CONFIG_DIR", dir)
        .env("HOME", &ctx.home)
        .env("DISABLE_AUTOUPDATER", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_TELEMETRY", "1")
        .current_dir(cwd)
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

/// A plugin with every component Claude Code counts, and a command.
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
        "{\"mcpServers\": {\"fetch\": {\"command\": \"fetch-server\", \"args\": [\"--stdio\"]}}}\n",
    );
    repo.write(
        "commands/lint.md",
        "---\ndescription: Lints the change\n---\nLint $ARGUMENTS carefully.\n",
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
    // The same output at every version: one inline snapshot, asserted per version.
    insta::allow_duplicates! {
        for bin in claude_bins() {
            claude_code_lists_and_details_exactly_the_locked_plugins_with(&bin);
        }
    }
}

fn claude_code_lists_and_details_exactly_the_locked_plugins_with(bin: &Path) {
    let bin = bin.to_path_buf();
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
    let installed: Vec<&Value> = list
        .as_array()
        .expect("a list")
        .iter()
        .filter(not_builtin)
        .collect();
    let mut ids: Vec<&str> = installed
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
    for plugin in installed {
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
    assert_eq!(review["mcpServers"]["fetch"]["command"], "fetch-server");

    let details = claude(&ctx, &bin, &dir, &["plugin", "details", "review@berth"]);
    for needle in [
        "Skills (2)  lint, rv",
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
    berth_snapshot!(ctx.filters(), ctx.berth().args(["materialize", "claude", dir.to_str().expect("utf-8")]), @r#"
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
           Wrote 2 plugins for Claude Code in `[TMP]/claude` (0 written, 10 unchanged, 0 removed)
    "#);
    assert_eq!(snapshot(&dir.join("plugins")), before);

    // A plugin removed from the lock leaves Claude Code's list too.
    ctx.write_manifest("[[plugin]]\nsource = \"github:acme/review\"\n");
    ctx.ok(&["plugins", "sync"]);
    berth_snapshot!(ctx.filters(), ctx.berth().args(["materialize", "claude", dir.to_str().expect("utf-8")]), @r#"
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
           Wrote 1 plugin for Claude Code in `[TMP]/claude` (3 written, 5 unchanged, 2 removed)
    "#);
    let list: Value =
        serde_json::from_str(&claude(&ctx, &bin, &dir, &["plugin", "list", "--json"]))
            .expect("JSON");
    let ids: Vec<&str> = list
        .as_array()
        .expect("a list")
        .iter()
        .filter(not_builtin)
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
    let install = std::fs::read_dir(dir.join("plugins/cache/berth/review"))
        .expect("read_dir")
        .next()
        .expect("one install")
        .expect("entry")
        .file_name()
        .into_string()
        .expect("utf-8");
    assert!(
        install.starts_with("1.2.0-"),
        "by version and hash: {install}"
    );
    std::fs::remove_file(dir.join("plugins/cache/berth/review").join(&install)).expect("remove");
    // The removed install is named by its version and hash.
    let mut filters = ctx.filters();
    filters.push((regex::escape(&install), "[INSTALL]".to_owned()));
    berth_snapshot!(filters, ctx.berth().args(["materialize", "claude", d, "--check"]), @r#"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    error: `[TMP]/claude` drifted from the locked set for Claude Code (3 paths); run `berth materialize claude [TMP]/claude` to restore it
      removed: plugins/cache/berth/review/[INSTALL]
      edited: plugins/installed_plugins.json
      added: plugins/marketplaces/berth/extra.md
    "#);
    // Materializing again repairs exactly that.
    berth_snapshot!(filters, ctx.berth().args(["materialize", "claude", d]), @r#"
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
           Wrote 2 plugins for Claude Code in `[TMP]/claude` (2 written, 8 unchanged, 1 removed)
    "#);
    ctx.ok(&["materialize", "claude", d, "--check"]);
}

/// Whether an entry of `claude plugin list --json` is an installed plugin: Claude Code
/// 2.1.332 also lists its own built-in plugins (`…@builtin`) in every configuration folder.
pub(crate) fn not_builtin(plugin: &&Value) -> bool {
    !plugin["id"]
        .as_str()
        .is_some_and(|id| id.ends_with("@builtin"))
}

/// `claude plugin list --json` run in `cwd`: each id with whether it is enabled there and
/// the project it was installed for.
fn claude_listing(
    ctx: &TestContext,
    bin: &Path,
    dir: &Path,
    cwd: &Path,
) -> Vec<(String, bool, String)> {
    let list: Value = serde_json::from_str(&claude_in(
        ctx,
        bin,
        dir,
        cwd,
        &["plugin", "list", "--json"],
    ))
    .expect("JSON");
    let mut out: Vec<(String, bool, String)> = list
        .as_array()
        .expect("a list")
        .iter()
        .filter(not_builtin)
        .map(|p| {
            assert_eq!(p["scope"], "project", "{p}");
            (
                p["id"].as_str().expect("id").to_owned(),
                p["enabled"].as_bool().expect("enabled"),
                p["projectPath"].as_str().expect("projectPath").to_owned(),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn claude_project_form_enables_the_plugins_in_one_repository_only() {
    // The same output at every version: one inline snapshot, asserted per version.
    insta::allow_duplicates! {
        for bin in claude_bins() {
            claude_project_form_enables_the_plugins_in_one_repository_only_with(&bin);
        }
    }
}

fn claude_project_form_enables_the_plugins_in_one_repository_only_with(bin: &Path) {
    let bin = bin.to_path_buf();
    let ctx = TestContext::new();
    project(&ctx);
    let dir = ctx.root.join("claude");
    let d = dir.to_str().expect("utf-8");
    let work = ctx.work.to_str().expect("utf-8").to_owned();
    berth_snapshot!(ctx.filters(), ctx.berth().args(["materialize", "claude", d, "--project", "."]), @r#"
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
           Wrote 2 plugins for Claude Code in `[TMP]/claude`, enabled in `.` (11 written, 0 unchanged, 0 removed)
    "#);

    // The repository's settings enable exactly the locked plugins and name no path of
    // this machine, so a team can commit them.
    let text = std::fs::read_to_string(ctx.work.join(".claude/settings.json")).expect("read");
    let settings: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(
        settings["enabledPlugins"],
        serde_json::json!({"house-rules@berth": true, "review@berth": true}),
        "{text}"
    );
    assert!(!text.contains(&*ctx.root.to_string_lossy()), "{text}");

    // The real Claude Code: enabled in the repository, installed but not enabled elsewhere.
    let elsewhere = ctx.root.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).expect("mkdir");
    let both = |enabled: bool| {
        vec![
            ("house-rules@berth".to_owned(), enabled, work.clone()),
            ("review@berth".to_owned(), enabled, work.clone()),
        ]
    };
    assert_eq!(claude_listing(&ctx, &bin, &dir, &ctx.work), both(true));
    assert_eq!(claude_listing(&ctx, &bin, &dir, &elsewhere), both(false));
    let details = claude_in(
        &ctx,
        &bin,
        &dir,
        &ctx.work,
        &["plugin", "details", "review@berth"],
    );
    assert!(details.contains("Skills (2)  lint, rv"), "{details}");

    // A second repository locks `review` at a later commit, same version: both installs
    // live in one configuration folder, each enabled in its own repository.
    let review = GitRepo::init(&ctx.upstream.join("review.git"), &ctx.home);
    review.write(
        "skills/later/SKILL.md",
        "---\nname: later\ndescription: Came later\n---\nLater.\n",
    );
    review.commit("later");
    let other = ctx.root.join("other");
    std::fs::create_dir_all(&other).expect("mkdir");
    std::fs::write(
        other.join("plugins.toml"),
        "[[plugin]]\nsource = \"github:acme/review\"\n",
    )
    .expect("write");
    ctx.ok_in(&other, &["plugins", "sync"]);
    ctx.ok_in(&other, &["materialize", "claude", d, "--project", "."]);
    // Claude Code shows an id enabled or not by the folder it runs in, on each of its
    // install records (one per repository).
    let other_path = other.to_str().expect("utf-8").to_owned();
    let listing = |enabled_rules: bool| {
        let mut all = vec![
            ("house-rules@berth".to_owned(), enabled_rules, work.clone()),
            ("review@berth".to_owned(), true, other_path.clone()),
            ("review@berth".to_owned(), true, work.clone()),
        ];
        all.sort();
        all
    };
    assert_eq!(claude_listing(&ctx, &bin, &dir, &ctx.work), listing(true));
    assert_eq!(claude_listing(&ctx, &bin, &dir, &other), listing(false));
    let in_other = claude_in(
        &ctx,
        &bin,
        &dir,
        &other,
        &["plugin", "details", "review@berth"],
    );
    assert!(
        in_other.contains("Skills (3)  later, lint, rv"),
        "{in_other}"
    );
    // The first repository's install is untouched by the second's.
    assert!(details.contains("Skills (2)"), "{details}");
    ctx.ok(&["materialize", "claude", d, "--project", ".", "--check"]);

    // Drift in the repository's settings is named with its full path.
    std::fs::write(ctx.work.join(".claude/settings.json"), "{}\n").expect("edit");
    berth_snapshot!(ctx.filters(), ctx.berth().args(["materialize", "claude", d, "--project", ".", "--check"]), @r#"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    error: `[TMP]/claude` drifted from the locked set for Claude Code (1 paths); run `berth materialize claude [TMP]/claude --project .` to restore it
      edited: [TMP]/work/.claude/settings.json
    "#);
    ctx.ok(&["materialize", "claude", d, "--project", "."]);
    ctx.ok(&["materialize", "claude", d, "--project", ".", "--check"]);

    berth_snapshot!(ctx.filters(), ctx.berth().args(["materialize", "gemini", d, "--project", "."]), @r#"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    error: `--project` is for the claude target only (Claude Code's project settings); `gemini` has no project form
    "#);
}

/// What `materialize TARGET DIR --check` says of the drift (for a snapshot); materializing
/// again repairs it, and a second check passes.
fn check_names_drift_then_repairs(ctx: &TestContext, target: &str, d: &str) -> String {
    let (check, _) = common::run_and_format(
        ctx.berth().args(["materialize", target, d, "--check"]),
        &ctx.filters(),
    );
    ctx.ok(&["materialize", target, d]);
    ctx.ok(&["materialize", target, d, "--check"]);
    check
}

/// A local marketplace with the entry forms Claude Code builds plugins from: a
/// `strict: false` entry listing some skills of a folder of many (as `anthropics/skills`
/// lists `document-skills`), a `strict: true` entry adding a skill to its plugin's own,
/// and a `strict: false` entry defining hooks, MCP servers and agents inline.
fn entry_forms_marketplace(dir: &Path) {
    let write = |rel: &str, text: &str| {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    };
    let skill =
        |name: &str| format!("---\nname: {name}\ndescription: the {name} skill\n---\nbody\n");
    for s in ["xlsx", "docx", "pdf", "other"] {
        write(&format!("skills/{s}/SKILL.md"), &skill(s));
    }
    write(
        "agents/reviewer.md",
        "---\nname: reviewer\ndescription: r\n---\nx\n",
    );
    write(
        "plugins/tools/.claude-plugin/plugin.json",
        "{\"name\": \"tools\", \"version\": \"2.0.0\"}\n",
    );
    write("plugins/tools/skills/a/SKILL.md", &skill("a"));
    write(
        "plugins/tools/commands/own.md",
        "---\ndescription: own command\n---\nx\n",
    );
    write("plugins/tools/extra-skills/b/SKILL.md", &skill("b"));
    write(
        "plugins/tools/.lsp.json",
        "{\"gopls\": {\"command\": \"${CLAUDE_PLUGIN_ROOT}/bin/gopls\", \"extensionToLanguage\": {\".go\": \"go\"}}}\n",
    );
    write(
        "hk/agents/helper.md",
        "---\nname: helper\ndescription: h\n---\nx\n",
    );
    write(
        "hk/agents/unlisted.md",
        "---\nname: unlisted\ndescription: u\n---\nx\n",
    );
    write(
        ".claude-plugin/marketplace.json",
        r#"{"name": "mk", "owner": {"name": "t"}, "plugins": [
  {"name": "document-skills", "source": "./", "strict": false,
   "skills": ["./skills/xlsx", "./skills/docx", "./skills/pdf"]},
  {"name": "tools", "source": "./plugins/tools", "skills": ["./extra-skills/b"]},
  {"name": "hooked", "source": "./hk", "strict": false,
   "agents": ["./agents/helper.md"],
   "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "echo hi"}]}]},
   "mcpServers": {"fetch": {"command": "fetch-server", "args": ["--stdio"]}},
   "lspServers": {"pyright": {"command": "pyright-langserver", "args": ["--stdio"], "extensionToLanguage": {".py": "python"}}}}
]}
"#,
    );
}

/// `Skills (3)  docx, pdf, xlsx` lines of `claude plugin details`, by kind.
pub(crate) fn claude_inventory(details: &str) -> std::collections::BTreeMap<String, Vec<String>> {
    let mut out = std::collections::BTreeMap::new();
    for line in details.lines() {
        let line = line.trim();
        for kind in ["Skills", "Agents", "Hooks", "MCP servers", "LSP servers"] {
            if let Some(rest) = line.strip_prefix(&format!("{kind} (")) {
                let (_, names) = rest.split_once(')').expect("a count");
                let names = names.split("  (").next().unwrap_or("").trim();
                let mut list: Vec<String> = names
                    .split(", ")
                    .filter(|n| !n.is_empty())
                    .map(str::to_owned)
                    .collect();
                list.sort();
                out.insert(kind.to_owned(), list);
            }
        }
    }
    out
}

/// The same inventory of plugin `name` in berth's set.
fn berth_inventory(set: &Value, name: &str) -> std::collections::BTreeMap<String, Vec<String>> {
    let of = |list: &Value| -> Vec<Value> {
        list.as_array()
            .expect("a list")
            .iter()
            .filter(|v| v["plugin"] == name)
            .cloned()
            .collect()
    };
    let prefix = format!("{name}:");
    let mut skills: Vec<String> = of(&set["skills"])
        .iter()
        .map(|s| {
            let n = s["name"].as_str().expect("name");
            n.strip_prefix(&prefix).unwrap_or(n).to_owned()
        })
        .collect();
    skills.sort();
    let mut agents: Vec<String> = of(&set["agents"])
        .iter()
        .map(|a| a["name"].as_str().expect("name").to_owned())
        .collect();
    agents.sort();
    let mut hooks: Vec<String> = set["hooks"]
        .as_object()
        .expect("hooks")
        .iter()
        .filter(|(_, matchers)| !of(matchers).is_empty())
        .map(|(event, _)| {
            event
                .split('_')
                .map(|w| w[..1].to_uppercase() + &w[1..])
                .collect::<String>()
        })
        .collect();
    hooks.sort();
    let mut servers: Vec<String> = set["mcp_servers"]
        .as_object()
        .expect("servers")
        .iter()
        .filter(|(_, s)| s["plugin"] == name)
        .map(|(n, _)| n.clone())
        .collect();
    servers.sort();
    let mut lsp: Vec<String> = set["lsp_servers"]
        .as_object()
        .expect("LSP servers")
        .iter()
        .filter(|(_, s)| s["plugin"] == name)
        .map(|(n, _)| n.clone())
        .collect();
    lsp.sort();
    [
        ("Skills", skills),
        ("Agents", agents),
        ("Hooks", hooks),
        ("MCP servers", servers),
        ("LSP servers", lsp),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

#[test]
fn marketplace_entries_build_the_plugins_claude_code_installs() {
    // The same output at every version: one inline snapshot, asserted per version.
    insta::allow_duplicates! {
        for bin in claude_bins() {
            marketplace_entries_build_the_plugins_claude_code_installs_with(&bin);
        }
    }
}

fn marketplace_entries_build_the_plugins_claude_code_installs_with(bin: &Path) {
    let bin = bin.to_path_buf();
    let ctx = TestContext::new();
    let market = ctx.work.join("mk");
    entry_forms_marketplace(&market);
    ctx.write_manifest(
        "[[marketplace]]\nname = \"mk\"\nsource = \"./mk\"\n\n[[plugin]]\nsource = \"document-skills@mk\"\n\n[[plugin]]\nsource = \"tools@mk\"\n\n[[plugin]]\nsource = \"hooked@mk\"\n",
    );
    ctx.ok(&["plugins", "sync"]);
    let lock = ctx.lock_text();
    let names: Vec<String> = common::lock_plugins(&lock)
        .iter()
        .map(|p| p["name"].as_str().expect("name").to_owned())
        .collect();
    assert_eq!(names, ["document-skills", "tools", "hooked"], "{lock}");
    let set: Value =
        serde_json::from_str(&ctx.ok(&["plugins", "show", "--json"]).stdout).expect("JSON");
    // LSP servers are in the set with the plugin root filled in, as MCP servers are.
    let gopls = set["lsp_servers"]["gopls"]["command"]
        .as_str()
        .expect("gopls");
    assert!(
        gopls.ends_with("/tools/bin/gopls") && !gopls.contains("${"),
        "{gopls}"
    );
    assert_eq!(set["lsp_servers"]["pyright"]["plugin"], "hooked");

    let dir = ctx.root.join("claude-config");
    let market_arg = market.to_str().expect("utf-8");
    claude(
        &ctx,
        &bin,
        &dir,
        &["plugin", "marketplace", "add", market_arg],
    );
    let mut own = std::collections::BTreeMap::new();
    for name in &names {
        claude(
            &ctx,
            &bin,
            &dir,
            &["plugin", "install", &format!("{name}@mk")],
        );
        let details = claude(
            &ctx,
            &bin,
            &dir,
            &["plugin", "details", &format!("{name}@mk")],
        );
        assert_eq!(
            berth_inventory(&set, name),
            claude_inventory(&details),
            "plugin `{name}`: berth's set against Claude Code's install:\n{details}"
        );
        own.insert(name.clone(), claude_inventory(&details));
    }
    // What berth writes for Claude Code is what Claude Code installed itself: the same
    // client reads both (the catalog entry carries the entry's `strict: false`, its
    // `skills` list, its inline agents, hooks, MCP and LSP servers).
    let written = ctx.root.join("claude-materialized");
    let run = ctx.ok(&["materialize", "claude", written.to_str().expect("utf-8")]);
    // Nothing differs, so nothing is warned: `document-skills`, at its marketplace's
    // root, is written without the skills its entry leaves out.
    let warned: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("warning:"))
        .collect();
    assert_eq!(warned, Vec::<&str>::new(), "{}", run.stderr);
    let mut read = std::collections::BTreeMap::new();
    for name in &names {
        let details = claude(
            &ctx,
            &bin,
            &written,
            &["plugin", "details", &format!("{name}@berth")],
        );
        read.insert(name.clone(), claude_inventory(&details));
    }
    assert_eq!(
        read, own,
        "Claude Code reading berth's folder (left) against its own install (right)"
    );
    // The lock holds what the entries said: the set is the same without the catalog.
    std::fs::remove_dir_all(&market).expect("remove the marketplace");
    let again: Value =
        serde_json::from_str(&ctx.ok(&["plugins", "show", "--json"]).stdout).expect("JSON");
    for name in &names {
        assert_eq!(berth_inventory(&again, name), berth_inventory(&set, name));
    }
}

#[test]
fn gemini_cli_lists_the_materialized_extensions() {
    let Some(bin) = gemini_bin() else {
        require_or_skip(
            "BERTH_GEMINI",
            "point it at a `gemini` from `npm install @google/gemini-cli` (.ci/run does)",
        );
        return;
    };
    let ctx = TestContext::new();
    project(&ctx);
    let home = ctx.root.join("gemini-home");
    let dir = home.join(".gemini");
    let d = dir.to_str().expect("utf-8");
    // What Gemini CLI cannot express is said, never dropped silently.
    berth_snapshot!(ctx.filters(), ctx.berth().args(["materialize", "gemini", d]), @r#"
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
    warning: plugin `house-rules`: skill `house-style` (`skills/house-style.md`) is not a skill folder; Gemini CLI reads `skills/NAME/SKILL.md` only, so it is not written
           Wrote 2 plugins for Gemini CLI in `[TMP]/gemini-home/.gemini` (8 written, 0 unchanged, 0 removed)
    "#);
    let list = |home: &Path| -> String {
        let out = Command::new(&bin)
            .args(["extensions", "list"])
            .env("HOME", home)
            .current_dir(&ctx.work)
            .output()
            .expect("run gemini");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
    };
    let listed = list(&home);
    for needle in [
        "review (1.2.0)",
        "MCP servers:\n  fetch",
        "Agent skills:\n  rv: Reviews a change",
        "house-rules",
    ] {
        assert!(listed.contains(needle), "{needle} not in {listed}");
    }
    let command =
        std::fs::read_to_string(dir.join("extensions/review/commands/lint.toml")).expect("command");
    assert_eq!(
        command,
        "description = \"Lints the change\"\nprompt = \"Lint {{args}} carefully.\"\n"
    );
    let skill = std::fs::canonicalize(dir.join("extensions/review/skills/rv")).expect("link");
    assert!(
        skill.starts_with(ctx.store.join("store-v1")),
        "{}",
        skill.display()
    );

    // Nothing changed, nothing written; a plugin that left the lock leaves Gemini CLI too,
    // and an extension of the user's own stays.
    berth_snapshot!(ctx.filters(), ctx.berth().args(["materialize", "gemini", d]), @r#"
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
    warning: plugin `house-rules`: skill `house-style` (`skills/house-style.md`) is not a skill folder; Gemini CLI reads `skills/NAME/SKILL.md` only, so it is not written
           Wrote 2 plugins for Gemini CLI in `[TMP]/gemini-home/.gemini` (0 written, 8 unchanged, 0 removed)
    "#);
    std::fs::create_dir_all(dir.join("extensions/mine")).expect("mkdir");
    std::fs::write(
        dir.join("extensions/mine/gemini-extension.json"),
        "{\"name\": \"mine\", \"version\": \"0.1.0\"}\n",
    )
    .expect("write");
    ctx.write_manifest("[[plugin]]\nsource = \"github:acme/review\"\n");
    ctx.ok(&["plugins", "sync"]);
    ctx.ok(&["materialize", "gemini", d]);
    let listed = list(&home);
    assert!(
        listed.contains("review (1.2.0)") && listed.contains("mine (0.1.0)"),
        "{listed}"
    );
    assert!(!listed.contains("house-rules"), "{listed}");
    assert!(!dir.join("extensions/house-rules").exists());

    // Drift: an edited, an added and a removed file.
    let manifest = dir.join("extensions/review/gemini-extension.json");
    let text = std::fs::read_to_string(&manifest).expect("read");
    std::fs::write(&manifest, text.replace("fetch-server", "evil")).expect("edit");
    std::fs::write(
        dir.join("extensions/review/commands/extra.toml"),
        "prompt = \"x\"\n",
    )
    .expect("add");
    std::fs::remove_file(dir.join("extensions/review/skills/rv")).expect("remove");
    insta::assert_snapshot!(check_names_drift_then_repairs(&ctx, "gemini", d), @r#"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    error: `[TMP]/gemini-home/.gemini` drifted from the locked set for Gemini CLI (3 paths); run `berth materialize gemini [TMP]/gemini-home/.gemini` to restore it
      edited: extensions/review/gemini-extension.json
      removed: extensions/review/skills/rv
      added: extensions/review/commands/extra.toml
    "#);
}

/// Loads each folder with the real OpenHands SDK's `Plugin.load` (the SDK's Python,
/// `BERTH_SDK_PYTHON`) and returns what it found, by plugin name.
const SDK_LOAD: &str = r#"
import json, sys
from openhands.sdk.plugin import Plugin
out = {}
for d in sys.argv[1:]:
    p = Plugin.load(d)
    mcp = p.mcp_config or {}
    servers = mcp.get("mcpServers", mcp)
    hooks = p.hooks.model_dump(mode="json", by_alias=True) if p.hooks else {}
    hooks = hooks.get("hooks", hooks)
    out[p.name] = {
        "skills": sorted(s.name for s in p.skills),
        "commands": sorted(c.name for c in p.commands),
        "mcp": sorted(servers),
        "agents": sorted(a.name for a in p.agents),
        "hooks": sorted("".join(w.capitalize() for w in e.split("_")) for e, m in hooks.items() if m),
    }
print(json.dumps(out, sort_keys=True))
"#;

#[test]
fn the_openhands_sdk_loads_the_materialized_agent_plugins() {
    let Some(python) = sdk_python() else {
        require_or_skip(
            "BERTH_SDK_PYTHON",
            "see tests/it/python_sdk.rs (.ci/run makes that venv)",
        );
        return;
    };
    let ctx = TestContext::new();
    project(&ctx);
    let dir = ctx.root.join("agent-plugins");
    let d = dir.to_str().expect("utf-8");
    berth_snapshot!(ctx.filters(), ctx.berth().args(["materialize", "agent-plugins", d]), @r#"
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
           Wrote 2 plugins for Agent Plugins in `[TMP]/agent-plugins` (10 written, 0 unchanged, 0 removed)
    "#);
    let set: Value =
        serde_json::from_str(&ctx.ok(&["plugins", "show", "--json"]).stdout).expect("JSON");
    let names: Vec<String> = set["plugins"]
        .as_array()
        .expect("plugins")
        .iter()
        .map(|p| p["name"].as_str().expect("name").to_owned())
        .collect();
    let folders: Vec<String> = names
        .iter()
        .map(|n| dir.join(n).display().to_string())
        .collect();
    let out = sdk_command(&ctx, &python, SDK_LOAD)
        .args(&folders)
        .output()
        .expect("run the SDK");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let loaded: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    for name in &names {
        let of = |key: &str| -> Vec<Value> {
            set[key]
                .as_array()
                .expect("a list")
                .iter()
                .filter(|v| v["plugin"] == name.as_str())
                .cloned()
                .collect()
        };
        let prefix = format!("{name}:");
        let mut skills: Vec<String> = Vec::new();
        let mut commands: Vec<String> = Vec::new();
        for skill in of("skills") {
            let n = skill["name"].as_str().expect("name");
            match n.strip_prefix(&prefix) {
                Some(c) => commands.push(c.to_owned()),
                None => skills.push(n.to_owned()),
            }
        }
        skills.sort();
        commands.sort();
        let mut agents: Vec<String> = of("agents")
            .iter()
            .map(|a| a["name"].as_str().expect("name").to_owned())
            .collect();
        agents.sort();
        let mut mcp: Vec<String> = set["mcp_servers"]
            .as_object()
            .expect("servers")
            .iter()
            .filter(|(_, s)| s["plugin"] == name.as_str())
            .map(|(n, _)| n.clone())
            .collect();
        mcp.sort();
        let mut hooks: Vec<String> = set["hooks"]
            .as_object()
            .expect("hooks")
            .iter()
            .filter(|(_, m)| {
                m.as_array()
                    .is_some_and(|m| m.iter().any(|x| x["plugin"] == name.as_str()))
            })
            .map(|(e, _)| {
                e.split('_')
                    .map(|w| w[..1].to_uppercase() + &w[1..])
                    .collect::<String>()
            })
            .collect();
        hooks.sort();
        let ours = serde_json::json!({
            "skills": skills, "commands": commands, "mcp": mcp, "agents": agents, "hooks": hooks,
        });
        assert_eq!(
            loaded[name.as_str()],
            ours,
            "plugin `{name}`: the SDK's load against berth's set"
        );
    }
    // Every skill file is a read-only copy of the verified store entry's (the SDK does
    // not follow links out of a plugin).
    let copy = dir.join("review/skills/rv/SKILL.md");
    let meta = std::fs::symlink_metadata(&copy).expect("a copy");
    assert!(
        meta.is_file() && meta.permissions().readonly(),
        "{}",
        copy.display()
    );

    // Drift: an edited, an added and a removed file.
    std::fs::write(dir.join("review/plugin.json"), "{}\n").expect("edit");
    std::fs::write(dir.join("review/extra.md"), "x").expect("add");
    std::fs::remove_file(dir.join("review/mcp.json")).expect("remove");
    insta::assert_snapshot!(check_names_drift_then_repairs(&ctx, "agent-plugins", d), @r#"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    error: `[TMP]/agent-plugins` drifted from the locked set for Agent Plugins (3 paths); run `berth materialize agent-plugins [TMP]/agent-plugins` to restore it
      removed: review/mcp.json
      edited: review/plugin.json
      added: review/extra.md
    "#);
}

/// The SDK's Python running `script` offline, quietly, in the test's home and folder.
pub(crate) fn sdk_command(ctx: &TestContext, python: &Path, script: &str) -> Command {
    let mut command = Command::new(python);
    command
        .args(["-c", script])
        .env("HOME", &ctx.home)
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        .env("OPENHANDS_SUPPRESS_BANNER", "1")
        .current_dir(&ctx.work);
    command
}

/// Runs the SDK's `Plugin.load` (`SDK_LOAD`) on each of `folders`: what it loaded, by
/// plugin name.
fn sdk_load(ctx: &TestContext, python: &Path, folders: &[PathBuf]) -> Value {
    let out = sdk_command(ctx, python, SDK_LOAD)
        .args(folders)
        .output()
        .expect("run the SDK");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

#[test]
fn the_sdk_loads_every_server_transport_berth_writes_for_agent_plugins() {
    let Some(python) = sdk_python() else {
        require_or_skip(
            "BERTH_SDK_PYTHON",
            "see tests/it/python_sdk.rs (.ci/run makes that venv)",
        );
        return;
    };
    let ctx = TestContext::new();
    let plugin = ctx.work.join("servers");
    std::fs::create_dir_all(plugin.join(".claude-plugin")).expect("mkdir");
    std::fs::write(
        plugin.join(".claude-plugin/plugin.json"),
        "{\"name\": \"servers\", \"version\": \"1.0.0\"}\n",
    )
    .expect("write");
    // Claude Code's `.mcp.json`: `http` is what Agent Plugins 1.0 calls `streamable-http`;
    // `sse` is written but the SDK skips it, and a server with an empty URL, which the set
    // drops as the SDK does, is not written: berth says both.
    std::fs::write(
        plugin.join(".mcp.json"),
        r#"{"mcpServers": {
            "local": {"command": "local-server", "args": ["--stdio"], "env": {"MODE": "x"}},
            "web": {"type": "http", "url": "https://mcp.example.invalid/mcp", "headers": {"X-Team": "a"}},
            "events": {"type": "sse", "url": "https://mcp.example.invalid/sse"},
            "broken": {"type": "http", "url": ""}
        }}"#,
    )
    .expect("write");
    ctx.write_manifest("[[plugin]]\nsource = \"./servers\"\n");
    ctx.ok(&["plugins", "sync"]);
    let dir = ctx.root.join("agent-plugins");
    berth_snapshot!(ctx.filters(), ctx.berth().args(["materialize", "agent-plugins", dir.to_str().expect("utf-8")]), @r#"
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
    warning: plugin `servers`: `.mcp.json`: MCP server `broken` ignored: `url` is empty
    warning: plugin `servers`: MCP server `events` uses `sse`, which Agent Plugins 1.0 leaves optional and the OpenHands SDK skips; written as it is
           Wrote 1 plugin for Agent Plugins in `[TMP]/agent-plugins` (3 written, 0 unchanged, 0 removed)
    "#);
    let loaded = sdk_load(&ctx, &python, &[dir.join("servers")]);
    assert_eq!(
        loaded["servers"]["mcp"],
        serde_json::json!(["local", "web"]),
        "the SDK loads every server berth wrote but the one it warned of: {loaded}"
    );
}

#[test]
fn a_skill_and_a_server_two_plugins_share_are_written_for_each() {
    let Some(python) = sdk_python() else {
        require_or_skip(
            "BERTH_SDK_PYTHON",
            "see tests/it/python_sdk.rs (.ci/run makes that venv)",
        );
        return;
    };
    let ctx = TestContext::new();
    for (plugin, server) in [("one", "one-server"), ("two", "two-server")] {
        let dir = ctx.work.join(plugin);
        std::fs::create_dir_all(dir.join(".claude-plugin")).expect("mkdir");
        std::fs::create_dir_all(dir.join("skills/shared")).expect("mkdir");
        std::fs::write(
            dir.join(".claude-plugin/plugin.json"),
            format!("{{\"name\": \"{plugin}\", \"version\": \"1.0.0\"}}\n"),
        )
        .expect("write");
        std::fs::write(
            dir.join("skills/shared/SKILL.md"),
            format!("---\nname: shared\ndescription: {plugin}'s\n---\nb\n"),
        )
        .expect("write");
        std::fs::write(
            dir.join(".mcp.json"),
            format!("{{\"mcpServers\": {{\"docs\": {{\"command\": \"{server}\"}}}}}}"),
        )
        .expect("write");
    }
    ctx.write_manifest("[[plugin]]\nsource = \"./one\"\n\n[[plugin]]\nsource = \"./two\"\n");
    ctx.ok(&["plugins", "sync"]);
    // The set keeps one of each name (the later plugin's), as the SDK does; a harness that
    // keeps plugins apart has both.
    let gemini = ctx.root.join("gemini");
    ctx.ok(&["materialize", "gemini", gemini.to_str().expect("utf-8")]);
    for (plugin, server) in [("one", "one-server"), ("two", "two-server")] {
        let ext = gemini.join("extensions").join(plugin);
        let manifest: Value = serde_json::from_str(
            &std::fs::read_to_string(ext.join("gemini-extension.json")).expect("read"),
        )
        .expect("JSON");
        assert_eq!(
            manifest["mcpServers"]["docs"]["command"], server,
            "{manifest}"
        );
        assert!(
            std::fs::read_link(ext.join("skills/shared"))
                .expect("a link")
                .starts_with(&ctx.store),
            "{plugin}"
        );
    }
    let folders = ctx.root.join("agent-plugins");
    ctx.ok(&[
        "materialize",
        "agent-plugins",
        folders.to_str().expect("utf-8"),
    ]);
    let loaded = sdk_load(&ctx, &python, &[folders.join("one"), folders.join("two")]);
    for plugin in ["one", "two"] {
        assert_eq!(
            loaded[plugin]["skills"],
            serde_json::json!(["shared"]),
            "{loaded}"
        );
        assert_eq!(
            loaded[plugin]["mcp"],
            serde_json::json!(["docs"]),
            "{loaded}"
        );
    }
}

#[test]
fn a_plugin_claude_code_refuses_to_install_is_warned() {
    // The same output at every version: one inline snapshot, asserted per version.
    insta::allow_duplicates! {
        for bin in claude_bins() {
            a_plugin_claude_code_refuses_to_install_is_warned_with(&bin);
        }
    }
}

fn a_plugin_claude_code_refuses_to_install_is_warned_with(bin: &Path) {
    let bin = bin.to_path_buf();
    let ctx = TestContext::new();
    let market = ctx.work.join("mk");
    std::fs::create_dir_all(market.join(".claude-plugin")).expect("mkdir");
    std::fs::create_dir_all(market.join("p/agents")).expect("mkdir");
    std::fs::write(
        market.join("p/agents/a.md"),
        "---\nname: a\ndescription: d\n---\nx\n",
    )
    .expect("write");
    // An `agents` folder where Claude Code takes only `.md` files (as pptx-deck-creation
    // has it).
    std::fs::write(
        market.join(".claude-plugin/marketplace.json"),
        r#"{"name": "mk", "owner": {"name": "t"}, "plugins": [{"name": "p", "source": "./p", "agents": ["./agents/"]}]}"#,
    )
    .expect("write");
    let own = ctx.root.join("own");
    claude(
        &ctx,
        &bin,
        &own,
        &[
            "plugin",
            "marketplace",
            "add",
            market.to_str().expect("utf-8"),
        ],
    );
    let refused = Command::new(&bin)
        .args(["plugin", "install", "p@mk"])
        .env("CLAUDE_CONFIG_DIR", &own)
        .env("HOME", &ctx.home)
        .env("DISABLE_AUTOUPDATER", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .current_dir(&ctx.work)
        .output()
        .expect("run claude");
    let said = String::from_utf8_lossy(&refused.stdout).into_owned()
        + &String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains("Failed to install"),
        "Claude Code's own install refuses it: {said}"
    );

    ctx.write_manifest(
        "[[marketplace]]\nname = \"mk\"\nsource = \"./mk\"\n\n[[plugin]]\nsource = \"p@mk\"\n",
    );
    ctx.ok(&["plugins", "sync"]);
    let dir = ctx.root.join("claude");
    berth_snapshot!(ctx.filters(), ctx.berth().args(["materialize", "claude", dir.to_str().expect("utf-8")]), @r#"
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
    warning: plugin `p`: Claude Code 2.1.332 refuses to install it: its marketplace entry's `agents.0` must end with `.md` (`./agents/`); berth writes it, Claude Code may not load it
           Wrote 1 plugin for Claude Code in `[TMP]/claude` (8 written, 0 unchanged, 0 removed)
    "#);
}

#[test]
fn a_skill_gemini_cli_skips_is_warned() {
    let Some(bin) = gemini_bin() else {
        require_or_skip(
            "BERTH_GEMINI",
            "point it at a `gemini` from `npm install @google/gemini-cli` (.ci/run does)",
        );
        return;
    };
    let ctx = TestContext::new();
    let plugin = ctx.work.join("sk");
    for (folder, front) in [
        ("both", "name: both\ndescription: d"),
        ("nameless", "description: d"),
        ("undescribed", "name: undescribed"),
    ] {
        std::fs::create_dir_all(plugin.join("skills").join(folder)).expect("mkdir");
        std::fs::write(
            plugin.join("skills").join(folder).join("SKILL.md"),
            format!("---\n{front}\n---\nx\n"),
        )
        .expect("write");
    }
    ctx.write_manifest("[[plugin]]\nsource = \"./sk\"\n");
    ctx.ok(&["plugins", "sync"]);
    let home = ctx.root.join("gemini-home");
    let d = home.join(".gemini");
    berth_snapshot!(ctx.filters(), ctx.berth().args(["materialize", "gemini", d.to_str().expect("utf-8")]), @r#"
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
    warning: plugin `sk`: skill `nameless` (`skills/nameless/SKILL.md`) has no `name` in its front matter, so Gemini CLI skips it
    warning: plugin `sk`: skill `undescribed` (`skills/undescribed/SKILL.md`) has no `description` in its front matter, so Gemini CLI skips it
           Wrote 1 plugin for Gemini CLI in `[TMP]/gemini-home/.gemini` (5 written, 0 unchanged, 0 removed)
    "#);
    // Gemini CLI itself discovers only the skill with both.
    let out = Command::new(&bin)
        .args(["skills", "list", "--all"])
        .env("HOME", &home)
        .current_dir(&ctx.work)
        .output()
        .expect("run gemini");
    let listed = String::from_utf8_lossy(&out.stdout).into_owned();
    let from_berth: Vec<&str> = listed
        .lines()
        .filter(|l| !l.starts_with(' ') && l.contains(" [Enabled]") && !l.contains("[Built-in]"))
        .map(|l| l.split(' ').next().unwrap_or(""))
        .collect();
    assert_eq!(from_berth, ["both"], "{listed}");
}

/// Every file under `dir` (through links to folders, as Codex reads an install) with its
/// text, a `plugin.json`'s `version` left out (Codex names the version from the catalog
/// entry, berth from the content hash).
fn install_files(dir: &Path) -> std::collections::BTreeMap<String, String> {
    fn all_files(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("read_dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                all_files(&path, out);
            } else if path.is_file() {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    all_files(dir, &mut files);
    files
        .iter()
        .map(|path| {
            let rel = path
                .strip_prefix(dir)
                .expect("inside")
                .display()
                .to_string();
            let mut text = std::fs::read_to_string(path).expect("text");
            if rel.ends_with("plugin.json") {
                let mut json: Value = serde_json::from_str(&text).expect("JSON");
                json["version"] = Value::Null;
                text = json.to_string();
            }
            (rel, text)
        })
        .collect()
}

#[test]
fn codex_installs_a_plugin_without_a_manifest_as_its_own_plugin_add_does() {
    // The same output at every version: one inline snapshot, asserted per version.
    insta::allow_duplicates! {
        for bin in codex_bins() {
            codex_installs_a_plugin_without_a_manifest_as_its_own_plugin_add_does_with(&bin);
        }
    }
}

fn codex_installs_a_plugin_without_a_manifest_as_its_own_plugin_add_does_with(bin: &Path) {
    let bin = bin.to_path_buf();
    let ctx = TestContext::new();
    let market = ctx.work.join("mk");
    let write = |rel: &str, text: &str| {
        let path = market.join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    };
    write(
        ".claude-plugin/marketplace.json",
        r#"{"name": "mk", "owner": {"name": "t"}, "plugins": [{"name": "q", "source": "./q", "version": "2.0.0"}]}"#,
    );
    write(
        "q/skills/s/SKILL.md",
        "---\nname: s\ndescription: a skill\n---\nbody\n",
    );
    write(
        "q/commands/lint.md",
        "---\ndescription: lint it\n---\nLint $ARGUMENTS\n",
    );
    // Codex's own install of the plugin.
    let own = ctx.root.join("own");
    std::fs::create_dir_all(&own).expect("mkdir");
    for args in [
        vec![
            "plugin",
            "marketplace",
            "add",
            market.to_str().expect("utf-8"),
        ],
        vec!["plugin", "add", "q@mk"],
    ] {
        let out = Command::new(&bin)
            .args(&args)
            .env("HOME", &ctx.home)
            .env("CODEX_HOME", &own)
            .current_dir(&ctx.work)
            .output()
            .expect("run codex");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    ctx.write_manifest(
        "[[marketplace]]\nname = \"mk\"\nsource = \"./mk\"\n\n[[plugin]]\nsource = \"q@mk\"\n",
    );
    ctx.ok(&["plugins", "sync"]);
    let dir = ctx.root.join("berth-codex");
    ctx.ok(&["materialize", "codex", dir.to_str().expect("utf-8")]);
    let versions = common::list_dir(&dir.join("plugins/cache/berth/q"));
    assert_eq!(versions.len(), 1, "{versions:?}");
    assert_eq!(
        install_files(&dir.join("plugins/cache/berth/q").join(&versions[0])),
        install_files(&own.join("plugins/cache/mk/q/2.0.0")),
        "berth's install of a plugin without a manifest against Codex's own"
    );
}

#[test]
fn codex_lists_the_materialized_plugins_as_installed() {
    // The same output at every version: one inline snapshot, asserted per version.
    insta::allow_duplicates! {
        for bin in codex_bins() {
            codex_lists_the_materialized_plugins_as_installed_with(&bin);
        }
    }
}

fn codex_lists_the_materialized_plugins_as_installed_with(bin: &Path) {
    let bin = bin.to_path_buf();
    let ctx = TestContext::new();
    project(&ctx);
    let home = ctx.root.join("codex-home");
    let dir = home.join(".codex");
    std::fs::create_dir_all(&dir).expect("mkdir");
    // A user's own configuration stays.
    std::fs::write(
        dir.join("config.toml"),
        "model = \"o3\"\n\n[mcp_servers.mine]\ncommand = \"mine\"\n",
    )
    .expect("write");
    let d = dir.to_str().expect("utf-8");
    ctx.ok(&["materialize", "codex", d]);
    let installed = |ctx: &TestContext| -> Vec<String> {
        let out = Command::new(&bin)
            .args(["plugin", "list", "--json"])
            .env("HOME", &home)
            .env("CODEX_HOME", &dir)
            .current_dir(&ctx.work)
            .output()
            .expect("run codex");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let list: Value = serde_json::from_slice(&out.stdout).expect("JSON");
        let mut ids: Vec<String> = list["installed"]
            .as_array()
            .expect("installed")
            .iter()
            .inspect(|p| assert_eq!(p["enabled"], true, "{p}"))
            .map(|p| p["pluginId"].as_str().expect("id").to_owned())
            .collect();
        ids.sort();
        ids
    };
    assert_eq!(installed(&ctx), ["house-rules@berth", "review@berth"]);
    let config = std::fs::read_to_string(dir.join("config.toml")).expect("read");
    assert!(config.starts_with("model = \"o3\""), "{config}");
    assert!(config.contains("[mcp_servers.mine]"), "{config}");

    berth_snapshot!(ctx.filters(), ctx.berth().args(["materialize", "codex", d]), @r#"
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
    warning: plugin `review`: Codex runs no skill for its command(s) `lint`: its own install makes skills only of commands with a `description` and without `$ARGUMENTS`, `$1`, `{{…}}`, shell lines (`!`) or `@file` references, of at most 4,000 bytes as a skill, and berth writes what it would
           Wrote 2 plugins for Codex in `[TMP]/codex-home/.codex` (0 written, 14 unchanged, 0 removed)
    "#);

    ctx.write_manifest("[[plugin]]\nsource = \"github:acme/review\"\n");
    ctx.ok(&["plugins", "sync"]);
    ctx.ok(&["materialize", "codex", d]);
    assert_eq!(installed(&ctx), ["review@berth"]);
    let config = std::fs::read_to_string(dir.join("config.toml")).expect("read");
    assert!(!config.contains("house-rules"), "{config}");

    // Drift: an edited, an added and a removed file.
    let catalog = dir.join("berth-marketplace/.claude-plugin/marketplace.json");
    std::fs::write(&catalog, "{}\n").expect("edit");
    std::fs::write(dir.join("plugins/cache/berth/review/1.2.0/extra.md"), "x").expect("add");
    std::fs::remove_file(dir.join("plugins/cache/berth/review/1.2.0/.mcp.json")).expect("remove");
    insta::assert_snapshot!(check_names_drift_then_repairs(&ctx, "codex", d), @r#"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    warning: plugin `review`: Codex runs no skill for its command(s) `lint`: its own install makes skills only of commands with a `description` and without `$ARGUMENTS`, `$1`, `{{…}}`, shell lines (`!`) or `@file` references, of at most 4,000 bytes as a skill, and berth writes what it would
    error: `[TMP]/codex-home/.codex` drifted from the locked set for Codex (3 paths); run `berth materialize codex [TMP]/codex-home/.codex` to restore it
      edited: berth-marketplace/.claude-plugin/marketplace.json
      removed: plugins/cache/berth/review/1.2.0/.mcp.json
      added: plugins/cache/berth/review/1.2.0/extra.md
    "#);
}

#[test]
fn a_plugin_json_the_sdk_would_refuse_is_not_written_and_says_why() {
    let Some(python) = sdk_python() else {
        require_or_skip(
            "BERTH_SDK_PYTHON",
            "see tests/it/python_sdk.rs (.ci/run makes that venv)",
        );
        return;
    };
    let ctx = TestContext::new();
    let plugin = ctx.work.join("Team_Tools");
    std::fs::create_dir_all(plugin.join("skills/lint")).expect("mkdir");
    std::fs::write(
        plugin.join("skills/lint/SKILL.md"),
        "---\nname: lint\ndescription: Lints\n---\nLint.\n",
    )
    .expect("write");
    ctx.write_manifest("[[plugin]]\nsource = \"./Team_Tools\"\n");
    ctx.ok(&["plugins", "sync"]);
    let dir = ctx.root.join("agent-plugins");
    berth_snapshot!(ctx.filters(), ctx.berth().args(["materialize", "agent-plugins", dir.to_str().expect("utf-8")]), @r#"
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
    warning: plugin `Team_Tools` is not written: its `plugin.json` would not be valid Agent Plugins 1.0, which the OpenHands SDK refuses (`name` ("Team_Tools") does not match `^(?!.*(?:--|\.\.))[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?$`)
           Wrote 0 plugins for Agent Plugins in `[TMP]/agent-plugins` (0 written, 0 unchanged, 0 removed)
    "#);
    assert!(!dir.join("Team_Tools").exists());
    // The SDK's own reason: it refuses such a manifest when it loads the folder.
    let probe = ctx.root.join("probe/Team_Tools");
    std::fs::create_dir_all(&probe).expect("mkdir");
    std::fs::write(
        probe.join("plugin.json"),
        r#"{"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json", "name": "Team_Tools"}"#,
    )
    .expect("write");
    let load = "import sys\nfrom openhands.sdk.plugin import Plugin\nPlugin.load(sys.argv[1])";
    let out = sdk_command(&ctx, &python, load)
        .arg(&probe)
        .output()
        .expect("run the SDK");
    assert!(
        !out.status.success(),
        "the SDK loaded it: {}",
        String::from_utf8_lossy(&out.stdout)
    );
}
