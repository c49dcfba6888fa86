//! npm provenance on pinned npm packages (issue #58): `lock` fetches the attestations
//! document a package version's `dist.attestations.url` names, verifies its SLSA provenance
//! against the Sigstore trusted root (`$BERTH_SIGSTORE_TRUSTED_ROOT`: here a test
//! Sigstore's, made at test time by `berth_sigstore_testkit`), records what its
//! certificate names, and refuses a package whose provenance does not verify; `plugins diff`
//! names a new version built from another repository, or without the provenance it had.

use base64::Engine as _;
use berth_sigstore_testkit::{Build, COMMIT, ISSUER, REPOSITORY, TestSigstore, WORKFLOW};
use serde_json::{Value, json};

use crate::common;
use crate::payloads::{berth, tools_plugin};

use common::TestContext;
use common::npm::{Registry, fake_registry, have_node};

/// A test registry (`fake-mcp`, `fake-dep`), a test Sigstore, and the variables that point
/// berth at both.
struct Setup {
    ctx: TestContext,
    registry: Registry,
    sigstore: TestSigstore,
    env: Vec<(String, String)>,
}

impl Setup {
    fn new() -> Self {
        let ctx = TestContext::new();
        let registry = fake_registry(&ctx.root.join("npm"));
        let sigstore = TestSigstore::new();
        let root = ctx.root.join("trusted_root.json");
        std::fs::write(&root, sigstore.trusted_root_json()).expect("write");
        let env = vec![
            ("BERTH_NPM_REGISTRY".to_owned(), registry.url()),
            (
                "BERTH_SIGSTORE_TRUSTED_ROOT".to_owned(),
                root.display().to_string(),
            ),
        ];
        tools_plugin(
            &ctx,
            json!({"fake": {"command": "npx", "args": ["-y", "fake-mcp@^1"]}}),
        );
        Setup {
            ctx,
            registry,
            sigstore,
            env,
        }
    }

    fn env(&self) -> Vec<(&str, &str)> {
        self.env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect()
    }

    /// The attestations of `name@version` as `build` built it, signed by the test Sigstore.
    fn attestations(&self, name: &str, version: &str, build: &Build) -> Value {
        let sha512 = self.registry.sha512(name, version);
        self.sigstore
            .attest_built(&format!("pkg:npm/{name}@{version}"), &sha512, build)
    }

    /// Serves `name@version`'s attestations as `build` built it.
    fn attest(&mut self, name: &str, version: &str, build: &Build) {
        let document = self.attestations(name, version, build);
        self.registry.serve_attestations(name, version, &document);
    }

    /// `berth ARGS`, expected to fail: its stderr.
    fn refused(&self, args: &[&str]) -> String {
        let run = common::Run::from(
            self.ctx
                .berth()
                .envs(self.env())
                .args(args)
                .output()
                .expect("run berth"),
        );
        assert_ne!(run.code, 0, "berth {args:?} succeeded:\n{}", run.stderr);
        run.stderr
    }
}

/// The lock's `[[payload.npm]]` entry at `node_modules/NAME`.
fn locked_package(ctx: &TestContext, name: &str) -> toml::Value {
    let lock: toml::Value = toml::from_str(&ctx.lock_text()).expect("TOML");
    lock["payload"][0]["npm"]
        .as_array()
        .expect("npm packages")
        .iter()
        .find(|p| p["path"].as_str() == Some(&format!("node_modules/{name}")))
        .unwrap_or_else(|| panic!("`{name}` in the closure"))
        .clone()
}

/// Flips the last byte of a base64 field.
fn flip(field: &mut Value) {
    let engine = base64::engine::general_purpose::STANDARD;
    let mut bytes = engine
        .decode(field.as_str().expect("a string"))
        .expect("base64");
    *bytes.last_mut().expect("not empty") ^= 1;
    *field = Value::from(engine.encode(bytes));
}

#[test]
fn a_verified_provenance_is_locked_with_its_repository_commit_and_workflow() {
    if !have_node() {
        return;
    }
    let mut setup = Setup::new();
    setup.attest("fake-mcp", "1.1.0", &Build::default());
    berth(&setup.ctx, &setup.env(), &["plugins", "lock"]);

    let provenance = &locked_package(&setup.ctx, "fake-mcp")["provenance"];
    assert_eq!(provenance["repository"].as_str(), Some(REPOSITORY));
    assert_eq!(provenance["commit"].as_str(), Some(COMMIT));
    assert_eq!(provenance["workflow"].as_str(), Some(WORKFLOW));
    assert_eq!(provenance["issuer"].as_str(), Some(ISSUER));
    assert_eq!(provenance["log_index"].as_integer(), Some(2));
    assert!(
        locked_package(&setup.ctx, "fake-dep")
            .get("provenance")
            .is_none(),
        "a package without attestations is locked as before"
    );
    let reads = setup
        .registry
        .server
        .requests()
        .iter()
        .filter(|r| r.contains("/-/npm/v1/attestations/fake-mcp@1.1.0"))
        .count();
    assert_eq!(reads, 1, "the attestations are fetched once");
    // The lock reads back, and a sync without the registry verifies it again, offline,
    // against the same trusted root; under another root (here the public-good one, by
    // default) the recorded provenance does not verify, and the refusal says why.
    berth(&setup.ctx, &setup.env(), &["plugins", "sync", "--offline"]);
    let other_root = common::Run::from(
        setup
            .ctx
            .berth()
            .args(["plugins", "sync", "--offline"])
            .output()
            .expect("run berth"),
    );
    assert_ne!(other_root.code, 0, "{}", other_root.stderr);
    assert!(
        other_root
            .stderr
            .contains("its transparency log is not one of the trusted root")
            && other_root.stderr.contains("$BERTH_SIGSTORE_TRUSTED_ROOT"),
        "{}",
        other_root.stderr
    );
}

#[test]
fn a_provenance_that_does_not_verify_is_refused_at_lock_naming_the_package() {
    if !have_node() {
        return;
    }
    let mut setup = Setup::new();
    let other = TestSigstore::new();
    let good = setup.attestations("fake-dep", "1.0.0", &Build::default());
    // A bundle about another package, with this tarball's digest.
    let other_package = setup.sigstore.attest_built(
        "pkg:npm/fake-mcp@1.0.0",
        &setup.registry.sha512("fake-dep", "1.0.0"),
        &Build::default(),
    );
    let mut broken_proof = good.clone();
    flip(
        &mut broken_proof["attestations"][1]["bundle"]["verificationMaterial"]["tlogEntries"][0]["inclusionProof"]
            ["hashes"][0],
    );
    let mut tampered = good.clone();
    flip(&mut tampered["attestations"][1]["bundle"]["dsseEnvelope"]["signatures"][0]["sig"]);
    // A bundle of another Sigstore than the trusted root names.
    let sha512 = setup.registry.sha512("fake-dep", "1.0.0");
    let foreign = other.attest("pkg:npm/fake-dep@1.0.0", &sha512);
    for (document, why) in [
        (
            other_package,
            "the statement is about `pkg:npm/fake-mcp@1.0.0`, not this package",
        ),
        (broken_proof, "the inclusion proof is broken"),
        (tampered, "the envelope's signature does not verify"),
        (
            foreign,
            "its transparency log is not one of the trusted root",
        ),
    ] {
        setup
            .registry
            .serve_attestations("fake-dep", "1.0.0", &document);
        let stderr = setup.refused(&["plugins", "lock"]);
        assert!(
            stderr.contains(
                "npm package `fake-dep@1.0.0`: in the closure of `fake-mcp` 1.1.0, its provenance is refused: "
            ) && stderr.contains(why)
                && stderr.contains("nothing was locked"),
            "{why}: {stderr}"
        );
        assert!(!setup.ctx.lock_path().exists(), "no lock is written");
    }
    // The same package with its own provenance locks.
    setup
        .registry
        .serve_attestations("fake-dep", "1.0.0", &good);
    berth(&setup.ctx, &setup.env(), &["plugins", "lock"]);
    let provenance = &locked_package(&setup.ctx, "fake-dep")["provenance"];
    assert_eq!(provenance["repository"].as_str(), Some(REPOSITORY));
}

#[test]
fn diff_names_a_version_built_from_another_repository_and_one_that_lost_its_provenance() {
    if !have_node() {
        return;
    }
    let mut setup = Setup::new();
    setup.attest("fake-mcp", "1.1.0", &Build::default());
    berth(&setup.ctx, &setup.env(), &["plugins", "lock"]);
    let first = setup.ctx.root.join("first.lock");
    std::fs::write(&first, setup.ctx.lock_text()).expect("write");

    // 1.2.0 is built from a fork, by a workflow of the same name.
    let fork = Build {
        repository: "https://github.com/someone-else/fake-mcp".to_owned(),
        commit: "89abcdef0123456789abcdef0123456789abcdef".to_owned(),
        workflow: "https://github.com/someone-else/fake-mcp/.github/workflows/release.yml@refs/tags/v1.2.0"
            .to_owned(),
    };
    let manifest =
        json!({"bin": {"fake-mcp": "bin/server.js"}, "dependencies": {"fake-dep": "^1.0.0"}});
    let files = [("bin/server.js", "console.log('fork');\n")];
    setup
        .registry
        .publish("fake-mcp", "1.2.0", manifest.clone(), &files);
    setup.attest("fake-mcp", "1.2.0", &fork);
    berth(&setup.ctx, &setup.env(), &["plugins", "lock", "--upgrade"]);
    let second = setup.ctx.root.join("second.lock");
    std::fs::write(&second, setup.ctx.lock_text()).expect("write");
    let from = |lock: &std::path::Path| lock.to_str().expect("utf-8").to_owned();

    let diff = berth(
        &setup.ctx,
        &[],
        &["plugins", "diff", "--from", &from(&first), "--json"],
    );
    let report: Value = serde_json::from_str(&diff.stdout).expect("JSON");
    assert_eq!(
        report["payloads"][0]["provenance"],
        json!([{"package": "fake-mcp", "from_version": "1.1.0", "to_version": "1.2.0",
            "change": "repository", "from": REPOSITORY,
            "to": "https://github.com/someone-else/fake-mcp"}]),
        "{report}"
    );
    let text = berth(
        &setup.ctx,
        &[],
        &["plugins", "diff", "--from", &from(&first)],
    )
    .stdout;
    assert!(
        text.contains(&format!(
            "package of tools's MCP server fake (npx): fake-mcp 1.1.0 -> 1.2.0; `fake-mcp` 1.2.0 was built from another repository, `https://github.com/someone-else/fake-mcp` (1.1.0: `{REPOSITORY}`)"
        )),
        "{text}"
    );
    let markdown = berth(
        &setup.ctx,
        &[],
        &[
            "plugins",
            "diff",
            "--from",
            &from(&first),
            "--format",
            "markdown",
        ],
    )
    .stdout;
    assert!(
        markdown.contains("was built from another repository")
            && markdown.contains("someone-else/fake-mcp"),
        "{markdown}"
    );

    // 1.3.0 has no provenance at all.
    setup
        .registry
        .publish("fake-mcp", "1.3.0", manifest, &files);
    berth(&setup.ctx, &setup.env(), &["plugins", "lock", "--upgrade"]);
    let diff = berth(
        &setup.ctx,
        &[],
        &["plugins", "diff", "--from", &from(&second), "--json"],
    );
    let report: Value = serde_json::from_str(&diff.stdout).expect("JSON");
    assert_eq!(
        report["payloads"][0]["provenance"],
        json!([{"package": "fake-mcp", "from_version": "1.2.0", "to_version": "1.3.0",
            "change": "lost", "from": "https://github.com/someone-else/fake-mcp", "to": null}]),
        "{report}"
    );
    let text = berth(
        &setup.ctx,
        &[],
        &["plugins", "diff", "--from", &from(&second)],
    )
    .stdout;
    assert!(
        text.contains("fake-mcp 1.2.0 -> 1.3.0; `fake-mcp` 1.3.0 has no provenance (1.2.0 had one, built from `https://github.com/someone-else/fake-mcp`)"),
        "{text}"
    );
}

#[test]
fn sync_and_verify_prove_a_recorded_provenance_again_from_the_attestations_kept_with_the_closure() {
    if !have_node() {
        return;
    }
    let mut setup = Setup::new();
    setup.attest("fake-mcp", "1.1.0", &Build::default());
    berth(&setup.ctx, &setup.env(), &["plugins", "lock"]);
    let lock = setup.ctx.lock_text();
    let url = locked_package(&setup.ctx, "fake-mcp")["provenance"]["url"]
        .as_str()
        .expect("where the attestations were read")
        .to_owned();
    assert!(
        url.ends_with("/-/npm/v1/attestations/fake-mcp@1.1.0"),
        "{url}"
    );
    // The closure's store entry keeps the document its provenance was verified from.
    let kept: Vec<std::path::PathBuf> = std::fs::read_dir(setup.ctx.store.join("store-v1"))
        .expect("the store")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.to_string_lossy().contains("npm-"))
        .map(|p| p.join("attestations/fake-mcp@1.1.0.json"))
        .collect();
    assert!(
        kept.len() == 1 && kept[0].is_file(),
        "one closure, with its attestations: {kept:?}"
    );

    // A fresh store fetches the attestations with the tarballs, and verifies them.
    let fresh = setup.ctx.root.join("fresh-store");
    let fresh_env = |extra: &[(&'static str, String)]| {
        let mut env: Vec<(String, String)> = setup.env.clone();
        env.push(("BERTH_STORE".to_owned(), fresh.display().to_string()));
        env.extend(extra.iter().map(|(k, v)| ((*k).to_owned(), v.clone())));
        env
    };
    let run = |env: &[(String, String)], args: &[&str]| {
        common::Run::from(
            setup
                .ctx
                .berth()
                .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                .args(args)
                .output()
                .expect("run berth"),
        )
    };
    let synced = run(&fresh_env(&[]), &["plugins", "sync"]);
    assert_eq!(synced.code, 0, "{}", synced.stderr);
    let verified = run(&fresh_env(&[]), &["plugins", "verify"]);
    assert_eq!(verified.code, 0, "{}", verified.stderr);

    // A lock whose record was changed by hand names another build than its bundle: a sync
    // of the same store (its verdict names the record) refuses it, and so does a fresh one.
    let forged = lock.replace(REPOSITORY, "https://github.com/someone-else/fake-mcp");
    assert_ne!(forged, lock);
    std::fs::write(setup.ctx.lock_path(), &forged).expect("write");
    let stderr = setup.refused(&["plugins", "sync", "--offline"]);
    assert!(
        stderr.contains(&format!("npm package `fake-mcp@1.1.0` (in the closure of `fake-mcp` 1.1.0): its provenance names another build than the lock records (repository {REPOSITORY}")),
        "{stderr}"
    );
    assert!(
        stderr.contains("berth plugins lock --upgrade-plugin tools"),
        "{stderr}"
    );

    // A provenance added by hand to a package that has none has no bundle to prove it.
    let claimed = add_provenance(&lock, "node_modules/fake-dep", &url);
    std::fs::write(setup.ctx.lock_path(), &claimed).expect("write");
    let stderr = setup.refused(&["plugins", "sync", "--offline"]);
    assert!(
        stderr.contains("npm package `fake-dep@1.0.0`")
            && stderr
                .contains("its closure holds no `attestations/fake-dep@1.0.0.json` to prove it"),
        "{stderr}"
    );

    // The registry no longer serves the attestations: a fresh store cannot prove the
    // record, and says which package.
    std::fs::write(setup.ctx.lock_path(), &lock).expect("write");
    let served = setup
        .ctx
        .root
        .join("npm/registry/-/npm/v1/attestations/fake-mcp@1.1.0");
    std::fs::remove_file(&served).expect("the served document");
    let emptier = setup.ctx.root.join("emptier-store");
    let mut env = setup.env.clone();
    env.push(("BERTH_STORE".to_owned(), emptier.display().to_string()));
    let failed = run(&env, &["plugins", "sync"]);
    assert_ne!(failed.code, 0, "{}", failed.stderr);
    assert!(
        failed.stderr.contains("fake-mcp") && failed.stderr.contains("attestations"),
        "{}",
        failed.stderr
    );
}

/// `lock` with the `[[payload.npm]]` entry at `path` given the provenance `fake-mcp`'s
/// record names (`url` its attestations), as a hand edit would.
fn add_provenance(lock: &str, path: &str, url: &str) -> String {
    let start = lock
        .find(&format!("path = \"{path}\""))
        .expect("the package");
    let end = lock[start..]
        .find("\n\n")
        .map_or(lock.len(), |at| start + at);
    let line = format!(
        "\nprovenance = {{ repository = \"{REPOSITORY}\", commit = \"{COMMIT}\", workflow = \"{WORKFLOW}\", issuer = \"{ISSUER}\", log_index = 2, url = \"{url}\" }}"
    );
    format!("{}{line}{}", &lock[..end], &lock[end..])
}
