//! What protects a lock: hash checks, offline and frozen modes, interrupted and concurrent
//! syncs (issue #2, SPEC sections 4 and 6).

mod common;

use std::path::Path;
use std::process::Stdio;

use berth_lockfile_schema::Sha256Hash;
use common::{TestContext, copy_tree, fixtures, list_dir, lock_field};

/// Two git plugins and a local one.
fn small_project(ctx: &TestContext) {
    let review = ctx.repo("review");
    review.copy_fixture("review", "");
    review.commit("review");
    let lint = ctx.repo("lint");
    lint.copy_fixture("lint", "");
    lint.commit("lint");
    copy_tree(
        &fixtures().join("plugins/house-rules"),
        &ctx.work.join("house-rules"),
    );
    ctx.write_manifest(
        "[[plugin]]\nsource = \"github:acme/review\"\n\n[[plugin]]\nsource = \"github:acme/lint\"\n\n[[plugin]]\nsource = \"./house-rules\"\n",
    );
}

/// Every store entry hashes to the hash in its name; returns how many there are.
fn assert_store_verified(store: &Path) -> usize {
    let entries = list_dir(&store.join("store-v1"));
    for entry in &entries {
        let nix32 = entry.split('-').next().expect("nix32 prefix");
        let actual =
            berth_store::hash_path(&store.join("store-v1").join(entry)).expect("hash entry");
        assert_eq!(
            actual.to_nix32(),
            nix32,
            "store entry {entry} is partial or corrupt"
        );
    }
    entries.len()
}

#[test]
fn a_tampered_hash_is_refused_and_adds_nothing() {
    let ctx = TestContext::new();
    small_project(&ctx);
    ctx.ok(&["plugins", "lock"]);
    let lock = ctx.lock_text();
    let real = lock_field(&lock, 1, "hash").expect("hash");
    let fake = Sha256Hash::from_bytes([42; 32]).to_sri();
    std::fs::write(ctx.lock_path(), lock.replace(&real, &fake)).expect("tamper");

    let sync = ctx.run(&["plugins", "sync"]);
    assert_eq!(sync.code, 1, "{}", sync.stderr);
    let errors = sync.errors();
    assert_eq!(errors.len(), 1, "{}", sync.stderr);
    for needle in ["`lint`", &fake, &real] {
        assert!(errors[0].contains(needle), "{needle} not in {}", errors[0]);
    }
    let messages = ctx.redact(&sync.messages().join("\n"));
    insta::assert_snapshot!("hash_mismatch_on_sync", messages);
    assert!(
        !ctx.store_entries().iter().any(|e| e.ends_with("-lint")),
        "no store entry for the tampered plugin: {:?}",
        ctx.store_entries()
    );
    assert!(
        list_dir(&ctx.store.join("tmp")).is_empty(),
        "no staging left behind"
    );

    let verify = ctx.run(&["plugins", "verify"]);
    assert_eq!(verify.code, 1, "{}", verify.stderr);
    let errors = verify.errors();
    assert_eq!(errors.len(), 1, "{}", verify.stderr);
    for needle in ["`lint`", &fake, &real] {
        assert!(errors[0].contains(needle), "{needle} not in {}", errors[0]);
    }
    let json = ctx.run(&["plugins", "verify", "--json"]);
    assert_eq!(json.code, 1);
    let doc: serde_json::Value = serde_json::from_str(&json.stdout).expect("verify --json is JSON");
    assert_eq!(doc["ok"], serde_json::json!(false));
    assert_eq!(doc["plugins"][0]["status"], serde_json::json!("ok"));
    assert_eq!(doc["plugins"][1]["status"], serde_json::json!("mismatch"));
    assert_eq!(doc["plugins"][1]["actual"], serde_json::json!(real));
}

#[test]
fn verify_passes_on_an_honest_lock_without_touching_the_store() {
    let ctx = TestContext::new();
    small_project(&ctx);
    ctx.ok(&["plugins", "lock"]);
    let before = ctx.store_entries();
    let verify = ctx.ok(&["plugins", "verify"]);
    assert!(
        verify.stderr.contains("3 plugins match"),
        "{}",
        verify.stderr
    );
    assert_eq!(
        ctx.store_entries(),
        before,
        "verify adds nothing to the store"
    );
}

#[test]
fn offline_sync_names_what_is_missing_and_frozen_needs_no_manifest() {
    let ctx = TestContext::new();
    small_project(&ctx);
    ctx.ok(&["plugins", "lock"]);
    let lock = ctx.lock_text();
    // A store that has never seen these repositories.
    let cold = ctx.root.join("cold-store");
    let offline = ctx
        .berth()
        .env("BERTH_STORE", &cold)
        .args(["plugins", "sync", "--offline"])
        .output()
        .expect("run");
    assert_eq!(offline.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&offline.stderr);
    let first = stderr
        .lines()
        .find(|l| l.starts_with("error:"))
        .expect("an error line");
    assert!(
        first.contains("`review`") && first.contains("`lint`"),
        "{stderr}"
    );
    assert!(
        !first.contains("house-rules"),
        "the local plugin is available offline: {stderr}"
    );
    assert!(stderr.contains("--offline"), "{stderr}");
    assert!(
        list_dir(&cold.join("store-v1"))
            .iter()
            .all(|e| e.ends_with("-house-rules"))
    );

    ctx.ok(&["plugins", "sync"]);
    std::fs::remove_file(ctx.manifest_path()).expect("delete manifest");
    std::fs::rename(&ctx.upstream, ctx.root.join("gone")).expect("upstream gone");
    let frozen = ctx.ok(&["plugins", "sync", "--frozen", "--offline"]);
    assert!(
        frozen.stderr.contains("Synced 3 plugins (0 added)"),
        "{}",
        frozen.stderr
    );
    assert_eq!(ctx.lock_text(), lock);
    // Without the manifest, the non-frozen modes say what is missing.
    let locked = ctx.run(&["plugins", "sync", "--locked"]);
    assert_eq!(locked.code, 1);
    assert!(
        locked.errors()[0].contains("no manifest"),
        "{}",
        locked.stderr
    );
}

#[test]
fn a_changed_local_plugin_stops_sync_until_relocked() {
    let ctx = TestContext::new();
    small_project(&ctx);
    ctx.ok(&["plugins", "sync"]);
    std::fs::write(ctx.work.join("house-rules/skills/new.md"), "new rule\n").expect("edit");
    let sync = ctx.run(&["plugins", "sync"]);
    assert_eq!(sync.code, 1, "{}", sync.stderr);
    let error = sync.errors()[0];
    assert!(
        error.contains("`house-rules`") && error.contains("berth plugins lock"),
        "{error}"
    );
    // `--frozen` uses the store copy and does not look at the folder.
    ctx.ok(&["plugins", "sync", "--frozen"]);
    let check = ctx.run(&["plugins", "lock", "--check"]);
    assert_eq!(check.code, 1, "--check sees the local change");
    assert!(check.stderr.contains("house-rules"), "{}", check.stderr);
    ctx.ok(&["plugins", "lock"]);
    ctx.ok(&["plugins", "sync"]);
}

/// Repositories with a few megabytes each, so a sync takes long enough to be interrupted.
fn heavy_project(ctx: &TestContext, repos: usize) {
    let mut manifest = String::new();
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    for i in 0..repos {
        let repo = ctx.repo(&format!("heavy-{i}"));
        repo.copy_fixture("lint", "");
        let mut blob = Vec::with_capacity(3 << 20);
        while blob.len() < 3 << 20 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            blob.extend_from_slice(&seed.to_le_bytes());
        }
        std::fs::write(repo.path.join("data.bin"), &blob).expect("write blob");
        for j in 0..40 {
            repo.write(&format!("docs/page-{j}.md"), &format!("page {j} of {i}\n"));
        }
        repo.write(
            ".plugin/plugin.json",
            &format!("{{\"name\": \"heavy-{i}\"}}"),
        );
        repo.commit("heavy");
        manifest.push_str(&format!("[[plugin]]\nsource = \"{}\"\n\n", repo.url()));
    }
    ctx.write_manifest(&manifest);
}

#[test]
fn a_killed_sync_leaves_no_partial_entry_and_the_next_one_completes() {
    let ctx = TestContext::new();
    heavy_project(&ctx, 6);
    // Kill at each step a cold sync passes, in its order (see `berth_store::fault`): a new
    // git cache fetched while locking, the lockfile written, a tree half exported, an
    // entry hashed but not renamed, an entry renamed but not yet read-only. Each run gets
    // further than the one before.
    use berth_store::fault::*;
    for step in [
        PERSIST_BEFORE_RENAME,
        FILE_BEFORE_RENAME,
        GIT_EXPORT_MID,
        COMMIT_BEFORE_RENAME,
        COMMIT_AFTER_RENAME,
    ] {
        common::kill_at_step(ctx.berth().args(["plugins", "sync"]), step);
        assert_store_verified(&ctx.store);
        if let Ok(text) = std::fs::read_to_string(ctx.lock_path()) {
            berth_lockfile_schema::parse_lock("plugins.lock", &text)
                .unwrap_or_else(|e| panic!("killed at `{step}`, a torn lockfile: {e}\n{text}"));
        }
    }
    ctx.ok(&["plugins", "sync"]);
    assert_eq!(assert_store_verified(&ctx.store), 6);
    let tmp = list_dir(&ctx.store.join("tmp"));
    assert!(tmp.is_empty(), "abandoned staging was cleaned: {tmp:?}");
    let list = ctx.ok(&["plugins", "list"]);
    assert_eq!(list.stdout.matches(" synced").count(), 6, "{}", list.stdout);
}

/// The packs in the store's git caches: one per fetch that brought objects.
fn fetched_packs(store: &Path) -> usize {
    list_dir(&store.join("git-v1/db"))
        .iter()
        .map(|db| {
            list_dir(&store.join("git-v1/db").join(db).join("objects/pack"))
                .iter()
                .filter(|f| f.ends_with(".pack"))
                .count()
        })
        .sum()
}

#[test]
fn two_syncs_started_together_both_succeed_and_fetch_once() {
    let ctx = TestContext::new();
    heavy_project(&ctx, 4);
    for locked in [false, true] {
        let store = ctx.root.join(format!("shared-store-{locked}"));
        let args: &[&str] = if locked {
            // The lock exists already; both processes fetch by commit into a cold store.
            &["plugins", "sync", "--locked"]
        } else {
            let _ = std::fs::remove_file(ctx.lock_path());
            &["plugins", "sync"]
        };
        let children: Vec<_> = (0..2)
            .map(|_| {
                ctx.berth()
                    .env("BERTH_STORE", &store)
                    .args(args)
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("spawn sync")
            })
            .collect();
        let mut fetch_lines = 0;
        for child in children {
            let out = child.wait_with_output().expect("wait");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{args:?}: {stderr}");
            fetch_lines += stderr
                .lines()
                .filter(|l| l.trim_start().starts_with("Fetching"))
                .count();
        }
        assert_eq!(
            fetch_lines, 4,
            "{args:?}: each of the 4 repositories fetched once"
        );
        assert_eq!(
            fetched_packs(&store),
            4,
            "{args:?}: one pack per repository"
        );
        assert_eq!(assert_store_verified(&store), 4);
    }
}
