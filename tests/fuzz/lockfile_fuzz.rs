//! Property tests (bounded fuzzing) of the parsers: no input makes them panic, and the
//! canonical lock writer round-trips. `PROPTEST_CASES=100000` runs them longer.

use berth_lockfile_schema::{
    AgentRequest, EntryPoint, Lock, LockedAgent, LockedPlugin, LockedWheel, Pin, Sha256Hash,
    Source, WheelFile, normalize_package_name, parse_lock, parse_manifest, redact,
};
use proptest::prelude::*;
use serde_json::json;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(512),
        failure_persistence: Some(Box::new(crate::REGRESSIONS)),
        ..ProptestConfig::default()
    }
}

/// TOML-ish text: fragments of real manifests and locks glued at random.
fn tomlish() -> impl Strategy<Value = String> {
    let fragments = prop::sample::select(vec![
        "[[plugin]]\n",
        "source = ",
        "ref = ",
        "version = ",
        "repo_path = ",
        "hash = ",
        "name = ",
        "\"github:acme/tools\"",
        "\"./local\"",
        "\"https://h/x.tar.gz\"",
        "\"^1.2\"",
        "\"../..\"",
        "\"sha256-pQpattmS9VmO3ZIQUFn66az8GSmB4IvYhTTCFn6SUmo=\"",
        "version = 1\n",
        "version = 99\n",
        "rev = \"0123456789abcdef0123456789abcdef01234567\"\n",
        "url = \"file:///x\"\n",
        "\n",
        "[",
        "]",
        "\"",
        "'",
        "{",
        "}",
        "= ",
        "# comment\n",
        "plugin = [{ source = \"./a\" }]\n",
        "[agent]\n",
        "[[agent.wheel]]\n",
        "package = ",
        "entry_point = ",
        "python = ",
        "python_version = ",
        "file = ",
        "sha256 = ",
        "\"my-agent==1.0\"",
        "\"git+https://h/a.git\"",
        "\"a = b.c:d\"",
        "\"3.11\"",
        "\"a-1-py3-none-any.whl\"",
        "\"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"",
        "é",
        "\u{0}",
    ]);
    prop::collection::vec(fragments, 0..30).prop_map(|parts| parts.concat())
}

fn hash() -> impl Strategy<Value = Sha256Hash> {
    prop::array::uniform32(any::<u8>()).prop_map(Sha256Hash::from_bytes)
}

fn text() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9 ._/\"\\\\\u{e9}\u{1}\n-]{1,20}"
}

fn locked_plugin() -> impl Strategy<Value = LockedPlugin> {
    let name = "[a-zA-Z0-9._ -]{1,12}".prop_filter("valid names", |n| {
        berth_lockfile_schema::is_valid_plugin_name(n)
    });
    let pin = prop_oneof![
        (text(), prop::array::uniform20(any::<u8>())).prop_map(|(url, rev)| (
            "github:acme/tools".to_owned(),
            Pin::Git(berth_lockfile_schema::GitPin {
                url,
                rev: berth_lockfile_schema::CommitId::from_bytes(rev)
            })
        )),
        (text(), hash()).prop_map(|(url, archive_hash)| (
            "https://h/x.tar.gz".to_owned(),
            Pin::Archive(berth_lockfile_schema::ArchivePin { url, archive_hash })
        )),
        // A local entry's path is the folder its source names (the lock refuses others).
        text()
            .prop_map(|name| {
                let path = format!("./{name}");
                (
                    path.clone(),
                    Pin::Local(berth_lockfile_schema::LocalPin { path }),
                )
            })
            .prop_filter("sources the lock accepts", |(source, _)| {
                berth_lockfile_schema::Source::parse(source).is_ok()
            }),
    ];
    (
        name,
        pin,
        hash(),
        prop::option::of("[a-z0-9.]{1,8}"),
        prop::option::of("[a-z]{1,6}(/[a-z]{1,6})?"),
    )
        .prop_map(|(name, (source, pin), hash, git_ref, repo_path)| {
            let is_git = matches!(pin, Pin::Git(_));
            let is_local = matches!(pin, Pin::Local(_));
            LockedPlugin {
                name,
                requested: None,
                plugin_version: None,
                dependencies: Vec::new(),
                needed_by: Vec::new(),
                auto_load: None,
                standalone_skill: false,
                // A definition with a component whose keys the writer must sort.
                definition: is_local.then(|| berth_lockfile_schema::EntryDefinition {
                    strict: false,
                    components: serde_json::json!({"skills": ["./skills/a", "b"], "mcpServers": {"z": {"command": "x"}, "a": {"url": "https://e.example"}}})
                        .as_object()
                        .cloned()
                        .unwrap_or_default(),
                }),
                // A signature on git entries, with every field and a string to escape.
                signature: is_git.then(|| berth_lockfile_schema::SourceSignature {
                    kind: berth_lockfile_schema::SignatureKind::Ssh,
                    object: Some(berth_lockfile_schema::SignedObject::Tag),
                    key: Some("SHA256:abc/+=".to_owned()),
                    principal: Some("a \"b\" <a@b>".to_owned()),
                    identity: None,
                    verified: true,
                    was: Some("openpgp 0123ABCD".to_owned()),
                }),
                npm: None,
                source,
                git_ref: git_ref.filter(|_| is_git),
                version: None,
                resolved_ref: None,
                repo_path: repo_path.filter(|_| !is_local),
                pin,
                hash,
            }
        })
}

/// A locked index agent with a random closure (git and archive trees are plugin pins,
/// covered above).
fn locked_agent() -> impl Strategy<Value = LockedAgent> {
    let wheel = (
        "[a-z][a-z0-9_.-]{0,8}[a-z0-9]",
        "[0-9]{1,2}\\.[0-9]{1,2}(\\.[0-9a-z+]{1,4})?",
        prop::array::uniform32(any::<u8>()),
        text(),
    )
        .prop_map(|(name, version, sha, url)| LockedWheel {
            file: WheelFile::parse(&format!(
                "{}-{version}-py3-none-any.whl",
                name.replace('-', "_")
            ))
            .expect("a wheel file name"),
            name: normalize_package_name(&name),
            version,
            url: Some(url),
            sha256: sha.iter().map(|b| format!("{b:02x}")).collect(),
        });
    (
        "[a-z][a-z0-9-]{0,8}[a-z0-9]",
        prop::collection::vec(wheel, 0..5),
        "[a-z][a-z0-9-]{0,6}",
        prop::option::of(">=3\\.[0-9]{1,2}"),
    )
        .prop_map(|(package, mut wheels, entry, python)| {
            let package = normalize_package_name(&package);
            wheels.push(LockedWheel {
                name: package.clone(),
                version: "1.0".into(),
                file: WheelFile::parse(&format!(
                    "{}-1.0-py3-none-any.whl",
                    package.replace('-', "_")
                ))
                .expect("a wheel file name"),
                url: Some(format!("https://h/{package}.whl")),
                sha256: "ab".repeat(32),
            });
            let request =
                AgentRequest::new(&format!("{package}==1.0"), None, None, python.as_deref());
            assert!(request.is_ok(), "{package}: {request:?}");
            LockedAgent {
                source: format!("{package}==1.0"),
                git_ref: None,
                python,
                package,
                version: "1.0".into(),
                entry_point: EntryPoint::parse(&format!("{entry} = mod.sub:attr")).expect("valid"),
                python_version: "3.11".into(),
                tree: None,
                wheels,
            }
        })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn manifest_parser_never_panics(text in tomlish()) {
        if let Err(e) = parse_manifest("plugins.toml", &text) {
            prop_assert!(e.line >= 1 && e.column >= 1);
        }
    }

    #[test]
    fn manifest_parser_never_panics_on_any_string(text in ".{0,200}") {
        let _ = parse_manifest("plugins.toml", &text);
    }

    #[test]
    fn lock_parser_never_panics(text in tomlish()) {
        let _ = parse_lock("plugins.lock", &text);
    }

    #[test]
    fn the_lock_writer_round_trips(plugins in prop::collection::vec(locked_plugin(), 0..6)) {
        let lock = Lock { plugins, agent: None, marketplaces: Vec::new(), payloads: Vec::new(), registry_keys: Vec::new(), tools: Vec::new(), exclude_newer: None };
        let text = lock.to_toml();
        prop_assert_eq!(parse_lock("plugins.lock", &text), Ok(lock.clone()));
        prop_assert_eq!(text.clone(), lock.to_toml(), "deterministic");
        prop_assert!(text.ends_with('\n') && !text.contains('\r'));
    }

    #[test]
    fn the_lock_writer_round_trips_an_agent(
        plugins in prop::collection::vec(locked_plugin(), 0..2),
        agent in locked_agent(),
    ) {
        let lock = Lock { plugins, agent: Some(agent), marketplaces: Vec::new(), payloads: Vec::new(), registry_keys: Vec::new(), tools: Vec::new(), exclude_newer: None };
        let text = lock.to_toml();
        prop_assert_eq!(parse_lock("plugins.lock", &text), Ok(lock.clone()));
        prop_assert_eq!(text, lock.to_toml(), "deterministic");
    }

    #[test]
    fn agent_requests_never_panic(
        source in ".{0,60}",
        entry in prop::option::of(".{0,20}"),
        python in prop::option::of(".{0,12}"),
    ) {
        if let Ok(request) = AgentRequest::new(&source, None, entry.as_deref(), python.as_deref()) {
            prop_assert!(!request.display_source().is_empty());
        }
    }

    #[test]
    fn source_parsing_never_panics(text in ".{0,120}") {
        let _ = Source::parse(&text);
    }

    #[test]
    fn redaction_removes_passwords_and_is_idempotent(
        scheme in prop::sample::select(vec!["https", "http", "ssh", "git+https", "file"]),
        user in "[a-z0-9]{1,8}",
        password in "[A-Za-z0-9]{6,16}",
        host in "[a-z]{1,8}\\.[a-z]{2,3}",
        path in "(/[a-z0-9]{1,6}){0,3}",
    ) {
        let url = format!("{scheme}://{user}:{password}@{host}{path}");
        let once = redact(&url);
        let secret = format!(":{password}@");
        prop_assert!(!once.text.contains(&secret));
        prop_assert!(once.removed_secret);
        prop_assert_eq!(redact(&once.text).text, once.text.clone());
    }
}

/// Catalogs: entries with names, sources (strings and objects of every kind, hostile
/// paths among them), `pluginRoot`s and dependencies drawn from real and hostile values.
fn catalog() -> impl Strategy<Value = String> {
    let source = prop::sample::select(vec![
        json!("./plugins/p"),
        json!("p"),
        json!("../up"),
        json!("./a/../../b"),
        json!("/abs/path"),
        json!("~/home"),
        json!("https://h/a.tar.gz"),
        json!("."),
        json!(""),
        json!(42),
        json!({"source": "github", "repo": "o/r", "path": "../x"}),
        json!({"source": "github", "repo": "o/r", "path": "a/./b", "sha": "abc", "ref": "v1"}),
        json!({"source": "git-subdir", "url": "https://h/r.git", "path": "a/b"}),
        json!({"source": "git-subdir", "url": "https://h/r.git", "path": "/etc"}),
        json!({"source": "url", "url": "https://h/r.git"}),
        json!({"source": "archive", "url": "https://h/a.tgz", "sha256": "zz"}),
        json!({"source": "npm", "package": "@s/p", "version": "^1"}),
        json!({"source": "npm", "package": "../evil"}),
        json!({"source": "svn"}),
        json!({"repo": "o/r"}),
    ]);
    let root = prop::sample::select(vec!["", "./plugins", "plugins/", "..", "/abs", "./a/../.."]);
    let name = prop::sample::select(vec!["p", "q", "p", "bad name", "../x", ".hidden", "ok-1"]);
    let entry = (name, source, any::<bool>()).prop_map(|(name, source, strict)| {
        json!({"name": name, "source": source, "strict": strict,
               "dependencies": ["a", {"name": "b", "version": ">=1 <2"}, 3]})
    });
    (root, prop::collection::vec(entry, 0..6)).prop_map(|(root, plugins)| {
        json!({"name": "m", "metadata": {"pluginRoot": root}, "plugins": plugins}).to_string()
    })
}

proptest! {
    #![proptest_config(config())]

    /// No catalog makes berth panic, and none makes a plugin's folder leave its repository:
    /// every `repo_path` a catalog entry turns into is relative and free of `..`.
    #[test]
    fn catalogs_never_panic_and_never_point_outside_the_repository(text in catalog()) {
        use berth_lockfile_schema::marketplace::{MarketplaceRequest, parse_catalog};
        let Ok(catalog) = parse_catalog("m", ".claude-plugin/marketplace.json", text.as_bytes()) else {
            return Ok(());
        };
        let market = MarketplaceRequest::new("m", "github:acme/market", None, None).expect("valid");
        for entry in &catalog.plugins {
            let Ok(found) = catalog.entry("m", &entry.name) else { continue };
            if let Ok(request) =
                found.request(&market, Some("0123456789abcdef0123456789abcdef01234567"))
                && let Some(path) = request.subdir()
            {
                prop_assert!(!path.starts_with('/'), "{path}");
                prop_assert!(!path.split('/').any(|p| p == ".."), "{path}");
            }
        }
    }

    #[test]
    fn dependency_lists_never_panic(text in ".{0,120}") {
        use berth_lockfile_schema::marketplace::{DependencySpec, parse_dependencies};
        let value: Option<serde_json::Value> = serde_json::from_str(&text).ok();
        let (specs, _) = parse_dependencies(value.as_ref());
        for spec in specs {
            let back = DependencySpec::from_lock_string(&spec.to_lock_string());
            prop_assert_eq!(back, Ok(spec));
        }
        let _ = DependencySpec::from_lock_string(&text);
    }
}
