//! P4-13: observing a Python server that imports a module of its plugin writes no
//! `__pycache__` into the plugin's store entry, so the entry still verifies (and an
//! approval can still digest it), as root and as an ordinary user.

use super::{As, Lab};

/// A server that imports `helpers.tools` from beside itself, as Python packages do, and
/// names its one tool from it.
const MAIN: &str = r#"import json, os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from helpers import tools

for line in sys.stdin:
    r = json.loads(line)
    if "id" not in r:
        continue
    if r["method"] == "initialize":
        result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                  "serverInfo": {"name": "py", "version": "1"}}
    else:
        result = {"tools": [{"name": tools.NAME, "inputSchema": {"type": "object"}}]}
    print(json.dumps({"jsonrpc": "2.0", "id": r["id"], "result": result}), flush=True)
"#;

fn imports_leave_the_entry_intact(who: As) {
    let Some(lab) = Lab::new(who) else {
        return;
    };
    let plugin = lab.plugin("py");
    std::fs::create_dir_all(plugin.join("server/helpers")).expect("mkdir");
    std::fs::write(plugin.join("server/main.py"), MAIN).expect("write");
    std::fs::write(plugin.join("server/helpers/__init__.py"), "").expect("write");
    std::fs::write(plugin.join("server/helpers/tools.py"), "NAME = 'lookup'\n").expect("write");
    std::fs::write(
        plugin.join(".mcp.json"),
        r#"{"mcpServers": {"py": {"command": "python3", "args": ["${CLAUDE_PLUGIN_ROOT}/server/main.py"]}}}"#,
    )
    .expect("write");
    lab.manifest();
    lab.hand_over();
    let run = lab.lock();
    assert!(
        run.stderr
            .contains("Observed MCP server `py` of `py`: 1 tool"),
        "{}",
        run.stderr
    );
    let mut files = Vec::new();
    crate::common::all_files(&lab.ctx.store, &mut files);
    let cached: Vec<_> = files
        .iter()
        .filter(|f| f.to_string_lossy().contains("__pycache__"))
        .collect();
    assert!(cached.is_empty(), "bytecode in the store: {cached:?}");
    lab.store_verifies();
    // What reads the entry after it (an approval digests it) still finds it unchanged.
    let again = lab.run(&["plugins", "sync"]);
    assert_eq!(again.code, 0, "{}", again.stderr);
}

#[test]
fn a_python_server_importing_a_module_leaves_its_entry_intact_as_root() {
    imports_leave_the_entry_intact(As::Root);
}

#[test]
fn a_python_server_importing_a_module_leaves_its_entry_intact_as_an_ordinary_user() {
    imports_leave_the_entry_intact(As::User);
}
