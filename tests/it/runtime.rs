//! The runtime end to end (issue #3): `plugins show`, `run` and `hooks run` from the lock
//! and the store alone.

use crate::common;

use std::path::Path;

use common::{TestContext, copy_tree, fixtures};
use serde_json::{Value, json};

/// The three conformance samples as local plugins plus the `review` fixture from git.
fn project(ctx: &TestContext) {
    for sample in ["alpha", "beta", "gamma"] {
        copy_tree(
            &fixtures().join("conformance/samples").join(sample),
            &ctx.work.join(sample),
        );
    }
    let review = ctx.repo("review");
    review.copy_fixture("review", "");
    review.commit("review");
    ctx.write_manifest(
        "[[plugin]]\nsource = \"./alpha\"\n\n[[plugin]]\nsource = \"./beta\"\n\n[[plugin]]\nsource = \"./gamma\"\n\n[[plugin]]\nsource = \"github:acme/review\"\n",
    );
}

/// The names of a plugin set's skills, in order.
fn skill_names(set: &Value) -> Vec<&str> {
    set["skills"]
        .as_array()
        .expect("skills")
        .iter()
        .map(|s| s["name"].as_str().expect("name"))
        .collect()
}

/// `text` with every plugin's store path and data folder replaced by a placeholder.
fn without_paths(text: &str, store: &Path) -> String {
    let doc: Value = serde_json::from_str(text).expect("JSON");
    let mut text = text.to_owned();
    for (i, plugin) in doc["plugins"]
        .as_array()
        .expect("plugins")
        .iter()
        .enumerate()
    {
        let path = plugin["path"].as_str().expect("path");
        let data = common::plugin_data_dir(
            store,
            plugin["name"].as_str().expect("name"),
            plugin["source"].as_str().expect("source"),
        );
        text = text.replace(&data.display().to_string(), &format!("<data#{i}>"));
        text = text.replace(path, &format!("<path#{i}>"));
        let root = plugin["root"].as_str().expect("root");
        text = text.replace(root, &format!("<root#{i}>"));
    }
    text
}

#[test]
fn show_json_is_the_same_in_every_store_and_every_run() {
    let ctx = TestContext::new();
    project(&ctx);
    ctx.ok(&["plugins", "sync"]);
    let first = ctx.ok(&["plugins", "show", "--json"]).stdout;
    assert_eq!(
        ctx.ok(&["plugins", "show", "--json"]).stdout,
        first,
        "byte-identical across runs"
    );
    let other_store = ctx.root.join("a/very/different/store/path");
    let show_in_other = |args: &[&str]| {
        let out = ctx
            .berth()
            .env("BERTH_STORE", &other_store)
            .args(args)
            .output()
            .expect("run");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("UTF-8")
    };
    show_in_other(&["plugins", "sync"]);
    let second = show_in_other(&["plugins", "show", "--json"]);
    assert_ne!(first, second, "the path fields differ");
    assert_eq!(
        without_paths(&first, &ctx.store),
        without_paths(&second, &other_store),
        "identical apart from the store paths"
    );
    let doc: Value = serde_json::from_str(&first).expect("JSON");
    for key in [
        "plugins",
        "skills",
        "mcp_servers",
        "hooks",
        "agents",
        "warnings",
    ] {
        assert!(doc.get(key).is_some(), "`{key}` missing");
    }
    let review = &doc["plugins"][3];
    assert_eq!(review["name"], "review");
    assert!(review["rev"].as_str().is_some_and(|r| r.len() == 40));
    // `${CLAUDE_PLUGIN_ROOT}` in a hook command points at the plugin's root: its link in
    // the set's view, named after it.
    let guard = doc["hooks"]["pre_tool_use"]
        .as_array()
        .expect("pre_tool_use")
        .iter()
        .find(|m| m["plugin"] == "review")
        .expect("review's hook");
    assert_eq!(
        guard["hooks"][0]["command"].as_str().expect("command"),
        format!(
            "{}/scripts/guard.sh",
            review["root"].as_str().expect("root")
        )
    );
    // The readable summary names plugins, skills, servers and hooks.
    berth_snapshot!(ctx.filters(), ctx.berth().args(["plugins", "show"]), @r#"
    success: true
    exit_code: 0
    ----- stdout -----
    Plugins (4)
      alpha   1.2.0  sha256-QY/hOyJJoKCn  ./alpha
      beta    0.3.1  sha256-MDfEBItT53sl  ./beta
      gamma   2.0.0  sha256-E4Aw3kljQWO9  ./gamma
      review  1.2.0  eb77dc7b4544         github:acme/review

    Skills (10)
      alpha-tool    alpha   always                      Alpha-only AgentSkills skill with a bundled script.
      legacy-note   alpha   legacy
      shared-skill  gamma   always                      Gamma's shared skill; name comes from the directory.
      alpha:review  alpha   /alpha:review               Review the current change
      beta-rule     beta    on src/**/*.rs, Cargo.toml  Path-scoped rule.
      beta:review   beta    /beta:review                Beta's review command (namespaced, so no clash with alpha:review)
      gamma-docs    gamma   /gamma-docs                 Task skill with inputs.
      gamma:hello   gamma   /gamma:hello                Say hello
      code-review   review  review, pull request        Review a change for correctness, tests and naming before it is merged.
      review:check  review  /review:check               Run the review checklist on the current branch

    MCP servers (4)
      shared-server  gamma  stdio            [TMP]/store/views-v1/4aeacd40fba22987b0bf219c70771de3/gamma/bin/server --data [TMP]/store/plugin-data-v1/gamma-61443b0154419886/db --root [TMP]/store/views-v1/4aeacd40fba22987b0bf219c70771de3/gamma ${HOME}
      alpha-http     alpha  http             https://mcp.example.com/alpha
      beta-sse       beta   sse              https://mcp.example.com/beta/sse
      gamma-remote   gamma  streamable-http  https://mcp.example.com/gamma

    Hooks (7)
      pre_tool_use        terminal              alpha   echo alpha-pre
      pre_tool_use        /file_.*/             beta    echo beta-pre
      pre_tool_use        terminal|file_editor  gamma   echo gamma-pre
      pre_tool_use        Bash                  review  [TMP]/store/views-v1/4aeacd40fba22987b0bf219c70771de3/review/scripts/guard.sh
      user_prompt_submit  *                     gamma   (prompt hook)
      session_start       *                     alpha   echo alpha-start
      stop                *                     beta    echo beta-stop

    Agents (1)
      alpha-helper  alpha  inherit  Helper subagent. <example>Use when the user asks for alpha help</exampl…

    Warnings (6)
      plugin `beta`: skill `shared-skill` overrides the one from plugin `alpha`
      plugin `beta`: MCP server `shared-server` overrides the one from plugin `alpha`
      plugin `gamma`: `mcp.json`: MCP server `gamma-remote`: ignoring client-generated header(s) `Host`
      plugin `gamma`: `mcp.json`: MCP server `gamma-insecure` ignored: url `http://mcp.example.com/plain` must use https: mcp.example.com is remote
      plugin `gamma`: skill `shared-skill` overrides the one from plugin `beta`
      plugin `gamma`: MCP server `shared-server` overrides the one from plugin `beta`

    Run by other harnesses only (4): Claude Code, Codex, Gemini CLI or GitHub Copilot CLI load these, OpenHands does not; the policy and approvals cover them
      alpha  MCP server                             shared-server           node ${SKILL_ROOT}/server.js --token ${API_TOKEN:-alpha-default} (.mcp.json)
      beta   MCP server                             shared-server           python3 -m beta_server (.mcp.json)
      gamma  MCP server                             gamma-insecure          http://mcp.example.com/plain (mcp.json)
      gamma  every capability (cannot be modelled)  plugin.json#extensions  extensions of `com.example.other`, a harness berth does not know of

    ----- stderr -----
    "#);
    // `--no-review` is the same summary without what other harnesses would run.
    let full = ctx.ok(&["plugins", "show"]).stdout;
    let bare = ctx.ok(&["plugins", "show", "--no-review"]).stdout;
    let (summary, _) = full
        .split_once("\nRun by other harnesses only (4)")
        .expect("the review's section");
    assert_eq!(bare, summary);
}

#[test]
fn run_passes_the_set_offline_without_the_manifest() {
    let ctx = TestContext::new();
    project(&ctx);
    ctx.ok(&["plugins", "sync"]);
    // `show --json` is the set and `review`, what the review reads of each plugin.
    let shown = {
        let mut json: serde_json::Value =
            serde_json::from_str(&ctx.ok(&["plugins", "show", "--json"]).stdout).expect("JSON");
        let review = json.as_object_mut().expect("an object").remove("review");
        assert!(review.is_some_and(|r| r["alpha"]["runs_code"] == true));
        let mut text = serde_json::to_string_pretty(&json).expect("JSON");
        text.push('\n');
        text
    };
    // No network: upstream gone and `github:` pointing at a closed port; no manifest.
    std::fs::rename(&ctx.upstream, ctx.root.join("gone")).expect("upstream gone");
    std::fs::remove_file(ctx.manifest_path()).expect("delete manifest");
    let run = ctx
        .berth()
        .env("BERTH_GITHUB_URL", "http://127.0.0.1:9")
        .args([
            "run",
            "--",
            "sh",
            "-c",
            "cat \"$BERTH_PLUGIN_SET\"; printf '%s' \"$BERTH_PLUGIN_PATHS\" > paths",
        ])
        .output()
        .expect("run");
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&run.stdout),
        shown,
        "`berth run` passes the same set"
    );
    let doc: Value = serde_json::from_str(&shown).expect("JSON");
    // Each plugin is seen at a path that ends in its name and leads to its store entry.
    let expected: Vec<&str> = doc["plugins"]
        .as_array()
        .expect("plugins")
        .iter()
        .map(|p| {
            let root = p["root"].as_str().expect("root");
            assert!(root.ends_with(&format!("/{}", p["name"].as_str().expect("name"))));
            assert_eq!(
                std::fs::canonicalize(root).expect("the root resolves"),
                std::fs::canonicalize(p["path"].as_str().expect("path")).expect("entry")
            );
            root
        })
        .collect();
    assert_eq!(
        std::fs::read_to_string(ctx.work.join("paths")).expect("paths"),
        expected.join(":")
    );
    // The exit status is the command's.
    let status = ctx
        .berth()
        .args(["run", "--", "sh", "-c", "exit 7"])
        .status()
        .expect("run");
    assert_eq!(status.code(), Some(7));
    berth_snapshot!(ctx.filters(), ctx.berth().args(["run", "--", "no-such-command-berth-test"]), @r#"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    error: could not run `no-such-command-berth-test`: No such file or directory (os error 2)
    "#);
}

#[test]
fn run_refuses_a_stale_lock_unless_frozen_and_a_missing_store_entry() {
    let ctx = TestContext::new();
    project(&ctx);
    ctx.ok(&["plugins", "sync"]);
    let manifest = std::fs::read_to_string(ctx.manifest_path()).expect("read");
    ctx.write_manifest(&manifest.replace("./beta", "./gamma"));
    berth_snapshot!(ctx.filters(), ctx.berth().args(["run", "--", "true"]), @r#"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    error: `plugins.lock` is out of date with `plugins.toml`; run `berth plugins sync` (or pass `--frozen` to use the lock as it is)
      entry 2 (`beta`): `source` is `./gamma` in the manifest but `./beta` in the lock
    "#);
    ctx.ok(&["run", "--frozen", "--", "true"]);
    berth_snapshot!(
        ctx.filters(),
        ctx.berth()
            .env("BERTH_STORE", ctx.root.join("empty-store"))
            .args(["run", "--frozen", "--", "true"]),
        @r#"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    error: plugin `alpha` is not in the store (expected `[TMP]/empty-store/store-v1/0vfifc07vyp3zf9kmy2kjhdqpcnfjc9wsr43b2ks182948xy33s1-alpha`); run `berth plugins sync`
    "#
    );
    berth_snapshot!(
        ctx.filters(),
        ctx.berth()
            .env("BERTH_STORE", ctx.root.join("empty-store"))
            .args(["plugins", "show"]),
        @r#"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    warning: `plugins.lock` is out of date with `plugins.toml` (entry 2 (`beta`): `source` is `./gamma` in the manifest but `./beta` in the lock); this is the lock as it is: run `berth plugins lock` to update it
    error: plugin `alpha` is not in the store (expected `[TMP]/empty-store/store-v1/0vfifc07vyp3zf9kmy2kjhdqpcnfjc9wsr43b2ks182948xy33s1-alpha`); run `berth plugins sync`
    "#
    );
}

#[test]
fn a_skill_linking_outside_the_plugin_is_skipped_with_a_warning() {
    // As the SDK does: that one file is skipped, never read through, and named in the
    // set's warnings; the rest of the plugin (and of the lock) loads.
    let ctx = TestContext::new();
    let plugin = ctx.work.join("sneaky");
    std::fs::create_dir_all(plugin.join("skills")).expect("mkdir");
    std::fs::write(plugin.join("skills/fine.md"), "fine\n").expect("write");
    std::os::unix::fs::symlink("/etc/passwd", plugin.join("skills/passwords.md")).expect("symlink");
    let other = ctx.work.join("other");
    std::fs::create_dir_all(other.join("skills")).expect("mkdir");
    std::fs::write(other.join("skills/other.md"), "other\n").expect("write");
    ctx.write_manifest("[[plugin]]\nsource = \"./sneaky\"\n\n[[plugin]]\nsource = \"./other\"\n");
    ctx.ok(&["plugins", "sync"]);
    let passwd = std::fs::read_to_string("/etc/passwd").expect("passwd");
    let secret_line = passwd.lines().next().expect("a line");
    let shown = ctx.ok(&["plugins", "show", "--json"]);
    let set: Value = serde_json::from_str(&shown.stdout).expect("JSON");
    let names = skill_names(&set);
    assert_eq!(names, ["fine", "other"]);
    assert!(!shown.stdout.contains(secret_line));
    assert_eq!(
        set["warnings"],
        json!([
            "plugin `sneaky`: skipped `skills/passwords.md`: it is a symlink that leaves the plugin's folder; berth never reads through it"
        ])
    );
    berth_snapshot!(ctx.filters(), ctx.berth().args(["plugins", "show"]), @r#"
    success: true
    exit_code: 0
    ----- stdout -----
    Plugins (2)
      sneaky  1.0.0  sha256-0qxA1UCZVZMZ  ./sneaky
      other   1.0.0  sha256-D8Nkevd/rUlU  ./other

    Skills (2)
      fine   sneaky  always
      other  other   always

    MCP servers (0)

    Hooks (0)

    Warnings (1)
      plugin `sneaky`: skipped `skills/passwords.md`: it is a symlink that leaves the plugin's folder; berth never reads through it

    ----- stderr -----
    "#);
    ctx.ok(&["run", "--", "true"]);
    ctx.ok(&["hooks", "run", "stop"]);
}

#[test]
fn the_readable_form_counts_hooks_as_it_lists_them() {
    // A matcher may hold several hooks, or none once its invalid ones are dropped: the
    // count is of the hooks listed, not of the matchers.
    let ctx = TestContext::new();
    let plugin = ctx.work.join("hooked");
    std::fs::create_dir_all(plugin.join("hooks")).expect("mkdir");
    let three = r#"{"type": "command", "command": "echo one"}, {"type": "command", "command": "echo two"}, {"type": "command", "command": "echo three"}"#;
    let dropped = r#"{"type": "not-a-kind", "command": "echo never"}"#;
    let hooks = format!(
        r#"{{"hooks": {{"Stop": [{{"hooks": [{three}]}}], "SessionStart": [{{"hooks": [{dropped}]}}]}}}}"#
    );
    std::fs::write(plugin.join("hooks/hooks.json"), hooks).expect("write");
    ctx.write_manifest("[[plugin]]\nsource = \"./hooked\"\n");
    ctx.ok(&["plugins", "sync"]);
    let shown = ctx.ok(&["plugins", "show"]).stdout;
    let listed: Vec<&str> = shown
        .lines()
        .skip_while(|line| !line.starts_with("Hooks ("))
        .take_while(|line| !line.is_empty())
        .collect();
    assert_eq!(listed.len(), 4, "{shown}");
    assert_eq!(listed[0], "Hooks (3)", "{shown}");
    assert!(
        listed[1].contains("echo one") && listed[3].contains("echo three"),
        "{shown}"
    );
    assert!(
        shown.contains("`not-a-kind`"),
        "the dropped hook is warned of: {shown}"
    );
}

#[test]
fn a_skill_nested_150000_levels_deep_is_skipped_before_it_is_parsed() {
    // A hostile SKILL.md: 300 KB of YAML flow nesting, which the YAML parser takes minutes
    // over. It is refused by counting its openers, the rest of the plugin loads.
    let ctx = TestContext::new();
    let plugin = ctx.work.join("deep");
    for (skill, front) in [
        (
            "deep",
            format!("name: deep\ndescription: {}", "[".repeat(150_000)),
        ),
        ("fine", "name: fine\ndescription: fine".to_owned()),
    ] {
        std::fs::create_dir_all(plugin.join("skills").join(skill)).expect("mkdir");
        std::fs::write(
            plugin.join("skills").join(skill).join("SKILL.md"),
            format!("---\n{front}\n---\nbody\n"),
        )
        .expect("write");
    }
    ctx.write_manifest("[[plugin]]\nsource = \"./deep\"\n");
    ctx.ok(&["plugins", "sync"]);
    let shown = ctx.ok(&["plugins", "show", "--json"]);
    let set: Value = serde_json::from_str(&shown.stdout).expect("JSON");
    let names = skill_names(&set);
    assert_eq!(names, ["fine"]);
    let warnings = set["warnings"].to_string();
    assert!(
        warnings.contains("skipped skill `skills/deep/SKILL.md`")
            && warnings.contains("150000 `[` and `{`, over berth's limit of 1024"),
        "{warnings}"
    );
}

#[test]
fn a_hook_finds_its_own_package_by_the_plugins_name() {
    // A real pattern: the hook puts the parent of CLAUDE_PLUGIN_ROOT on sys.path and
    // imports the plugin's own package by the plugin's name. The root hooks see is a link
    // named after the plugin, so that works while the store stays content-addressed.
    let ctx = TestContext::new();
    let plugin = ctx.work.join("hookguard");
    std::fs::create_dir_all(plugin.join("hooks")).expect("mkdir");
    std::fs::create_dir_all(plugin.join("core")).expect("mkdir");
    std::fs::write(plugin.join("__init__.py"), "").expect("write");
    std::fs::write(plugin.join("core/__init__.py"), "").expect("write");
    std::fs::write(
        plugin.join("core/rules.py"),
        "REASON = 'blocked by hookguard.core'\n",
    )
    .expect("write");
    std::fs::write(
        plugin.join("hooks/pre.py"),
        "import os, sys\nroot = os.environ['CLAUDE_PLUGIN_ROOT']\nsys.path.insert(0, os.path.dirname(root))\nfrom hookguard.core.rules import REASON\nprint(REASON, file=sys.stderr)\nsys.exit(2)\n",
    )
    .expect("write");
    std::fs::write(
        plugin.join("hooks/hooks.json"),
        r#"{"hooks": {"PreToolUse": [{"hooks": [{"command": "python3 ${CLAUDE_PLUGIN_ROOT}/hooks/pre.py"}]}]}}"#,
    )
    .expect("write");
    ctx.write_manifest("[[plugin]]\nsource = \"./hookguard\"\n");
    ctx.ok(&["plugins", "sync"]);
    let (code, report) = hooks(&ctx, &["pre_tool_use", "--tool-name", "terminal"]);
    assert_eq!(code, 2, "{report:#}");
    assert_eq!(report["reason"], "blocked by hookguard.core", "{report:#}");
}

/// A plugin whose hooks cover every case the contract names.
fn hook_project(ctx: &TestContext) -> std::path::PathBuf {
    let plugin = ctx.work.join("guards");
    std::fs::create_dir_all(plugin.join("hooks")).expect("mkdir");
    std::fs::create_dir_all(plugin.join("scripts")).expect("mkdir");
    let script = |name: &str, body: &str| {
        use std::os::unix::fs::PermissionsExt;
        let path = plugin.join("scripts").join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}")).expect("write script");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    };
    script(
        "record.sh",
        "cat > \"$OPENHANDS_PROJECT_DIR/event.json\"\nenv | grep -E '^(OPENHANDS_|CLAUDE_PLUGIN_ROOT=)' | sort > \"$OPENHANDS_PROJECT_DIR/env.txt\"\necho '{\"additionalContext\": \"recorded\"}'\n",
    );
    script(
        "block.sh",
        "if grep -q 'rm -rf' ; then echo 'refusing rm -rf' >&2; exit 2; fi\n",
    );
    script(
        "slow.sh",
        "sleep 30 &\necho $! > \"$OPENHANDS_PROJECT_DIR/child.pid\"\nwait\n",
    );
    std::fs::write(
        plugin.join("hooks/hooks.json"),
        r#"{"hooks": {
  "PreToolUse": [
    {"matcher": "terminal", "hooks": [
      {"command": "${CLAUDE_PLUGIN_ROOT}/scripts/record.sh"},
      {"command": "${CLAUDE_PLUGIN_ROOT}/scripts/block.sh"}]},
    {"matcher": "file_editor", "hooks": [
      {"command": "echo '{\"decision\": \"deny\", \"reason\": \"files are read-only today\"}'"}]},
    {"matcher": "browser", "hooks": [{"command": "echo broken >&2; exit 1"}]},
    {"matcher": "slow_tool", "hooks": [{"command": "${CLAUDE_PLUGIN_ROOT}/scripts/slow.sh", "timeout": 1}]}
  ],
  "SessionStart": [{"hooks": [{"command": "echo '{\"additionalContext\": \"hello from guards\"}'"}]}]
}}"#,
    )
    .expect("write hooks");
    ctx.write_manifest("[[plugin]]\nsource = \"./guards\"\n");
    ctx.ok(&["plugins", "sync"]);
    plugin
}

fn hooks(ctx: &TestContext, args: &[&str]) -> (i32, Value) {
    let mut all = vec!["hooks", "run"];
    all.extend_from_slice(args);
    let run = ctx.run(&all);
    let report = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|_| panic!("{args:?}: not JSON:\n{}\n{}", run.stdout, run.stderr));
    (run.code, report)
}

#[test]
fn a_blocking_hook_blocks_with_its_stderr_and_sees_the_contract() {
    let ctx = TestContext::new();
    hook_project(&ctx);
    let input = ctx.work.join("event-in.json");
    std::fs::write(&input, r#"{"tool_input": {"command": "rm -rf /"}}"#).expect("write");
    let (code, report) = hooks(
        &ctx,
        &[
            "PreToolUse",
            "--tool-name",
            "terminal",
            "--session-id",
            "conv-42",
            "--input",
            input.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(code, 2, "{report:#}");
    assert_eq!(report["blocked"], true);
    assert_eq!(report["continue"], false);
    assert_eq!(report["reason"], "refusing rm -rf");
    assert_eq!(report["additional_context"], "recorded");
    assert_eq!(report["hooks"].as_array().expect("hooks").len(), 2);
    // The contract: event JSON on stdin, OPENHANDS_* and CLAUDE_PLUGIN_ROOT in the environment.
    let event: Value =
        serde_json::from_str(&std::fs::read_to_string(ctx.work.join("event.json")).expect("event"))
            .expect("JSON");
    assert_eq!(event["event_type"], "PreToolUse");
    assert_eq!(event["tool_name"], "terminal");
    assert_eq!(event["tool_input"]["command"], "rm -rf /");
    assert_eq!(event["session_id"], "conv-42");
    let env = std::fs::read_to_string(ctx.work.join("env.txt")).expect("env");
    assert!(env.contains("OPENHANDS_EVENT_TYPE=PreToolUse"), "{env}");
    assert!(env.contains("OPENHANDS_SESSION_ID=conv-42"), "{env}");
    assert!(env.contains("OPENHANDS_TOOL_NAME=terminal"), "{env}");
    assert!(
        env.contains(&format!("OPENHANDS_PROJECT_DIR={}", ctx.work.display())),
        "{env}"
    );
    // Hooks see the plugin at a path ending in its name, leading to its store entry.
    let store_entries = ctx.store_entries();
    let root = env
        .lines()
        .find_map(|l| l.strip_prefix("CLAUDE_PLUGIN_ROOT="))
        .expect("CLAUDE_PLUGIN_ROOT");
    assert!(root.ends_with("/guards"), "{env}");
    assert!(
        root.starts_with(&ctx.store.join("views-v1").display().to_string()),
        "{env}"
    );
    assert_eq!(
        std::fs::canonicalize(root).expect("resolves"),
        std::fs::canonicalize(ctx.store.join("store-v1").join(&store_entries[0])).expect("entry")
    );
    // A harmless command passes.
    std::fs::write(&input, r#"{"tool_input": {"command": "ls"}}"#).expect("write");
    let (code, report) = hooks(
        &ctx,
        &[
            "pre_tool_use",
            "--tool-name",
            "terminal",
            "--input",
            input.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["blocked"], false);
}

#[test]
fn a_json_decision_denies() {
    let ctx = TestContext::new();
    hook_project(&ctx);
    let (code, report) = hooks(&ctx, &["pre_tool_use", "--tool-name", "file_editor"]);
    assert_eq!(code, 2, "{report:#}");
    assert_eq!(report["decision"], "deny");
    assert_eq!(report["reason"], "files are read-only today");
}

#[test]
fn a_failing_hook_does_not_block() {
    let ctx = TestContext::new();
    hook_project(&ctx);
    let (code, report) = hooks(&ctx, &["pre_tool_use", "--tool-name", "browser"]);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["blocked"], false);
    assert_eq!(report["hooks"][0]["exit_code"], 1);
    assert_eq!(report["hooks"][0]["success"], false);
    assert_eq!(report["hooks"][0]["stderr"], "broken\n");
}

#[test]
fn a_hook_past_its_timeout_is_killed_with_its_children() {
    let ctx = TestContext::new();
    hook_project(&ctx);
    let started = std::time::Instant::now();
    let (code, report) = hooks(&ctx, &["pre_tool_use", "--tool-name", "slow_tool"]);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "stopped at the timeout"
    );
    assert_eq!(code, 0, "a timeout does not block: {report:#}");
    assert_eq!(report["hooks"][0]["timed_out"], true);
    assert!(
        report["hooks"][0]["error"]
            .as_str()
            .expect("error")
            .contains("timed out after 1 seconds")
    );
    let pid =
        std::fs::read_to_string(ctx.work.join("child.pid")).expect("the hook started a child");
    let alive = Path::new("/proc").join(pid.trim()).exists()
        && !std::fs::read_to_string(Path::new("/proc").join(pid.trim()).join("stat"))
            .unwrap_or_default()
            .contains(") Z ");
    assert!(!alive, "the hook's child {pid} was killed with it");
}

#[test]
fn a_matcher_that_does_not_match_runs_nothing() {
    let ctx = TestContext::new();
    hook_project(&ctx);
    let (code, report) = hooks(&ctx, &["pre_tool_use", "--tool-name", "terminal2"]);
    assert_eq!(code, 0);
    assert_eq!(report["hooks"], json!([]));
    assert!(!ctx.work.join("event.json").exists(), "no hook ran");
    // Events without a tool run only `*` matchers, and pass on additional context.
    let (code, report) = hooks(&ctx, &["session_start", "--session-id", "s"]);
    assert_eq!(code, 0);
    assert_eq!(report["additional_context"], "hello from guards");
    let bad = ctx.run(&["hooks", "run", "Notification"]);
    assert_eq!(
        bad.code, 2,
        "an unknown event is a usage error: {}",
        bad.stderr
    );
}

#[test]
fn an_update_keeps_the_plugins_data_folder() {
    let ctx = TestContext::new();
    let repo = ctx.repo("gamma");
    copy_tree(&fixtures().join("conformance/samples/gamma"), &repo.path);
    repo.commit("v1");
    ctx.write_manifest("[[plugin]]\nsource = \"github:acme/gamma\"\n");
    ctx.ok(&["plugins", "sync"]);
    let data_of = |set: &Value| -> (String, String) {
        let server = &set["mcp_servers"]["shared-server"];
        let args: Vec<&str> = server["args"]
            .as_array()
            .expect("args")
            .iter()
            .map(|a| a.as_str().expect("string"))
            .collect();
        let data = args[args.iter().position(|a| *a == "--data").expect("--data") + 1];
        (
            data.to_owned(),
            set["plugins"][0]["path"].as_str().expect("path").to_owned(),
        )
    };
    let show = |ctx: &TestContext| -> Value {
        serde_json::from_str(&ctx.ok(&["plugins", "show", "--json"]).stdout).expect("JSON")
    };
    let (data_v1, entry_v1) = data_of(&show(&ctx));
    let expected = common::plugin_data_dir(&ctx.store, "gamma", "github:acme/gamma").join("db");
    assert_eq!(data_v1, expected.display().to_string());

    repo.write(
        "skills/added/SKILL.md",
        "---\nname: added\ndescription: new\n---\nnew\n",
    );
    repo.commit("v2");
    ctx.ok(&["plugins", "lock", "--upgrade"]);
    ctx.ok(&["plugins", "sync"]);
    let (data_v2, entry_v2) = data_of(&show(&ctx));
    assert_ne!(entry_v1, entry_v2, "the update is a new store entry");
    assert_eq!(data_v1, data_v2, "its data folder is the same");
}
