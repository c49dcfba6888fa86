//! Marketplaces: `[[marketplace]]` declarations, `PLUGIN@MARKETPLACE` requests, and the lock
//! that pins both the marketplace (commit, catalog hash) and each plugin (its own pin).
//! Every marketplace here is a git repository built at test time, with entries of every
//! source form berth fetches: a relative folder, `github`, `url`, `git-subdir`, `archive`.

mod common;

use common::{FileServer, GitRepo, Run, TestContext, copy_tree, lock_field, lock_plugins};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// A plugin folder's files: a manifest naming it and one skill.
fn plugin(repo: &GitRepo, dir: &str, name: &str, body: &str) {
    let prefix = if dir.is_empty() {
        String::new()
    } else {
        format!("{dir}/")
    };
    repo.write(
        &format!("{prefix}.claude-plugin/plugin.json"),
        &format!("{{\"name\": \"{name}\", \"version\": \"1.0.0\"}}\n"),
    );
    repo.write(
        &format!("{prefix}skills/{name}-skill/SKILL.md"),
        &format!("---\nname: {name}-skill\ndescription: {body}\n---\n{body}\n"),
    );
}

struct Market {
    ctx: TestContext,
    market: GitRepo,
    gh: GitRepo,
    _files: FileServer,
    /// The `sha` the catalog gives for `gh`.
    gh_v1: String,
    urlrepo: GitRepo,
    archive_entry: String,
}

/// Builds `acme/market` and the repositories and archive its entries point to.
fn market() -> Market {
    let ctx = TestContext::new();
    let gh = ctx.repo("gh");
    plugin(&gh, "", "gh", "from github v1");
    let gh_v1 = gh.commit("v1");
    // `main` moves on; the catalog's `sha` keeps v1.
    plugin(&gh, "", "gh", "from github v2 on main");
    gh.commit("v2");

    let urlrepo = ctx.repo("urlrepo");
    plugin(&urlrepo, "", "byurl", "from a git url");
    plugin(&urlrepo, "plugins/sub", "sub", "from a git subdirectory");
    urlrepo.commit("two plugins");
    urlrepo.tag("v1");

    let served = ctx.root.join("served");
    let arc_src = ctx.root.join("arc-src");
    std::fs::create_dir_all(&arc_src).expect("mkdir");
    let scratch = GitRepo::init(&ctx.root.join("arc-repo"), &ctx.home);
    plugin(&scratch, "", "arc", "from an archive");
    copy_tree(
        &scratch.path.join(".claude-plugin"),
        &arc_src.join(".claude-plugin"),
    );
    copy_tree(&scratch.path.join("skills"), &arc_src.join("skills"));
    std::fs::create_dir_all(&served).expect("mkdir");
    let tgz = common::tar_gz(&arc_src, "arc-1.0");
    let sha = format!("{:x}", Sha256::digest(&tgz));
    std::fs::write(served.join("arc-1.0.tar.gz"), &tgz).expect("write");
    // A static npm registry: documents under `registry/`, tarballs under `tarballs/`.
    let npm_src = ctx.root.join("npm-src");
    let scratch = GitRepo::init(&ctx.root.join("npm-repo"), &ctx.home);
    plugin(&scratch, "", "npmtools", "from an npm package");
    copy_tree(
        &scratch.path.join(".claude-plugin"),
        &npm_src.join(".claude-plugin"),
    );
    copy_tree(&scratch.path.join("skills"), &npm_src.join("skills"));
    let npm_tgz = common::tar_gz(&npm_src, "package");
    std::fs::create_dir_all(served.join("registry")).expect("mkdir");
    std::fs::create_dir_all(served.join("tarballs")).expect("mkdir");
    std::fs::write(served.join("tarballs/tools-1.2.0.tgz"), &npm_tgz).expect("write");
    std::fs::write(served.join("tarballs/tools-2.0.0.tgz"), &npm_tgz).expect("write");
    let files = FileServer::start(&served, None);
    let integrity = |bytes: &[u8]| {
        format!(
            "sha512-{}",
            base64::Engine::encode(
                &base64::engine::general_purpose::STANDARD,
                sha2::Sha512::digest(bytes)
            )
        )
    };
    let version = |v: &str, integrity: &str| {
        serde_json::json!({"name": "tools", "version": v, "dist": {
            "tarball": files.url(&format!("tarballs/tools-{v}.tgz")),
            "integrity": integrity,
            "shasum": "0000000000000000000000000000000000000000"
        }})
    };
    let good = integrity(&npm_tgz);
    let document = serde_json::json!({
        "name": "tools",
        "dist-tags": {"latest": "2.0.0"},
        "versions": {"1.2.0": version("1.2.0", &good), "2.0.0": version("2.0.0", &good)}
    });
    std::fs::write(served.join("registry/tools"), document.to_string()).expect("write");
    // `badtools` says its tarball has other bytes than it has.
    let bad = serde_json::json!({
        "name": "badtools",
        "dist-tags": {"latest": "1.2.0"},
        "versions": {"1.2.0": version("1.2.0", &integrity(b"other bytes"))}
    });
    std::fs::write(served.join("registry/badtools"), bad.to_string()).expect("write");
    let registry = files.url("registry");
    let archive_entry = format!(
        r#"{{"name": "arc", "source": {{"source": "archive", "url": "{}", "sha256": "{sha}"}}}},
    {{"name": "npmtools", "source": {{"source": "npm", "package": "tools", "version": "^1.0.0", "registry": "{registry}"}}}},
    {{"name": "npmbad", "source": {{"source": "npm", "package": "badtools", "registry": "{registry}"}}}}"#,
        files.url("arc-1.0.tar.gz")
    );

    let market = ctx.repo("market");
    plugin(&market, "plugins/rel", "rel", "from the marketplace itself");
    market.write("README.md", "a marketplace\n");
    let m = Market {
        ctx,
        market,
        gh,
        _files: files,
        gh_v1,
        urlrepo,
        archive_entry,
    };
    m.write_catalog(&m.gh_v1.clone());
    m.market.commit("catalog");
    m
}

impl Market {
    fn write_catalog(&self, gh_sha: &str) {
        let url = self.urlrepo.url();
        self.market.write(
            ".claude-plugin/marketplace.json",
            &format!(
                r#"{{
  "name": "acme-market",
  "owner": {{"name": "Acme"}},
  "metadata": {{"pluginRoot": "./plugins"}},
  "plugins": [
    {{"name": "rel", "source": "./rel", "description": "relative"}},
    {{"name": "gh", "source": {{"source": "github", "repo": "acme/gh", "ref": "main", "sha": "{gh_sha}"}}}},
    {{"name": "byurl", "source": {{"source": "url", "url": "{url}", "ref": "v1"}}}},
    {{"name": "sub", "source": {{"source": "git-subdir", "url": "{url}", "path": "plugins/sub", "ref": "v1"}}}},
    {archive},
    {{"name": "odd", "source": {{"source": "svn", "url": "svn://x"}}}},
    {{"name": "twice", "source": "./rel"}},
    {{"name": "twice", "source": "./rel"}},
    {{"name": "escape", "source": "../../etc"}},
    {{"name": "loose", "source": "./rel", "strict": false, "skills": ["./skills/rel-skill"], "lspServers": {{"x": {{"command": "x-lsp"}}}}}}
  ]
}}
"#,
                archive = self.archive_entry
            ),
        );
    }
}

const ALL: [&str; 6] = ["rel", "gh", "byurl", "sub", "arc", "npmtools"];

fn manifest(plugins: &[&str]) -> String {
    let mut text = String::from(
        "# team plugins\n[[marketplace]]\nname = \"acme\"\nsource = \"github:acme/market\"\n\n",
    );
    for p in plugins {
        text.push_str(&format!("[[plugin]]\nsource = \"{p}@acme\"\n\n"));
    }
    text
}

fn marketplace_of(lock: &str) -> toml::Value {
    let value: toml::Value = toml::from_str(lock).expect("lockfile is TOML");
    value["marketplace"].as_array().expect("marketplaces")[0].clone()
}

#[test]
fn lock_sync_and_show_a_marketplace_of_every_source_form() {
    let m = market();
    let ctx = &m.ctx;
    ctx.write_manifest(&manifest(&ALL));
    ctx.ok(&["plugins", "lock"]);
    let lock = ctx.lock_text();

    let market = marketplace_of(&lock);
    assert_eq!(market["name"].as_str(), Some("acme"));
    assert_eq!(market["rev"].as_str(), Some(m.market.head().as_str()));
    assert_eq!(
        market["catalog"].as_str(),
        Some(".claude-plugin/marketplace.json")
    );
    let catalog =
        std::fs::read(m.market.path.join(".claude-plugin/marketplace.json")).expect("read");
    let expected_hash = format!(
        "sha256-{}",
        base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            Sha256::digest(&catalog)
        )
    );
    assert_eq!(
        market["catalog_hash"].as_str(),
        Some(expected_hash.as_str())
    );

    let plugins = lock_plugins(&lock);
    let field = |i: usize, key: &str| {
        plugins[i]
            .get(key)
            .and_then(|v| v.as_str())
            .map(str::to_owned)
    };
    for (i, name) in ALL.iter().enumerate() {
        assert_eq!(field(i, "name").as_deref(), Some(*name), "{lock}");
        assert_eq!(
            field(i, "requested"),
            Some(format!("{name}@acme")),
            "{lock}"
        );
    }
    // relative: the marketplace's own repository at its locked commit, in `pluginRoot`.
    assert_eq!(field(0, "source").as_deref(), Some("github:acme/market"));
    assert_eq!(field(0, "ref"), Some(m.market.head()));
    assert_eq!(field(0, "rev"), Some(m.market.head()));
    assert_eq!(field(0, "repo_path").as_deref(), Some("plugins/rel"));
    // github: `sha` wins over `ref`.
    assert_eq!(field(1, "source").as_deref(), Some("github:acme/gh"));
    assert_eq!(field(1, "rev"), Some(m.gh_v1.clone()));
    // url and git-subdir: the tag `v1` of the same repository.
    assert_eq!(field(2, "rev"), Some(m.urlrepo.rev("v1")));
    assert_eq!(field(3, "rev"), Some(m.urlrepo.rev("v1")));
    assert_eq!(field(3, "repo_path").as_deref(), Some("plugins/sub"));
    // archive: the catalog's sha256 is the locked archive hash.
    assert!(field(4, "archive_hash").is_some(), "{lock}");
    // npm: the range picks 1.2.0 (not `latest`), its tarball checked against the registry.
    assert!(
        field(5, "source").is_some_and(|s| s.ends_with("/tarballs/tools-1.2.0.tgz")),
        "{lock}"
    );
    assert!(field(5, "archive_hash").is_some(), "{lock}");

    ctx.ok(&["plugins", "sync"]);
    let set: Value =
        serde_json::from_str(&ctx.ok(&["plugins", "show", "--json"]).stdout).expect("JSON");
    let names: Vec<&str> = set["plugins"]
        .as_array()
        .expect("plugins")
        .iter()
        .map(|p| p["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, ALL);
    let skills = serde_json::to_string(&set["skills"]).expect("skills");
    assert!(
        skills.contains("from github v1"),
        "sha wins over ref: {skills}"
    );
    assert!(!skills.contains("v2 on main"), "{skills}");
    assert!(skills.contains("from an archive"), "{skills}");
    assert!(skills.contains("from an npm package"), "{skills}");

    // Byte-identical from another folder with another store.
    let other = ctx.root.join("other");
    std::fs::create_dir_all(&other).expect("mkdir");
    std::fs::write(other.join("plugins.toml"), manifest(&ALL)).expect("write");
    let run = Run::from(
        ctx.berth()
            .current_dir(&other)
            .env("BERTH_STORE", ctx.root.join("store2"))
            .args(["plugins", "lock"])
            .output()
            .expect("run"),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        std::fs::read_to_string(other.join("plugins.lock")).expect("read"),
        lock
    );

    // The marketplace repository gone: a frozen, offline sync never reads it.
    std::fs::remove_dir_all(&m.market.path).expect("delete the marketplace");
    ctx.ok(&["plugins", "sync", "--frozen", "--offline"]);
    ctx.ok(&["plugins", "lock", "--check"]);
    assert_eq!(ctx.lock_text(), lock);
}

#[test]
fn a_moved_entry_changes_only_its_plugin_on_upgrade() {
    let m = market();
    let ctx = &m.ctx;
    ctx.write_manifest(&manifest(&ALL));
    ctx.ok(&["plugins", "lock"]);
    let before = ctx.lock_text();

    // The marketplace moves `gh` to the newer commit.
    let v2 = m.gh.head();
    m.write_catalog(&v2);
    m.market.commit("gh to v2");

    ctx.ok(&["plugins", "lock", "--check"]);
    ctx.ok(&["plugins", "lock"]);
    assert_eq!(ctx.lock_text(), before, "lock keeps the pinned marketplace");

    ctx.ok(&["plugins", "lock", "--upgrade"]);
    let after = ctx.lock_text();
    assert_eq!(
        marketplace_of(&after)["rev"].as_str(),
        Some(m.market.head().as_str())
    );
    let (old, new) = (lock_plugins(&before), lock_plugins(&after));
    assert_eq!(old.len(), new.len());
    for (i, name) in ALL.iter().enumerate() {
        if *name == "gh" {
            assert_eq!(new[i]["rev"].as_str(), Some(v2.as_str()));
            assert_ne!(old[i]["hash"], new[i]["hash"]);
        } else {
            assert_eq!(old[i], new[i], "`{name}` did not change and keeps its pin");
        }
    }
    ctx.ok(&["plugins", "sync"]);
    let set: Value =
        serde_json::from_str(&ctx.ok(&["plugins", "show", "--json"]).stdout).expect("JSON");
    assert!(
        serde_json::to_string(&set["skills"])
            .expect("json")
            .contains("v2 on main")
    );
}

#[test]
fn a_marketplace_that_rewrote_its_history_fails_sync_with_both_hashes() {
    let m = market();
    let ctx = &m.ctx;
    ctx.write_manifest(&manifest(&["rel"]));
    ctx.ok(&["plugins", "lock"]);
    let locked_hash = marketplace_of(&ctx.lock_text())["catalog_hash"]
        .as_str()
        .expect("hash")
        .to_owned();

    // The same name, a new history.
    std::fs::remove_dir_all(&m.market.path).expect("delete");
    let again = ctx.repo("market");
    plugin(&again, "plugins/rel", "rel", "rewritten");
    again.write(
        ".claude-plugin/marketplace.json",
        r#"{"name": "acme-market", "plugins": [{"name": "rel", "source": "./plugins/rel"}]}"#,
    );
    again.commit("rewritten");
    let now_hash = format!(
        "sha256-{}",
        base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            Sha256::digest(
                std::fs::read(again.path.join(".claude-plugin/marketplace.json")).expect("read")
            )
        )
    );

    let run = Run::from(
        ctx.berth()
            .env("BERTH_STORE", ctx.root.join("fresh-store"))
            .args(["plugins", "sync"])
            .output()
            .expect("run"),
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    let errors = run.errors().join("\n");
    assert!(errors.contains("marketplace `acme`"), "{errors}");
    assert!(errors.contains("history was rewritten"), "{errors}");
    assert!(errors.contains(&locked_hash), "{errors}");
    assert!(errors.contains(&now_hash), "{errors}");
    assert!(errors.contains(&again.head()), "{errors}");
    assert!(
        !ctx.root.join("fresh-store/store-v1").exists()
            || common::list_dir(&ctx.root.join("fresh-store/store-v1")).is_empty(),
        "nothing was added"
    );
}

#[test]
fn bad_entries_fail_with_one_error_naming_marketplace_and_entry() {
    let m = market();
    let ctx = &m.ctx;
    for (plugin, needle) in [
        ("odd", "unknown kind `svn`"),
        ("twice", "more than once"),
        ("escape", "`..`"),
        ("nope", "lists no plugin `nope`"),
    ] {
        ctx.write_manifest(&manifest(&[plugin]));
        let run = ctx.run(&["plugins", "lock"]);
        assert_eq!(run.code, 1, "{plugin}: {}", run.stderr);
        let errors = run.errors();
        assert_eq!(errors.len(), 1, "{plugin}: {errors:?}");
        assert!(errors[0].contains("marketplace `acme`"), "{}", errors[0]);
        assert!(errors[0].contains(needle), "{plugin}: {}", errors[0]);
        assert!(!ctx.lock_path().exists(), "nothing written");
    }

    // A catalog that is not JSON: one error naming the marketplace and its file.
    m.market
        .write(".claude-plugin/marketplace.json", "{ \"plugins\": [ oops");
    m.market.commit("broken");
    ctx.write_manifest(&manifest(&["rel"]));
    let run = ctx.run(&["plugins", "lock"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let errors = run.errors();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].contains("`.claude-plugin/marketplace.json` of marketplace `acme`")
            && errors[0].contains("not valid JSON"),
        "{}",
        errors[0]
    );

    // A plugin of an undeclared marketplace names what to do.
    ctx.write_manifest("[[plugin]]\nsource = \"rel@elsewhere\"\n");
    let run = ctx.run(&["plugins", "lock"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("berth marketplace add elsewhere"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_local_marketplace_gives_local_plugins() {
    let ctx = TestContext::new();
    let market = GitRepo::init(&ctx.work.join("market"), &ctx.home);
    plugin(&market, "plugins/tools", "tools", "local tools");
    market.write(
        ".plugin/marketplace.json",
        r#"{"name": "here", "plugins": [{"name": "tools", "source": "./plugins/tools"}]}"#,
    );
    ctx.write_manifest(
        "[[marketplace]]\nname = \"here\"\nsource = \"./market\"\n\n[[plugin]]\nsource = \"tools@here\"\n",
    );
    ctx.ok(&["plugins", "lock"]);
    let lock = ctx.lock_text();
    assert_eq!(
        lock_field(&lock, 0, "source").as_deref(),
        Some("./market/plugins/tools")
    );
    assert_eq!(
        lock_field(&lock, 0, "requested").as_deref(),
        Some("tools@here")
    );
    assert_eq!(
        marketplace_of(&lock)["catalog"].as_str(),
        Some(".plugin/marketplace.json")
    );
    assert!(marketplace_of(&lock).get("rev").is_none());
    ctx.ok(&["plugins", "sync"]);
    ctx.ok(&["plugins", "lock", "--check"]);
}

#[test]
fn marketplace_add_list_and_plugins_add_edit_the_manifest_and_lock() {
    let m = market();
    let ctx = &m.ctx;
    let start = "# our plugins\n\n[[plugin]]  # the house rules\nsource = \"./house\"\n";
    let house = GitRepo::init(&ctx.work.join("house"), &ctx.home);
    plugin(&house, "", "house", "house rules");
    ctx.write_manifest(start);

    // A source without a catalog changes nothing.
    let run = ctx.run(&["marketplace", "add", "nocat", "github:acme/gh"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("has no catalog"), "{}", run.stderr);
    assert_eq!(
        std::fs::read_to_string(ctx.manifest_path()).expect("read"),
        start
    );
    assert!(!ctx.lock_path().exists());

    ctx.ok(&[
        "marketplace",
        "add",
        "acme",
        "github:acme/market",
        "--ref",
        "main",
    ]);
    let text = std::fs::read_to_string(ctx.manifest_path()).expect("read");
    assert!(text.starts_with(start), "comments and layout kept:\n{text}");
    assert!(
        text.ends_with(
            "\n[[marketplace]]\nname = \"acme\"\nsource = \"github:acme/market\"\nref = \"main\"\n"
        ),
        "{text}"
    );
    assert_eq!(
        marketplace_of(&ctx.lock_text())["rev"].as_str(),
        Some(m.market.head().as_str())
    );
    let again = ctx.run(&["marketplace", "add", "acme", "./elsewhere"]);
    assert_eq!(again.code, 1);
    assert!(
        again.stderr.contains("already declared"),
        "{}",
        again.stderr
    );

    let listed = ctx.ok(&["marketplace", "list", "acme"]).stdout;
    assert!(listed.contains("gh@acme"), "{listed}");
    assert!(listed.contains("rel@acme"), "{listed}");
    assert!(
        listed
            .lines()
            .any(|l| l.contains("odd@acme") && l.contains("unusable")),
        "{listed}"
    );
    let json: Value =
        serde_json::from_str(&ctx.ok(&["marketplace", "list", "acme", "--json"]).stdout)
            .expect("JSON");
    assert_eq!(json["rev"].as_str(), Some(m.market.head().as_str()));
    let rel = json["plugins"]
        .as_array()
        .expect("plugins")
        .iter()
        .find(|p| p["name"] == "rel")
        .expect("rel");
    assert_eq!(rel["repo_path"], "plugins/rel");
    assert_eq!(rel["description"], "relative");

    ctx.ok(&["plugins", "add", "gh@acme"]);
    let text = std::fs::read_to_string(ctx.manifest_path()).expect("read");
    assert!(
        text.contains("[[plugin]]\nsource = \"gh@acme\"\n"),
        "{text}"
    );
    let lock = ctx.lock_text();
    assert_eq!(lock_field(&lock, 1, "name").as_deref(), Some("gh"));
    assert_eq!(lock_field(&lock, 1, "rev"), Some(m.gh_v1.clone()));
    ctx.ok(&["plugins", "sync", "--frozen"]);
    ctx.ok(&["plugins", "lock", "--check"]);

    // `plugins update gh` reads the marketplace again and moves only `gh`.
    let v2 = m.gh.head();
    m.write_catalog(&v2);
    m.market.commit("gh to v2");
    ctx.ok(&["plugins", "update", "gh"]);
    let after = ctx.lock_text();
    assert_eq!(lock_field(&after, 1, "rev"), Some(v2));
    assert_eq!(lock_plugins(&after)[0], lock_plugins(&lock)[0]);
}

#[test]
fn an_npm_tarball_that_differs_from_its_registry_integrity_is_refused() {
    let m = market();
    let ctx = &m.ctx;
    ctx.write_manifest(&manifest(&["npmbad"]));
    let run = ctx.run(&["plugins", "lock"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let errors = run.errors();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].contains("npm package `badtools@1.2.0`")
            && errors[0].contains("does not match the registry's integrity")
            && errors[0].contains("expected `sha512-"),
        "{}",
        errors[0]
    );
    assert!(!ctx.lock_path().exists(), "no lock written");
    for dir in ["store-v1", "archives-v1"] {
        let path = ctx.store.join(dir);
        assert!(
            !path.exists() || common::list_dir(&path).is_empty(),
            "nothing in `{dir}`"
        );
    }
}

/// Runs `berth serve` expecting it to refuse to start; fails the test if it is still
/// running after 60 s.
fn serve_refuses(ctx: &TestContext, args: &[&str]) -> String {
    let mut child = ctx
        .berth()
        .args(["serve", "--addr", "127.0.0.1:0", "--data-dir"])
        .arg(ctx.root.join("refused-data"))
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start berth serve");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            assert!(!status.success(), "berth serve {args:?} started");
            break;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("berth serve {args:?} is running; it should have refused to start");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr"), &mut stderr)
        .expect("read stderr");
    stderr
}

fn serve(ctx: &TestContext, data: &str, args: &[&str]) -> common::ServeProcess {
    let mut cmd = ctx.berth();
    cmd.args(["serve", "--addr", "127.0.0.1:0", "--data-dir"])
        .arg(ctx.root.join(data))
        .args(args);
    common::ServeProcess::start(cmd)
}

#[test]
fn the_server_takes_plugins_of_registered_marketplaces_and_checks_where_they_point() {
    let m = market();
    let ctx = &m.ctx;

    // A remote marketplace must pass the policy (here `github:` is a `file://` URL).
    let refused = serve_refuses(ctx, &["--marketplace", "acme=github:acme/market"]);
    assert!(
        refused.contains("--marketplace acme=github:acme/market") && refused.contains("file://"),
        "{refused}"
    );

    // With local sources allowed: picks resolve, and the lock pins both levels.
    let server = serve(
        ctx,
        "data",
        &[
            "--allow-local-sources",
            "--marketplace",
            "acme=github:acme/market#main",
        ],
    );
    let (status, body) = server.post(&serde_json::json!({"plugins": [
        {"source": "rel@acme"}, {"source": "gh@acme"}
    ]}));
    assert_eq!(status, 201, "{body}");
    let id = serde_json::from_str::<Value>(&body).expect("JSON")["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let (status, lock) = server.get(&format!("/api/conversations/{id}/lockfile"));
    assert_eq!(status, 200, "{lock}");
    assert_eq!(
        marketplace_of(&lock)["rev"].as_str(),
        Some(m.market.head().as_str())
    );
    assert_eq!(
        lock_field(&lock, 0, "requested").as_deref(),
        Some("rel@acme")
    );
    assert_eq!(lock_field(&lock, 1, "rev"), Some(m.gh_v1.clone()));
    let (status, body) = server.post(&serde_json::json!({"plugins": [{"source": "rel@nope"}]}));
    assert_eq!(status, 400, "{body}");
    assert!(
        body.contains("no marketplace `nope`") && body.contains("`acme`"),
        "{body}"
    );
    drop(server);

    // Local sources off: an operator's local marketplace serves its own folders, but
    // an entry pointing at another local path or a `file://` repository is refused.
    let here = GitRepo::init(&ctx.root.join("here"), &ctx.home);
    plugin(&here, "plugins/tools", "tools", "the operator's tools");
    let elsewhere = ctx.root.join("elsewhere");
    copy_tree(&here.path.join("plugins/tools"), &elsewhere);
    here.write(
        ".plugin/marketplace.json",
        &serde_json::json!({"name": "here", "plugins": [
            {"name": "tools", "source": "./plugins/tools"},
            {"name": "abs", "source": elsewhere.display().to_string()},
            {"name": "viaurl", "source": {"source": "url", "url": m.urlrepo.url()}}
        ]})
        .to_string(),
    );
    let market_arg = format!("here={}", here.path.display());
    let server = serve(ctx, "data2", &["--marketplace", &market_arg]);
    let (status, body) = server.post(&serde_json::json!({"plugins": [{"source": "tools@here"}]}));
    assert_eq!(status, 201, "{body}");
    for (pick, needle) in [("abs@here", "local folder"), ("viaurl@here", "file://")] {
        let (status, body) = server.post(&serde_json::json!({"plugins": [{"source": pick}]}));
        assert_eq!(status, 403, "{pick}: {body}");
        let body: Value = serde_json::from_str(&body).expect("JSON");
        let message = body["error"]["message"].as_str().expect("message");
        assert!(message.contains(needle), "{pick}: {message}");
    }
}

#[test]
fn a_strict_false_entry_loads_its_folder_as_the_sdk_does_and_says_what_it_ignores() {
    let m = market();
    let ctx = &m.ctx;
    ctx.write_manifest(&manifest(&["loose"]));
    let run = ctx.ok(&["plugins", "lock"]);
    assert!(
        run.stderr.contains(
            "plugin `loose`: its entry defines `skills`, `lspServers` itself (`strict: false`)"
        ) && run.stderr.contains("as the OpenHands SDK does"),
        "{}",
        run.stderr
    );
    let lock = ctx.lock_text();
    assert_eq!(
        lock_field(&lock, 0, "requested").as_deref(),
        Some("loose@acme")
    );
    assert_eq!(
        lock_field(&lock, 0, "repo_path").as_deref(),
        Some("plugins/rel")
    );
    ctx.ok(&["plugins", "sync"]);
}
