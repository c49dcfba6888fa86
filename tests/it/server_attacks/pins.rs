//! S5-1: a lock's `source`, `url` and `rev` count only once this store saw that pin give
//! the entry's hash. A lock naming an allowed, signed repository's commit with the hash of
//! an entry fetched for a refused start (or by anyone, from anywhere) is refused, on the
//! server under `require_signed` and under `[sources] allow`, without a policy when the
//! commit does not exist, and on the CLI by `sync --frozen`.

use std::path::Path;

use serde_json::json;

use super::{error_of, listed, serve};
use crate::common::{ServeProcess, lock_field};
use crate::signed_sources::{Project, project, signed_commit};

/// Two plugins on the test's git server: `trusted`, one commit signed by alice (whom the
/// allowed-signers file lists), and `review`, not signed, whose hook runs on every Bash
/// command. The locks `berth plugins lock` writes for each.
struct Two {
    p: Project,
    trusted_lock: String,
    review_lock: String,
}

fn two() -> Option<Two> {
    let p = project()?;
    let trusted = p.plugin_repo("trusted");
    signed_commit(&trusted, &p.alice, "signed by alice");
    let review = p.ctx.repo("review");
    review.copy_fixture("review", "");
    review.commit("not signed");
    let lock_of = |name: &str| {
        p.ctx
            .write_manifest(&format!("[[plugin]]\nsource = \"github:acme/{name}\"\n"));
        p.ctx.ok(&["plugins", "lock"]);
        p.ctx.lock_text()
    };
    let trusted_lock = lock_of("trusted");
    let review_lock = lock_of("review");
    Some(Two {
        p,
        trusted_lock,
        review_lock,
    })
}

impl Two {
    /// `trusted`'s lock with review's name and hash: where review's content would be
    /// found, under trusted's source, URL and signed commit.
    fn forged(&self) -> String {
        let field = |lock: &str, key: &str| lock_field(lock, 0, key).expect("a locked field");
        self.trusted_lock
            .replace(
                &field(&self.trusted_lock, "hash"),
                &field(&self.review_lock, "hash"),
            )
            .replace("name = \"trusted\"", "name = \"review\"")
    }

    /// A policy file in `dir` (with the allowed-signers file beside it).
    fn policy(&self, dir: &Path, text: &str) -> std::path::PathBuf {
        std::fs::create_dir_all(dir).expect("mkdir");
        std::fs::copy(&self.p.signers, dir.join("git_signers")).expect("copy git_signers");
        let path = dir.join("berth-policy.toml");
        std::fs::write(&path, text).expect("write the policy");
        path
    }
}

const SIGNED: &str = "[sources]\nrequire_signed = \"git_signers\"\n";

/// The forged lock is refused as a hash mismatch naming the pin, and nothing is stored.
fn refuses_the_forgery(server: &ServeProcess, forged: &str) {
    let (status, body) = server.post(&json!({ "lockfile": forged }));
    assert_eq!(status, 422, "a relabelled entry is refused: {body}");
    let (code, message) = error_of(&body);
    assert_eq!(code, "invalid_plugin", "{body}");
    for needle in [
        "hash mismatch",
        "trusted",
        "does not say where this plugin came from",
    ] {
        assert!(message.contains(needle), "{needle} not in {message}");
    }
    assert_eq!(listed(server), 0, "nothing stored");
}

#[test]
fn s5_1_a_posted_lock_cannot_claim_a_refused_starts_entry_as_a_signed_source() {
    let Some(two) = two() else {
        return;
    };
    let ctx = &two.p.ctx;
    let policy = two.policy(&ctx.root.join("server-policy"), SIGNED);
    let store = ctx.root.join("server-store");
    let data = ctx.root.join("data").display().to_string();
    let server = serve(
        ctx,
        &store,
        &data,
        &["--policy", &policy.display().to_string()],
    );

    // Refused for want of a signature; its entry stays in the store, inert.
    let (status, body) = server.post(&json!({"plugins": [{"source": "github:acme/review"}]}));
    assert_eq!(status, 403, "{body}");
    assert_eq!(error_of(&body).0, "policy_denied", "{body}");

    refuses_the_forgery(&server, &two.forged());
    // The signed plugin itself passes, its pin checked against its commit.
    let (status, body) = server.post(&json!({ "lockfile": two.trusted_lock }));
    assert_eq!(status, 201, "{body}");
}

#[test]
fn s5_1_a_posted_lock_cannot_claim_an_entry_under_an_allowed_source() {
    let Some(two) = two() else {
        return;
    };
    let ctx = &two.p.ctx;
    // The store has review (locked without the policy, as any other project could).
    let policy = two.policy(
        &ctx.root.join("server-policy"),
        "[sources]\nallow = [\"github:acme/trusted\"]\n",
    );
    let data = ctx.root.join("data").display().to_string();
    let server = serve(
        ctx,
        &ctx.store,
        &data,
        &["--policy", &policy.display().to_string()],
    );
    let (status, body) = server.post(&json!({"plugins": [{"source": "github:acme/review"}]}));
    assert_eq!(status, 403, "{body}");
    assert_eq!(error_of(&body).0, "policy_denied", "{body}");
    refuses_the_forgery(&server, &two.forged());
}

#[test]
fn s5_1_without_a_policy_a_commit_that_does_not_exist_is_not_served() {
    let Some(two) = two() else {
        return;
    };
    let ctx = &two.p.ctx;
    let data = ctx.root.join("data").display().to_string();
    let server = serve(ctx, &ctx.store, &data, &[]);
    let rev = lock_field(&two.review_lock, 0, "rev").expect("rev");
    let nowhere = two.review_lock.replace(&rev, &"1".repeat(40));
    let (status, body) = server.post(&json!({ "lockfile": nowhere }));
    assert_ne!(status, 201, "a commit nobody has is not reported: {body}");
    assert_eq!(listed(&server), 0, "{body}");
    // The true lock passes, from the store.
    let (status, body) = server.post(&json!({ "lockfile": two.review_lock }));
    assert_eq!(status, 201, "{body}");
}

#[test]
fn s5_1_sync_frozen_of_a_forged_lock_is_refused_under_a_source_policy() {
    let Some(two) = two() else {
        return;
    };
    let ctx = &two.p.ctx;
    for (name, policy) in [
        ("signed", SIGNED),
        ("allow", "[sources]\nallow = [\"github:acme/trusted\"]\n"),
    ] {
        // A project elsewhere whose lock came from someone else; the store (shared) has
        // review, locked by another project without the policy.
        let dir = ctx.root.join(format!("elsewhere-{name}"));
        two.policy(&dir, policy);
        std::fs::write(dir.join("plugins.lock"), two.forged()).expect("write the lock");
        let out = ctx
            .berth()
            .current_dir(&dir)
            .args(["plugins", "sync", "--frozen"])
            .output()
            .expect("run berth");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success(),
            "{name}: the forged lock synced: {stderr}"
        );
        assert!(
            stderr.contains("hash mismatch") && stderr.contains("trusted"),
            "{name}: {stderr}"
        );
        // The plugin set is not served under the trusted name either.
        let out = ctx
            .berth()
            .current_dir(&dir)
            .args(["plugins", "show", "--json"])
            .output()
            .expect("run berth");
        assert!(
            !String::from_utf8_lossy(&out.stdout).contains("guard.sh"),
            "{name}: review's hook shown as trusted's"
        );
    }
}
