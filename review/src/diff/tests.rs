use super::super::fixture::{fixture, write};
use super::super::surface::surface_of;
use super::{HookDiff, HookEntry, NameDiff, SurfaceDiff, ToolsChange, diff};

#[test]
fn an_added_hook_and_a_changed_skill() {
    let dir = tempfile::tempdir().expect("tempdir");
    fixture(dir.path());
    let old = surface_of("demo", dir.path(), None).expect("old");
    assert!(diff(&old, &old).is_empty());
    assert_eq!(
        serde_json::to_string(&diff(&old, &old)).expect("json"),
        "{}"
    );
    let hooks = serde_json::json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/scripts/check.sh --strict", "timeout": 10}
    ]}], "SessionStart": [{"hooks": [{"command": "echo hi"}]}]}});
    write(dir.path(), "hooks/hooks.json", &hooks.to_string(), 0o644);
    write(
        dir.path(),
        "skills/beta/SKILL.md",
        "---\nname: beta\n---\nNew.\n",
        0o644,
    );
    let new = surface_of("demo", dir.path(), None).expect("new");
    let changes = diff(&old, &new);
    let added = HookEntry {
        event: "session_start".into(),
        matcher: "*".into(),
        kind: "command".into(),
        command: "echo hi".into(),
        args: vec![],
        timeout: 60,
        is_async: false,
        source: "hooks/hooks.json".into(),
        raw: r#"{"hook":{"command":"echo hi"},"matcher":"*"}"#.into(),
    };
    let expected = SurfaceDiff {
        hooks: HookDiff {
            added: vec![added],
            ..HookDiff::default()
        },
        files: NameDiff {
            changed: vec!["hooks/hooks.json".into()],
            ..NameDiff::default()
        },
        // The plugin runs code: its prose is covered, and listed.
        prose_files: NameDiff {
            changed: vec!["skills/beta/SKILL.md".into()],
            ..NameDiff::default()
        },
        skills: NameDiff {
            changed: vec!["beta".into()],
            ..NameDiff::default()
        },
        ..SurfaceDiff::default()
    };
    assert_eq!(changes, expected);
    assert_eq!(
        serde_json::to_string(&changes).expect("json"),
        r#"{"hooks":{"added":[{"event":"session_start","matcher":"*","kind":"command","command":"echo hi","timeout":60,"source":"hooks/hooks.json"}]},"files":{"changed":["hooks/hooks.json"]},"prose_files":{"changed":["skills/beta/SKILL.md"]},"skills":{"changed":["beta"]}}"#
    );
}

#[test]
fn commands_timeouts_servers_and_tools() {
    let dir = tempfile::tempdir().expect("tempdir");
    fixture(dir.path());
    let old = surface_of("demo", dir.path(), None).expect("old");
    let mut new = old.clone();
    new.hooks[0].timeout = 5;
    new.hooks.push(HookEntry {
        command: "other".into(),
        ..old.hooks[0].clone()
    });
    new.mcp_servers
        .get_mut("local")
        .expect("local")
        .args
        .push("x".into());
    new.mcp_servers.remove("remote");
    new.skills.get_mut("alpha").expect("alpha").tools = None;
    new.executables.insert("bin/new".into(), "00".into());
    let changes = diff(&old, &new);
    assert_eq!(changes.hooks.changed.len(), 1);
    assert_eq!(changes.hooks.changed[0].new.timeout, 5);
    assert_eq!(changes.hooks.added.len(), 1);
    assert!(changes.hooks.removed.is_empty());
    assert_eq!(
        changes.mcp_servers.changed.keys().collect::<Vec<_>>(),
        ["local"]
    );
    assert_eq!(
        changes.mcp_servers.removed.keys().collect::<Vec<_>>(),
        ["remote"]
    );
    assert_eq!(changes.executables.added, ["bin/new"]);
    assert!(changes.skills.is_empty(), "tools alone leave the digest");
    assert_eq!(
        changes.tools_changed,
        [ToolsChange {
            kind: "skill",
            name: "alpha".into(),
            old: Some(vec!["Bash".into(), "Read".into()]),
            new: None,
        }]
    );
}
