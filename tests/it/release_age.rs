//! Release age (`exclude-newer`): a lock stays off releases younger than a cutoff, for git
//! tags and branches, npm payloads and Python wheels; the cutoff it used is recorded so
//! `lock --check` reproduces on a later day; the policy's earlier cutoff wins. The clock is
//! `BERTH_NOW`, and every date below is counted from it.

use crate::common;

use std::process::Command;

use common::{GitRepo, TestContext, lock_field};

/// The day every test locks on.
const NOW: &str = "2026-12-01T00:00:00Z";
/// Thirty days before it.
const MONTH_AGO: &str = "2026-11-01T00:00:00Z";

/// `berth ARGS` run at `now`.
fn at(ctx: &TestContext, now: &str, args: &[&str]) -> Command {
    let mut cmd = ctx.berth();
    cmd.env("BERTH_NOW", now).args(args);
    cmd
}

/// `review` tagged `v1.2.0` a month ago and `v1.3.0` today (both annotated), `main` at
/// `v1.3.0`.
fn review_repo(ctx: &TestContext) -> GitRepo {
    let repo = ctx.repo("review");
    repo.at(MONTH_AGO).copy_fixture("review", "");
    repo.commit("v1.2.0");
    repo.tag_annotated("v1.2.0");
    repo.at(NOW).write("CHANGELOG.md", "1.3.0\n");
    repo.commit("v1.3.0");
    repo.tag_annotated("v1.3.0");
    repo
}

fn lock_value(ctx: &TestContext, key: &str) -> Option<String> {
    let lock: toml::Value = toml::from_str(&ctx.lock_text()).expect("TOML");
    lock.get(key)?.as_str().map(str::to_owned)
}

#[test]
fn a_span_holds_back_a_tag_made_today_and_the_lock_reproduces_later() {
    let ctx = TestContext::new();
    review_repo(&ctx);
    ctx.write_manifest(
        "exclude-newer = \"7 days\"\n\n[[plugin]]\nsource = \"github:acme/review\"\nversion = \"^1\"\n",
    );
    berth_snapshot!(ctx.filters(), &mut at(&ctx, NOW, &["plugins", "lock"]), @r#"
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
       Held back `review` at v1.2.0 (c2d1e36f7c87): v1.3.0 (tagged 2026-12-01) is newer than the cutoff 2026-11-24 (`exclude-newer = "7 days"` in `plugins.toml`)
          Adding review c2d1e36f7c87
          Locked 1 plugin in `plugins.lock`
    "#);
    assert_eq!(
        lock_field(&ctx.lock_text(), 0, "resolved_ref").as_deref(),
        Some("v1.2.0")
    );
    assert_eq!(
        lock_value(&ctx, "exclude-newer").as_deref(),
        Some("2026-11-24T00:00:00Z")
    );
    assert_eq!(
        lock_value(&ctx, "exclude-newer-span").as_deref(),
        Some("7 days")
    );

    // Three weeks later the same span keeps the recorded cutoff: the lock is current, and
    // locking again changes nothing.
    let later = "2026-12-22T00:00:00Z";
    let before = ctx.lock_text();
    berth_snapshot!(ctx.filters(), &mut at(&ctx, later, &["plugins", "lock", "--check"]), @r#"
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
         Checked `plugins.lock` is up to date (1 plugin)
    "#);
    at(&ctx, later, &["plugins", "lock"])
        .output()
        .expect("run berth");
    assert_eq!(ctx.lock_text(), before);

    // `--upgrade` counts the span from the new day: v1.3.0 is old enough now.
    let run = common::Run::from(
        at(&ctx, later, &["plugins", "lock", "--upgrade"])
            .output()
            .expect("run berth"),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        lock_field(&ctx.lock_text(), 0, "resolved_ref").as_deref(),
        Some("v1.3.0")
    );
    assert_eq!(
        lock_value(&ctx, "exclude-newer").as_deref(),
        Some("2026-12-15T00:00:00Z")
    );
}

#[test]
fn a_branch_resolves_to_its_newest_commit_before_the_cutoff() {
    let ctx = TestContext::new();
    let repo = review_repo(&ctx);
    let old = repo.rev("v1.2.0");
    ctx.write_manifest(
        "exclude-newer = \"2026-11-15\"\n\n[[plugin]]\nsource = \"github:acme/review\"\nref = \"main\"\n",
    );
    let run = berth_snapshot!(ctx.filters(), &mut at(&ctx, NOW, &["plugins", "lock"]), @r#"
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
       Held back `review` at c2d1e36f7c87: `main` at d3e3491351ee (committed 2026-12-01) is newer than the cutoff 2026-11-15 (`exclude-newer = "2026-11-15"` in `plugins.toml`)
          Adding review c2d1e36f7c87
          Locked 1 plugin in `plugins.lock`
    "#);
    assert_eq!(run.code, 0);
    assert_eq!(lock_field(&ctx.lock_text(), 0, "rev"), Some(old));
    assert_eq!(
        lock_value(&ctx, "exclude-newer").as_deref(),
        Some("2026-11-15T00:00:00Z")
    );
    assert_eq!(lock_value(&ctx, "exclude-newer-span"), None);
}

#[test]
fn an_exact_tag_newer_than_the_cutoff_is_an_error() {
    let ctx = TestContext::new();
    review_repo(&ctx);
    ctx.write_manifest(
        "exclude-newer = \"7 days\"\n\n[[plugin]]\nsource = \"github:acme/review\"\nref = \"v1.3.0\"\n",
    );
    berth_snapshot!(ctx.filters(), &mut at(&ctx, NOW, &["plugins", "lock"]), @r#"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    error: plugins.toml:4: `github:acme/review`: tag `v1.3.0` of `file://[TMP]/upstream/acme/review.git` was tagged 2026-12-01, after the cutoff 2026-11-24 (`exclude-newer = "7 days"` in `plugins.toml`); pin an older one, or move the cutoff
    "#);
    assert!(!ctx.lock_path().exists(), "nothing is written");
}

#[test]
fn the_policy_s_earlier_cutoff_wins_over_the_manifest_s() {
    let ctx = TestContext::new();
    let repo = ctx.repo("review");
    repo.at(MONTH_AGO).copy_fixture("review", "");
    repo.commit("v1.2.0");
    repo.tag_annotated("v1.2.0");
    // Ten days old: past the manifest's week, within the policy's two weeks.
    repo.at("2026-11-21T00:00:00Z")
        .write("CHANGELOG.md", "1.3.0\n");
    repo.commit("v1.3.0");
    repo.tag_annotated("v1.3.0");
    ctx.write_manifest(
        "exclude-newer = \"7 days\"\n\n[[plugin]]\nsource = \"github:acme/review\"\nversion = \"^1\"\n",
    );
    std::fs::write(
        ctx.work.join("berth-policy.toml"),
        "exclude-newer = \"2 weeks\"\n",
    )
    .expect("write policy");
    berth_snapshot!(ctx.filters(), &mut at(&ctx, NOW, &["plugins", "lock"]), @r#"
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
       Held back `review` at v1.2.0 (c2d1e36f7c87): v1.3.0 (tagged 2026-11-21) is newer than the cutoff 2026-11-17 (`exclude-newer = "2 weeks"` in `berth-policy.toml`)
          Adding review c2d1e36f7c87
          Locked 1 plugin in `plugins.lock`
    "#);
    assert_eq!(
        lock_field(&ctx.lock_text(), 0, "resolved_ref").as_deref(),
        Some("v1.2.0")
    );
    assert_eq!(
        lock_value(&ctx, "exclude-newer").as_deref(),
        Some("2026-11-17T00:00:00Z")
    );
    assert_eq!(
        lock_value(&ctx, "exclude-newer-span").as_deref(),
        Some("2 weeks")
    );

    // Without the policy the manifest's week is the cutoff: `--check` says the lock was
    // made with another one.
    std::fs::remove_file(ctx.work.join("berth-policy.toml")).expect("remove policy");
    berth_snapshot!(ctx.filters(), &mut at(&ctx, NOW, &["plugins", "lock", "--check"]), @r#"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    error: `plugins.lock` is out of date with `plugins.toml`; run `berth plugins lock` to update it
      the cutoff is 2026-11-24 (`exclude-newer = "7 days"` in `plugins.toml`), but the lock was made with 2026-11-17
    "#);
}
