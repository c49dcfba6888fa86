//! `[sources] signer_change` on `berth serve`: a lock a client posts (or a restored
//! conversation's) whose plugin changed signer is refused with 403 `policy_denied` under
//! `approve` (the default, with or without `--policy`) until the server's approvals cover
//! the new signer, and under `deny`; under `warn` it is served and logged. The lock with
//! `was` is made by the CLI from commits the real `git` signed with `gpg.format=ssh`,
//! served over HTTP on 127.0.0.1.

use std::path::Path;

use serde_json::{Value, json};

use crate::common::ServeProcess;
use crate::signed_sources::{Project, fingerprint, project, signed_commit};

fn serve(p: &Project, args: &[&std::ffi::OsStr]) -> ServeProcess {
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
    .arg(&ctx.store)
    .args(args);
    ServeProcess::start(cmd)
}

/// `--policy FILE`, with `[sources] signer_change = RULE`, in a folder of its own.
fn policy(p: &Project, rule: &str) -> std::path::PathBuf {
    let dir = p.ctx.root.join("policies").join(rule);
    std::fs::create_dir_all(&dir).expect("mkdir");
    let file = dir.join(format!("{rule}.toml"));
    std::fs::write(&file, format!("[sources]\nsigner_change = \"{rule}\"\n")).expect("policy");
    file
}

fn with_policy(file: &Path) -> [&std::ffi::OsStr; 2] {
    ["--policy".as_ref(), file.as_os_str()]
}

/// The message of a refused request, which must be 403 `policy_denied` naming `what`.
fn refused(status: u16, body: &str, what: &[&str]) -> String {
    assert_eq!(status, 403, "{body}");
    let error = &serde_json::from_str::<Value>(body).expect("JSON")["error"];
    assert_eq!(error["code"], "policy_denied", "{body}");
    let message = error["message"].as_str().expect("message").to_owned();
    for word in what {
        assert!(message.contains(word), "no `{word}` in:\n{message}");
    }
    message
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
fn serve_refuses_a_change_of_signer_unless_warned_or_approved() {
    let Some(p) = project() else {
        return;
    };
    let ctx = &p.ctx;
    let tools = p.plugin_repo("tools");
    signed_commit(&tools, &p.alice, "signed by alice");
    ctx.write_manifest("[[plugin]]\nsource = \"github:acme/tools\"\n");
    ctx.ok(&["plugins", "lock"]);
    let signed = ctx.lock_text();
    // The next commit is unsigned: the client's lock says who signed before.
    tools.write(
        "skills/hello/SKILL.md",
        "---\nname: hello\ndescription: Hi\n---\nHi.\n",
    );
    tools.commit("not signed");
    ctx.ok(&["plugins", "update", "tools"]);
    let changed = ctx.lock_text();
    let alice = fingerprint(&p.alice);
    assert!(
        changed.contains(&format!("was = \"ssh {alice}\"")),
        "{changed}"
    );
    let before_and_after = format!("was signed by ssh key {alice}, and is now unsigned");
    let names = ["plugin `tools`", "changed hands", &before_and_after];

    // Without `--policy`: berth's default, `approve`, and no approvals to read.
    let server = serve(&p, &[]);
    let (status, body) = server.post(&json!({"lockfile": signed}));
    assert_eq!(status, 201, "the lock as alice signed it passes: {body}");
    let (status, body) = server.post(&json!({"lockfile": changed}));
    refused(
        status,
        &body,
        &[
            &names[..],
            &[
                "`sources.signer_change = \"approve\"` in `berth's defaults`",
                "reads no approvals (it runs without `--policy` or `--approvals`): approve it where the lock is made",
                "berth plugins approve tools",
            ],
        ]
        .concat(),
    );
    assert_eq!(conversations(&server), 1, "a refused start stores nothing");
    drop(server);

    // Under `warn`: served, and logged.
    let server = serve(&p, &with_policy(&policy(&p, "warn")));
    let (status, body) = server.post(&json!({"lockfile": changed}));
    assert_eq!(status, 201, "{body}");
    let id = serde_json::from_str::<Value>(&body).expect("JSON")["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let log = server.log();
    assert!(
        log.contains(&before_and_after) && log.contains("signer_change = \"warn\"` in `warn.toml`"),
        "{log}"
    );
    drop(server);

    // The conversation restored by a server under the default is refused when its
    // plugins are asked for.
    let server = serve(&p, &[]);
    let (status, body) = server.get(&format!("/api/conversations/{id}/plugin_set"));
    refused(status, &body, &names);
    drop(server);

    // Under `deny`: refused, approval or not.
    let server = serve(&p, &with_policy(&policy(&p, "deny")));
    let (status, body) = server.post(&json!({"lockfile": changed}));
    let message = refused(
        status,
        &body,
        &[
            &names[..],
            &[
                "`sources.signer_change = \"deny\"` in `deny.toml`",
                "lock a commit signed as before",
            ],
        ]
        .concat(),
    );
    assert!(!message.contains("approve"), "{message}");
    drop(server);

    // Under `approve` with `--policy`: refused until the approvals it reads cover it.
    let approve = policy(&p, "approve");
    let server = serve(&p, &with_policy(&approve));
    let (status, body) = server.post(&json!({"lockfile": changed}));
    refused(
        status,
        &body,
        &[
            &names[..],
            &["reads its approvals from `plugins.approvals.toml` when it starts"],
        ]
        .concat(),
    );
    drop(server);
    ctx.ok(&[
        "plugins",
        "approve",
        "tools",
        "--by",
        "Alice <alice@example.com>",
    ]);
    let approvals = ctx.work.join("plugins.approvals.toml");
    let server = serve(
        &p,
        &[
            &with_policy(&approve)[..],
            &["--approvals".as_ref(), approvals.as_os_str()],
        ]
        .concat(),
    );
    let (status, body) = server.post(&json!({"lockfile": changed}));
    assert_eq!(status, 201, "an approved change passes: {body}");
    let (status, body) = server.get(&format!("/api/conversations/{id}/plugin_set"));
    assert_eq!(status, 200, "{body}");
    drop(server);

    // Without a policy file, `--approvals` alone gives the default rule its approvals.
    let server = serve(&p, &["--approvals".as_ref(), approvals.as_os_str()]);
    let (status, body) = server.post(&json!({"lockfile": changed}));
    assert_eq!(status, 201, "approved, without `--policy`: {body}");
}
