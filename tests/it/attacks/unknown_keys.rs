//! The table of harness keys as a property (issue #52): a key the table does not know, at
//! any place a harness reads a plugin, makes `lock` refuse the plugin under a policy that
//! denies, naming the key; and renaming a modelled key to an unknown one never lowers the
//! capabilities `show --json` reports.
//!
//! Every place is tried in every case, each in a plugin of its own. The places whose plugin
//! runs nothing (a manifest, its `experimental` table, a hooks file, a matcher group,
//! settings, a marketplace entry, a Gemini CLI command, front matter) are in a project
//! whose policy denies every capability; those that need something to run (a hook, an MCP
//! server, an LSP server, a monitor) in one that asks for approval of what they run,
//! approved, and denies the rest.

use std::collections::BTreeSet;

use berth_lockfile_schema::harness_keys::Place;
use proptest::prelude::*;
use serde_json::{Value, json};

use super::fail_closed::DENY_EVERYTHING;
use super::review::{json_of, manifest, plugin, policy, write};
use crate::common::TestContext;

/// The plugin that holds `place`.
fn name(place: Place) -> String {
    place.as_str().replace('_', "-")
}

/// Whether `place`'s plugin runs something before a key is added.
fn runs_something(place: Place) -> bool {
    matches!(
        place,
        Place::Hook | Place::McpServer | Place::LspServer | Place::Monitor
    )
}

/// A front matter's file and its text, with `extra` (`KEY: VALUE` lines) added.
fn front_matter(place: Place, extra: &str) -> (&'static str, String) {
    match place {
        Place::SkillFrontMatter => (
            "skills/s/SKILL.md",
            format!("---\nname: s\ndescription: d\n{extra}---\nbody\n"),
        ),
        Place::CommandFrontMatter => (
            "commands/c.md",
            format!("---\ndescription: d\n{extra}---\nbody\n"),
        ),
        _ => (
            "agents/a.md",
            format!("---\nname: a\ndescription: d\n{extra}---\nbody\n"),
        ),
    }
}

/// The JSON file that holds `place` in its plugin, and its content; `edit` changes the
/// object the place is (the manifest, a server, a hook...).
fn json_place(place: Place, edit: &dyn Fn(&mut serde_json::Map<String, Value>)) -> (String, Value) {
    let mut object = match place {
        Place::Manifest
        | Place::Experimental
        | Place::OpenaiExtension
        | Place::OpenhandsExtension
        | Place::GeminiExtension => json!({"name": name(place), "version": "1.0.0"}),
        Place::HooksFile => json!({"hooks": {}}),
        Place::McpFile => json!({"mcpServers": {}}),
        Place::LspFile => json!({"lspServers": {}}),
        Place::HookGroup => json!({"matcher": "*", "hooks": []}),
        Place::Hook => json!({"type": "command", "command": "true"}),
        Place::McpServer => json!({"type": "http", "url": "https://mcp.example.com/mcp"}),
        Place::LspServer => json!({"command": "lsp", "extensionToLanguage": {".x": "x"}}),
        Place::Monitor => json!({"command": "tail -f log"}),
        _ => json!({}),
    };
    // The table inside the manifest that is the place, if it is one.
    let inner = match place {
        Place::Experimental => Some(("experimental", None)),
        Place::OpenaiExtension => Some(("extensions", Some("com.openai"))),
        Place::OpenhandsExtension => Some(("extensions", Some("dev.openhands"))),
        _ => None,
    };
    let mut table = json!({});
    let target = if inner.is_some() {
        &mut table
    } else {
        &mut object
    };
    edit(target.as_object_mut().expect("an object"));
    let (rel, value) = match (place, inner) {
        (_, Some((key, None))) => {
            object[key] = table;
            (".claude-plugin/plugin.json", object)
        }
        (_, Some((key, Some(namespace)))) => {
            object[key] = json!({ namespace: table });
            (".claude-plugin/plugin.json", object)
        }
        (Place::Manifest, None) => (".claude-plugin/plugin.json", object),
        (Place::GeminiExtension, None) => ("gemini-extension.json", object),
        (Place::HooksFile, None) => ("hooks/hooks.json", object),
        (Place::HookGroup, None) => ("hooks/hooks.json", json!({"hooks": {"Stop": [object]}})),
        (Place::Hook, None) => (
            "hooks/hooks.json",
            json!({"hooks": {"Stop": [{"matcher": "*", "hooks": [object]}]}}),
        ),
        (Place::McpFile, None) => (".mcp.json", object),
        (Place::LspFile, None) => (".lsp.json", object),
        (Place::McpServer, None) => (".mcp.json", json!({"mcpServers": {"s": object}})),
        (Place::LspServer, None) => (".lsp.json", json!({ "l": object })),
        (Place::Monitor, None) => ("monitors/monitors.json", json!([object])),
        _ => ("settings.json", object),
    };
    (rel.to_owned(), value)
}

/// Writes the plugin of `place` (a marketplace entry's into the project's marketplace),
/// with `edit` applied to the place.
fn write_place(
    ctx: &TestContext,
    place: Place,
    edit: &dyn Fn(&mut serde_json::Map<String, Value>),
) {
    let dir = plugin(ctx, &name(place));
    match place {
        Place::MarketplaceEntry => {
            let manifest = json!({"name": name(place), "version": "1.0.0"}).to_string();
            let folder = ctx.work.join("market/plugins").join(name(place));
            write(&folder, ".claude-plugin/plugin.json", &manifest);
            let mut entry = json!({"name": name(place), "source": "./plugins/marketplace-entry"})
                .as_object()
                .cloned()
                .expect("an object");
            edit(&mut entry);
            let catalog = json!({"name": "mk", "owner": {"name": "o"}, "plugins": [entry]});
            write(
                &ctx.work.join("market"),
                ".claude-plugin/marketplace.json",
                &catalog.to_string(),
            );
        }
        Place::GeminiCommand => {
            let manifest = json!({"name": name(place), "version": "1.0.0"}).to_string();
            write(&dir, "gemini-extension.json", &manifest);
            let mut command = json!({"prompt": "Say hello", "description": "d"})
                .as_object()
                .cloned()
                .expect("an object");
            edit(&mut command);
            write(
                &dir,
                "commands/c.toml",
                &toml::to_string(&command).expect("TOML"),
            );
        }
        Place::SkillFrontMatter | Place::CommandFrontMatter | Place::AgentFrontMatter => {
            let mut extra = serde_json::Map::new();
            edit(&mut extra);
            let lines: String = extra.iter().map(|(k, v)| format!("{k}: {v}\n")).collect();
            let (rel, text) = front_matter(place, &lines);
            write(&dir, rel, &text);
        }
        _ => {
            let (rel, value) = json_place(place, edit);
            write(&dir, &rel, &value.to_string());
        }
    }
}

/// Writes the project's manifest: the plugins of `places`, the marketplace entry's by
/// way of the marketplace.
fn write_manifest(ctx: &TestContext, places: &[Place]) {
    let local: Vec<String> = places
        .iter()
        .filter(|p| **p != Place::MarketplaceEntry)
        .map(|p| name(*p))
        .collect();
    let local: Vec<&str> = local.iter().map(String::as_str).collect();
    manifest(ctx, &local);
    if places.contains(&Place::MarketplaceEntry) {
        let text = std::fs::read_to_string(ctx.work.join("plugins.toml")).expect("manifest");
        ctx.write_manifest(&format!(
            "[[marketplace]]\nname = \"mk\"\nsource = \"./market\"\n\n{text}[[plugin]]\nsource = \"marketplace-entry@mk\"\n"
        ));
    }
}

/// A key no place of the table knows.
fn unknown_key() -> impl Strategy<Value = String> {
    "[a-z][a-zA-Z0-9]{2,12}".prop_filter("a key the table knows", |k| {
        Place::ALL.iter().all(|p| !p.knows(k)) && k != "matcher"
    })
}

/// A value a key may hold: never null, never an empty list.
fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        "[a-z ./]{1,12}".prop_map(Value::String),
        any::<u16>().prop_map(|n| json!(n)),
        Just(json!(true)),
        "[a-z]{1,8}".prop_map(|s| json!({ "run": s })),
        prop::collection::vec("[a-z]{1,6}", 1..3).prop_map(|v| json!(v)),
    ]
}

/// Every key `berth plugins lock` refused, by plugin.
fn check_refused(ctx: &TestContext, keys: &[(Place, String)]) -> Result<(), TestCaseError> {
    let before = std::fs::read(ctx.lock_path()).expect("lock");
    let run = ctx.run(&["plugins", "lock"]);
    let said = format!("{}{}", run.stdout, run.stderr);
    prop_assert_eq!(run.code, 1, "{}", said);
    prop_assert_eq!(std::fs::read(ctx.lock_path()).expect("lock"), before);
    for (place, key) in keys {
        let plugin = format!("plugin `{}`", name(*place));
        let named = if *place == Place::HooksFile {
            format!("`{key}`")
        } else {
            format!("`{key}`, a key of {}", place.noun())
        };
        let refused = said
            .lines()
            .any(|line| line.contains(&plugin) && line.contains(&named));
        prop_assert!(
            refused,
            "{} {:?}: {} not named in {}",
            plugin,
            place,
            named,
            said
        );
    }
    Ok(())
}

/// The capabilities `show --json` reports of each plugin.
fn capabilities(ctx: &TestContext) -> Vec<(String, BTreeSet<String>)> {
    let shown = json_of(&ctx.ok(&["plugins", "show", "--json"]).stdout);
    let review = shown["review"].as_object().expect("review");
    review
        .iter()
        .map(|(plugin, r)| {
            let caps = r["capabilities"]
                .as_array()
                .expect("capabilities")
                .iter()
                .map(|c| c.as_str().expect("a name").to_owned())
                .collect();
            (plugin.clone(), caps)
        })
        .collect()
}

/// A modelled key of each place, in the plugin renaming tests start from, with its value.
fn modelled(place: Place) -> (&'static str, Value) {
    let hook = json!({"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]});
    match place {
        Place::Manifest | Place::Experimental | Place::OpenaiExtension | Place::HooksFile => {
            ("hooks", hook)
        }
        // It models no key: an inert one is renamed.
        Place::OpenhandsExtension => ("entry_command", json!("start")),
        Place::HookGroup => ("hooks", json!([{"type": "command", "command": "true"}])),
        Place::Hook | Place::LspServer | Place::Monitor => ("command", json!("true")),
        Place::McpServer => ("url", json!("https://mcp.example.com/mcp")),
        Place::McpFile => (
            "mcpServers",
            json!({"s": {"type": "http", "url": "https://mcp.example.com/mcp"}}),
        ),
        Place::LspFile => (
            "lspServers",
            json!({"l": {"command": "lsp", "extensionToLanguage": {".x": "x"}}}),
        ),
        Place::GeminiExtension => (
            "mcpServers",
            json!({"s": {"type": "http", "url": "https://mcp.example.com/mcp"}}),
        ),
        Place::Settings => ("statusLine", json!({"type": "command", "command": "true"})),
        Place::MarketplaceEntry => ("hooks", json!({ "hooks": hook })),
        Place::GeminiCommand => ("prompt", json!("Run !{true}")),
        _ => (
            "hooks",
            json!({"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}),
        ),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(6))]

    #[test]
    fn a_key_the_table_does_not_know_is_refused_naming_it(
        keys in prop::collection::vec((unknown_key(), value()), Place::ALL.len()),
    ) {
        for approving in [false, true] {
            let ctx = TestContext::new();
            let places: Vec<Place> = Place::ALL
                .into_iter()
                .filter(|p| runs_something(*p) == approving)
                .collect();
            for place in &places {
                write_place(&ctx, *place, &|_| {});
            }
            write_manifest(&ctx, &places);
            if approving {
                policy(&ctx, "[capabilities]\nhooks = \"approve\"\nmcp_stdio = \"approve\"\nmcp_remote = \"approve\"\nexecutables = \"deny\"\nmcp_remote_hosts = [\"mcp.example.com\"]\n");
                ctx.ok(&["plugins", "lock", "--no-observe"]);
                ctx.ok(&["plugins", "approve", "--all", "--by", "T <t@example.com>"]);
                ctx.ok(&["audit"]);
            } else {
                policy(&ctx, DENY_EVERYTHING);
                ctx.ok(&["plugins", "lock"]);
            }
            let mut added = Vec::new();
            for place in &places {
                let (key, value) = &keys[Place::ALL.iter().position(|p| p == place).expect("a place")];
                write_place(&ctx, *place, &|object| {
                    object.insert(key.clone(), value.clone());
                });
                added.push((*place, key.clone()));
            }
            check_refused(&ctx, &added)?;
        }
    }

    #[test]
    fn renaming_a_modelled_key_never_lowers_what_show_reports(
        keys in prop::collection::vec(unknown_key(), Place::ALL.len()),
    ) {
        let ctx = TestContext::new();
        for place in Place::ALL {
            let (key, value) = modelled(place);
            write_place(&ctx, place, &|object| {
                object.insert(key.to_owned(), value.clone());
            });
        }
        write_manifest(&ctx, &Place::ALL);
        ctx.ok(&["plugins", "lock", "--no-observe"]);
        let before = capabilities(&ctx);
        for (i, place) in Place::ALL.into_iter().enumerate() {
            let (key, value) = modelled(place);
            write_place(&ctx, place, &|object| {
                object.remove(key);
                object.insert(keys[i].clone(), value.clone());
            });
        }
        ctx.ok(&["plugins", "lock", "--no-observe"]);
        let after = capabilities(&ctx);
        for ((plugin, was), (_, now)) in before.iter().zip(&after) {
            prop_assert!(was.is_subset(now), "{}: {:?} -> {:?}", plugin, was, now);
            prop_assert!(!now.is_empty(), "{}", plugin);
        }
    }
}
