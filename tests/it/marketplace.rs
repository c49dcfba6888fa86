//! Marketplaces: `[[marketplace]]` declarations, `PLUGIN@MARKETPLACE` requests, and the lock
//! that pins both the marketplace (commit, catalog hash) and each plugin (its own pin).
//! Every marketplace here is a git repository built at test time, with entries of every
//! source form berth fetches: a relative folder, `github`, `url`, `git-subdir`, `archive`.

use crate::common;

use common::market::{ALL, manifest, market, marketplace_of, plugin};
use common::{GitRepo, Run, TestContext, lock_field, lock_plugins};
use serde_json::Value;
use sha2::{Digest, Sha256};

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
    // The catalog names servers on ports the system chose, so its commit differs per run.
    let locked_rev = marketplace_of(&ctx.lock_text())["rev"]
        .as_str()
        .expect("rev")
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

    // Both hashes and the new commit are named, each shown by what it is.
    let mut filters = ctx.filters();
    filters.push((regex::escape(&locked_hash), "[LOCKED HASH]".to_owned()));
    filters.push((regex::escape(&now_hash), "[NEW HASH]".to_owned()));
    filters.push((again.head(), "[NEW COMMIT]".to_owned()));
    filters.push((locked_rev, "[LOCKED COMMIT]".to_owned()));
    berth_snapshot!(
        filters,
        ctx.berth()
            .env("BERTH_STORE", ctx.root.join("fresh-store"))
            .args(["plugins", "sync"]),
        @r#"
        success: false
        exit_code: 1
        ----- stdout -----

        ----- stderr -----
        error: plugin `rel`: marketplace `acme` no longer has the locked commit `[LOCKED COMMIT]` (catalog `[LOCKED HASH]`): its history was rewritten. Its default branch now points at `[NEW COMMIT]`, whose catalog is `[NEW HASH]`. Check the marketplace, then run `berth plugins lock --upgrade-plugin acme` to accept it
        "#
    );
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
    let mut seen = String::new();
    for plugin in ["odd", "twice", "escape", "nope"] {
        ctx.write_manifest(&manifest(&[plugin]));
        let run = ctx.run(&["plugins", "lock"]);
        assert_eq!(run.code, 1, "{plugin}: {}", run.stderr);
        let errors = run.errors();
        assert_eq!(errors.len(), 1, "{plugin}: {errors:?}");
        seen.push_str(&format!("{plugin}: {}\n", errors[0]));
        assert!(!ctx.lock_path().exists(), "nothing written");
    }
    insta::assert_snapshot!(seen, @r#"
    odd: error: plugins.toml:7: `odd@acme`: marketplace `acme`, plugin `odd`: its entry has a source of unknown kind `svn` (berth reads `github`, `url`, `git-subdir`, `archive`, `npm` and relative paths)
    twice: error: plugins.toml:7: `twice@acme`: marketplace `acme` lists plugin `twice` more than once; its catalog must name each plugin once
    escape: error: plugins.toml:7: `escape@acme`: marketplace `acme`, plugin `escape`: its entry has `source = "../../etc"`, which contains `..`; it must stay inside the repository
    nope: error: plugins.toml:7: `nope@acme`: marketplace `acme` lists no plugin `nope`; it lists 12 plugins (`berth marketplace list acme` shows them)
    "#);

    // A catalog that is not JSON: one error naming the marketplace and its file.
    m.market
        .write(".claude-plugin/marketplace.json", "{ \"plugins\": [ oops");
    m.market.commit("broken");
    ctx.write_manifest(&manifest(&["rel"]));
    berth_snapshot!(ctx.filters(), ctx.berth().args(["plugins", "lock"]), @r#"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
         Reading marketplace `acme` (github:acme/market)
    error: plugins.toml:3: marketplace `acme`: `.claude-plugin/marketplace.json` of marketplace `acme` is not valid JSON: expected value at line 1 column 16
    "#);

    // A plugin of an undeclared marketplace names what to do.
    ctx.write_manifest("[[plugin]]\nsource = \"rel@elsewhere\"\n");
    berth_snapshot!(ctx.filters(), ctx.berth().args(["plugins", "lock"]), @r#"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    error: plugins.toml:2:10: `rel@elsewhere` names marketplace `elsewhere`, which no `[[marketplace]]` declares (there are none); add it with `berth marketplace add elsewhere SOURCE`
    "#);
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
    berth_snapshot!(
        ctx.filters(),
        ctx.berth().args(["marketplace", "add", "nocat", "github:acme/gh"]),
        @r#"
        success: false
        exit_code: 1
        ----- stdout -----

        ----- stderr -----
             Reading marketplace `nocat` (github:acme/gh)
        error: plugins.toml:7: marketplace `nocat`: marketplace `nocat` (`github:acme/gh`) has no catalog: looked for `.plugin/marketplace.json` and `.claude-plugin/marketplace.json`
        "#
    );
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
    berth_snapshot!(
        ctx.filters(),
        ctx.berth().args(["marketplace", "add", "acme", "./elsewhere"]),
        @r#"
        success: false
        exit_code: 1
        ----- stdout -----

        ----- stderr -----
        error: marketplace `acme` is already declared in `plugins.toml` (line 7, `github:acme/market`); pick another name, or edit that entry
        "#
    );
    // The catalog names servers on ports the system chose, so its commit differs per run.
    let mut filters = ctx.filters();
    filters.push((m.market.head()[..12].to_owned(), "[COMMIT]".to_owned()));
    berth_snapshot!(filters, ctx.berth().args(["marketplace", "list", "acme"]), @r#"
    success: true
    exit_code: 0
    ----- stdout -----
    acme (github:acme/market at [COMMIT]), 12 plugins:
      rel@acme  github:acme/market (plugins/rel)
          relative
      gh@acme  github:acme/gh
      byurl@acme  http://127.0.0.1:[PORT]/urlrepo.git
      sub@acme  http://127.0.0.1:[PORT]/urlrepo.git (plugins/sub)
      arc@acme  http://127.0.0.1:[PORT]/arc-1.0.tar.gz
      npmtools@acme  npm:tools@^1.0.0 from http://127.0.0.1:[PORT]/registry
      npmbad@acme  npm:badtools@latest from http://127.0.0.1:[PORT]/registry
      odd@acme  unusable: marketplace `acme`, plugin `odd`: its entry has a source of unknown kind `svn` (berth reads `github`, `url`, `git-subdir`, `archive`, `npm` and relative paths)
      twice@acme  unusable: marketplace `acme` lists plugin `twice` more than once; its catalog must name each plugin once
      twice@acme  unusable: marketplace `acme` lists plugin `twice` more than once; its catalog must name each plugin once
      escape@acme  unusable: marketplace `acme`, plugin `escape`: its entry has `source = "../../etc"`, which contains `..`; it must stay inside the repository
      loose@acme  github:acme/market (plugins/rel)

    ----- stderr -----
    "#);
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

#[test]
fn a_strict_false_entry_defines_its_plugin_as_claude_code_does() {
    let m = market();
    let ctx = &m.ctx;
    ctx.write_manifest(&manifest(&["loose"]));
    ctx.ok(&["plugins", "lock"]);
    let lock = ctx.lock_text();
    // The entry names the plugin, and the lock keeps what the entry said.
    assert_eq!(lock_field(&lock, 0, "name").as_deref(), Some("loose"));
    assert_eq!(
        lock_field(&lock, 0, "requested").as_deref(),
        Some("loose@acme")
    );
    assert_eq!(
        lock_field(&lock, 0, "repo_path").as_deref(),
        Some("plugins/rel")
    );
    assert_eq!(
        lock_field(&lock, 0, "definition").as_deref(),
        Some(
            r#"{"lspServers":{"x":{"command":"x-lsp"}},"skills":["./skills/rel-skill"],"strict":false}"#
        )
    );
    ctx.ok(&["plugins", "sync"]);
    let set: Value =
        serde_json::from_str(&ctx.ok(&["plugins", "show", "--json"]).stdout).expect("JSON");
    assert_eq!(set["plugins"][0]["name"], "loose");
    let skills: Vec<&str> = set["skills"]
        .as_array()
        .expect("skills")
        .iter()
        .map(|s| s["name"].as_str().expect("name"))
        .collect();
    assert_eq!(skills, ["rel-skill"]);
    assert_eq!(set["lsp_servers"]["x"]["command"], "x-lsp", "{set}");
    assert_eq!(set["lsp_servers"]["x"]["plugin"], "loose");
    // The lock is byte-identical when locked again.
    ctx.ok(&["plugins", "lock", "--upgrade"]);
    assert_eq!(ctx.lock_text(), lock);
}

/// A manifest declaring the local marketplace `./m` and asking for `pick@m`.
fn local_market_manifest(pick: &str) -> String {
    format!(
        "[[marketplace]]\nname = \"m\"\nsource = \"./m\"\n\n[[plugin]]\nsource = \"{pick}@m\"\n"
    )
}

#[test]
fn a_catalog_never_reads_the_environment() {
    let ctx = TestContext::new();
    let served = ctx.root.join("served");
    std::fs::create_dir_all(&served).expect("mkdir");
    let listener = common::FileServer::start(&served, None);
    let base = format!("http://127.0.0.1:{}", listener.port);
    let run = |manifest: &str| {
        ctx.write_manifest(manifest);
        Run::from(
            ctx.berth()
                .env("PROBE_SECRET", "S3CR3T")
                .args(["plugins", "lock"])
                .output()
                .expect("run"),
        )
    };

    // The attack's premise: the user's own manifest may name variables, and berth fills
    // them in (the listener sees the value).
    let own = run(&format!(
        "[[plugin]]\nsource = \"{base}/own/${{PROBE_SECRET}}.tar.gz\"\n"
    ));
    assert_ne!(own.code, 0, "nothing is served there");
    assert!(
        listener
            .requests()
            .iter()
            .any(|r| r.starts_with("GET /own/S3CR3T.tar.gz")),
        "{:?}",
        listener.requests()
    );
    let seen = listener.requests().len();

    // A catalog may not: each entry is refused naming marketplace and entry, before
    // anything is fetched.
    let market = ctx.work.join("m");
    std::fs::create_dir_all(market.join(".claude-plugin")).expect("mkdir");
    let entries = serde_json::json!({"name": "m", "plugins": [
        {"name": "arc", "source": {"source": "archive", "url": format!("{base}/leak/${{PROBE_SECRET}}.tar.gz")}},
        {"name": "basic", "source": {"source": "url", "url": format!("http://x:${{PROBE_SECRET}}@127.0.0.1:{}/r.git", listener.port)}},
        {"name": "sub", "source": {"source": "git-subdir", "url": format!("{base}/${{PROBE_SECRET}}.git"), "path": "p"}},
        {"name": "gh", "source": {"source": "github", "repo": "acme/${PROBE_SECRET}"}},
        {"name": "npm", "source": {"source": "npm", "package": "tools", "registry": format!("{base}/${{PROBE_SECRET}}/")}},
        {"name": "plain", "source": format!("{base}/plain/${{PROBE_SECRET}}.tar.gz")}
    ]});
    std::fs::write(
        market.join(".claude-plugin/marketplace.json"),
        entries.to_string(),
    )
    .expect("write catalog");
    for entry in ["arc", "basic", "sub", "gh", "npm", "plain"] {
        let run = run(&local_market_manifest(entry));
        assert_eq!(run.code, 1, "{entry}: {}", run.stderr);
        let errors = run.errors();
        assert_eq!(errors.len(), 1, "{entry}: {errors:?}");
        assert!(
            errors[0].contains(&format!("marketplace `m`, plugin `{entry}`"))
                && errors[0].contains("cannot read environment variables"),
            "{entry}: {}",
            errors[0]
        );
        assert!(!run.stderr.contains("S3CR3T"), "{}", run.stderr);
        assert!(!ctx.lock_path().exists(), "{entry}: no lock written");
    }
    assert_eq!(
        listener.requests().len(),
        seen,
        "no request reached the listener: {:?}",
        listener.requests()
    );
    assert!(ctx.store_entries().is_empty(), "{:?}", ctx.store_entries());
}

#[test]
fn a_remote_catalog_cannot_name_local_folders() {
    let m = market();
    let ctx = &m.ctx;
    // The user's home holds a secret; a hostile catalog in a git marketplace names it.
    std::fs::create_dir_all(ctx.home.join(".ssh")).expect("mkdir");
    std::fs::write(ctx.home.join(".ssh/id_rsa"), "PRIVATE KEY").expect("write");
    let outside = ctx.root.join("outside");
    std::fs::create_dir_all(&outside).expect("mkdir");
    std::fs::write(outside.join("secret.txt"), "secret").expect("write");
    let catalog = serde_json::json!({"name": "acme", "plugins": [
        {"name": "rel", "source": "./plugins/rel"},
        {"name": "home", "source": "~/"},
        {"name": "abs", "source": outside.display().to_string()},
        {"name": "fileurl", "source": format!("file://{}", outside.display())},
        {"name": "gitfile", "source": {"source": "url", "url": format!("file://{}", m.urlrepo.path.display())}},
        {"name": "urlpath", "source": {"source": "url", "url": m.urlrepo.path.display().to_string()}},
        {"name": "subpath", "source": {"source": "git-subdir", "url": "~/repo", "path": "p"}},
        {"name": "archfile", "source": {"source": "archive", "url": format!("file://{}/x.tar.gz", outside.display())}},
        {"name": "up", "source": "../outside"},
        {"name": "uproot", "source": {"source": "github", "repo": "acme/gh", "path": "../../x"}}
    ]});
    m.market
        .write(".claude-plugin/marketplace.json", &catalog.to_string());
    m.market.commit("hostile entries");
    for (entry, needle) in [
        ("home", "a path on this machine"),
        ("abs", "a path on this machine"),
        ("fileurl", "`file://` URL on this machine"),
        ("gitfile", "`file://` URL on this machine"),
        ("urlpath", "a path on this machine"),
        ("subpath", "a path on this machine"),
        ("archfile", "`file://` URL on this machine"),
        ("up", "`..`"),
        ("uproot", "`..`"),
    ] {
        ctx.write_manifest(&manifest(&[entry]));
        let run = ctx.run(&["plugins", "lock"]);
        assert_eq!(run.code, 1, "{entry}: {}", run.stderr);
        let errors = run.errors();
        assert_eq!(errors.len(), 1, "{entry}: {errors:?}");
        assert!(
            errors[0].contains(&format!("marketplace `acme`, plugin `{entry}`"))
                && errors[0].contains(needle),
            "{entry}: {}",
            errors[0]
        );
        assert!(!ctx.lock_path().exists(), "{entry}: no lock written");
    }
    assert!(ctx.store_entries().is_empty(), "{:?}", ctx.store_entries());
    // The marketplace's own folders still lock.
    ctx.write_manifest(&manifest(&["rel"]));
    ctx.ok(&["plugins", "lock"]);
}

#[test]
fn a_local_marketplace_names_only_folders_inside_it() {
    let ctx = TestContext::new();
    let market = GitRepo::init(&ctx.work.join("m"), &ctx.home);
    plugin(&market, "plugins/tools", "tools", "local tools");
    plugin(
        &market,
        "plugins/aliased",
        "alias",
        "reached through a link inside",
    );
    let elsewhere = GitRepo::init(&ctx.root.join("elsewhere"), &ctx.home);
    plugin(&elsewhere, "", "link", "outside the marketplace");
    std::os::unix::fs::symlink(&elsewhere.path, market.path.join("plugins/link"))
        .expect("link out");
    std::os::unix::fs::symlink("aliased", market.path.join("plugins/alias")).expect("link in");
    market.write(
        ".claude-plugin/marketplace.json",
        &serde_json::json!({"name": "m", "plugins": [
            {"name": "tools", "source": "./plugins/tools"},
            {"name": "alias", "source": "./plugins/alias"},
            {"name": "link", "source": "./plugins/link"},
            {"name": "abs", "source": elsewhere.path.display().to_string()},
            {"name": "up", "source": "../elsewhere"}
        ]})
        .to_string(),
    );
    for (entry, needle) in [
        ("link", "leads out of the marketplace's folder"),
        ("abs", "a path on this machine"),
        ("up", "`..`"),
    ] {
        ctx.write_manifest(&local_market_manifest(entry));
        let run = ctx.run(&["plugins", "lock"]);
        assert_eq!(run.code, 1, "{entry}: {}", run.stderr);
        let errors = run.errors();
        assert_eq!(errors.len(), 1, "{entry}: {errors:?}");
        assert!(
            errors[0].contains(&format!("marketplace `m`, plugin `{entry}`"))
                && errors[0].contains(needle),
            "{entry}: {}",
            errors[0]
        );
        assert!(!ctx.lock_path().exists(), "{entry}: no lock written");
    }
    assert!(ctx.store_entries().is_empty(), "{:?}", ctx.store_entries());
    for entry in ["tools", "alias"] {
        ctx.write_manifest(&local_market_manifest(entry));
        ctx.ok(&["plugins", "lock"]);
        ctx.ok(&["plugins", "sync"]);
    }
}

#[test]
fn an_oversized_catalog_is_refused_before_it_is_parsed() {
    let ctx = TestContext::new();
    let market = ctx.work.join("m");
    std::fs::create_dir_all(market.join(".claude-plugin")).expect("mkdir");
    let mut big = String::from("{\"name\": \"m\", \"plugins\": [], \"pad\": \"");
    big.push_str(&"x".repeat(9 << 20));
    big.push_str("\"}");
    std::fs::write(market.join(".claude-plugin/marketplace.json"), big).expect("write");
    ctx.write_manifest(&local_market_manifest("any"));
    let run = ctx.run(&["plugins", "lock"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let errors = run.errors();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].contains("the catalog `.claude-plugin/marketplace.json` of marketplace `m`")
            && errors[0].contains("over berth's limit of 8388608 bytes"),
        "{}",
        errors[0]
    );
    assert!(!ctx.lock_path().exists());
}
