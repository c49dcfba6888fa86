//! npm registry signatures on every pinned npm package (issue #58), as `npm audit
//! signatures` checks them: `lock` reads each package's `dist.signatures` and its
//! registry's keys (`/-/npm/v1/keys`, once per registry), verifies them and records both;
//! `sync` verifies them again from the lock, offline; a signature that does not verify is
//! always refused; `[payloads] require_registry_signatures = true` refuses a package the
//! registry did not sign with a key the lock holds, which `audit` names without it. The
//! registry is `common/npm.rs`'s, signing with a P-256 key made here from a fixed seed.

use crate::common;
use crate::payloads::{berth, tools_plugin};

use common::TestContext;
use common::npm::{Signing, fake_registry, fake_registry_signing_dep, have_node, test_key};
use serde_json::{Value, json};

/// The plugin `tools`, whose MCP server `fake` runs `npx -y fake-mcp@^1`.
fn fake_server(ctx: &TestContext) {
    tools_plugin(
        ctx,
        json!({"fake": {"command": "npx", "args": ["-y", "fake-mcp@^1"]}}),
    );
}

/// Runs `berth ARGS` with these variables, expecting it to fail; its stderr.
fn refused(ctx: &TestContext, env: &[(&str, &str)], args: &[&str]) -> String {
    let run = common::Run::from(
        ctx.berth()
            .envs(env.iter().copied())
            .args(args)
            .output()
            .expect("run berth"),
    );
    assert_ne!(run.code, 0, "berth {args:?} succeeded:\n{}", run.stderr);
    run.stderr
}

/// The lock's `[[payload.npm]]` entry at `node_modules/NAME`.
fn locked_package(lock: &toml::Value, name: &str) -> toml::Value {
    lock["payload"][0]["npm"]
        .as_array()
        .expect("npm packages")
        .iter()
        .find(|p| p["path"].as_str() == Some(&format!("node_modules/{name}")))
        .unwrap_or_else(|| panic!("`{name}` in the closure"))
        .clone()
}

/// What the registry's document of `name` says of version 1.0.0 or 1.1.0's signature.
fn registry_sig(ctx: &TestContext, name: &str, version: &str) -> String {
    let file = ctx.root.join("npm/registry").join(name);
    let document: Value =
        serde_json::from_str(&std::fs::read_to_string(file).expect("read")).expect("JSON");
    document["versions"][version]["dist"]["signatures"][0]["sig"]
        .as_str()
        .expect("a signature")
        .to_owned()
}

#[test]
fn a_signed_closure_locks_with_its_keys_and_syncs_offline_verified_from_the_lock() {
    if !have_node() {
        return;
    }
    let ctx = TestContext::new();
    let registry = fake_registry(&ctx.root.join("npm"));
    let url = registry.url();
    let env = [("BERTH_NPM_REGISTRY", url.as_str())];
    fake_server(&ctx);
    berth(&ctx, &env, &["plugins", "lock"]);

    let lock: toml::Value = toml::from_str(&ctx.lock_text()).expect("TOML");
    let keys = lock["registry_key"].as_array().expect("[[registry_key]]");
    let (_, keyid, key) = test_key(0x42);
    assert_eq!(keys.len(), 1, "one key, recorded once: {keys:?}");
    assert_eq!(keys[0]["keyid"].as_str(), Some(keyid.as_str()));
    assert_eq!(keys[0]["key"].as_str(), Some(key.as_str()));
    assert_eq!(keys[0]["keytype"].as_str(), Some("ecdsa-sha2-nistp256"));
    assert_eq!(
        keys[0]["registry"].as_str(),
        Some(format!("{url}/").as_str())
    );
    assert!(keys[0].get("expires").is_none(), "the key has none");
    for (name, version) in [("fake-dep", "1.0.0"), ("fake-mcp", "1.1.0")] {
        let package = locked_package(&lock, name);
        assert_eq!(package["signature"]["keyid"].as_str(), Some(keyid.as_str()));
        assert_eq!(
            package["signature"]["sig"].as_str(),
            Some(registry_sig(&ctx, name, version).as_str()),
            "the registry's own signature of {name}"
        );
    }
    let key_reads = registry
        .server
        .requests()
        .iter()
        .filter(|r| r.contains("/-/npm/v1/keys"))
        .count();
    assert_eq!(key_reads, 1, "the keys are read once per registry in a run");

    // A store with nothing in it, the closure in a binary cache and the registry gone: sync
    // verifies every signature from the lock's keys, and asks no registry for them.
    let cache = format!("file://{}", ctx.root.join("cache").display());
    berth(&ctx, &[], &["store", "push", &cache]);
    drop(registry);
    std::fs::remove_dir_all(&ctx.store).expect("remove the store");
    berth(
        &ctx,
        &[],
        &["plugins", "sync", "--offline", "--substituter", &cache],
    );
    berth(&ctx, &[], &["plugins", "sync", "--offline"]);
    // What the sync checked is remembered beside the closure's entry, so the next no-op
    // sync verifies nothing again.
    let verdict = std::fs::read_dir(ctx.store.join("meta-v1"))
        .expect("the store's records")
        .filter_map(Result::ok)
        .find(|f| {
            f.file_name()
                .to_string_lossy()
                .ends_with("-npm-fake-mcp-1.1.0.verdict")
        })
        .and_then(|f| std::fs::read_link(f.path()).ok())
        .expect("a verdict of the closure's entry");
    assert!(
        verdict
            .to_string_lossy()
            .starts_with("npm registry signatures "),
        "{verdict:?}"
    );

    // A lock whose signature was changed (here: another package's, well formed) is refused
    // at sync, naming the package, whatever the store holds.
    let dep_sig = locked_package(&lock, "fake-dep")["signature"]["sig"]
        .as_str()
        .expect("sig")
        .to_owned();
    let mcp_sig = registry_sig(&ctx, "fake-mcp", "1.1.0");
    std::fs::write(ctx.lock_path(), ctx.lock_text().replace(&dep_sig, &mcp_sig)).expect("write");
    let stderr = refused(&ctx, &[], &["plugins", "sync", "--offline"]);
    assert!(
        stderr.contains("npm package `fake-dep@1.0.0` (in the closure of `fake-mcp` 1.1.0): its registry signature does not verify")
            && stderr.contains("the lock was changed after it was made")
            && stderr.contains("berth plugins lock --upgrade-plugin tools"),
        "{stderr}"
    );
    // `audit` refuses it too, and names it in its JSON.
    let audit = ctx
        .berth()
        .args(["audit", "--json"])
        .output()
        .expect("audit");
    let report: Value = serde_json::from_slice(&audit.stdout).expect("JSON");
    assert_eq!(audit.status.code(), Some(1), "{report}");
    let violation = &report["violations"][0];
    assert_eq!(violation["capability"], "registry_signature", "{report}");
    assert!(
        violation["detail"]
            .as_str()
            .is_some_and(|d| d.contains("`fake-dep@1.0.0`")),
        "{report}"
    );
}

#[test]
fn a_registry_signature_that_does_not_verify_is_refused_at_lock() {
    if !have_node() {
        return;
    }
    let ctx = TestContext::new();
    let registry = fake_registry_signing_dep(&ctx.root.join("npm"), Signing::Tampered);
    let url = registry.url();
    fake_server(&ctx);
    let stderr = refused(&ctx, &[("BERTH_NPM_REGISTRY", &url)], &["plugins", "lock"]);
    assert!(
        stderr.contains(&format!(
            "npm package `fake-dep@1.0.0` (in the closure of `fake-mcp` 1.1.0): its registry signature does not verify with the key `{}`",
            registry.keyid()
        )) && stderr.contains("what the registry serves is not what it signed; nothing was locked"),
        "{stderr}"
    );
    assert!(!ctx.lock_path().exists(), "no lock is written");
}

/// `fake-dep` published as `signing` says: `lock` takes it and records what it found
/// (`state`, as `audit` names it), `audit` names it and passes; under `[payloads]
/// require_registry_signatures = true`, `lock` (keeping the pin), `sync`, `show` and
/// `audit` refuse the lock and `lock --upgrade` refuses to resolve it again, each naming
/// `fake-dep@1.0.0`.
fn named_by_audit_and_refused_under_the_policy(signing: Signing, state: &str, why: &str) {
    let ctx = TestContext::new();
    let registry = fake_registry_signing_dep(&ctx.root.join("npm"), signing);
    let url = registry.url();
    let env = [("BERTH_NPM_REGISTRY", url.as_str())];
    fake_server(&ctx);
    berth(&ctx, &env, &["plugins", "lock"]);
    let lock: toml::Value = toml::from_str(&ctx.lock_text()).expect("TOML");
    let keys: Vec<&str> = lock["registry_key"]
        .as_array()
        .expect("keys")
        .iter()
        .map(|k| k["keyid"].as_str().expect("keyid"))
        .collect();
    assert_eq!(
        keys,
        [registry.keyid()],
        "only the key that signed `fake-mcp`"
    );

    let audit = berth(&ctx, &[], &["audit"]);
    let line = format!(
        "{}: npm package `fake-dep@1.0.0` in the closure of `fake-mcp` 1.1.0 (MCP server `fake` of plugin `tools`): {why}",
        state.replace('_', " ")
    );
    assert!(audit.stdout.contains(&line), "{}", audit.stdout);
    let json: Value =
        serde_json::from_str(&berth(&ctx, &[], &["audit", "--json"]).stdout).expect("JSON");
    let named = &json["unsigned_npm_packages"];
    assert_eq!(named.as_array().map(Vec::len), Some(1), "{json}");
    assert_eq!(
        (&named[0]["name"], &named[0]["version"], &named[0]["state"]),
        (&json!("fake-dep"), &json!("1.0.0"), &json!(state)),
        "{json}"
    );
    assert_eq!(named[0]["plugin"], "tools", "{json}");
    assert_eq!(json["violations"], json!([]), "{json}");

    let policy = ctx.work.join("berth-policy.toml");
    std::fs::write(&policy, "[payloads]\nrequire_registry_signatures = true\n").expect("write");
    let asks = "`require_registry_signatures = true` in `berth-policy.toml`";
    let stderr = refused(&ctx, &env, &["plugins", "lock"]);
    assert!(
        stderr.contains("npm package `fake-dep@1.0.0`") && stderr.contains(asks),
        "a kept pin is refused too: {stderr}"
    );
    let stderr = refused(&ctx, &env, &["plugins", "sync"]);
    assert!(
        stderr.contains("npm package `fake-dep@1.0.0` (in the closure of `fake-mcp` 1.1.0)")
            && stderr.contains(why)
            && stderr.contains(asks),
        "{stderr}"
    );
    // What reads the lock without syncing it (its closure is in the store) refuses it too.
    let stderr = refused(&ctx, &[], &["plugins", "show", "--json"]);
    assert!(
        stderr.contains("npm package `fake-dep@1.0.0`") && stderr.contains(asks),
        "{stderr}"
    );
    let audit = common::Run::from(ctx.berth().arg("audit").output().expect("audit"));
    assert_eq!(audit.code, 1, "{}", audit.stderr);
    assert!(
        audit
            .stdout
            .contains("refused: plugin `tools`: npm package `fake-dep@1.0.0`"),
        "{}",
        audit.stdout
    );
    let stderr = refused(&ctx, &env, &["plugins", "lock", "--upgrade"]);
    assert!(
        stderr.contains("npm package `fake-dep@1.0.0` (in the closure of `fake-mcp` 1.1.0)")
            && stderr.contains(asks)
            && stderr.contains("nothing was locked"),
        "{stderr}"
    );
}

#[test]
fn an_unsigned_package_is_named_by_audit_and_refused_under_the_policy() {
    if !have_node() {
        return;
    }
    named_by_audit_and_refused_under_the_policy(
        Signing::Unsigned,
        "unsigned",
        "no registry signature is recorded",
    );
}

#[test]
fn a_package_signed_with_a_key_its_registry_does_not_publish_is_named_and_refused_under_the_policy()
{
    if !have_node() {
        return;
    }
    let unknown = test_key(0x17).1;
    named_by_audit_and_refused_under_the_policy(
        Signing::UnknownKey,
        "unknown_key",
        &format!("signed with the key `{unknown}`, which is not a registry key the lock holds"),
    );
}
