//! The runtime end to end (issue #3): `plugins show`, `run` and `hooks run` from the lock
//! and the store alone.

mod common;

use std::path::Path;

use common::{TestContext, copy_tree, fixtures};
use serde_json::Value;

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
        let entry = Path::new(path).file_name().expect("entry");
        text = text.replace(
            &store
                .join("plugin-data-v1")
                .join(entry)
                .display()
                .to_string(),
            &format!("<data#{i}>"),
        );
        text = text.replace(path, &format!("<path#{i}>"));
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
    // `${CLAUDE_PLUGIN_ROOT}` in a hook command points at the plugin's store path.
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
            review["path"].as_str().expect("path")
        )
    );
    // The readable summary names plugins, skills, servers and hooks.
    let summary = ctx.ok(&["plugins", "show"]).stdout;
    for needle in [
        "Plugins (4)",
        "Skills (",
        "MCP servers (4)",
        "Hooks (",
        "code-review",
        "review:check",
        "shared-server",
    ] {
        assert!(summary.contains(needle), "`{needle}` not in:\n{summary}");
    }
}

#[test]
fn run_passes_the_set_offline_without_the_manifest() {
    let ctx = TestContext::new();
    project(&ctx);
    ctx.ok(&["plugins", "sync"]);
    let shown = ctx.ok(&["plugins", "show", "--json"]).stdout;
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
    let expected: Vec<&str> = doc["plugins"]
        .as_array()
        .expect("plugins")
        .iter()
        .map(|p| p["path"].as_str().expect("path"))
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
    let missing = ctx.run(&["run", "--", "no-such-command-berth-test"]);
    assert_eq!(missing.code, 1);
    assert!(
        missing.errors()[0].contains("no-such-command-berth-test"),
        "{}",
        missing.stderr
    );
}

#[test]
fn run_refuses_a_stale_lock_unless_frozen_and_a_missing_store_entry() {
    let ctx = TestContext::new();
    project(&ctx);
    ctx.ok(&["plugins", "sync"]);
    let manifest = std::fs::read_to_string(ctx.manifest_path()).expect("read");
    ctx.write_manifest(&manifest.replace("./beta", "./gamma"));
    let stale = ctx.run(&["run", "--", "true"]);
    assert_eq!(stale.code, 1);
    assert!(
        stale.errors()[0].contains("out of date") && stale.errors()[0].contains("--frozen"),
        "{}",
        stale.stderr
    );
    ctx.ok(&["run", "--frozen", "--", "true"]);
    let cold = ctx
        .berth()
        .env("BERTH_STORE", ctx.root.join("empty-store"))
        .args(["run", "--frozen", "--", "true"])
        .output()
        .expect("run");
    assert_eq!(cold.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&cold.stderr);
    assert!(
        stderr.contains("plugin `alpha` is not in the store")
            && stderr.contains("berth plugins sync"),
        "{stderr}"
    );
}

#[test]
fn a_skill_linking_outside_the_plugin_is_refused() {
    let ctx = TestContext::new();
    let plugin = ctx.work.join("sneaky");
    std::fs::create_dir_all(plugin.join("skills")).expect("mkdir");
    std::fs::write(plugin.join("skills/fine.md"), "fine\n").expect("write");
    std::os::unix::fs::symlink("/etc/passwd", plugin.join("skills/passwords.md")).expect("symlink");
    ctx.write_manifest("[[plugin]]\nsource = \"./sneaky\"\n");
    ctx.ok(&["plugins", "sync"]);
    for args in [
        &["plugins", "show", "--json"][..],
        &["run", "--", "true"][..],
        &["hooks", "run", "stop"][..],
    ] {
        let run = ctx.run(args);
        assert_eq!(run.code, 1, "{args:?}: {}", run.stdout);
        assert!(run.stdout.is_empty(), "{args:?}: {}", run.stdout);
        let error = run.errors()[0];
        assert!(
            error.contains("`sneaky`")
                && error.contains("skills/passwords.md")
                && error.contains("leaves the plugin"),
            "{args:?}: {error}"
        );
    }
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
    let store_entries = ctx.store_entries();
    assert!(
        env.contains(&format!(
            "CLAUDE_PLUGIN_ROOT={}",
            ctx.store.join("store-v1").join(&store_entries[0]).display()
        )),
        "{env}"
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
    assert_eq!(report["hooks"], serde_json::json!([]));
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
