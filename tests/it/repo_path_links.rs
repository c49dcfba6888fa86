//! A `repo_path` that is, or passes through, a symlink to a folder of the same repository
//! (or archive) is followed, as the OpenHands SDK follows it (`Path(repo / repo_path)
//! .resolve()`): the plugin is the folder it leads to. `lock`, `sync` and `verify` agree on
//! its hash; a link that leaves, dangles, loops or ends at a file is an error naming it.

use crate::common;

use common::{FileServer, GitHttpServer, TestContext, lock_field, tar_gz};

const SKILL: &str = "---\nname: s\ndescription: a skill\n---\nDo the thing.\n";

/// `mono`: the plugin folder `plugins/v2/x` (no manifest, so it is named after its folder)
/// and links to it of every shape, good and bad.
fn mono(ctx: &TestContext) {
    let repo = ctx.repo("mono");
    repo.write("plugins/v2/x/README.md", "the target folder\n");
    repo.write("plugins/v2/x/skills/s/SKILL.md", SKILL);
    repo.write("plugins/v2/notes.md", "a file\n");
    repo.write("other/y/README.md", "another folder\n");
    let link = |rel: &str, target: &str| {
        let path = repo.path.join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::os::unix::fs::symlink(target, path).expect("symlink");
    };
    link("plugins/current", "v2"); // a link in the middle of `plugins/current/x`
    link("plugins/latest", "current/x"); // a chain: latest -> current/x -> v2/x
    link("alias", "plugins/./v2/x/../x"); // `..` after a real folder, at the top
    link("plugins/out", "../.."); // leaves the repository
    link("plugins/abs", "/etc"); // absolute
    link("plugins/gone", "v3"); // dangling
    link("plugins/notes", "v2/notes.md"); // a link to a file
    link("plugins/a", "b"); // a loop
    link("plugins/b", "a");
    repo.commit("plugins and links");
}

/// Locks `repo_path` of `github:acme/mono` alone; returns the run.
fn lock(ctx: &TestContext, git: &GitHttpServer, repo_path: &str) -> common::Run {
    ctx.write_manifest(&format!(
        "[[plugin]]\nsource = \"github:acme/mono\"\nrepo_path = \"{repo_path}\"\n"
    ));
    common::Run::from(
        ctx.berth()
            .env("BERTH_GITHUB_URL", git.url())
            .args(["plugins", "lock"])
            .output()
            .expect("run berth"),
    )
}

fn berth_ok(ctx: &TestContext, git: &GitHttpServer, args: &[&str]) -> common::Run {
    let run = common::Run::from(
        ctx.berth()
            .env("BERTH_GITHUB_URL", git.url())
            .args(args)
            .output()
            .expect("run berth"),
    );
    assert_eq!(run.code, 0, "berth {args:?}:\n{}", run.stderr);
    run
}

#[test]
fn a_repo_path_through_links_is_the_folder_they_lead_to() {
    let ctx = TestContext::new();
    mono(&ctx);
    let git = GitHttpServer::start(&ctx.upstream, &ctx.root.join("http.log"), &[]);
    let plain = lock(&ctx, &git, "plugins/v2/x");
    assert_eq!(plain.code, 0, "{}", plain.stderr);
    let expected = lock_field(&ctx.lock_text(), 0, "hash").expect("hash");
    let other = lock(&ctx, &git, "other/y");
    assert_eq!(other.code, 0, "{}", other.stderr);
    assert_ne!(
        lock_field(&ctx.lock_text(), 0, "hash").as_deref(),
        Some(expected.as_str()),
        "a different folder hashes differently, so equal hashes below mean something"
    );
    for repo_path in ["plugins/current/x", "plugins/latest", "alias"] {
        let run = lock(&ctx, &git, repo_path);
        assert_eq!(run.code, 0, "{repo_path}: {}", run.stderr);
        let lock = ctx.lock_text();
        assert_eq!(
            lock_field(&lock, 0, "hash").as_deref(),
            Some(expected.as_str()),
            "{repo_path}: the target folder's hash\n{lock}"
        );
        assert_eq!(
            lock_field(&lock, 0, "name").as_deref(),
            Some("x"),
            "{repo_path}: named after the folder the link leads to, as the SDK names it"
        );
        assert_eq!(
            lock_field(&lock, 0, "repo_path").as_deref(),
            Some(repo_path),
            "the lock keeps `repo_path` as written"
        );
        // `sync` exports the same folder and checks it hashes as locked; `verify` fetches it
        // afresh and agrees.
        berth_ok(&ctx, &git, &["plugins", "sync"]);
        let entry = ctx
            .store_entries()
            .into_iter()
            .find(|e| e.ends_with("-x"))
            .expect("a store entry for `x`");
        assert_eq!(
            std::fs::read_to_string(ctx.store.join("store-v1").join(&entry).join("README.md"))
                .expect("the target's files"),
            "the target folder\n"
        );
        berth_ok(&ctx, &git, &["plugins", "verify"]);
    }
}

#[test]
fn bad_links_on_the_way_are_errors_naming_them() {
    let ctx = TestContext::new();
    mono(&ctx);
    let git = GitHttpServer::start(&ctx.upstream, &ctx.root.join("http.log"), &[]);
    for (repo_path, link, why) in [
        (
            "plugins/out/x",
            "`plugins/out`, a symlink to `../..`",
            "which leaves the repository",
        ),
        (
            "plugins/abs",
            "`plugins/abs`, a symlink to `/etc`",
            "an absolute path, which leaves the repository",
        ),
        (
            "plugins/gone",
            "`plugins/gone`, a symlink to `v3`",
            "which does not exist",
        ),
        (
            "plugins/notes",
            "`plugins/notes`, a symlink to `v2/notes.md`",
            "which is not a folder: `plugins/v2/notes.md` is a file",
        ),
        (
            "plugins/a",
            "`plugins/a`, a symlink to `b`",
            "which is part of a loop of symlinks",
        ),
    ] {
        let run = lock(&ctx, &git, repo_path);
        assert_eq!(run.code, 1, "{repo_path}: {}", run.stderr);
        let error = run.errors().join("\n");
        for needle in [
            "plugins.toml:2:",
            "`github:acme/mono`",
            &format!("`repo_path` `{repo_path}`"),
            link,
            why,
        ] {
            assert!(error.contains(needle), "{repo_path}: {needle}\n{error}");
        }
        assert!(
            !error.contains(&format!("`{repo_path}` is a file")),
            "a symlink is never called a file: {error}"
        );
    }
}

#[test]
fn an_archive_repo_path_through_a_link_is_followed_too() {
    let ctx = TestContext::new();
    let tree = ctx.root.join("tree");
    std::fs::create_dir_all(tree.join("plugins/v2/x/skills/s")).expect("mkdir");
    std::fs::write(tree.join("plugins/v2/x/skills/s/SKILL.md"), SKILL).expect("write");
    std::os::unix::fs::symlink("v2", tree.join("plugins/current")).expect("symlink");
    std::os::unix::fs::symlink("v3", tree.join("plugins/gone")).expect("symlink");
    let served = ctx.root.join("served");
    std::fs::create_dir_all(&served).expect("mkdir");
    std::fs::write(served.join("pack-1.0.tar.gz"), tar_gz(&tree, "pack-1.0")).expect("write");
    let server = FileServer::start(&served, None);
    let url = server.url("pack-1.0.tar.gz");
    let lock_at = |repo_path: &str| {
        ctx.write_manifest(&format!(
            "[[plugin]]\nsource = \"{url}\"\nrepo_path = \"{repo_path}\"\n"
        ));
        ctx.run(&["plugins", "lock"])
    };
    assert_eq!(lock_at("plugins/v2/x").code, 0);
    let expected = lock_field(&ctx.lock_text(), 0, "hash").expect("hash");
    let run = lock_at("plugins/current/x");
    assert_eq!(run.code, 0, "{}", run.stderr);
    let lock = ctx.lock_text();
    assert_eq!(lock_field(&lock, 0, "hash"), Some(expected), "{lock}");
    assert_eq!(lock_field(&lock, 0, "name").as_deref(), Some("x"));
    assert_eq!(
        lock_field(&lock, 0, "repo_path").as_deref(),
        Some("plugins/current/x")
    );
    ctx.ok(&["plugins", "sync"]);
    ctx.ok(&["plugins", "verify"]);

    let run = lock_at("plugins/gone");
    assert_eq!(run.code, 1, "{}", run.stderr);
    let error = run.errors().join("\n");
    assert!(
        error.contains("`repo_path` `plugins/gone` goes through `plugins/gone`, a symlink to `v3`, which does not exist"),
        "{error}"
    );
}
