//! A plugin folder for the review tests: a hook naming a script, a stdio and a remote
//! MCP server, a `bin/` file, an exec-bit file and two skills.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde_json::json;

/// The first skill: a `SKILL.md` with `allowed-tools`, and a script beside it.
pub(crate) const ALPHA: &str =
    "---\nname: alpha\ndescription: First.\nallowed-tools: Bash Read\n---\nDo alpha.\n";
/// The first skill's script.
pub(crate) const HELPER: &str = "print('help')\n";
/// The second skill.
pub(crate) const BETA: &str = "---\nname: beta\ndescription: Second.\n---\nDo beta.\n";
/// The script the hook names.
pub(crate) const CHECK: &str = "#!/bin/sh\nexit 0\n";

/// Writes `text` at `rel` below `dir` with permissions `mode`.
pub(crate) fn write(dir: &Path, rel: &str, text: &str, mode: u32) {
    let path = dir.join(rel);
    fs_err::create_dir_all(path.parent().expect("has a parent")).expect("mkdir");
    fs_err::write(&path, text).expect("write");
    fs_err::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// A hooks file with one `PreToolUse` command hook.
pub(crate) fn hooks_json(command: &str) -> String {
    json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": command, "timeout": 10}
    ]}]}})
    .to_string()
}

/// An `.mcp.json` with a stdio server (given `--port`) and a remote one.
pub(crate) fn mcp_json(port: &str) -> String {
    json!({"mcpServers": {
        "local": {"command": "node", "args": ["${CLAUDE_PLUGIN_ROOT}/server/index.js", "--port", port],
                  "env": {"TOKEN": "secret", "A": "x"}},
        "remote": {"type": "http", "url": "https://mcp.example.com/x"}
    }})
    .to_string()
}

/// A plugin with a hook naming a script, a stdio and a remote MCP server, a `bin/`
/// file, an exec-bit file and two skills.
pub(crate) fn fixture(dir: &Path) {
    write(
        dir,
        ".claude-plugin/plugin.json",
        r#"{"name": "demo"}"#,
        0o644,
    );
    let hooks = hooks_json("${CLAUDE_PLUGIN_ROOT}/scripts/check.sh --strict");
    write(dir, "hooks/hooks.json", &hooks, 0o644);
    write(dir, "scripts/check.sh", CHECK, 0o644);
    write(dir, ".mcp.json", &mcp_json("1"), 0o644);
    write(dir, "server/index.js", "serve()\n", 0o644);
    write(dir, "bin/tool", "tool\n", 0o644);
    write(dir, "tools/run.sh", "run\n", 0o755);
    write(dir, "skills/alpha/SKILL.md", ALPHA, 0o644);
    write(dir, "skills/alpha/scripts/helper.py", HELPER, 0o644);
    write(dir, "skills/beta/SKILL.md", BETA, 0o644);
}
