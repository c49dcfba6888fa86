//! Semver ranges and the manifest-editing commands (issue #4).

use crate::common;

use common::{TestContext, lock_field};

fn tagged_repo(ctx: &TestContext) -> common::GitRepo {
    let repo = ctx.repo("tools");
    repo.copy_fixture("lint", "");
    for tag in ["v1.2.0", "v1.4.0", "v1.5.0-rc.1", "v2.0.0", "nightly"] {
        repo.write("VERSION", &format!("{tag}\n"));
        repo.commit(tag);
        repo.tag_annotated(tag);
    }
    repo
}

#[test]
fn a_semver_range_picks_the_highest_matching_tag_and_update_moves_it() {
    let ctx = TestContext::new();
    let repo = tagged_repo(&ctx);
    ctx.write_manifest("[[plugin]]\nsource = \"github:acme/tools\"\nversion = \"^1.2\"\n");
    ctx.ok(&["plugins", "sync"]);
    let lock = ctx.lock_text();
    assert_eq!(lock_field(&lock, 0, "version").as_deref(), Some("^1.2"));
    assert_eq!(
        lock_field(&lock, 0, "resolved_ref").as_deref(),
        Some("v1.4.0"),
        "{lock}"
    );
    assert_eq!(lock_field(&lock, 0, "rev"), Some(repo.rev("v1.4.0")));
    assert!(lock_field(&lock, 0, "ref").is_none());

    // A newer match appears upstream: `lock` keeps the pin, `update NAME` moves it.
    repo.write("VERSION", "v1.5.0\n");
    repo.commit("1.5");
    repo.tag("v1.5.0");
    ctx.ok(&["plugins", "lock"]);
    assert_eq!(ctx.lock_text(), lock, "an unchanged manifest keeps v1.4.0");
    ctx.ok(&["plugins", "update", "lint"]);
    let updated = ctx.lock_text();
    assert_eq!(
        lock_field(&updated, 0, "resolved_ref").as_deref(),
        Some("v1.5.0")
    );
    assert_eq!(lock_field(&updated, 0, "rev"), Some(repo.rev("v1.5.0")));
    ctx.ok(&["plugins", "sync", "--locked"]);

    // Pre-releases only when the range names one.
    ctx.write_manifest(
        "[[plugin]]\nsource = \"github:acme/tools\"\nversion = \">=1.5.0-rc.0, <1.5.0\"\n",
    );
    ctx.ok(&["plugins", "lock"]);
    assert_eq!(
        lock_field(&ctx.lock_text(), 0, "resolved_ref").as_deref(),
        Some("v1.5.0-rc.1")
    );

    // No match: the error lists the nearest tags.
    ctx.write_manifest("[[plugin]]\nsource = \"github:acme/tools\"\nversion = \"^3\"\n");
    berth_snapshot!(ctx.filters(), ctx.berth().args(["plugins", "lock"]), @r#"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    error: plugins.toml:2: `github:acme/tools`: no tag of `file://[TMP]/upstream/acme/tools.git` matches `version = "^3"`; its newest tags are `v2.0.0`, `v1.5.0`, `v1.5.0-rc.1`, `v1.4.0`, `v1.2.0`
    "#);
}

const COMMENTED: &str = r#"# Plugins for the review bot.
# Keep this list short.

[[plugin]]
# The house rules come first, so every other plugin can override them.
source = "./rules"   # local

[[plugin]]
source = "github:acme/tools"   # pinned below
ref = "v1.2.0"

# The end.
"#;

#[test]
fn add_remove_update_keep_comments_and_order() {
    let ctx = TestContext::new();
    tagged_repo(&ctx);
    let other = ctx.repo("review");
    other.copy_fixture("review", "");
    other.commit("review");
    std::fs::create_dir_all(ctx.work.join("rules/skills")).expect("mkdir");
    std::fs::write(ctx.work.join("rules/skills/house.md"), "be nice\n").expect("write");
    ctx.write_manifest(COMMENTED);
    ctx.ok(&["plugins", "lock"]);

    ctx.ok(&["plugins", "add", "github:acme/review", "--ref", "main"]);
    let manifest = std::fs::read_to_string(ctx.manifest_path()).expect("read");
    assert!(
        manifest.starts_with(COMMENTED.trim_end_matches("\n# The end.\n")),
        "comments kept:\n{manifest}"
    );
    for comment in [
        "# Plugins for the review bot.",
        "# The house rules come first",
        "# local",
        "# pinned below",
    ] {
        assert!(manifest.contains(comment), "`{comment}` lost:\n{manifest}");
    }
    assert!(
        manifest.contains("source = \"github:acme/review\"\nref = \"main\""),
        "{manifest}"
    );
    let lock = ctx.lock_text();
    assert_eq!(lock_field(&lock, 2, "name").as_deref(), Some("review"));
    ctx.ok(&["plugins", "lock", "--check"]);

    // A second plugin of the same name is refused unless forced, and nothing changes.
    let before = (
        std::fs::read(ctx.manifest_path()).expect("read"),
        ctx.lock_text(),
    );
    berth_snapshot!(
        ctx.filters(),
        ctx.berth().args(["plugins", "add", "github:acme/review", "--ref", "main"]),
        @r#"
        success: false
        exit_code: 1
        ----- stdout -----

        ----- stderr -----
        error: a plugin named `review` is already in `plugins.toml` (entry 3, `github:acme/review`); pass `--force` to add it anyway (the later entry wins name clashes)
        "#
    );
    assert_eq!(
        (
            std::fs::read(ctx.manifest_path()).expect("read"),
            ctx.lock_text()
        ),
        before
    );
    ctx.ok(&["plugins", "add", "github:acme/review", "--force"]);
    assert_eq!(
        lock_field(&ctx.lock_text(), 3, "name").as_deref(),
        Some("review")
    );

    // Remove takes every entry of that name and keeps the rest as written.
    ctx.ok(&["plugins", "remove", "review"]);
    let manifest = std::fs::read_to_string(ctx.manifest_path()).expect("read");
    assert!(!manifest.contains("acme/review"), "{manifest}");
    assert!(
        manifest.contains("# The house rules come first") && manifest.contains("ref = \"v1.2.0\""),
        "{manifest}"
    );
    assert!(
        manifest.find("./rules").expect("rules") < manifest.find("acme/tools").expect("tools"),
        "order kept"
    );
    ctx.ok(&["plugins", "lock", "--check"]);
    berth_snapshot!(ctx.filters(), ctx.berth().args(["plugins", "remove", "nope"]), @r#"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    error: no plugin named `nope` in `plugins.toml`; the plugins are `rules`, `lint`
    "#);

    // `update` with no names moves every pin; the manifest is not touched.
    let manifest_before = std::fs::read(ctx.manifest_path()).expect("read");
    ctx.ok(&["plugins", "update"]);
    assert_eq!(
        std::fs::read(ctx.manifest_path()).expect("read"),
        manifest_before
    );
    // A bad request is refused before anything is written.
    berth_snapshot!(ctx.filters(), ctx.berth().args(["plugins", "add", "acme/nothing"]), @r#"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    error: unknown source `acme/nothing`: write `github:acme/nothing` for a GitHub repository or `./acme/nothing` for a local folder
    "#);
    assert_eq!(
        std::fs::read(ctx.manifest_path()).expect("read"),
        manifest_before
    );
}

#[test]
fn add_creates_a_manifest_when_there_is_none() {
    let ctx = TestContext::new();
    let repo = ctx.repo("solo");
    repo.copy_fixture("lint", "");
    repo.commit("solo");
    ctx.ok(&["plugins", "add", "github:acme/solo"]);
    let manifest = std::fs::read_to_string(ctx.manifest_path()).expect("a manifest");
    assert_eq!(manifest, "[[plugin]]\nsource = \"github:acme/solo\"\n");
    assert_eq!(
        lock_field(&ctx.lock_text(), 0, "name").as_deref(),
        Some("lint")
    );
}

/// `add` locks the manifest with the new entry once, learns its name from that lock and
/// writes that same lock: one ref listing and one fetch of the new repository, nothing for
/// the entries already locked.
#[test]
fn add_resolves_the_new_entry_once() {
    let ctx = TestContext::new();
    let tools = ctx.repo("tools");
    tools.copy_fixture("lint", "");
    tools.commit("tools");
    let review = ctx.repo("review");
    review.copy_fixture("review", "");
    review.commit("review");
    let git = common::GitHttpServer::start(&ctx.upstream, &ctx.root.join("http.log"), &[]);
    let berth = |args: &[&str]| {
        let out = ctx
            .berth()
            .env("BERTH_GITHUB_URL", git.url())
            .args(args)
            .output()
            .expect("run berth");
        assert!(
            out.status.success(),
            "berth {args:?} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    ctx.write_manifest("[[plugin]]\nsource = \"github:acme/tools\"\n");
    berth(&["plugins", "lock"]);
    let (requests_before, fetches_before) = (git.requests().len(), git.fetches().len());
    berth(&["plugins", "add", "github:acme/review", "--ref", "main"]);
    let requests = git.requests()[requests_before..].to_vec();
    let fetches = git.fetches()[fetches_before..].to_vec();
    // Smart HTTP: the ref advertisement (GET), `ls-refs` (POST), then the pack (POST).
    assert_eq!(
        requests,
        [
            "GET /acme/review.git/info/refs?service=git-upload-pack",
            "POST /acme/review.git/git-upload-pack",
            "POST /acme/review.git/git-upload-pack",
        ],
        "one listing and one fetch of the new repository"
    );
    assert_eq!(fetches, ["/acme/review.git/git-upload-pack"]);
    assert_eq!(
        lock_field(&ctx.lock_text(), 1, "name").as_deref(),
        Some("review")
    );
    assert_eq!(lock_field(&ctx.lock_text(), 1, "rev"), Some(review.head()));
    // The lock written is the manifest's: nothing left to resolve.
    berth(&["plugins", "lock", "--check"]);
}

/// Removing the first of two plugins says so, and only so: the one left moved up, which is
/// no change of it (it was reported as added and removed).
#[test]
fn remove_reports_the_plugin_it_removed_and_nothing_else() {
    let ctx = TestContext::new();
    for (dir, name) in [("a", "review"), ("b", "house-rules")] {
        let manifest = ctx.work.join(dir).join(".claude-plugin/plugin.json");
        std::fs::create_dir_all(manifest.parent().expect("parent")).expect("mkdir");
        std::fs::write(manifest, format!("{{\"name\": \"{name}\"}}")).expect("write");
    }
    ctx.write_manifest("[[plugin]]\nsource = \"./a\"\n\n[[plugin]]\nsource = \"./b\"\n");
    ctx.ok(&["plugins", "lock"]);
    berth_snapshot!(ctx.filters(), ctx.berth().args(["plugins", "remove", "review"]), @r#"
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
         Removed `review` from `plugins.toml` (1 entry)
        Removing review
          Locked 1 plugin in `plugins.lock`
    "#);
}
