//! Observation before the review (issue #53; P4-6 and P4-16 of
//! `shared/security/review-and-observe-attacks.md`): `lock` observes a changed server
//! before anyone approves it, so `plugins diff` shows what it offers now and `approve`
//! approves what was shown; `approve` starts nothing; a plugin the policy refuses outright
//! is never started; a record made for other code is never kept, and `lock --check` fails
//! on one.

use serde_json::json;

use super::{berth_with, lab, tools_records, upgrade_shows_a_new_description};
use crate::common::npm::have_node;
use crate::common::{TestContext, require_or_skip};

/// Under `mcp_stdio = "approve"`, a new version of an approved plugin's package whose one
/// change is a tool's description: `lock --upgrade` observes it before anyone approves,
/// `plugins diff` shows the new description (text and JSON), and the approval is asked
/// again for what was shown.
#[test]
fn p4_16_a_changed_description_is_shown_before_it_is_approved() {
    if !have_node() {
        return;
    }
    let (ctx, mut registry, url, rug) = lab("approve", "record");
    let run = |args: &[&str]| berth_with(&ctx, &url, args);
    let locked = run(&["plugins", "lock"]);
    assert_eq!(locked.code, 0, "{}", locked.stderr);
    assert!(
        locked
            .stderr
            .contains("Observed MCP server `search` of `tools`: 1 tool"),
        "observed before it is approved: {}",
        locked.stderr
    );
    let approved = run(&["plugins", "approve", "tools", "--by", "A <a@example.com>"]);
    assert_eq!(approved.code, 0, "{}", approved.stderr);
    assert!(!approved.stderr.contains("Observed"), "{}", approved.stderr);
    assert_eq!(run(&["plugins", "sync"]).code, 0);
    std::fs::copy(ctx.lock_path(), ctx.work.join("old.lock")).expect("copy");

    upgrade_shows_a_new_description(&ctx, &mut registry, &url, &rug);
    let records = tools_records(&ctx.lock_text());
    assert_eq!(records.len(), 1, "{}", ctx.lock_text());
    assert!(records[0].get("manifest").is_some(), "{:?}", records[0]);
    let refused = run(&["plugins", "sync"]);
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("what it runs changed since"),
        "{}",
        refused.stderr
    );
}

/// A plugin with an MCP server that leaves a mark when it starts, in a project whose lock
/// was made while the policy allowed it.
fn marking_plugin(ctx: &TestContext, mark: &std::path::Path) {
    let dir = ctx.work.join("plugins/d");
    std::fs::create_dir_all(dir.join(".claude-plugin")).expect("mkdir");
    std::fs::create_dir_all(dir.join("hooks")).expect("mkdir");
    std::fs::write(
        dir.join(".claude-plugin/plugin.json"),
        r#"{"name": "d", "version": "1.0.0"}"#,
    )
    .expect("write");
    std::fs::write(dir.join("x"), "").expect("write");
    let server = json!({"command": "sh", "args": ["-c", format!("touch {}; sleep 1", mark.display()), "${CLAUDE_PLUGIN_ROOT}/x"]});
    std::fs::write(
        dir.join(".mcp.json"),
        json!({ "mcpServers": { "s": server } }).to_string(),
    )
    .expect("write");
    std::fs::write(
        dir.join("hooks/hooks.json"),
        r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}}"#,
    )
    .expect("write");
    ctx.write_manifest("[[plugin]]\nsource = \"./plugins/d\"\n");
    std::fs::write(
        ctx.work.join("berth-policy.toml"),
        "[capabilities]\nmcp_stdio = \"approve\"\n",
    )
    .expect("policy");
    ctx.ok(&["plugins", "lock", "--no-observe"]);
    std::fs::write(
        ctx.work.join("berth-policy.toml"),
        "[capabilities]\nmcp_stdio = \"approve\"\nhooks = \"deny\"\n",
    )
    .expect("policy");
}

/// `approve` starts no server: not of a plugin the policy denies (`--all`), not before a
/// signature is made or refused (`--sign` with a key the policy does not list). A server
/// started in the sandbox could not leave the mark, so what shows nothing was started is
/// the lock too: observing writes a record into it, and it is the same after.
#[test]
fn p4_6_approve_starts_nothing() {
    let ctx = TestContext::new();
    let mark = ctx.root.join("PWNED-approve");
    marking_plugin(&ctx, &mark);
    let before = ctx.lock_text();
    let all = ctx.run(&["plugins", "approve", "--all", "--by", "T <t@example.com>"]);
    assert!(!mark.exists(), "approve --all started it: {}", all.stderr);
    assert!(!all.stderr.contains("Observ"), "{}", all.stderr);
    assert_eq!(ctx.lock_text(), before, "approve --all recorded a server");
    let observe = ctx.run(&["plugins", "observe"]);
    assert!(
        observe.stderr.contains("plugin `d` may not run"),
        "{}",
        observe.stderr
    );
    assert!(!mark.exists(), "observe started a denied plugin");
    assert_eq!(ctx.lock_text(), before, "observe recorded a denied plugin");

    if !have_ssh_keygen() {
        return;
    }
    let keygen = |name: &str| {
        let key = ctx.root.join(name);
        let made = std::process::Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", "", "-C", name, "-f"])
            .arg(&key)
            .status()
            .expect("ssh-keygen");
        assert!(made.success());
        key
    };
    let alice = keygen("alice");
    let key = keygen("mallory");
    let public = std::fs::read_to_string(alice.with_extension("pub")).expect("alice.pub");
    let signers = ctx.root.join("allowed_signers");
    std::fs::write(&signers, format!("alice@example.com {public}")).expect("signers");
    std::fs::write(
        ctx.work.join("berth-policy.toml"),
        format!(
            "allowed_signers = \"{}\"\nrequire_signed_approvals = true\n[capabilities]\nmcp_stdio = \"approve\"\n",
            signers.display()
        ),
    )
    .expect("policy");
    let signed = ctx.run(&[
        "plugins",
        "approve",
        "d",
        "--by",
        "Alice <alice@example.com>",
        "--sign",
        &key.to_string_lossy(),
    ]);
    assert_eq!(
        signed.code, 1,
        "an unlisted key signs nothing: {}",
        signed.stderr
    );
    assert!(
        !mark.exists(),
        "approve --sign started it: {}",
        signed.stderr
    );
    assert!(!signed.stderr.contains("Observ"), "{}", signed.stderr);
    assert_eq!(ctx.lock_text(), before, "approve --sign recorded a server");
}

fn have_ssh_keygen() -> bool {
    let found = std::process::Command::new("ssh-keygen")
        .arg("-V")
        .output()
        .is_ok();
    if !found {
        require_or_skip("ssh-keygen", "`.ci/run` installs openssh-client");
    }
    found
}

/// A record made for other code than the lock pins (a lock merged by hand, or written
/// before this rule) fails `lock --check`, and `lock` observes the server again.
#[test]
fn a_record_for_other_code_fails_the_check_and_is_observed_again() {
    if !have_node() {
        return;
    }
    let (ctx, _registry, url, _rug) = lab("allow", "record");
    let run = |args: &[&str]| berth_with(&ctx, &url, args);
    assert_eq!(run(&["plugins", "lock"]).code, 0);
    assert_eq!(run(&["plugins", "lock", "--check"]).code, 0);
    let text = ctx.lock_text();
    let code = tools_records(&text)[0]["code"]
        .as_str()
        .expect("a code digest")
        .to_owned();
    let other = format!("sha256-{}", "A".repeat(43) + "=");
    std::fs::write(ctx.lock_path(), text.replace(&code, &other)).expect("edit");
    let checked = run(&["plugins", "lock", "--check"]);
    assert_eq!(checked.code, 1, "{}", checked.stderr);
    assert!(
        checked.stderr.contains(
            "MCP server `search` of plugin `tools`'s record was made of other code than the lock pins now"
        ),
        "{}",
        checked.stderr
    );
    let relocked = run(&["plugins", "lock"]);
    assert!(
        relocked.stderr.contains("Observed MCP server `search`"),
        "{}",
        relocked.stderr
    );
    assert_eq!(
        tools_records(&ctx.lock_text())[0]["code"].as_str(),
        Some(code.as_str())
    );
    assert_eq!(run(&["plugins", "lock", "--check"]).code, 0);
}
