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
    warning: `exclude-newer` held git sources to their commit and tag dates, which are whatever their author wrote (a new commit dated in the past passes the cutoff); have the policy require signed sources (`[sources] require_signed`) to trust them
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
    // `outdated` upgrades under the same cutoff, counted from now: the held-back tag is
    // named, and nothing is outdated.
    berth_snapshot!(ctx.filters(), &mut at(&ctx, NOW, &["plugins", "outdated"]), @r#"
    success: true
    exit_code: 0
    ----- stdout -----
    the 1 plugin is up to date

    ----- stderr -----
       Held back `review` at v1.2.0 (c2d1e36f7c87): v1.3.0 (tagged 2026-12-01) is newer than the cutoff 2026-11-24 (`exclude-newer = "7 days"` in `plugins.toml`)
    warning: `exclude-newer` held git sources to their commit and tag dates, which are whatever their author wrote (a new commit dated in the past passes the cutoff); have the policy require signed sources (`[sources] require_signed`) to trust them
    "#);

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
    warning: `exclude-newer` held git sources to their commit and tag dates, which are whatever their author wrote (a new commit dated in the past passes the cutoff); have the policy require signed sources (`[sources] require_signed`) to trust them
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
    warning: `exclude-newer` held git sources to their commit and tag dates, which are whatever their author wrote (a new commit dated in the past passes the cutoff); have the policy require signed sources (`[sources] require_signed`) to trust them
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

/// A local plugin `tools` whose MCP server `fake` runs `npx -y SPEC`, with this manifest's
/// `exclude-newer`.
fn npx_plugin(ctx: &TestContext, spec: &str) {
    let dir = ctx.work.join("tools");
    std::fs::create_dir_all(dir.join(".claude-plugin")).expect("mkdir");
    std::fs::write(
        dir.join(".claude-plugin/plugin.json"),
        "{\"name\": \"tools\", \"version\": \"1.0.0\"}\n",
    )
    .expect("write");
    let servers =
        serde_json::json!({"mcpServers": {"fake": {"command": "npx", "args": ["-y", spec]}}});
    std::fs::write(dir.join(".mcp.json"), servers.to_string()).expect("write");
    ctx.write_manifest("exclude-newer = \"7 days\"\n\n[[plugin]]\nsource = \"./tools\"\n");
}

/// A registry on 127.0.0.1 with `fake-dep` 1.0.0 and `fake-mcp` 1.0.0 published a month
/// ago and `fake-mcp` 1.1.0 published today.
fn dated_registry(ctx: &TestContext) -> common::npm::Registry {
    let mut registry = common::npm::Registry::start(&ctx.root.join("npm"));
    let dep = [("index.js", "module.exports = { who: 'fake-dep' };\n")];
    registry.publish_at(
        MONTH_AGO,
        "fake-dep",
        "1.0.0",
        serde_json::json!({"main": "index.js"}),
        &dep,
    );
    for (time, version) in [(MONTH_AGO, "1.0.0"), (NOW, "1.1.0")] {
        registry.publish_at(
            time,
            "fake-mcp",
            version,
            serde_json::json!({"bin": {"fake-mcp": "bin/server.js"}, "dependencies": {"fake-dep": "^1.0.0"}}),
            &[("bin/server.js", "#!/usr/bin/env node\n")],
        );
    }
    registry
}

#[test]
fn an_npm_version_published_today_is_held_back_and_an_exact_one_refused() {
    if !common::npm::have_node() {
        return;
    }
    let ctx = TestContext::new();
    let registry = dated_registry(&ctx);
    npx_plugin(&ctx, "fake-mcp@^1");
    let run = common::Run::from(
        at(&ctx, NOW, &["plugins", "lock"])
            .env("BERTH_NPM_REGISTRY", registry.url())
            .output()
            .expect("run berth"),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let lock: toml::Value = toml::from_str(&ctx.lock_text()).expect("TOML");
    let payload = &lock["payload"][0];
    assert_eq!(payload["version"].as_str(), Some("1.0.0"), "{payload}");
    assert!(
        run.stderr.contains("Held back `fake-mcp` at 1.0.0 for plugin `tools`: 1.1.0 (published 2026-12-01) is newer than the cutoff 2026-11-24"),
        "{}",
        run.stderr
    );

    npx_plugin(&ctx, "fake-mcp@1.1.0");
    let mut filters = ctx.filters();
    // npm words the date in its own way, and its log file's name changes.
    filters.push((
        r"date before [^.]*\.".to_owned(),
        "date before [DATE].".to_owned(),
    ));
    filters.push((
        r"\[TMP\]/home/\.npm/_logs/[^;]*".to_owned(),
        "[LOG]".to_owned(),
    ));
    berth_snapshot!(filters, at(&ctx, NOW, &["plugins", "lock"]).env("BERTH_NPM_REGISTRY", registry.url()), @r#"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
        Updating `tools` (./tools): its content changed
       Resolving `npx fake-mcp@1.1.0` of plugin `tools`
    error: plugin `tools`, MCP server `fake` (`npx fake-mcp@1.1.0`): `fake-mcp@1.1.0` from `http://127.0.0.1:[PORT]/registry/`: npm could not resolve it: npm error code ETARGET; npm error notarget No matching version found for fake-mcp@1.1.0 with a date before [DATE].; npm error notarget In most cases you or one of your dependencies are requesting a package version that doesn't exist.; npm error A complete log of this run can be found in: [LOG]; nothing it allows was published before the cutoff 2026-11-24 (`exclude-newer = "7 days"`): ask for an older version, or move the cutoff
    "#);
}

/// The fixture index with its wheels under `files/`, every project's page written as PEP
/// 691 JSON with each file's `upload-time` (`time`), and `fake-mcp-server` 0.4.0 built
/// and uploaded at `newest`.
fn dated_index(ctx: &TestContext, time: &str, newest: &str) -> std::path::PathBuf {
    use sha2::Digest as _;
    let served = ctx.root.join("served");
    common::build_agent_index(&served, 0);
    // 0.4.0: the fixture's source at another version, built by the fixture's backend.
    let source = ctx.root.join("fake-mcp-server-0.4.0");
    common::copy_tree(
        &common::fixtures().join("agents/packages/fake-mcp-server"),
        &source,
    );
    let pyproject = source.join("pyproject.toml");
    let text = std::fs::read_to_string(&pyproject).expect("read");
    std::fs::write(
        &pyproject,
        text.replace("version = \"0.3.0\"", "version = \"0.4.0\""),
    )
    .expect("write");
    std::fs::copy(
        common::fixtures().join("agents/minibuild.py"),
        source.join("minibuild.py"),
    )
    .expect("copy backend");
    let built = Command::new("python3")
        .current_dir(&source)
        .env("SOURCE_DATE_EPOCH", "315532800")
        .args([
            "-c",
            "import sys, minibuild; minibuild.build_wheel(sys.argv[1])",
        ])
        .arg(served.join("files"))
        .output()
        .expect("python3");
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let mut projects: std::collections::BTreeMap<String, Vec<serde_json::Value>> =
        Default::default();
    for wheel in common::list_dir(&served.join("files")) {
        let bytes = std::fs::read(served.join("files").join(&wheel)).expect("read wheel");
        let project = wheel
            .split('-')
            .next()
            .expect("name")
            .replace('_', "-")
            .to_lowercase();
        let uploaded = if wheel.starts_with("fake_mcp_server-0.4.0") {
            newest
        } else {
            time
        };
        projects
            .entry(project)
            .or_default()
            .push(serde_json::json!({
                "filename": wheel,
                "url": format!("../../files/{wheel}"),
                "hashes": {"sha256": format!("{:x}", sha2::Sha256::digest(&bytes))},
                "upload-time": uploaded,
            }));
    }
    for (project, files) in projects {
        let page =
            serde_json::json!({"meta": {"api-version": "1.1"}, "name": project, "files": files});
        std::fs::write(
            served.join("simple").join(&project).join("index.json"),
            page.to_string(),
        )
        .expect("write page");
    }
    served
}

#[test]
fn a_wheel_uploaded_today_is_held_back() {
    let uv = std::env::var_os("BERTH_UV").unwrap_or_else(|| "uv".into());
    let found = Command::new(&uv)
        .arg("--version")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).starts_with("uv 0.13.9"));
    if !found {
        common::require_or_skip(
            "uv 0.13.9",
            "install it (`pip install uv==0.13.9`) and set `BERTH_UV` or put it on PATH",
        );
        return;
    }
    let ctx = TestContext::new();
    let served = dated_index(&ctx, MONTH_AGO, NOW);
    let server = common::FileServer::start(&served, None);
    let dir = ctx.work.join("tools");
    std::fs::create_dir_all(dir.join(".claude-plugin")).expect("mkdir");
    std::fs::write(
        dir.join(".claude-plugin/plugin.json"),
        "{\"name\": \"tools\"}\n",
    )
    .expect("write");
    let servers =
        serde_json::json!({"mcpServers": {"py": {"command": "uvx", "args": ["fake-mcp-server"]}}});
    std::fs::write(dir.join(".mcp.json"), servers.to_string()).expect("write");
    ctx.write_manifest("[[plugin]]\nsource = \"./tools\"\n");
    let lock_version = |ctx: &TestContext| {
        let lock: toml::Value = toml::from_str(&ctx.lock_text()).expect("TOML");
        lock["payload"][0]["version"].as_str().map(str::to_owned)
    };
    let lock = |ctx: &TestContext| {
        let run = common::Run::from(
            at(ctx, NOW, &["plugins", "lock"])
                .env("BERTH_INDEX_URL", server.url("simple"))
                .output()
                .expect("run berth"),
        );
        assert_eq!(run.code, 0, "{}", run.stderr);
    };
    // Without a cutoff uv takes the newest: the index does serve 0.4.0.
    lock(&ctx);
    assert_eq!(lock_version(&ctx).as_deref(), Some("0.4.0"));
    ctx.write_manifest("exclude-newer = \"7 days\"\n\n[[plugin]]\nsource = \"./tools\"\n");
    lock(&ctx);
    assert_eq!(
        lock_version(&ctx).as_deref(),
        Some("0.3.0"),
        "uv honours upload-time"
    );
    assert_eq!(
        lock_value(&ctx, "exclude-newer").as_deref(),
        Some("2026-11-24T00:00:00Z")
    );
}

#[test]
fn over_http_a_tag_is_fetched_for_its_date_and_a_shallow_branch_deepened() {
    let ctx = TestContext::new();
    let repo = review_repo(&ctx);
    let old = repo.rev("v1.2.0");
    for day in [
        "2026-11-28T00:00:00Z",
        "2026-11-29T00:00:00Z",
        "2026-11-30T00:00:00Z",
    ] {
        repo.at(day).write("CHANGELOG.md", &format!("{day}\n"));
        repo.commit(day);
    }
    // Served over http, the cache gets depth-1 fetches: the tag's date needs the tag
    // fetched, the branch's older commits need its history deepened.
    let _server = ctx.serve_github_over_http();
    ctx.write_manifest(
        "exclude-newer = \"7 days\"\n\n[[plugin]]\nsource = \"github:acme/review\"\nversion = \"^1\"\n",
    );
    let run = common::Run::from(at(&ctx, NOW, &["plugins", "lock"]).output().expect("run"));
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        lock_field(&ctx.lock_text(), 0, "resolved_ref").as_deref(),
        Some("v1.2.0"),
        "{}",
        run.stderr
    );
    ctx.write_manifest(
        "exclude-newer = \"7 days\"\n\n[[plugin]]\nsource = \"github:acme/review\"\nref = \"main\"\n",
    );
    let run = common::Run::from(at(&ctx, NOW, &["plugins", "lock"]).output().expect("run"));
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        lock_field(&ctx.lock_text(), 0, "rev"),
        Some(old),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("`main` at ") && run.stderr.contains("(committed 2026-11-30)"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_marketplace_s_plugins_follow_the_same_rules() {
    let ctx = TestContext::new();
    let repo = review_repo(&ctx);
    let (old, new) = (repo.rev("v1.2.0"), repo.rev("v1.3.0"));
    let catalog = serde_json::json!({"name": "local", "owner": {"name": "t"}, "plugins": [
        {"name": "review", "source": {"source": "github", "repo": "acme/review"}},
        {"name": "pinned", "source": {"source": "github", "repo": "acme/review", "sha": new}},
    ]});
    std::fs::create_dir_all(ctx.work.join("market/.claude-plugin")).expect("mkdir");
    std::fs::write(
        ctx.work.join("market/.claude-plugin/marketplace.json"),
        catalog.to_string(),
    )
    .expect("write catalog");
    let manifest = |picks: &[&str]| {
        let plugins: String = picks
            .iter()
            .map(|p| format!("\n[[plugin]]\nsource = \"{p}@local\"\n"))
            .collect();
        ctx.write_manifest(&format!(
            "exclude-newer = \"7 days\"\n\n[[marketplace]]\nname = \"local\"\nsource = \"./market\"\n{plugins}"
        ));
    };
    // The entry's default branch is walked back to the commit made before the cutoff.
    manifest(&["review"]);
    let run = common::Run::from(at(&ctx, NOW, &["plugins", "lock"]).output().expect("run"));
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(lock_field(&ctx.lock_text(), 0, "rev"), Some(old));
    // An entry's `sha` made after the cutoff is an exact pin: refused.
    manifest(&["pinned"]);
    let run = common::Run::from(at(&ctx, NOW, &["plugins", "lock"]).output().expect("run"));
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!("commit `{new}` of `"))
            && run.stderr.contains("after the cutoff 2026-11-24"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_dependency_takes_its_newest_tag_made_before_the_cutoff() {
    let ctx = TestContext::new();
    let repo = ctx.repo("market");
    let plugin = |name: &str, version: &str, dependencies: serde_json::Value| {
        repo.write(
            &format!("plugins/{name}/.claude-plugin/plugin.json"),
            &serde_json::json!({"name": name, "version": version, "dependencies": dependencies})
                .to_string(),
        );
        repo.write(
            &format!("plugins/{name}/README.md"),
            &format!("{name} {version}\n"),
        );
    };
    repo.at(MONTH_AGO);
    plugin("shared", "1.0.0", serde_json::json!([]));
    plugin(
        "app",
        "1.0.0",
        serde_json::json!([{"name": "shared", "version": "^1.0"}]),
    );
    let entries: Vec<serde_json::Value> = ["shared", "app"]
        .iter()
        .map(|n| serde_json::json!({"name": n, "source": format!("./plugins/{n}")}))
        .collect();
    repo.write(
        ".claude-plugin/marketplace.json",
        &serde_json::json!({"name": "acme", "plugins": entries}).to_string(),
    );
    repo.commit("shared 1.0.0 and the catalog");
    repo.tag("shared--v1.0.0");
    repo.at(NOW);
    plugin("shared", "1.2.0", serde_json::json!([]));
    repo.commit("shared 1.2.0");
    repo.tag("shared--v1.2.0");
    ctx.write_manifest(
        "exclude-newer = \"7 days\"\n\n[[marketplace]]\nname = \"acme\"\nsource = \"github:acme/market\"\n\n[[plugin]]\nsource = \"app@acme\"\n",
    );
    let run = common::Run::from(at(&ctx, NOW, &["plugins", "lock"]).output().expect("run"));
    assert_eq!(run.code, 0, "{}", run.stderr);
    let lock = ctx.lock_text();
    assert_eq!(lock_field(&lock, 0, "name").as_deref(), Some("shared"));
    assert_eq!(
        lock_field(&lock, 0, "ref").as_deref(),
        Some("shared--v1.0.0"),
        "{lock}"
    );
    assert!(
        run.stderr.contains("Held back `shared@acme` at shared--v1.0.0: shared--v1.2.0 is newer than the cutoff 2026-11-24"),
        "{}",
        run.stderr
    );
}

/// `berth serve --policy` applies the policy's `exclude-newer` to the conversations it
/// locks: `main` resolves to its newest commit made before the cutoff.
#[test]
fn the_server_locks_conversations_under_the_policy_s_cutoff() {
    let ctx = TestContext::new();
    let repo = review_repo(&ctx);
    let held = repo.rev("v1.2.0");
    let newest = repo.rev("v1.3.0");
    let policy = ctx.root.join("policy/berth-policy.toml");
    std::fs::create_dir_all(policy.parent().expect("folder")).expect("mkdir");
    std::fs::write(&policy, "exclude-newer = \"7 days\"\n").expect("write policy");
    let mut cmd = at(
        &ctx,
        NOW,
        &["serve", "--addr", "127.0.0.1:0", "--allow-local-sources"],
    );
    cmd.arg("--policy")
        .arg(&policy)
        .arg("--data-dir")
        .arg(ctx.root.join("data"));
    let server = common::ServeProcess::start(cmd);
    let (status, answer) =
        server.post(&serde_json::json!({"plugins": [{"source": repo.url(), "ref": "main"}]}));
    assert_eq!(status, 201, "{answer}");
    let answer: serde_json::Value = serde_json::from_str(&answer).expect("JSON");
    let lock = answer["lockfile"].as_str().expect("lockfile");
    assert!(lock.contains(&held), "{lock}");
    assert!(!lock.contains(&newest), "{lock}");
    // The lock it made is taken back as it is; one made without the cutoff is refused.
    let (status, again) = server.post(&serde_json::json!({"lockfile": lock}));
    assert_eq!(status, 201, "{again}");
    ctx.write_manifest(&format!(
        "[[plugin]]\nsource = \"{}\"\nref = \"main\"\n",
        repo.url()
    ));
    assert!(
        at(&ctx, NOW, &["plugins", "lock"])
            .status()
            .expect("run")
            .success()
    );
    let (status, refused) = server.post(&serde_json::json!({"lockfile": ctx.lock_text()}));
    assert_eq!(status, 403, "{refused}");
    assert!(
        refused.contains("policy_denied")
            && refused.contains("the lockfile was made without the release-age cutoff"),
        "{refused}"
    );
    server.stop();
}

/// What reads a lock as it is (`show`, `sync --frozen`) refuses one made without the
/// policy's cutoff, or under a later one, and `lock` mends it.
#[test]
fn a_lock_made_without_the_policy_s_cutoff_is_refused_where_it_is_read() {
    let ctx = TestContext::new();
    review_repo(&ctx);
    ctx.write_manifest("[[plugin]]\nsource = \"github:acme/review\"\nversion = \"^1\"\n");
    assert!(
        at(&ctx, NOW, &["plugins", "sync"])
            .status()
            .expect("run")
            .success()
    );
    assert_eq!(
        lock_field(&ctx.lock_text(), 0, "resolved_ref").as_deref(),
        Some("v1.3.0")
    );
    let policy = ctx.work.join("berth-policy.toml");
    std::fs::write(&policy, "exclude-newer = \"7 days\"\n").expect("write policy");
    for args in [&["plugins", "show"][..], &["plugins", "sync", "--frozen"]] {
        let refused = common::Run::from(at(&ctx, NOW, args).output().expect("run"));
        assert_eq!(refused.code, 1, "{args:?}: {}", refused.stderr);
        assert!(
            refused.stderr.contains(
                "`plugins.lock` was made without the release-age cutoff `berth-policy.toml` asks (`exclude-newer = \"7 days\"`: nothing released at or after 2026-11-24); run `berth plugins lock`"
            ),
            "{args:?}: {}",
            refused.stderr
        );
    }
    assert!(
        at(&ctx, NOW, &["plugins", "lock"])
            .status()
            .expect("run")
            .success()
    );
    assert_eq!(
        lock_field(&ctx.lock_text(), 0, "resolved_ref").as_deref(),
        Some("v1.2.0")
    );
    assert!(
        at(&ctx, NOW, &["plugins", "show"])
            .status()
            .expect("run")
            .success()
    );
    // A later day: the recorded cutoff is still at or before the policy's.
    assert!(
        at(&ctx, "2026-12-20T00:00:00Z", &["plugins", "show"])
            .status()
            .expect("run")
            .success()
    );
    // A policy whose cutoff is earlier than the one the lock was made under.
    std::fs::write(&policy, "exclude-newer = \"2026-11-10\"\n").expect("write policy");
    let later = common::Run::from(at(&ctx, NOW, &["plugins", "show"]).output().expect("run"));
    assert_eq!(later.code, 1, "{}", later.stderr);
    assert!(
        later
            .stderr
            .contains("was made under the cutoff 2026-11-24, later than the release-age cutoff"),
        "{}",
        later.stderr
    );
}
