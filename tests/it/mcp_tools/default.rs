//! Locking observes by default: without a policy, `lock` records what an allowed server
//! offers; `--no-observe` and `BERTH_NO_OBSERVE` start nothing; a policy's `tools` rule
//! refuses them; a server is observed again only when its own code changes.

use crate::common;

use common::npm::have_node;

use super::{berth_with, lab, server_js, tools_records};

#[test]
fn lock_observes_by_default_and_no_observe_starts_nothing() {
    if !have_node() {
        return;
    }
    let (ctx, _registry, url, _rug) = lab("allow", "record");
    std::fs::remove_file(ctx.work.join("berth-policy.toml")).expect("no policy");
    let run = |args: &[&str]| berth_with(&ctx, &url, args);

    let skipped = run(&["plugins", "lock", "--no-observe"]);
    assert_eq!(skipped.code, 0, "{}", skipped.stderr);
    assert!(!skipped.stderr.contains("Observed"), "{}", skipped.stderr);
    assert!(
        tools_records(&ctx.lock_text()).is_empty(),
        "{}",
        ctx.lock_text()
    );
    std::fs::remove_file(ctx.lock_path()).expect("rm lock");
    let by_env = common::Run::from(
        ctx.berth()
            .env("BERTH_NPM_REGISTRY", &url)
            .env("BERTH_NO_OBSERVE", "1")
            .args(["plugins", "lock"])
            .output()
            .expect("run"),
    );
    assert_eq!(by_env.code, 0, "{}", by_env.stderr);
    assert!(
        tools_records(&ctx.lock_text()).is_empty(),
        "{}",
        ctx.lock_text()
    );

    // Without a policy, a new lock observes the server it pins.
    std::fs::remove_file(ctx.lock_path()).expect("rm lock");
    let locked = run(&["plugins", "lock"]);
    assert_eq!(locked.code, 0, "{}", locked.stderr);
    assert!(
        locked
            .stderr
            .contains("Observed MCP server `search` of `tools`: 1 tool"),
        "{}",
        locked.stderr
    );
    let records = tools_records(&ctx.lock_text());
    assert_eq!(records.len(), 1, "{}", ctx.lock_text());
    assert!(records[0].get("manifest").is_some(), "{:?}", records[0]);
    assert!(
        records[0].get("trust").is_none(),
        "pinned code, not a first use"
    );

    // A plugin whose server is its own file, then a third plugin joining the lock: the
    // servers' code, and their records, stay as they were, and nothing starts again.
    let own = ctx.work.join("own");
    std::fs::create_dir_all(own.join(".claude-plugin")).expect("mkdir");
    std::fs::write(own.join(".claude-plugin/plugin.json"), r#"{"name": "own"}"#).expect("write");
    std::fs::write(
        own.join("server.js"),
        server_js("1", "Own search", &ctx.root.join("no-rug")),
    )
    .expect("write");
    std::fs::write(
        own.join(".mcp.json"),
        r#"{"mcpServers": {"own": {"command": "node", "args": ["${CLAUDE_PLUGIN_ROOT}/server.js"]}}}"#,
    )
    .expect("write");
    let third = ctx.work.join("third");
    std::fs::create_dir_all(third.join(".claude-plugin")).expect("mkdir");
    std::fs::write(
        third.join(".claude-plugin/plugin.json"),
        r#"{"name": "third"}"#,
    )
    .expect("write");
    let entries = |names: &[&str]| -> String {
        names
            .iter()
            .map(|n| format!("[[plugin]]\nsource = \"./{n}\"\n\n"))
            .collect()
    };
    ctx.write_manifest(&entries(&["tools", "own"]));
    let with_own = run(&["plugins", "lock"]);
    assert_eq!(with_own.code, 0, "{}", with_own.stderr);
    assert!(
        with_own
            .stderr
            .contains("Observed MCP server `own` of `own`: 1 tool")
            && !with_own.stderr.contains("of `tools`"),
        "{}",
        with_own.stderr
    );
    let records = tools_records(&ctx.lock_text());
    assert_eq!(records.len(), 2, "{}", ctx.lock_text());
    ctx.write_manifest(&entries(&["third", "tools", "own"]));
    let grown = run(&["plugins", "lock"]);
    assert_eq!(grown.code, 0, "{}", grown.stderr);
    assert!(!grown.stderr.contains("Observed"), "{}", grown.stderr);
    assert_eq!(tools_records(&ctx.lock_text()), records);

    // Under a policy's `tools` rule, starting nothing is not a choice.
    std::fs::write(
        ctx.work.join("berth-policy.toml"),
        "[capabilities]\ntools = \"record\"\n",
    )
    .expect("policy");
    let refused = run(&["plugins", "lock", "--no-observe"]);
    assert_ne!(refused.code, 0, "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains("says `tools = \"record\"`: what each MCP server offers must be recorded"),
        "{}",
        refused.stderr
    );
}
