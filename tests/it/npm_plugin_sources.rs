//! npm registry signatures on npm packages taken as plugin sources (a marketplace entry
//! `{"source": "npm"}`, issue #58): `lock` verifies the version's `dist.signatures` with
//! its registry's keys and records it in the entry's `npm` table, the key among the
//! lock's `[[registry_key]]`; `sync` checks it again offline; a signature that does not
//! verify is always refused; `[payloads] require_registry_signatures = true` refuses an
//! unsigned one, which `audit` names without it.

use crate::common;

use base64::Engine as _;
use common::TestContext;
use common::npm::{Registry, Signing, test_key};
use p256::ecdsa::Signature;
use p256::ecdsa::signature::Signer as _;
use serde_json::{Value, json};

/// A registry publishing `tools` 1.0.0 signed as `signing` says, and a marketplace `acme`
/// whose `npmtools` entry takes it; the manifest asks for `npmtools@acme`.
fn npm_plugin(ctx: &TestContext, signing: Signing) -> Registry {
    let mut npm = Registry::start(&ctx.root.join("npm"));
    npm.signing = signing;
    npm.publish(
        "tools",
        "1.0.0",
        json!({}),
        &[
            (
                ".claude-plugin/plugin.json",
                &json!({"name": "npmtools", "version": "1.0.0"}).to_string(),
            ),
            (
                "skills/tools/SKILL.md",
                "---\nname: tools\ndescription: tools\n---\nTools.\n",
            ),
        ],
    );
    let market = ctx.repo("market");
    market.write(
        ".claude-plugin/marketplace.json",
        &json!({"name": "acme", "plugins": [
            {"name": "npmtools", "source": {"source": "npm", "package": "tools",
                                            "version": "^1.0.0", "registry": npm.url()}}
        ]})
        .to_string(),
    );
    market.commit("catalog");
    ctx.write_manifest(
        "[[marketplace]]\nname = \"acme\"\nsource = \"github:acme/market\"\n\n[[plugin]]\nsource = \"npmtools@acme\"\n",
    );
    npm
}

/// Runs `berth ARGS`, expecting it to fail; its stderr.
fn refused(ctx: &TestContext, args: &[&str]) -> String {
    let run = common::Run::from(ctx.berth().args(args).output().expect("run berth"));
    assert_ne!(run.code, 0, "berth {args:?} succeeded:\n{}", run.stderr);
    run.stderr
}

/// What the registry's document of `tools` says of 1.0.0's `dist`.
fn dist(ctx: &TestContext) -> Value {
    let file = ctx.root.join("npm/registry/tools");
    let document: Value =
        serde_json::from_str(&std::fs::read_to_string(file).expect("read")).expect("JSON");
    document["versions"]["1.0.0"]["dist"].clone()
}

#[test]
fn a_signed_npm_plugin_source_locks_with_its_signature_and_key_and_a_changed_one_is_refused_offline()
 {
    let ctx = TestContext::new();
    let npm = npm_plugin(&ctx, Signing::Registry);
    ctx.ok(&["plugins", "lock"]);
    let lock: toml::Value = toml::from_str(&ctx.lock_text()).expect("TOML");
    let entry = &lock["plugin"][0];
    let recorded = &entry["npm"];
    let dist = dist(&ctx);
    assert_eq!(recorded["package"].as_str(), Some("tools"), "{entry}");
    assert_eq!(recorded["version"].as_str(), Some("1.0.0"), "{entry}");
    assert_eq!(
        recorded["integrity"].as_str(),
        dist["integrity"].as_str(),
        "what the registry signed and the tarball was checked against: {entry}"
    );
    assert_eq!(
        recorded["signature"]["keyid"].as_str(),
        Some(npm.keyid().as_str())
    );
    let sig = dist["signatures"][0]["sig"].as_str().expect("a signature");
    assert_eq!(recorded["signature"]["sig"].as_str(), Some(sig));
    let keys = lock["registry_key"].as_array().expect("[[registry_key]]");
    let (_, keyid, key) = test_key(0x42);
    assert_eq!(keys.len(), 1, "{keys:?}");
    assert_eq!(keys[0]["keyid"].as_str(), Some(keyid.as_str()));
    assert_eq!(keys[0]["key"].as_str(), Some(key.as_str()));
    ctx.ok(&["plugins", "sync", "--offline"]);
    let audit = ctx.ok(&["audit", "--json"]);
    let report: Value = serde_json::from_str(&audit.stdout).expect("JSON");
    assert_eq!(report.get("unsigned_npm_plugin_sources"), None, "{report}");

    // A signature by the registry's key, of another text: the lock was changed.
    let (signing, _, _) = test_key(0x42);
    let other: Signature = signing.sign(b"tools@1.0.0:sha512-other");
    let other = base64::engine::general_purpose::STANDARD.encode(other.to_der().as_bytes());
    std::fs::write(ctx.lock_path(), ctx.lock_text().replace(sig, &other)).expect("write");
    let stderr = refused(&ctx, &["plugins", "sync", "--offline"]);
    assert!(
        stderr.contains(
            "plugin `npmtools`: npm package `tools@1.0.0` (the source of plugin `npmtools`)"
        ) && stderr.contains("does not verify")
            && stderr.contains("the lock was changed after it was made"),
        "{stderr}"
    );
    let stderr = refused(&ctx, &["plugins", "verify"]);
    assert!(stderr.contains("`tools@1.0.0`"), "{stderr}");
}

#[test]
fn a_registry_serving_a_bad_signature_of_an_npm_plugin_source_is_refused_at_lock() {
    let ctx = TestContext::new();
    let _registry = npm_plugin(&ctx, Signing::Tampered);
    let stderr = refused(&ctx, &["plugins", "lock"]);
    assert!(
        stderr.contains("npm package `tools@1.0.0` (the source of plugin `npmtools`)")
            && stderr.contains("what the registry serves is not what it signed")
            && stderr.contains("nothing was locked"),
        "{stderr}"
    );
    assert!(!ctx.lock_path().exists(), "no lock is written");
}

#[test]
fn an_unsigned_npm_plugin_source_is_named_by_audit_and_refused_under_the_policy() {
    let ctx = TestContext::new();
    let _registry = npm_plugin(&ctx, Signing::Unsigned);
    ctx.ok(&["plugins", "lock"]);
    let lock: toml::Value = toml::from_str(&ctx.lock_text()).expect("TOML");
    let recorded = &lock["plugin"][0]["npm"];
    assert_eq!(recorded["package"].as_str(), Some("tools"), "{lock}");
    assert!(recorded.get("signature").is_none(), "{lock}");
    assert!(
        lock.get("registry_key").is_none(),
        "no key is named: {lock}"
    );

    let audit = ctx.ok(&["audit"]);
    assert!(
        audit.stdout.contains(
            "unsigned: npm package `tools@1.0.0`, the source of plugin `npmtools`: no registry signature"
        ),
        "{}",
        audit.stdout
    );
    let report: Value = serde_json::from_str(&ctx.ok(&["audit", "--json"]).stdout).expect("JSON");
    let named = &report["unsigned_npm_plugin_sources"];
    assert_eq!(named.as_array().map(Vec::len), Some(1), "{report}");
    assert_eq!(
        (
            &named[0]["plugin"],
            &named[0]["name"],
            &named[0]["version"],
            &named[0]["state"]
        ),
        (
            &json!("npmtools"),
            &json!("tools"),
            &json!("1.0.0"),
            &json!("unsigned")
        ),
        "{report}"
    );
    assert_eq!(report.get("unsigned_npm_packages"), None, "{report}");
    assert_eq!(report["violations"], json!([]), "{report}");

    std::fs::write(
        ctx.work.join("berth-policy.toml"),
        "[payloads]\nrequire_registry_signatures = true\n",
    )
    .expect("write");
    let asks = "`require_registry_signatures = true` in `berth-policy.toml`";
    let stderr = refused(&ctx, &["plugins", "sync", "--offline"]);
    assert!(
        stderr.contains("npm package `tools@1.0.0` (the source of plugin `npmtools`)")
            && stderr.contains(asks),
        "{stderr}"
    );
    let stderr = refused(&ctx, &["plugins", "show", "--json"]);
    assert!(
        stderr.contains("`tools@1.0.0`") && stderr.contains(asks),
        "{stderr}"
    );
    let audit = common::Run::from(ctx.berth().arg("audit").output().expect("audit"));
    assert_eq!(audit.code, 1, "{}", audit.stderr);
    std::fs::remove_file(ctx.lock_path()).expect("remove");
    let stderr = refused(&ctx, &["plugins", "lock"]);
    assert!(
        stderr.contains("npm package `tools@1.0.0` (the source of plugin `npmtools`)")
            && stderr.contains(asks)
            && stderr.contains("nothing was locked"),
        "{stderr}"
    );
    assert!(!ctx.lock_path().exists(), "no lock is written");
}
