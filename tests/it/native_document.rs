//! The extension `berth._native` hands Python the document `berth plugins show --json`
//! prints, key for key and in the same order, although it makes hooks and MCP servers into
//! Python objects straight from the runtime's values (`python-ext/src/document.rs`) rather
//! than through the JSON value the binary prints.

use crate::common;
use crate::python_sdk::{Runtime, python_with, sdk_python};

use common::{TestContext, require_or_skip};

/// A plugin with what the samples do not hold: prompt and agent hooks (a name, tools,
/// `max_iterations`), `async`, a timeout written as a string, an event with no matchers,
/// and an MCP server with every optional field.
const EXTRA: [(&str, &str); 3] = [
    (
        ".claude-plugin/plugin.json",
        r#"{"name": "zeta", "version": "1.0.0"}"#,
    ),
    (
        "hooks/hooks.json",
        r#"{"hooks": {"PreToolUse": [{"matcher": "terminal", "hooks": [
            {"type": "prompt", "prompt": "Is this safe? é ✓", "timeout": 12, "name": "guard"},
            {"type": "agent", "system_prompt": "Review", "tools": ["terminal", "file_editor"], "max_iterations": 7},
            {"type": "command", "command": "echo \"quoted\" \\ ${CLAUDE_PLUGIN_ROOT}", "async": true}]}],
          "Stop": [{"hooks": [{"command": "x", "timeout": "30"}]}],
          "SessionEnd": []}}"#,
    ),
    (
        ".mcp.json",
        r#"{"mcpServers": {"full": {"command": "node", "args": [], "env": {"A": "1", "B": "${SECRET}"},
            "cwd": "/tmp", "description": "d", "icon": "i.png", "timeout": 30.5,
            "sse_read_timeout": 60, "keep_alive": false, "enabled": false}}}"#,
    ),
];

#[test]
fn the_extensions_document_is_the_binarys_key_for_key_in_order() {
    let Some(python_bin) = sdk_python() else {
        require_or_skip(
            "BERTH_SDK_PYTHON",
            "see the first test in tests/it/python_sdk.rs",
        );
        return;
    };
    let ctx = TestContext::new();
    let samples = common::fixtures().join("conformance/samples");
    let names = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"];
    for name in &names[..5] {
        common::copy_tree(&samples.join(name), &ctx.work.join(name));
    }
    for (rel, text) in EXTRA {
        let path = ctx.work.join("zeta").join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }
    let manifest: String = names
        .iter()
        .map(|n| format!("[[plugin]]\nsource = \"./{n}\"\n\n"))
        .collect();
    ctx.write_manifest(&manifest);
    ctx.ok(&["plugins", "sync"]);

    let lock = ctx.lock_path().display().to_string();
    let script = "import json, sys\nimport berth.openhands as b\nassert b.native() is not None\nprint(json.dumps(b.plugin_set(sys.argv[1])))";
    let in_process = python_with(&ctx, &python_bin, Runtime::InProcess, script, &[&lock]);
    let shown = ctx.ok(&["plugins", "show", "--json", "--max-skills", "4294967296"]);
    let mut shown: serde_json::Value = serde_json::from_str(&shown.stdout).expect("show --json");
    shown.as_object_mut().expect("an object").remove("review");
    let in_process: serde_json::Value = serde_json::from_str(in_process.trim()).expect("JSON");
    // As text, so that the order of every object's keys is compared too.
    assert_eq!(in_process.to_string(), shown.to_string());
    // `--no-review` prints the rest byte for byte, and is what the drop-in runs when its
    // extension does not load: the same document again.
    let bare = ctx.ok(&[
        "plugins",
        "show",
        "--json",
        "--max-skills",
        "4294967296",
        "--no-review",
    ]);
    let pretty = serde_json::to_string_pretty(&shown).expect("pretty");
    assert_eq!(bare.stdout, format!("{pretty}\n"));
    let by_binary = python_with(
        &ctx,
        &python_bin,
        Runtime::Binary,
        script
            .replace("assert b.native() is not None", "assert b.native() is None")
            .as_str(),
        &[&lock],
    );
    let by_binary: serde_json::Value = serde_json::from_str(by_binary.trim()).expect("JSON");
    assert_eq!(by_binary.to_string(), shown.to_string());
    let hooks = &in_process["hooks"]["pre_tool_use"];
    for kind in ["prompt", "agent", "command"] {
        assert!(
            hooks.to_string().contains(&format!("\"type\":\"{kind}\"")),
            "{hooks}"
        );
    }
    assert_eq!(in_process["mcp_servers"]["full"]["timeout"], 30.5);
}
