//! A server that does not answer (one that waits for a real secret, say) within the time
//! bound is stopped, recorded as unobserved with why, named by `lock` and `audit`, and
//! refused under `tools = "pinned"`.

use crate::common;

use common::TestContext;

use super::tools_records;

/// A stdio server, in its plugin, that reads its requests and never answers (its first
/// argument names it among the processes of the machine).
const SILENT_SERVER: &str = "#!/bin/sh\nwhile read -r line; do :; done\nsleep 600\n";

#[test]
fn a_server_that_does_not_answer_in_time_is_stopped_and_named() {
    let ctx = TestContext::new();
    let pids = [ctx.root.join("vault.pid"), ctx.root.join("keys.pid")];
    let plugin = ctx.work.join("quiet");
    std::fs::create_dir_all(plugin.join(".claude-plugin")).expect("mkdir");
    std::fs::write(
        plugin.join(".claude-plugin/plugin.json"),
        r#"{"name": "quiet"}"#,
    )
    .expect("write");
    let script = plugin.join("server.sh");
    std::fs::write(&script, SILENT_SERVER).expect("write");
    let mut mode = std::fs::metadata(&script).expect("stat").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut mode, 0o755);
    std::fs::set_permissions(&script, mode).expect("chmod");
    std::fs::write(
        plugin.join(".mcp.json"),
        serde_json::json!({"mcpServers": {
            "vault": {"command": "${CLAUDE_PLUGIN_ROOT}/server.sh", "args": [pids[0]],
                      "env": {"VAULT_TOKEN": "${VAULT_TOKEN}"}},
            "keys": {"command": "${CLAUDE_PLUGIN_ROOT}/server.sh", "args": [pids[1]]}}})
        .to_string(),
    )
    .expect("write");
    ctx.write_manifest("[[plugin]]\nsource = \"./quiet\"\n");
    let started = std::time::Instant::now();
    let locked = common::Run::from(
        ctx.berth()
            .env("BERTH_OBSERVE_TIMEOUT", "1")
            .args(["plugins", "lock"])
            .output()
            .expect("run"),
    );
    assert_eq!(locked.code, 0, "{}", locked.stderr);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "the bound holds: {:?}",
        started.elapsed()
    );
    assert!(
        locked.stderr.contains(
            "warning: MCP server `vault` of plugin `quiet` was not observed: it did not answer `initialize` in time"
        ),
        "{}",
        locked.stderr
    );
    let records = tools_records(&ctx.lock_text());
    assert_eq!(records.len(), 2, "{}", ctx.lock_text());
    for record in &records {
        assert!(
            record["unobserved"]
                .as_str()
                .is_some_and(|why| why.contains("did not answer")),
            "{record:?}"
        );
    }
    // Both were stopped (they ran until then: they did not answer in time, rather than
    // exit): their processes are gone.
    for pid in &pids {
        let name = pid.display().to_string();
        let left = common::processes_left(&["server.sh", &name], 5);
        assert!(left.is_empty(), "server {name} still runs: {left:?}");
    }
    let audit = ctx.ok(&["audit"]);
    assert!(
        audit
            .stdout
            .contains("not observed: MCP server `vault` of plugin `quiet`: it did not answer"),
        "{}",
        audit.stdout
    );
    // Under `tools = "pinned"` a server never observed is refused: fail closed.
    std::fs::write(
        ctx.work.join("berth-policy.toml"),
        "[capabilities]\ntools = \"pinned\"\n",
    )
    .expect("policy");
    let refused = common::Run::from(
        ctx.berth()
            .env("BERTH_OBSERVE_TIMEOUT", "1")
            .args(["plugins", "sync"])
            .output()
            .expect("run"),
    );
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains("was never observed (it did not answer")
            && refused.stderr.contains("tools = \"pinned\""),
        "{}",
        refused.stderr
    );
}

/// What the lock records of a server that could not be observed is the same on every
/// machine: why, without what it wrote to stderr (here its own path in the store); the
/// warning says that too.
#[test]
fn an_unobserved_server_s_record_holds_no_path() {
    let ctx = TestContext::new();
    let plugin = ctx.work.join("broken");
    std::fs::create_dir_all(plugin.join(".claude-plugin")).expect("mkdir");
    std::fs::write(
        plugin.join(".claude-plugin/plugin.json"),
        r#"{"name": "broken"}"#,
    )
    .expect("write");
    let script = plugin.join("server.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\necho \"no config next to $0\" >&2\nexit 3\n",
    )
    .expect("write");
    let mut mode = std::fs::metadata(&script).expect("stat").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut mode, 0o755);
    std::fs::set_permissions(&script, mode).expect("chmod");
    std::fs::write(
        plugin.join(".mcp.json"),
        r#"{"mcpServers": {"broken": {"command": "${CLAUDE_PLUGIN_ROOT}/server.sh"}}}"#,
    )
    .expect("write");
    ctx.write_manifest("[[plugin]]\nsource = \"./broken\"\n");
    let locked = ctx.ok(&["plugins", "lock"]);
    assert!(
        locked.stderr.contains(
            "MCP server `broken` of plugin `broken` was not observed: it exited before answering (it said: no config next to "
        ),
        "{}",
        locked.stderr
    );
    let records = tools_records(&ctx.lock_text());
    assert_eq!(records.len(), 1, "{}", ctx.lock_text());
    assert_eq!(
        records[0]["unobserved"].as_str(),
        Some("it exited before answering"),
        "{}",
        ctx.lock_text()
    );
    let store = ctx.store.display().to_string();
    assert!(!ctx.lock_text().contains(&store), "{}", ctx.lock_text());
}
