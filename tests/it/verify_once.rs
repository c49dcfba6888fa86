//! `plugins verify` fetches each repository once per run, as `lock` does: one throw-away
//! repository per remote, each distinct commit fetched once, every plugin of that commit
//! hashed from it. It still trusts neither the store nor the git cache, and still finds a
//! plugin whose locked hash is wrong.

use crate::common;

use common::{GitHttpServer, Run, TestContext, lock_field};

fn berth(ctx: &TestContext, git: &GitHttpServer, args: &[&str]) -> Run {
    Run::from(
        ctx.berth()
            .env("BERTH_GITHUB_URL", git.url())
            .args(args)
            .output()
            .expect("run berth"),
    )
}

/// How many packs each repository served, sorted by path.
fn fetches(git: &GitHttpServer) -> Vec<(String, usize)> {
    let mut counts: std::collections::BTreeMap<String, usize> = Default::default();
    for path in git.fetches() {
        *counts.entry(path).or_default() += 1;
    }
    counts.into_iter().collect()
}

/// `mono`: 20 plugins `plugins/p0`..`plugins/p19`, each with its own content.
fn mono(ctx: &TestContext) {
    let repo = ctx.repo("mono");
    for i in 0..20 {
        repo.write(
            &format!("plugins/p{i}/skills/s{i}/SKILL.md"),
            &format!("---\nname: s{i}\ndescription: skill {i}\n---\nBody {i}.\n"),
        );
        repo.write(&format!("plugins/p{i}/notes.md"), &format!("plugin {i}\n"));
    }
    repo.commit("twenty plugins");
}

fn manifest() -> String {
    (0..20)
        .map(|i| {
            format!("[[plugin]]\nsource = \"github:acme/mono\"\nrepo_path = \"plugins/p{i}\"\n\n")
        })
        .collect()
}

#[test]
fn twenty_plugins_of_one_repository_are_one_fetch() {
    let ctx = TestContext::new();
    mono(&ctx);
    let git = GitHttpServer::start(&ctx.upstream, &ctx.root.join("http.log"), &[]);
    ctx.write_manifest(&manifest());
    let locked = berth(&ctx, &git, &["plugins", "lock"]);
    assert_eq!(locked.code, 0, "{}", locked.stderr);
    let before = git.fetches().len();

    let run = berth(&ctx, &git, &["plugins", "verify"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stderr.matches("Verified").count(),
        21,
        "every plugin, then the summary:\n{}",
        run.stderr
    );
    let during: Vec<String> = git.fetches().split_off(before);
    assert_eq!(
        during,
        vec!["/acme/mono.git/git-upload-pack".to_owned()],
        "one pack for the twenty plugins"
    );
}

#[test]
fn a_tampered_plugin_is_still_found_while_the_others_pass() {
    let ctx = TestContext::new();
    mono(&ctx);
    let git = GitHttpServer::start(&ctx.upstream, &ctx.root.join("http.log"), &[]);
    ctx.write_manifest(&manifest());
    let locked = berth(&ctx, &git, &["plugins", "lock"]);
    assert_eq!(locked.code, 0, "{}", locked.stderr);
    // The lock claims p7 has p3's content.
    let lock = ctx.lock_text();
    let (h3, h7) = (
        lock_field(&lock, 3, "hash").expect("hash"),
        lock_field(&lock, 7, "hash").expect("hash"),
    );
    assert_ne!(h3, h7);
    std::fs::write(ctx.lock_path(), lock.replace(&h7, &h3)).expect("tamper");
    let before = git.fetches().len();

    let run = berth(&ctx, &git, &["plugins", "verify", "--json"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(
        run.errors(),
        vec![format!(
            "error: plugin `p7`: hash mismatch: expected `{h3}`, got `{h7}`"
        )]
    );
    let report: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON");
    let statuses: Vec<(&str, &str)> = report["plugins"]
        .as_array()
        .expect("plugins")
        .iter()
        .map(|p| {
            (
                p["name"].as_str().expect("name"),
                p["status"].as_str().expect("status"),
            )
        })
        .collect();
    assert_eq!(statuses.len(), 20);
    for (name, status) in statuses {
        let expected = if name == "p7" { "mismatch" } else { "ok" };
        assert_eq!(status, expected, "{name}");
    }
    assert_eq!(git.fetches().len() - before, 1, "still one fetch");
}

#[test]
fn each_remote_is_one_repository_and_each_commit_one_fetch() {
    let ctx = TestContext::new();
    mono(&ctx);
    let two = ctx.repo("two");
    two.write("a/README.md", "first\n");
    two.write("b/README.md", "b\n");
    two.commit("one");
    two.tag("v1");
    two.write("a/README.md", "second\n");
    two.commit("two");
    two.tag("v2");
    let git = GitHttpServer::start(&ctx.upstream, &ctx.root.join("http.log"), &[]);
    let mut text = manifest();
    for (tag, folder) in [("v1", "a"), ("v2", "a"), ("v1", "b")] {
        text.push_str(&format!(
            "[[plugin]]\nsource = \"github:acme/two\"\nref = \"{tag}\"\nrepo_path = \"{folder}\"\n\n"
        ));
    }
    ctx.write_manifest(&text);
    let locked = berth(&ctx, &git, &["plugins", "lock"]);
    assert_eq!(locked.code, 0, "{}", locked.stderr);
    let before = git.fetches().len();

    let run = berth(&ctx, &git, &["plugins", "verify", "-j", "4"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let mut during = git.fetches().split_off(before);
    during.sort();
    assert_eq!(
        during,
        vec![
            "/acme/mono.git/git-upload-pack".to_owned(),
            "/acme/two.git/git-upload-pack".to_owned(),
            "/acme/two.git/git-upload-pack".to_owned(),
        ],
        "one fetch for mono, one per distinct commit of two: {:?}",
        fetches(&git)
    );
}
