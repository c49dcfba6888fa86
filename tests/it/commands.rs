//! The commands of issue #42 item 7: `marketplace remove`, `update` and `search`, `plugins
//! tree` and `outdated`, as a user meets them. Every repository is built at test time with
//! fixed commit dates and no machine-specific text in a catalog, so commits are the same on
//! every run and snapshots show them as they are.

use crate::common;

use common::{GitRepo, TestContext, lock_field, lock_plugins};
use serde_json::{Value, json};

/// A plugin folder under `dir` (`""`: the repository's root): a manifest with `version`
/// and `dependencies`, and one skill saying `body`.
fn plugin(repo: &GitRepo, dir: &str, name: &str, dependencies: Value, body: &str) {
    let prefix = if dir.is_empty() {
        String::new()
    } else {
        format!("{dir}/")
    };
    repo.write(
        &format!("{prefix}.claude-plugin/plugin.json"),
        &json!({"name": name, "version": "1.0.0", "dependencies": dependencies}).to_string(),
    );
    repo.write(
        &format!("{prefix}skills/{name}/SKILL.md"),
        &format!("---\nname: {name}\ndescription: {body}\n---\n{body}\n"),
    );
}

/// `acme/market`: `review` and `lint` (relative entries, with descriptions and keywords),
/// `app`, which needs `lib` and `shared`, and `lib`, which needs `shared`.
fn market(ctx: &TestContext) -> GitRepo {
    let repo = ctx.repo("market");
    plugin(
        &repo,
        "plugins/review",
        "review",
        json!([]),
        "Review carefully.",
    );
    plugin(
        &repo,
        "plugins/lint",
        "lint",
        json!([]),
        "Lint shell scripts.",
    );
    plugin(
        &repo,
        "plugins/app",
        "app",
        json!(["lib", "shared"]),
        "The app.",
    );
    plugin(&repo, "plugins/lib", "lib", json!(["shared"]), "A library.");
    plugin(&repo, "plugins/shared", "shared", json!([]), "Shared code.");
    let entry = |name: &str, description: &str, keywords: Value| {
        json!({"name": name, "source": format!("./plugins/{name}"), "version": "1.0.0",
               "description": description, "keywords": keywords})
    };
    repo.write(
        ".claude-plugin/marketplace.json",
        &json!({"name": "acme", "plugins": [
            entry("review", "Reviews pull requests before they merge", json!(["code", "quality"])),
            entry("lint", "Finds mistakes in shell scripts", json!(["Style", "shell"])),
            entry("app", "An app with dependencies", json!([])),
            entry("lib", "What the app needs", json!([])),
            entry("shared", "What everyone needs", json!([])),
        ]})
        .to_string(),
    );
    repo.commit("catalog");
    repo
}

/// A local marketplace `./other` in the work folder: `notes`, and `needs-review`, which
/// needs `review@acme`.
fn other_market(ctx: &TestContext) {
    let repo = GitRepo::init(&ctx.work.join("other"), &ctx.home);
    plugin(&repo, "notes", "notes", json!([]), "Takes notes.");
    plugin(
        &repo,
        "needs-review",
        "needs-review",
        json!(["review@acme"]),
        "Needs a review.",
    );
    repo.write(
        ".claude-plugin/marketplace.json",
        &json!({"name": "other", "plugins": [
            {"name": "notes", "source": "./notes", "description": "Takes review notes"},
            {"name": "needs-review", "source": "./needs-review"},
        ]})
        .to_string(),
    );
}

const MANIFEST: &str = r#"# team plugins

[[marketplace]]
name = "acme"   # the company's
source = "github:acme/market"

[[marketplace]]
name = "other"
source = "./other"

# reviews first
[[plugin]]
source = "review@acme"

[[plugin]]
source = "lint@acme"

[[plugin]]
source = "notes@other"
"#;

#[test]
fn marketplace_search_matches_name_description_and_keywords_in_every_marketplace() {
    let ctx = TestContext::new();
    market(&ctx);
    other_market(&ctx);
    ctx.write_manifest(MANIFEST);
    ctx.ok(&["plugins", "lock"]);

    // `review` is a name, a description's word and (in `other`) part of one: every
    // declared marketplace is searched, each at its locked commit.
    berth_snapshot!(ctx.filters(), ctx.berth().args(["marketplace", "search", "REVIEW"]), @r"
    success: true
    exit_code: 0
    ----- stdout -----
    PLUGIN              VERSION  DESCRIPTION
    review@acme         1.0.0    Reviews pull requests before they merge
    notes@other                  Takes review notes
    needs-review@other

    ----- stderr -----
           Found 3 plugins matching `REVIEW` in 2 marketplaces
    ");
    // A keyword, in any case.
    berth_snapshot!(ctx.filters(), ctx.berth().args(["marketplace", "search", "style"]), @r"
    success: true
    exit_code: 0
    ----- stdout -----
    PLUGIN     VERSION  DESCRIPTION
    lint@acme  1.0.0    Finds mistakes in shell scripts

    ----- stderr -----
           Found 1 plugin matching `style` in 2 marketplaces
    ");
    // No match is an answer, not a failure.
    berth_snapshot!(ctx.filters(), ctx.berth().args(["marketplace", "search", "zzz"]), @r"
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
           Found no plugin matching `zzz` in 2 marketplaces
    ");
    let doc: Value =
        serde_json::from_str(&ctx.ok(&["marketplace", "search", "needs", "--json"]).stdout)
            .expect("JSON");
    assert_eq!(doc["query"], "needs");
    assert_eq!(doc["marketplaces"], json!(["acme", "other"]));
    let found: Vec<String> = doc["plugins"]
        .as_array()
        .expect("plugins")
        .iter()
        .map(|p| {
            format!(
                "{}@{}",
                p["name"].as_str().expect("name"),
                p["marketplace"].as_str().expect("marketplace")
            )
        })
        .collect();
    assert_eq!(found, ["lib@acme", "shared@acme", "needs-review@other"]);
    let none: Value = serde_json::from_str(
        &ctx.ok(&["marketplace", "search", "zzz", "--format", "json"])
            .stdout,
    )
    .expect("JSON");
    assert_eq!(none["plugins"], json!([]));

    // A marketplace out of reach is left out, warned; the others are still searched.
    ctx.write_manifest(&format!(
        "{MANIFEST}\n[[marketplace]]\nname = \"gone\"\nsource = \"./gone\"\n"
    ));
    let partial = ctx.ok(&["marketplace", "search", "review"]);
    assert!(partial.stdout.contains("review@acme"), "{}", partial.stdout);
    assert!(
        partial
            .stderr
            .contains("warning: marketplace `gone` is left out of the search"),
        "{}",
        partial.stderr
    );
    ctx.write_manifest("[[marketplace]]\nname = \"gone\"\nsource = \"./gone\"\n");
    assert_eq!(ctx.run(&["marketplace", "search", "review"]).code, 1);
}

#[test]
fn marketplace_remove_refuses_while_plugins_ask_for_it_and_force_removes_them_too() {
    let ctx = TestContext::new();
    market(&ctx);
    other_market(&ctx);
    ctx.write_manifest(MANIFEST);
    ctx.ok(&["plugins", "lock"]);
    let lock = ctx.lock_text();

    berth_snapshot!(ctx.filters(), ctx.berth().args(["marketplace", "remove", "acme"]), @r"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    error: `plugins.toml` still asks for 2 plugins of marketplace `acme`: `review@acme` (line 13), `lint@acme` (line 16); remove them first with `berth plugins remove NAME`, or pass `--force` to remove them with the marketplace
    ");
    berth_snapshot!(ctx.filters(), ctx.berth().args(["marketplace", "remove", "amce"]), @r"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    error: `plugins.toml` declares no marketplace `amce`; did you mean `acme`?
    ");
    assert_eq!(
        std::fs::read_to_string(ctx.manifest_path()).expect("read"),
        MANIFEST
    );
    assert_eq!(ctx.lock_text(), lock);

    // `needs-review@other` needs `review@acme`: removing `acme` with its plugins cannot
    // lock, and neither file changes.
    let asks_more = MANIFEST.replace(
        "source = \"notes@other\"\n",
        "source = \"notes@other\"\n\n[[plugin]]\nsource = \"needs-review@other\"\n",
    );
    ctx.write_manifest(&asks_more);
    ctx.ok(&["plugins", "lock"]);
    let lock = ctx.lock_text();
    berth_snapshot!(ctx.filters(), ctx.berth().args(["marketplace", "remove", "acme", "--force"]), @r"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
         Reading marketplace `other` (./other)
    error: plugins.toml: plugin dependencies: missing dependency `review@acme`: the manifest declares no marketplace `acme` (needed: needs-review → review@acme); add it with `berth marketplace add acme SOURCE`
      nothing was written: `plugins.toml` and `plugins.lock` are as they were
    ");
    assert_eq!(
        std::fs::read_to_string(ctx.manifest_path()).expect("read"),
        asks_more
    );
    assert_eq!(ctx.lock_text(), lock);

    ctx.write_manifest(MANIFEST);
    ctx.ok(&["plugins", "lock"]);
    berth_snapshot!(ctx.filters(), ctx.berth().args(["marketplace", "remove", "acme", "--force"]), @r"
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
         Reading marketplace `other` (./other)
         Removed marketplace `acme` from `plugins.toml` with the 2 plugins asked of it (`review@acme`, `lint@acme`)
        Removing review
        Removing lint
          Locked 1 plugin in `plugins.lock`
    ");
    let text = std::fs::read_to_string(ctx.manifest_path()).expect("read");
    assert_eq!(
        text,
        "# team plugins\n\n[[marketplace]]\nname = \"other\"\nsource = \"./other\"\n\n[[plugin]]\nsource = \"notes@other\"\n",
        "the heading kept; the comment on the removed entry went with it"
    );
    let lock = ctx.lock_text();
    assert_eq!(lock_plugins(&lock).len(), 1, "{lock}");
    assert_eq!(lock_field(&lock, 0, "name").as_deref(), Some("notes"));
    assert!(!lock.contains("github:acme/market"), "{lock}");
    ctx.ok(&["plugins", "lock", "--check"]);
}

#[test]
fn marketplace_update_moves_the_marketplace_and_only_the_plugins_that_changed() {
    let ctx = TestContext::new();
    let repo = market(&ctx);
    ctx.write_manifest(
        "[[marketplace]]\nname = \"acme\"\nsource = \"github:acme/market\"\n\n[[plugin]]\nsource = \"review@acme\"\n\n[[plugin]]\nsource = \"lint@acme\"\n",
    );
    ctx.ok(&["plugins", "lock"]);
    let before = ctx.lock_text();

    // Upstream changes `lint` only.
    plugin(
        &repo,
        "plugins/lint",
        "lint",
        json!([]),
        "Lint shell scripts, strictly.",
    );
    repo.commit("stricter lint");
    ctx.ok(&["plugins", "lock"]);
    assert_eq!(
        ctx.lock_text(),
        before,
        "`lock` keeps the pinned marketplace"
    );

    berth_snapshot!(ctx.filters(), ctx.berth().args(["marketplace", "update"]), @r"
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
         Reading marketplace `acme` (github:acme/market)
         Updated marketplace `acme` 68782a328d46 -> d11473e6e15a
        Updating lint 68782a328d46 -> d11473e6e15a
          Locked 2 plugins in `plugins.lock`
    ");
    let after = ctx.lock_text();
    assert_eq!(
        lock_plugins(&after)[0],
        lock_plugins(&before)[0],
        "review keeps its pin"
    );
    assert_eq!(lock_field(&after, 1, "rev"), Some(repo.head()));

    berth_snapshot!(ctx.filters(), ctx.berth().args(["marketplace", "update", "acme"]), @r"
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
         Reading marketplace `acme` (github:acme/market)
       Unchanged marketplace `acme` at d11473e6e15a: already up to date
          Locked 2 plugins in `plugins.lock` (unchanged)
    ");
    assert_eq!(ctx.lock_text(), after);
    berth_snapshot!(ctx.filters(), ctx.berth().args(["marketplace", "update", "acm"]), @r"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    error: `plugins.toml` declares no marketplace `acm`; did you mean `acme`?
    ");
}

#[test]
fn plugins_tree_shows_each_entry_with_what_it_needs_and_where_it_comes_from() {
    let ctx = TestContext::new();
    market(&ctx);
    let tools = ctx.repo("tools");
    plugin(&tools, "", "tools", json!([]), "Tools.");
    tools.commit("tools");
    tools.tag("v1.0.0");
    ctx.write_manifest(
        "[[marketplace]]\nname = \"acme\"\nsource = \"github:acme/market\"\n\n[[plugin]]\nsource = \"app@acme\"\n\n[[plugin]]\nsource = \"github:acme/tools\"\nref = \"v1.0.0\"\n\n[[plugin]]\nsource = \"lib@acme\"\n",
    );
    ctx.ok(&["plugins", "lock"]);

    // `lib` is a manifest entry and a dependency of `app`: drawn once, then marked.
    berth_snapshot!(ctx.filters(), ctx.berth().args(["plugins", "tree"]), @r"
    success: true
    exit_code: 0
    ----- stdout -----
    app v1.0.0 from acme@68782a328d46
    ├── lib v1.0.0 from acme@68782a328d46
    │   └── shared v1.0.0 from acme@68782a328d46
    └── shared v1.0.0 from acme@68782a328d46
    tools (github:acme/tools v1.0.0 8f22aaa56ce6)
    lib v1.0.0 from acme@68782a328d46 (*)

    ----- stderr -----
    ");
    berth_snapshot!(ctx.filters(), ctx.berth().args(["plugins", "tree", "--invert", "shared"]), @r"
    success: true
    exit_code: 0
    ----- stdout -----
    shared v1.0.0 from acme@68782a328d46
    ├── app v1.0.0 from acme@68782a328d46
    └── lib v1.0.0 from acme@68782a328d46
        └── app v1.0.0 from acme@68782a328d46

    ----- stderr -----
    ");
    berth_snapshot!(ctx.filters(), ctx.berth().args(["plugins", "tree", "--invert", "shraed"]), @r"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    error: no plugin named `shraed` in `plugins.lock`; did you mean `shared`?
    ");
    let doc: Value =
        serde_json::from_str(&ctx.ok(&["plugins", "tree", "--json"]).stdout).expect("JSON");
    let roots = doc["plugins"].as_array().expect("plugins");
    assert_eq!(roots.len(), 3);
    assert_eq!(roots[0]["name"], "app");
    assert_eq!(roots[0]["marketplace"]["name"], "acme");
    let deps: Vec<&str> = roots[0]["dependencies"]
        .as_array()
        .expect("dependencies")
        .iter()
        .map(|d| d["name"].as_str().expect("name"))
        .collect();
    assert_eq!(deps, ["lib", "shared"]);
    assert_eq!(
        roots[0]["dependencies"][0]["dependencies"][0]["name"],
        "shared"
    );
    assert_eq!(roots[1]["name"], "tools");
    assert_eq!(roots[1]["ref"], "v1.0.0");
    assert_eq!(roots[1]["rev"], tools.rev("v1.0.0"));
}

/// A plugin repository whose plugin is in `plugin/`: a commit that changes only its
/// `VERSION` file moves the pin and not the plugin's content.
fn versioned_tools(ctx: &TestContext) -> GitRepo {
    let repo = ctx.repo("tools");
    plugin(&repo, "plugin", "tools", json!([]), "Tools.");
    for tag in ["v1.2.0", "v1.4.0"] {
        repo.write("VERSION", tag);
        repo.commit(tag);
        repo.tag(tag);
    }
    repo
}

/// A plugin repository `hooks` on `main`, with one skill and no hook yet.
fn hooks_repo(ctx: &TestContext) -> GitRepo {
    let repo = ctx.repo("hooks");
    plugin(&repo, "", "hooks", json!([]), "Hooks.");
    repo.commit("no hook yet");
    repo
}

#[test]
fn plugins_outdated_shows_what_an_upgrade_moves_and_writes_nothing() {
    let ctx = TestContext::new();
    let market = market(&ctx);
    let tools = versioned_tools(&ctx);
    let hooks = hooks_repo(&ctx);
    // Two entries of one name: `tools` within `^1.2`, and `tools` pinned to a tag.
    let manifest = "[[marketplace]]\nname = \"acme\"\nsource = \"github:acme/market\"\n\n[[plugin]]\nsource = \"review@acme\"\n\n[[plugin]]\nsource = \"github:acme/tools\"\nrepo_path = \"plugin\"\nversion = \"^1.2\"\n\n[[plugin]]\nsource = \"github:acme/hooks\"\nref = \"main\"\n\n[[plugin]]\nsource = \"github:acme/tools\"\nrepo_path = \"plugin\"\nref = \"v1.4.0\"\n";
    ctx.write_manifest(manifest);
    ctx.ok(&["plugins", "lock"]);
    let lock = ctx.lock_text();
    berth_snapshot!(ctx.filters(), ctx.berth().args(["plugins", "outdated"]), @r"
    success: true
    exit_code: 0
    ----- stdout -----
    all 4 plugins are up to date

    ----- stderr -----
         Reading marketplace `acme` (github:acme/market)
    ");

    // Upstream moves on: a tag `^1.2` matches and one it does not, with the same plugin
    // content, a hook on `main`, and the marketplace changes `review`'s skill text.
    for tag in ["v1.5.0", "v2.0.0"] {
        tools.write("VERSION", tag);
        tools.commit(tag);
        tools.tag(tag);
    }
    hooks.write(
        "hooks/hooks.json",
        "{\"hooks\": {\"PreToolUse\": [{\"matcher\": \"Bash\", \"hooks\": [{\"type\": \"command\", \"command\": \"${CLAUDE_PLUGIN_ROOT}/check.sh\"}]}]}}\n",
    );
    hooks.write_exec("check.sh", "#!/bin/sh\nexit 0\n");
    hooks.commit("a hook");
    plugin(
        &market,
        "plugins/review",
        "review",
        json!([]),
        "Review very carefully.",
    );
    market.commit("review: stricter");

    berth_snapshot!(ctx.filters(), ctx.berth().args(["plugins", "outdated"]), @r"
    success: true
    exit_code: 0
    ----- stdout -----
    PLUGIN              CURRENT               ALLOWED               NEWEST                CHANGES
    review              68782a328d46 (1.0.0)  c9f5e54fc2eb (1.0.0)  c9f5e54fc2eb (1.0.0)  1 change
    tools               v1.4.0 b68a28609a83   v1.5.0 8febed3bf382   v2.0.0 e9d95670706c   same content
    hooks               main 4abfe154e217     main 11191ed5b1b6     main 11191ed5b1b6     6 changes, runs different code
    tools               v1.4.0 b68a28609a83   v1.4.0 b68a28609a83   v2.0.0 e9d95670706c   held back by the manifest
    acme (marketplace)  68782a328d46          c9f5e54fc2eb          c9f5e54fc2eb

    review:
      ~ skill (content): review

    hooks:
      + command hook on pre_tool_use [Bash]: ${CLAUDE_PLUGIN_ROOT}/check.sh
      + executable: check.sh
      + file a command names: check.sh
      + file: check.sh
      + file: hooks/hooks.json
      + prose (covered: the plugin runs code): skills/hooks/SKILL.md

    ----- stderr -----
         Reading marketplace `acme` (github:acme/market)
        Outdated 3 of 4 plugins; `berth plugins update` moves everything (`berth plugins update NAME` one plugin, `berth marketplace update NAME` one marketplace)
       Held back 1 plugin by a `ref` or `version` of `plugins.toml`: NEWEST is newer than it allows; edit it to move
    ");
    assert_eq!(ctx.lock_text(), lock, "the lock is not written");
    assert_eq!(
        std::fs::read_to_string(ctx.manifest_path()).expect("read"),
        manifest
    );

    let run = ctx.run(&["plugins", "outdated", "--exit-code", "--json"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let doc: Value = serde_json::from_str(&run.stdout).expect("JSON");
    assert_eq!(doc["version"], 2);
    assert_eq!(doc["locked"], 4);
    let plugins = doc["plugins"].as_array().expect("plugins");
    let of = |name: &str| {
        plugins
            .iter()
            .find(|p| p["name"] == name)
            .unwrap_or_else(|| panic!("`{name}` in {doc}"))
    };
    let tools_rows: Vec<&Value> = plugins.iter().filter(|p| p["name"] == "tools").collect();
    assert_eq!(tools_rows.len(), 2, "{doc}");
    let (ranged, pinned) = (tools_rows[0], tools_rows[1]);
    assert_eq!(ranged["status"], "outdated");
    assert_eq!(ranged["current"]["ref"], "v1.4.0");
    assert_eq!(ranged["allowed"]["ref"], "v1.5.0");
    assert_eq!(ranged["allowed"]["rev"], tools.rev("v1.5.0"));
    assert_eq!(ranged["newest"]["ref"], "v2.0.0");
    assert_eq!(ranged["newest"]["rev"], tools.rev("v2.0.0"));
    assert_eq!(ranged["content_changed"], false);
    // The tag pin is not compared with the other `tools`: it stays, held back.
    assert_eq!(pinned["status"], "held");
    assert_eq!(pinned["current"]["ref"], "v1.4.0");
    assert_eq!(pinned["allowed"]["rev"], tools.rev("v1.4.0"));
    assert_eq!(pinned["newest"]["ref"], "v2.0.0");
    assert_eq!(of("hooks")["runs_different_code"], true);
    assert_eq!(
        of("hooks")["changes"]["hooks"]["added"][0]["command"],
        "${CLAUDE_PLUGIN_ROOT}/check.sh"
    );
    assert_eq!(of("review")["content_changed"], true);
    assert_eq!(of("review")["runs_different_code"], false);
    assert_eq!(doc["marketplaces"][0]["allowed"], market.head());
    assert_eq!(doc["marketplaces"][0]["newest"], market.head());
    assert_eq!(ctx.lock_text(), lock);

    // Moving them all leaves only what the manifest holds back: `--exit-code` passes.
    ctx.ok(&["plugins", "update"]);
    let run = ctx.ok(&["plugins", "outdated", "--exit-code"]);
    assert!(
        run.stdout.contains("held back by the manifest") && !run.stdout.contains("outdated"),
        "{}",
        run.stdout
    );
    let run = ctx.ok(&["plugins", "outdated", "--json"]);
    let doc: Value = serde_json::from_str(&run.stdout).expect("JSON");
    let statuses: Vec<&str> = doc["plugins"]
        .as_array()
        .expect("plugins")
        .iter()
        .map(|p| p["status"].as_str().expect("status"))
        .collect();
    assert_eq!(statuses, ["held", "held"], "{doc}");
    // With the pins moved to the newest, nothing is left.
    let manifest = manifest.replace("^1.2", "^2").replace("v1.4.0", "v2.0.0");
    ctx.write_manifest(&manifest);
    ctx.ok(&["plugins", "lock"]);
    let run = ctx.ok(&["plugins", "outdated", "--exit-code"]);
    assert_eq!(run.stdout, "all 4 plugins are up to date\n");

    // A lock behind its manifest is not compared.
    ctx.write_manifest(&format!("{manifest}\n[[plugin]]\nsource = \"lint@acme\"\n"));
    berth_snapshot!(ctx.filters(), ctx.berth().args(["plugins", "outdated"]), @r"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    error: `plugins.lock` is out of date with `plugins.toml`; run `berth plugins lock` first (`outdated` compares the lock with what `--upgrade` would make of it)
      entry 5 (`lint@acme`) is not in the lock
    ");
}

/// NEWEST for a marketplace read at a version tag (its default branch) and for a
/// marketplace's npm plugin (the package's `latest`, whatever version its entry asks).
#[test]
fn plugins_outdated_shows_what_a_tag_pinned_marketplace_and_an_npm_range_hold_back() {
    let ctx = TestContext::new();
    let mut npm = common::npm::Registry::start(&ctx.root.join("npm"));
    for version in ["1.0.0", "1.1.0", "2.0.0"] {
        npm.publish(
            "tools",
            version,
            json!({}),
            &[
                (
                    ".claude-plugin/plugin.json",
                    &json!({"name": "npmtools", "version": version}).to_string(),
                ),
                (
                    "skills/tools/SKILL.md",
                    &format!("---\nname: tools\ndescription: tools {version}\n---\nTools.\n"),
                ),
            ],
        );
    }
    let market = ctx.repo("market");
    plugin(&market, "plugins/rel", "rel", json!([]), "Relative.");
    market.write(
        ".claude-plugin/marketplace.json",
        &json!({"name": "acme", "plugins": [
            {"name": "rel", "source": "./plugins/rel"},
            {"name": "npmtools", "source": {"source": "npm", "package": "tools",
                                            "version": "^1.0.0", "registry": npm.url()}}
        ]})
        .to_string(),
    );
    market.commit("catalog");
    market.tag("v1.0.0");
    let tagged = market.head();
    ctx.write_manifest(
        "[[marketplace]]\nname = \"acme\"\nsource = \"github:acme/market\"\nref = \"v1.0.0\"\n\n[[plugin]]\nsource = \"rel@acme\"\n\n[[plugin]]\nsource = \"npmtools@acme\"\n",
    );
    ctx.ok(&["plugins", "lock"]);
    plugin(&market, "plugins/rel", "rel", json!([]), "Relative, newer.");
    market.commit("rel: newer");
    // `update` moves nothing: the tag and the range hold everything back.
    let run = ctx.ok(&["plugins", "outdated", "--exit-code", "--json"]);
    let doc: Value = serde_json::from_str(&run.stdout).expect("JSON");
    let row = |name: &str| {
        doc["plugins"]
            .as_array()
            .expect("plugins")
            .iter()
            .find(|p| p["name"] == name)
            .unwrap_or_else(|| panic!("`{name}` in {doc}"))
            .clone()
    };
    let tools = row("npmtools");
    assert_eq!(tools["status"], "held", "{doc}");
    assert_eq!(tools["current"]["version"], "1.1.0", "{doc}");
    assert_eq!(tools["allowed"]["version"], "1.1.0", "{doc}");
    assert_eq!(tools["newest"]["version"], "2.0.0", "{doc}");
    let rel = row("rel");
    assert_eq!(rel["status"], "held", "{doc}");
    assert_eq!(rel["allowed"]["rev"], tagged.as_str(), "{doc}");
    assert_eq!(rel["newest"]["rev"], market.head().as_str(), "{doc}");
    let acme = &doc["marketplaces"][0];
    assert_eq!(acme["current"], tagged.as_str(), "{doc}");
    assert_eq!(acme["allowed"], tagged.as_str(), "{doc}");
    assert_eq!(acme["newest"], market.head().as_str(), "{doc}");
    let text = ctx.ok(&["plugins", "outdated"]);
    assert!(
        text.stderr.contains(
            "Held back 2 plugins and 1 marketplace by a `ref` or `version` of `plugins.toml`"
        ),
        "{}",
        text.stderr
    );
}
