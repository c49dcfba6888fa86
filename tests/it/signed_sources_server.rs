//! `[sources] require_signed` on `berth serve --policy`: a conversation whose plugins are
//! not locked from a commit (or annotated tag) signed as the policy asks is refused with
//! 403 `policy_denied`, naming the plugin, its commit and why, and nothing is stored;
//! whether the client posts the lock or the server resolves the plugins itself. The keys
//! come from the real `ssh-keygen`, the signatures from the real `git`, the repositories
//! are served over HTTP on 127.0.0.1.

use std::path::Path;

use serde_json::{Value, json};

use crate::common::ServeProcess;
use crate::signed_sources::{Project, fingerprint, project, signed_commit, signed_git};

fn serve(p: &Project, store: &Path, extra: &[&str]) -> ServeProcess {
    let ctx = &p.ctx;
    let mut cmd = ctx.berth();
    cmd.args([
        "serve",
        "--addr",
        "127.0.0.1:0",
        "--allow-local-sources",
        "--data-dir",
    ])
    .arg(ctx.root.join("data"))
    .arg("--store")
    .arg(store)
    .arg("--policy")
    .arg(ctx.work.join("berth-policy.toml"))
    .args(extra);
    ServeProcess::start(cmd)
}

/// The lock `berth plugins lock` writes for the one plugin `github:acme/NAME`.
fn lock_of(p: &Project, name: &str) -> String {
    p.ctx
        .write_manifest(&format!("[[plugin]]\nsource = \"github:acme/{name}\"\n"));
    p.ctx.ok(&["plugins", "lock"]);
    p.ctx.lock_text()
}

/// The error of a refused start: its code and message.
fn refused(status: u16, body: &str) -> (String, String) {
    assert_eq!(status, 403, "{body}");
    let error = &serde_json::from_str::<Value>(body).expect("JSON")["error"];
    (
        error["code"].as_str().expect("code").to_owned(),
        error["message"].as_str().expect("message").to_owned(),
    )
}

fn conversations(server: &ServeProcess) -> usize {
    let (status, listed) = server.get("/api/conversations");
    assert_eq!(status, 200, "{listed}");
    serde_json::from_str::<Value>(&listed).expect("JSON")["conversations"]
        .as_array()
        .expect("list")
        .len()
}

#[test]
fn serve_refuses_a_posted_or_resolved_conversation_whose_plugins_are_not_signed() {
    let Some(p) = project() else {
        return;
    };
    let ctx = &p.ctx;
    let tools = p.plugin_repo("tools");
    signed_commit(&tools, &p.alice, "signed by alice");
    let plain = p.plugin_repo("plain");
    let plain_commit = plain.commit("not signed");
    let stranger = p.plugin_repo("stranger");
    signed_commit(&stranger, &p.mallory, "signed by a key nobody listed");
    let tagged = p.plugin_repo("tagged");
    tagged.commit("not signed");
    signed_git(
        &tagged,
        &p.alice,
        &["tag", "-s", "v1.0", "-m", "release 1.0"],
    );
    // The locks a client brings, made before the rule.
    let tools_lock = lock_of(&p, "tools");
    let plain_lock = lock_of(&p, "plain");
    ctx.write_manifest(
        "[[plugin]]\nsource = \"github:acme/tools\"\n\n[[plugin]]\nsource = \"github:acme/tagged\"\nref = \"v1.0\"\n",
    );
    ctx.ok(&["plugins", "lock"]);
    let both_lock = ctx.lock_text();
    p.require_signed();
    let server = serve(&p, &ctx.store, &[]);

    let (status, body) = server.post(&json!({"lockfile": tools_lock}));
    assert_eq!(status, 201, "a signed commit passes: {body}");
    let (status, body) = server.post(&json!({"lockfile": tools_lock}));
    assert_eq!(status, 201, "and again, from what the server keeps: {body}");

    let (status, body) = server.post(&json!({"lockfile": plain_lock}));
    let (code, message) = refused(status, &body);
    assert_eq!(code, "policy_denied", "{body}");
    for needle in [
        "plugin `plain`",
        &format!("the commit `{plain_commit}` carries no SSH signature"),
        "[`sources.require_signed = \"git_signers\"` in `",
    ] {
        assert!(message.contains(needle), "{needle} not in {message}");
    }
    assert_eq!(conversations(&server), 2, "a refused start stores nothing");

    // Plugins the server resolves itself: an unsigned commit under a tag alice signed.
    let (status, body) =
        server.post(&json!({"plugins": [{"source": "github:acme/tagged", "ref": "v1.0"}]}));
    assert_eq!(status, 201, "a signed tag passes: {body}");
    let (status, body) = server.post(&json!({"plugins": [
        {"source": "github:acme/tools"},
        {"source": "github:acme/stranger"},
    ]}));
    let (code, message) = refused(status, &body);
    assert_eq!(code, "policy_denied", "{body}");
    for needle in [
        "plugin `stranger`",
        &fingerprint(&p.mallory),
        "git_signers` does not list",
    ] {
        assert!(message.contains(needle), "{needle} not in {message}");
    }
    assert!(!message.contains("plugin `tools`"), "{message}");
    assert_eq!(conversations(&server), 3, "a refused start stores nothing");

    // A new lock of plugins found signed before reads no git object again: with the git
    // cache gone, nothing is fetched for it.
    std::fs::remove_dir_all(ctx.store.join("git-v1")).expect("remove the git cache");
    let asked = p.http.requests().len();
    let (status, body) = server.post(&json!({"lockfile": both_lock}));
    assert_eq!(status, 201, "{body}");
    assert_eq!(
        p.http.requests().len(),
        asked,
        "{:?}",
        &p.http.requests()[asked..]
    );
    drop(server);

    // Offline, a commit the git cache lacks cannot be checked: refused, saying why. (The
    // store's entries are copied; its git cache is not.)
    let bare = ctx.root.join("store-without-git");
    copy_entries(&ctx.store, &bare);
    let offline = serve(&p, &bare, &["--offline"]);
    let (status, body) = offline.post(&json!({"lockfile": tools_lock}));
    let (code, message) = refused(status, &body);
    assert_eq!(code, "policy_denied", "{body}");
    for needle in ["plugin `tools`", "to check its signature", "`--offline`"] {
        assert!(message.contains(needle), "{needle} not in {message}");
    }
}

/// `from`'s top level copied into `to`, but for its git cache.
fn copy_entries(from: &Path, to: &Path) {
    let status = std::process::Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .expect("cp");
    assert!(status.success());
    for name in ["git-v1", "git"] {
        let _ = std::fs::remove_dir_all(to.join(name));
    }
}
