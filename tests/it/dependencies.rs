//! Plugin dependencies through a marketplace (Claude Code's form): the closure is locked,
//! ranges are intersected over `{plugin}--v{version}` tags, each dependency comes before
//! the plugins that need it, and conflicts, cycles and missing plugins are refused with the
//! chain that leads to them.

use crate::common;

use common::{GitRepo, TestContext, lock_field, lock_plugins};
use serde_json::{Value, json};

/// A plugin folder: a manifest with `version` and `dependencies`, and one skill.
fn plugin(repo: &GitRepo, name: &str, version: &str, dependencies: Value) {
    repo.write(
        &format!("plugins/{name}/.claude-plugin/plugin.json"),
        &json!({"name": name, "version": version, "dependencies": dependencies}).to_string(),
    );
    repo.write(
        &format!("plugins/{name}/skills/{name}-skill/SKILL.md"),
        &format!("---\nname: {name}-skill\ndescription: {name} {version}\n---\n{name} {version}\n"),
    );
}

/// `acme/market`: `shared` released as 1.0.0, 1.2.0 and 2.0.0 (tags `shared--v…`), and
/// plugins whose dependencies make a three-level closure, a conflict, a cycle and a
/// missing dependency.
fn market(ctx: &TestContext) -> GitRepo {
    let repo = ctx.repo("market");
    for version in ["1.0.0", "1.2.0", "2.0.0"] {
        plugin(&repo, "shared", version, json!([]));
        repo.commit(&format!("shared {version}"));
        repo.tag(&format!("shared--v{version}"));
    }
    plugin(
        &repo,
        "app",
        "1.0.0",
        json!(["lib-a", {"name": "shared", "version": "^1.0"}]),
    );
    plugin(
        &repo,
        "lib-a",
        "0.3.0",
        json!([{"name": "shared", "version": ">=1.1"}]),
    );
    plugin(
        &repo,
        "newer",
        "1.0.0",
        json!([{"name": "shared", "version": "^2"}]),
    );
    plugin(&repo, "loop-a", "1.0.0", json!(["loop-b"]));
    plugin(&repo, "loop-b", "1.0.0", json!(["loop-a"]));
    plugin(&repo, "needs-ghost", "1.0.0", json!(["ghost"]));
    let names = [
        "shared",
        "app",
        "lib-a",
        "newer",
        "loop-a",
        "loop-b",
        "needs-ghost",
    ];
    let entries: Vec<Value> = names
        .iter()
        .map(|n| json!({"name": n, "source": format!("./plugins/{n}")}))
        .collect();
    repo.write(
        ".claude-plugin/marketplace.json",
        &json!({"name": "acme", "plugins": entries}).to_string(),
    );
    repo.commit("catalog");
    repo
}

fn manifest(plugins: &[&str]) -> String {
    let mut text =
        String::from("[[marketplace]]\nname = \"acme\"\nsource = \"github:acme/market\"\n\n");
    for p in plugins {
        text.push_str(&format!("[[plugin]]\nsource = \"{p}@acme\"\n\n"));
    }
    text
}

#[test]
fn a_three_level_closure_with_a_shared_dependency_is_locked_in_merge_order() {
    let ctx = TestContext::new();
    let repo = market(&ctx);
    ctx.write_manifest(&manifest(&["app"]));
    ctx.ok(&["plugins", "lock"]);
    let lock = ctx.lock_text();
    let plugins = lock_plugins(&lock);
    let names: Vec<&str> = plugins
        .iter()
        .map(|p| p["name"].as_str().expect("name"))
        .collect();
    assert_eq!(
        names,
        ["shared", "lib-a", "app"],
        "dependencies first:\n{lock}"
    );
    // `^1.0` from app and `>=1.1` from lib-a: the highest tag both allow.
    assert_eq!(
        lock_field(&lock, 0, "ref").as_deref(),
        Some("shared--v1.2.0")
    );
    assert_eq!(
        lock_field(&lock, 0, "rev"),
        Some(repo.rev("shared--v1.2.0"))
    );
    let needed_by = |i: usize| -> Vec<String> {
        plugins[i]
            .get("needed_by")
            .and_then(|v| v.as_array())
            .map(|a| {
                a.iter()
                    .map(|v| v.as_str().expect("name").to_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    assert_eq!(needed_by(0), ["app", "lib-a"]);
    assert_eq!(needed_by(1), ["app"]);
    assert!(needed_by(2).is_empty(), "app is asked for by the manifest");
    assert_eq!(
        lock_field(&lock, 2, "requested").as_deref(),
        Some("app@acme")
    );

    ctx.ok(&["plugins", "lock", "--check"]);
    ctx.ok(&["plugins", "lock"]);
    assert_eq!(ctx.lock_text(), lock, "a second lock keeps every pin");

    ctx.ok(&["plugins", "sync"]);
    let set: Value =
        serde_json::from_str(&ctx.ok(&["plugins", "show", "--json"]).stdout).expect("JSON");
    let order: Vec<&str> = set["plugins"]
        .as_array()
        .expect("plugins")
        .iter()
        .map(|p| p["name"].as_str().expect("name"))
        .collect();
    assert_eq!(order, ["shared", "lib-a", "app"]);
    assert!(
        serde_json::to_string(&set["skills"])
            .expect("json")
            .contains("shared 1.2.0"),
        "{set}"
    );

    // A dependency is not the manifest's to remove.
    berth_snapshot!(ctx.filters(), ctx.berth().args(["plugins", "remove", "lib-a"]), @r#"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    error: `lib-a` is not in `plugins.toml`: it is locked because `app` needs it; remove that instead
    "#);
}

#[test]
fn conflicts_cycles_and_missing_dependencies_name_their_chains() {
    let ctx = TestContext::new();
    market(&ctx);
    for (plugins, needles) in [
        (
            &["app", "newer"][..],
            &[
                "no version of `shared@acme` satisfies every plugin that needs it",
                "app → shared@acme (^1.0)",
                "newer → shared@acme (^2)",
                "app → lib-a → shared@acme (>=1.1)",
            ][..],
        ),
        (
            &["loop-a"][..],
            &["cycle: loop-a@acme → loop-b@acme → loop-a@acme"][..],
        ),
        (
            &["needs-ghost"][..],
            &[
                "missing dependency `ghost@acme`: marketplace `acme` lists no plugin `ghost`",
                "needs-ghost → ghost@acme",
            ][..],
        ),
    ] {
        ctx.write_manifest(&manifest(plugins));
        let run = ctx.run(&["plugins", "lock"]);
        assert_eq!(run.code, 1, "{plugins:?}: {}", run.stderr);
        let errors = run.errors();
        assert_eq!(errors.len(), 1, "{errors:?}");
        for needle in needles {
            assert!(
                errors[0].contains(needle),
                "{plugins:?}: `{needle}` in {}",
                errors[0]
            );
        }
        assert!(!ctx.lock_path().exists(), "nothing written");
    }
}

#[test]
fn a_plugin_asked_for_before_its_dependency_keeps_manifest_order_with_a_warning() {
    let ctx = TestContext::new();
    market(&ctx);
    ctx.write_manifest(&manifest(&["app", "lib-a"]));
    // Entries are added as their fetches finish, in any order.
    let mut filters = ctx.filters();
    filters.push((r"(?m)^ +Added .*\n".to_owned(), String::new()));
    berth_snapshot!(filters, ctx.berth().args(["plugins", "lock"]), @r#"
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
         Reading marketplace `acme` (github:acme/market)
    warning: plugin `app` needs `lib-a`, which comes after it in the manifest; move `lib-a` first so it merges before the plugins that need it
          Adding shared 179c250840f9
          Adding app d1412af10359
          Adding lib-a d1412af10359
          Locked 3 plugins in `plugins.lock`
    "#);
    let lock = ctx.lock_text();
    let names: Vec<String> = lock_plugins(&lock)
        .iter()
        .map(|p| p["name"].as_str().expect("name").to_owned())
        .collect();
    assert_eq!(names, ["shared", "app", "lib-a"], "{lock}");
    // lib-a is asked for, so it has no `needed_by`; shared is a dependency.
    assert!(lock_plugins(&lock)[2].get("needed_by").is_none(), "{lock}");
    ctx.ok(&["plugins", "lock", "--check"]);
}

/// A local marketplace folder `work/NAME` listing `plugins` (name, dependencies).
fn local_market(ctx: &TestContext, market: &str, plugins: &[(String, Value)]) {
    let root = ctx.work.join(market);
    for (name, dependencies) in plugins {
        let dir = root.join("plugins").join(name);
        std::fs::create_dir_all(dir.join(".claude-plugin")).expect("mkdir");
        std::fs::write(
            dir.join(".claude-plugin/plugin.json"),
            json!({"name": name, "version": "1.0.0", "dependencies": dependencies}).to_string(),
        )
        .expect("write");
    }
    let entries: Vec<Value> = plugins
        .iter()
        .map(|(n, _)| json!({"name": n, "source": format!("./plugins/{n}")}))
        .collect();
    std::fs::create_dir_all(root.join(".claude-plugin")).expect("mkdir");
    std::fs::write(
        root.join(".claude-plugin/marketplace.json"),
        json!({"name": market, "plugins": entries}).to_string(),
    )
    .expect("write");
}

#[test]
fn a_300_deep_chain_without_ranges_settles() {
    let ctx = TestContext::new();
    let depth = 300;
    let plugins: Vec<(String, Value)> = (0..=depth)
        .map(|i| {
            let deps = if i < depth {
                json!([format!("c{}", i + 1)])
            } else {
                json!([])
            };
            (format!("c{i}"), deps)
        })
        .collect();
    local_market(&ctx, "deep", &plugins);
    ctx.write_manifest(
        "[[marketplace]]\nname = \"deep\"\nsource = \"./deep\"\n\n[[plugin]]\nsource = \"c0@deep\"\n",
    );
    ctx.ok(&["plugins", "lock"]);
    let lock = ctx.lock_text();
    let plugins = lock_plugins(&lock);
    assert_eq!(plugins.len(), depth + 1);
    // The deepest first: each dependency before the plugin that needs it.
    assert_eq!(plugins[0]["name"].as_str(), Some("c300"));
    assert_eq!(plugins[depth]["name"].as_str(), Some("c0"));
}

#[test]
fn a_dependency_named_like_a_plugin_of_another_marketplace_is_a_clash() {
    let ctx = TestContext::new();
    local_market(
        &ctx,
        "one",
        &[("app".into(), json!(["lib"])), ("lib".into(), json!([]))],
    );
    local_market(&ctx, "two", &[("lib".into(), json!([]))]);
    let markets = "[[marketplace]]\nname = \"one\"\nsource = \"./one\"\n\n[[marketplace]]\nname = \"two\"\nsource = \"./two\"\n\n";
    ctx.write_manifest(&format!(
        "{markets}[[plugin]]\nsource = \"app@one\"\n\n[[plugin]]\nsource = \"lib@two\"\n"
    ));
    berth_snapshot!(ctx.filters(), ctx.berth().args(["plugins", "lock"]), @r#"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
         Reading marketplace `one` (./one)
         Reading marketplace `two` (./two)
    error: plugins.toml: plugin dependencies: two plugins named `lib`: `app` needs `lib@one`, and the lock also has `lib` as `lib@two`; one would replace the other's skills and commands, so berth refuses the clash. Ask for `lib@one` in the manifest instead of `lib@two`, or drop what needs it
    "#);
    assert!(!ctx.lock_path().exists(), "nothing written");
    // Its own marketplace's plugin, asked for by name, is no clash.
    ctx.write_manifest(&format!(
        "{markets}[[plugin]]\nsource = \"app@one\"\n\n[[plugin]]\nsource = \"lib@one\"\n"
    ));
    ctx.ok(&["plugins", "lock"]);
}
