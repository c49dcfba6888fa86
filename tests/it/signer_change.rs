//! Who published it (issue #58, parts 1 and 2): the lock records who signed each git
//! plugin's commit (or tag), and a change of signer (signed to unsigned, one key to
//! another) is shown by `plugins diff` as a change that runs and, under `[sources]
//! signer_change` (`approve` by default), refused by `sync` until `plugins approve`
//! records the new signer. Commits are signed by the real `git` with `gpg.format=ssh`,
//! served over HTTP on 127.0.0.1.

use crate::common::Run;
use crate::signed_sources::{Project, fingerprint, project, signed_commit};

/// A project with plugin `tools` at a commit alice signed, locked and synced; returns
/// the project, the repository and the lock as it was then (`old.lock`).
fn locked_signed() -> Option<(Project, crate::common::GitRepo)> {
    let p = project()?;
    let tools = p.plugin_repo("tools");
    signed_commit(&tools, &p.alice, "signed by alice");
    p.ctx
        .write_manifest("[[plugin]]\nsource = \"github:acme/tools\"\n");
    p.ctx.ok(&["plugins", "lock"]);
    p.ctx.ok(&["plugins", "sync"]);
    std::fs::copy(p.ctx.lock_path(), p.ctx.work.join("old.lock")).expect("keep the old lock");
    Some((p, tools))
}

fn refused(run: &Run, what: &[&str]) {
    assert_ne!(run.code, 0, "passed:\n{}", run.stderr);
    for word in what {
        assert!(run.stderr.contains(word), "no `{word}` in:\n{}", run.stderr);
    }
}

#[test]
fn the_lock_records_the_signer_and_a_change_of_hands_waits_for_an_approval() {
    let Some((p, tools)) = locked_signed() else {
        return;
    };
    let ctx = &p.ctx;
    let alice = fingerprint(&p.alice);
    let lock = ctx.lock_text();
    assert!(
        lock.contains(&format!(
            "signature = {{ kind = \"ssh\", object = \"commit\", key = \"{alice}\", verified = true }}"
        )),
        "{lock}"
    );
    // The next commit is unsigned: a change of hands.
    tools.write(
        "skills/hello/SKILL.md",
        "---\nname: hello\ndescription: Hi\n---\nHi.\n",
    );
    tools.commit("not signed");
    let update = ctx.ok(&["plugins", "update", "tools"]);
    assert!(
        update.stderr.contains("changed hands") && update.stderr.contains("the lock is written"),
        "{}",
        update.stderr
    );
    let lock = ctx.lock_text();
    assert!(
        lock.contains(&format!(
            "signature = {{ kind = \"none\", was = \"ssh {alice}\" }}"
        )),
        "{lock}"
    );
    let diff = ctx.ok(&["plugins", "diff", "--from", "old.lock"]);
    assert!(
        diff.stdout.contains(&format!(
            "! signer: signed by an unknown ssh key {alice} -> unsigned"
        )),
        "{}",
        diff.stdout
    );
    let json = ctx.ok(&["plugins", "diff", "--from", "old.lock", "--json"]);
    let doc: serde_json::Value = serde_json::from_str(&json.stdout).expect("JSON");
    let plugin = &doc["plugins"][0];
    assert_eq!(plugin["runs_different_code"], true, "{doc}");
    assert_eq!(plugin["signer"]["changes_hands"], true, "{doc}");
    assert_eq!(plugin["signer"]["from"]["key"], alice.as_str(), "{doc}");
    assert_eq!(plugin["signer"]["to"]["kind"], "none", "{doc}");
    let markdown = ctx.ok(&[
        "plugins", "diff", "--from", "old.lock", "--format", "markdown",
    ]);
    assert!(
        markdown
            .stdout
            .contains("**signer changed**: signed by an unknown ssh key")
            && markdown.stdout.contains("⚠️ runs different code"),
        "{}",
        markdown.stdout
    );
    // `sync` refuses it (without any policy file) until it is approved.
    let sync = ctx.run(&["plugins", "sync"]);
    refused(
        &sync,
        &[
            "plugin `tools`",
            "changed hands",
            "berth plugins approve tools",
            "signer_change = \"approve\"",
        ],
    );
    ctx.ok(&[
        "plugins",
        "approve",
        "tools",
        "--by",
        "Alice <alice@example.com>",
    ]);
    let approvals =
        std::fs::read_to_string(ctx.work.join("plugins.approvals.toml")).expect("approvals");
    assert!(
        approvals.contains("source_signer = \"none\""),
        "{approvals}"
    );
    ctx.ok(&["plugins", "sync"]);
    // Then mallory signs: the approval covered `none`, not this key.
    tools.write(
        "skills/hello/SKILL.md",
        "---\nname: hello\ndescription: Ho\n---\nHo.\n",
    );
    signed_commit(&tools, &p.mallory, "signed by mallory");
    ctx.ok(&["plugins", "update", "tools"]);
    let mallory = fingerprint(&p.mallory);
    refused(&ctx.run(&["plugins", "sync"]), &["changed hands", &mallory]);
    ctx.ok(&[
        "plugins",
        "approve",
        "tools",
        "--by",
        "Alice <alice@example.com>",
    ]);
    ctx.ok(&["plugins", "sync"]);
}

#[test]
fn the_same_signer_passes_without_asking_and_the_rule_can_warn_or_deny() {
    let Some((p, tools)) = locked_signed() else {
        return;
    };
    let ctx = &p.ctx;
    // alice signs again: nothing to approve.
    tools.write(
        "skills/hello/SKILL.md",
        "---\nname: hello\ndescription: Hi\n---\nHi.\n",
    );
    signed_commit(&tools, &p.alice, "signed by alice again");
    let update = ctx.ok(&["plugins", "update", "tools"]);
    assert!(
        !update.stderr.contains("changed hands"),
        "{}",
        update.stderr
    );
    assert!(!ctx.lock_text().contains("was ="), "{}", ctx.lock_text());
    ctx.ok(&["plugins", "sync"]);
    let before = ctx.lock_text();
    // Under `deny`, a lock moving to an unsigned commit is refused and nothing written.
    std::fs::write(
        ctx.work.join("berth-policy.toml"),
        "[sources]\nsigner_change = \"deny\"\n",
    )
    .expect("policy");
    tools.write(
        "skills/hello/SKILL.md",
        "---\nname: hello\ndescription: Ho\n---\nHo.\n",
    );
    tools.commit("not signed");
    let update = ctx.run(&["plugins", "update", "tools"]);
    refused(
        &update,
        &[
            "plugin `tools`",
            "changed hands",
            "signer_change = \"deny\"",
            "berth-policy.toml",
        ],
    );
    assert_eq!(ctx.lock_text(), before, "a refused lock writes nothing");
    // Under `warn`, it is said and runs.
    std::fs::write(
        ctx.work.join("berth-policy.toml"),
        "[sources]\nsigner_change = \"warn\"\n",
    )
    .expect("policy");
    let update = ctx.ok(&["plugins", "update", "tools"]);
    assert!(update.stderr.contains("changed hands"), "{}", update.stderr);
    ctx.ok(&["plugins", "sync"]);
}

#[test]
fn a_lock_from_before_signers_were_recorded_still_checks_and_the_next_lock_records_them() {
    let Some((p, _tools)) = locked_signed() else {
        return;
    };
    let ctx = &p.ctx;
    let recorded = ctx.lock_text();
    let older: String = recorded
        .lines()
        .filter(|l| !l.starts_with("signature = "))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_ne!(older, recorded);
    std::fs::write(ctx.lock_path(), &older).expect("write the older lock");
    ctx.ok(&["plugins", "lock", "--check"]);
    ctx.ok(&["plugins", "sync", "--frozen"]);
    ctx.ok(&["plugins", "lock"]);
    assert_eq!(ctx.lock_text(), recorded);
}
