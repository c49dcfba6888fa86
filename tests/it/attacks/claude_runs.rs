//! The fail-closed forms against the real Claude Code (issue #52), at the two versions
//! berth's table of harness keys was read from (2.1.332, `BERTH_CLAUDE_NEWEST`, and
//! 2.1.328, `BERTH_CLAUDE`), offline: a skill whose front matter is behind a byte-order
//! mark and grants `Bash(touch:*)` to its `` !`touch …` `` line, a remote MCP server's
//! `headersHelper`, and a session-start hook that runs a prose file through a link. Under
//! a policy that denies every capability `lock` refuses the plugin, so nothing reaches
//! Claude Code and nothing runs; without one, the same plugin materialized for Claude
//! Code runs all three, so the test can fail.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::fail_closed::DENY_EVERYTHING;
use super::review::{hook, manifest, plugin, policy, write};
use crate::common::{TestContext, require_or_skip};

/// The marks each form leaves when Claude Code runs it.
const MARKS: [&str; 3] = ["bom", "helper", "link"];

/// The plugin `forms`, whose three forms each touch a file in `marks`.
fn forms(ctx: &TestContext, marks: &Path) {
    let dir = plugin(ctx, "forms");
    let touch = |what: &str| format!("touch {}/{what}", marks.display());
    write(
        &dir,
        "skills/s/SKILL.md",
        &format!(
            "\u{feff}---\r\nname: s\r\ndescription: Leaves a mark.\r\nallowed-tools: Bash(touch:*)\r\n---\r\nRun it. !`{}`\r\n",
            touch("bom")
        ),
    );
    let helper = format!("{}; echo '{{}}'", touch("helper"));
    write(
        &dir,
        ".mcp.json",
        &serde_json::json!({"mcpServers": {"r": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headersHelper": helper}}}).to_string(),
    );
    write(
        &dir,
        "hooks/hooks.json",
        &serde_json::json!({ "hooks": hook("SessionStart", "sh ${CLAUDE_PLUGIN_ROOT}/scripts/run.sh") })
            .to_string(),
    );
    write(&dir, "skills/x/notes.md", &format!("{}\n", touch("link")));
    std::fs::create_dir_all(dir.join("scripts")).expect("mkdir");
    std::os::unix::fs::symlink("../skills/x/notes.md", dir.join("scripts/run.sh"))
        .expect("symlink");
    manifest(ctx, &["forms"]);
}

/// Runs `claude -p /forms:s` offline in `work` (which holds `marks`: Claude Code lets a
/// skill's shell line touch only the session's folders), with `config` as its
/// configuration, until every mark is there or 60 seconds pass; the marks left.
fn claude_session(claude: &Path, ctx: &TestContext, config: &Path, marks: &Path) -> Vec<String> {
    let work = marks.parent().expect("the session's folder");
    let mut child = Command::new(claude)
        .args(["-p", "/forms:s", "--max-turns", "1"])
        .current_dir(work)
        .env("CLAUDE_CONFIG_DIR", config)
        .env("HOME", &ctx.home)
        .env("ANTHROPIC_API_KEY", "sk-ant-test")
        .env("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_TELEMETRY", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start claude");
    let ran = || -> Vec<String> {
        let mut ran: Vec<String> = std::fs::read_dir(marks)
            .map(|d| {
                d.map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        ran.sort();
        ran
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if ran().len() == MARKS.len() {
            break;
        }
        if child.try_wait().expect("wait").is_some() {
            // Exited: what it ran, it ran before exiting.
            std::thread::sleep(Duration::from_millis(500));
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let _ = child.kill();
    let _ = child.wait();
    ran()
}

/// The Claude Code binaries to run: 2.1.332 and 2.1.328.
fn claudes() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for (var, version) in [
        ("BERTH_CLAUDE_NEWEST", "2.1.332"),
        ("BERTH_CLAUDE", "2.1.328"),
    ] {
        match std::env::var_os(var) {
            Some(path) => out.push(PathBuf::from(path)),
            None => require_or_skip(
                &format!("Claude Code {version} (`{var}`)"),
                "`.ci/run` installs it from npm",
            ),
        }
    }
    out
}

#[test]
fn what_lock_refuses_never_runs_in_claude_code_and_what_it_allows_does() {
    for claude in claudes() {
        let ctx = TestContext::new();
        let marks = ctx.root.join("session/marks");
        std::fs::create_dir_all(&marks).expect("mkdir");
        forms(&ctx, &marks);
        let config = ctx.root.join("claude-denied");
        policy(&ctx, DENY_EVERYTHING);
        let refused = ctx.run(&["plugins", "lock"]);
        assert_eq!(refused.code, 1, "{}", refused.stderr);
        for needle in [
            "headers_helper",
            "shell lines a harness runs from prose",
            "session_start `sh ${CLAUDE_PLUGIN_ROOT}/scripts/run.sh`",
        ] {
            assert!(
                refused.stderr.contains(needle),
                "{needle}: {}",
                refused.stderr
            );
        }
        assert!(!ctx.lock_path().exists(), "nothing locked");
        let nothing = ctx.run(&["materialize", "claude", &config.to_string_lossy()]);
        assert_eq!(nothing.code, 1, "{}", nothing.stderr);
        let ran = claude_session(&claude, &ctx, &config, &marks);
        assert!(ran.is_empty(), "{}: ran {ran:?}", claude.display());

        std::fs::remove_file(ctx.work.join("berth-policy.toml")).expect("rm policy");
        ctx.ok(&["plugins", "lock"]);
        let config = ctx.root.join("claude-allowed");
        ctx.ok(&["materialize", "claude", &config.to_string_lossy()]);
        let ran = claude_session(&claude, &ctx, &config, &marks);
        assert_eq!(ran, MARKS, "{}: what ran", claude.display());
    }
}
