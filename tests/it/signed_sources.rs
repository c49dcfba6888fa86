//! Signed sources (issue #43): under `[sources] require_signed = "FILE"`, every plugin is
//! locked from a git commit that carries an SSH signature, or from an annotated tag that
//! does, by a key the allowed-signers file lists for the namespace `git`, as `git
//! verify-commit` and `git verify-tag` check it. `lock`, `lock --check` and `verify` each
//! refuse one that is not, naming the plugin and the key. The signatures are made by the
//! real `git` with `gpg.format=ssh` and keys from the real `ssh-keygen`, and `git` itself
//! is asked whether it agrees; the repositories are served over HTTP on 127.0.0.1. The
//! server's side is in `signed_sources_server.rs`, with these helpers.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common;

use common::{GitHttpServer, GitRepo, TestContext};

/// A new ed25519 key pair `keys/NAME` and `keys/NAME.pub`, made by `ssh-keygen` (which
/// these tests need: a machine without it fails them).
pub(crate) fn keygen(ctx: &TestContext, name: &str) -> PathBuf {
    let dir = ctx.root.join("keys");
    std::fs::create_dir_all(&dir).expect("mkdir keys");
    let key = dir.join(name);
    let status = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", name, "-f"])
        .arg(&key)
        .stdin(Stdio::null())
        .status()
        .expect("run ssh-keygen (install OpenSSH's client, Debian: openssh-client)");
    assert!(status.success(), "ssh-keygen failed");
    key
}

/// `keytype base64` of the public key beside `key`.
pub(crate) fn public(key: &Path) -> String {
    let text = std::fs::read_to_string(key.with_extension("pub")).expect("read the public key");
    let fields: Vec<&str> = text.split_whitespace().take(2).collect();
    fields.join(" ")
}

/// The key's `SHA256:…` fingerprint, as `ssh-keygen -l` prints it.
pub(crate) fn fingerprint(key: &Path) -> String {
    let out = Command::new("ssh-keygen")
        .arg("-lf")
        .arg(key.with_extension("pub"))
        .output()
        .expect("run ssh-keygen -l");
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace()
        .find(|w| w.starts_with("SHA256:"))
        .unwrap_or_else(|| panic!("no fingerprint in {text}"))
        .to_owned()
}

/// `git -c gpg.format=ssh -c user.signingkey=KEY ARGS` in `repo`.
pub(crate) fn signed_git(repo: &GitRepo, key: &Path, args: &[&str]) -> String {
    let signing = format!("user.signingkey={}", key.display());
    let mut all = vec!["-c", "gpg.format=ssh", "-c", &signing];
    all.extend_from_slice(args);
    repo.git(&all)
}

/// Commits everything, signed with `key`; returns the commit id.
pub(crate) fn signed_commit(repo: &GitRepo, key: &Path, message: &str) -> String {
    repo.git(&["add", "-A"]);
    signed_git(repo, key, &["commit", "-q", "-S", "-m", message]);
    repo.head()
}

/// Whether `git verify-commit` (or `verify-tag`) accepts `what` against `signers`: git's
/// own answer, to hold berth's to.
fn git_verifies(
    ctx: &TestContext,
    repo: &GitRepo,
    signers: &Path,
    command: &str,
    what: &str,
) -> bool {
    let mut cmd = Command::new("git");
    cmd.current_dir(&repo.path);
    common::apply_env(&mut cmd, &ctx.home);
    cmd.args(["-c", "gpg.format=ssh", "-c"])
        .arg(format!("gpg.ssh.allowedSignersFile={}", signers.display()))
        .args([command, what])
        .stdin(Stdio::null())
        .output()
        .expect("run git")
        .status
        .success()
}

/// A project with keys `alice` (listed for every namespace), `carol` (listed for
/// `berth-approval` only) and `mallory` (not listed), and a policy requiring signed
/// sources, its repositories served over HTTP.
pub(crate) struct Project {
    pub(crate) ctx: TestContext,
    pub(crate) alice: PathBuf,
    pub(crate) carol: PathBuf,
    pub(crate) mallory: PathBuf,
    pub(crate) signers: PathBuf,
    /// The repositories over HTTP.
    pub(crate) http: GitHttpServer,
}

/// The project, or `None` (after [`common::require_or_skip`], which fails in CI) on a
/// machine without `ssh-keygen`, which makes its keys.
pub(crate) fn project() -> Option<Project> {
    if !common::on_path("ssh-keygen") {
        common::require_or_skip(
            "ssh-keygen",
            "install OpenSSH's client (Debian: openssh-client)",
        );
        return None;
    }
    let ctx = TestContext::new();
    let alice = keygen(&ctx, "alice");
    let carol = keygen(&ctx, "carol");
    let mallory = keygen(&ctx, "mallory");
    let signers = ctx.work.join("git_signers");
    std::fs::write(
        &signers,
        format!(
            "# who may sign plugin commits\nalice@example.com {}\ncarol@example.com namespaces=\"berth-approval\" {}\n",
            public(&alice),
            public(&carol)
        ),
    )
    .expect("write git_signers");
    let server = ctx.serve_github_over_http();
    Some(Project {
        ctx,
        alice,
        carol,
        mallory,
        signers,
        http: server,
    })
}

impl Project {
    pub(crate) fn require_signed(&self) {
        std::fs::write(
            self.ctx.work.join("berth-policy.toml"),
            "[sources]\nrequire_signed = \"git_signers\"\n",
        )
        .expect("write policy");
    }

    /// A plugin repository `NAME` with one skill, not yet committed.
    pub(crate) fn plugin_repo(&self, name: &str) -> GitRepo {
        let repo = self.ctx.repo(name);
        repo.write(
            ".claude-plugin/plugin.json",
            &format!("{{\"name\": \"{name}\"}}\n"),
        );
        repo.write(
            "skills/hello/SKILL.md",
            "---\nname: hello\ndescription: Says hello\n---\nSay hello.\n",
        );
        repo
    }
}

#[test]
fn a_signed_commit_and_a_signed_tag_lock_check_and_verify_under_the_rule() {
    let Some(p) = project() else {
        return;
    };
    let ctx = &p.ctx;
    let tools = p.plugin_repo("tools");
    let commit = signed_commit(&tools, &p.alice, "signed by alice");
    // An unsigned commit under a tag alice signed.
    let tagged = p.plugin_repo("tagged");
    tagged.commit("not signed");
    signed_git(
        &tagged,
        &p.alice,
        &["tag", "-s", "v1.0", "-m", "release 1.0"],
    );
    // git itself agrees with what berth is to decide.
    assert!(git_verifies(
        ctx,
        &tools,
        &p.signers,
        "verify-commit",
        &commit
    ));
    assert!(git_verifies(ctx, &tagged, &p.signers, "verify-tag", "v1.0"));
    assert!(!git_verifies(
        ctx,
        &tagged,
        &p.signers,
        "verify-commit",
        "v1.0^{commit}"
    ));
    p.require_signed();
    ctx.write_manifest(
        "[[plugin]]\nsource = \"github:acme/tools\"\n\n[[plugin]]\nsource = \"github:acme/tagged\"\nref = \"v1.0\"\n",
    );
    ctx.ok(&["plugins", "lock"]);
    let lock = ctx.lock_text();
    assert!(lock.contains(&commit), "{lock}");
    // Who signed is recorded (issue #58): the commit alice signed, and the tag she
    // signed, with the principal the policy's allowed signers list for her key.
    let alice = fingerprint(&p.alice);
    for object in ["commit", "tag"] {
        let recorded = format!(
            "signature = {{ kind = \"ssh\", object = \"{object}\", key = \"{alice}\", principal = \"alice@example.com\", verified = true }}"
        );
        assert!(lock.contains(&recorded), "no {recorded} in {lock}");
    }
    ctx.ok(&["plugins", "lock", "--check"]);
    // The tag was kept in the cache: it is read again without the network.
    ctx.ok(&["plugins", "lock", "--check", "--offline"]);
    ctx.ok(&["plugins", "verify"]);
    ctx.ok(&["plugins", "sync"]);
}

#[test]
fn unsigned_unlisted_other_namespace_and_forged_commits_are_refused_naming_plugin_and_key() {
    let Some(p) = project() else {
        return;
    };
    let ctx = &p.ctx;
    let plain = p.plugin_repo("plain");
    let plain_commit = plain.commit("not signed");
    let stranger = p.plugin_repo("stranger");
    signed_commit(&stranger, &p.mallory, "signed by a key nobody listed");
    let approver = p.plugin_repo("approver");
    signed_commit(
        &approver,
        &p.carol,
        "signed by a key listed for approvals only",
    );
    // alice's signature kept on a commit whose message was changed after signing.
    let forged = p.plugin_repo("forged");
    signed_commit(&forged, &p.alice, "what alice signed");
    let object = forged.git(&["cat-file", "commit", "HEAD"]);
    let edited = format!(
        "{}\n",
        object.replace("what alice signed", "what alice never signed")
    );
    let path = forged.path.join("edited-commit");
    std::fs::write(&path, edited).expect("write the edited commit");
    let forged_commit = forged.git(&["hash-object", "-t", "commit", "-w", "edited-commit"]);
    forged.git(&["update-ref", "refs/heads/main", &forged_commit]);
    for (repo, rev) in [
        (&plain, "HEAD"),
        (&stranger, "HEAD"),
        (&approver, "HEAD"),
        (&forged, "HEAD"),
    ] {
        assert!(
            !git_verifies(ctx, repo, &p.signers, "verify-commit", rev),
            "git accepts {}",
            repo.path.display()
        );
    }
    let cases = [
        (
            "plain",
            vec![plain_commit.clone(), "carries no SSH signature".to_owned()],
        ),
        (
            "stranger",
            vec![fingerprint(&p.mallory), "does not list".to_owned()],
        ),
        (
            "approver",
            vec![
                fingerprint(&p.carol),
                "lets sign only in `berth-approval`, not in `git`".to_owned(),
            ],
        ),
        (
            "forged",
            vec![
                forged_commit.clone(),
                fingerprint(&p.alice),
                "is bad: it was not made over this object".to_owned(),
            ],
        ),
    ];
    // Locked before the rule, so `lock --check` and `verify` meet the lock as it is.
    for (name, _) in &cases {
        ctx.write_manifest(&format!("[[plugin]]\nsource = \"github:acme/{name}\"\n"));
        ctx.ok(&["plugins", "lock"]);
        std::fs::rename(ctx.lock_path(), ctx.work.join(format!("{name}.lock"))).expect("keep");
    }
    p.require_signed();
    for (name, needles) in &cases {
        ctx.write_manifest(&format!("[[plugin]]\nsource = \"github:acme/{name}\"\n"));
        let kept = ctx.work.join(format!("{name}.lock"));
        std::fs::copy(&kept, ctx.lock_path()).expect("restore the lock");
        for args in [
            &["plugins", "lock", "--check"][..],
            &["plugins", "verify"],
            &["plugins", "sync", "--frozen"],
            &["plugins", "sync"],
            &["plugins", "lock"],
        ] {
            let run = ctx.run(args);
            assert_eq!(run.code, 1, "{args:?} of `{name}`:\n{}", run.stderr);
            let said = &run.stderr;
            assert!(
                said.contains(&format!("plugin `{name}`")),
                "{args:?}:\n{said}"
            );
            assert!(
                said.contains("sources.require_signed = \"git_signers\""),
                "{args:?}:\n{said}"
            );
            for needle in needles {
                assert!(
                    said.contains(needle.as_str()),
                    "{args:?} lacks {needle}:\n{said}"
                );
            }
        }
        // The refused lock was not replaced.
        assert_eq!(
            std::fs::read_to_string(ctx.lock_path()).expect("lock"),
            std::fs::read_to_string(&kept).expect("kept")
        );
    }
    std::fs::remove_file(ctx.lock_path()).expect("rm lock");
    // A new lock of the unsigned plugin is refused, naming its commit.
    ctx.write_manifest("[[plugin]]\nsource = \"github:acme/plain\"\n");
    let run = ctx.run(&["plugins", "lock"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!("the commit `{plain_commit}`")),
        "{}",
        run.stderr
    );
    assert!(!ctx.lock_path().exists(), "no lock is written");
}

#[test]
fn a_source_that_is_not_git_is_refused_under_the_rule() {
    let Some(p) = project() else {
        return;
    };
    let ctx = &p.ctx;
    let folder = ctx.work.join("rules");
    std::fs::create_dir_all(folder.join("skills/hello")).expect("mkdir");
    std::fs::write(
        folder.join("skills/hello/SKILL.md"),
        "---\nname: hello\ndescription: Says hello\n---\nSay hello.\n",
    )
    .expect("write skill");
    p.require_signed();
    ctx.write_manifest("[[plugin]]\nsource = \"./rules\"\n");
    let run = ctx.run(&["plugins", "lock"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("plugin `rules`: `./rules` is not a git repository"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("sources.require_signed"),
        "{}",
        run.stderr
    );
}
