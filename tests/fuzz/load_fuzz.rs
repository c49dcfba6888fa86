//! Property tests of plugin loading: two plugins with random front matter, hooks files,
//! MCP files and manifests (grammar-shaped fragments and structurally valid JSON with the
//! keys the loaders look for, plus invalid UTF-8 and symlinks in and out) are committed to
//! a store and built into a plugin set. The build never panics; a failure names its
//! plugin; a success names the plugin in every warning and is the same on a second build.
//! `PROPTEST_CASES` runs them longer.

use std::os::unix::fs::symlink;
use std::path::Path;

use berth_lockfile_schema::{Lock, LockedPlugin, Pin};
use berth_runtime::{BuildOptions, build_plugin_set};
use berth_store::Store;
use proptest::prelude::*;
use serde_json::Value;

fn cases(default: u32) -> ProptestConfig {
    ProptestConfig {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(default),
        failure_persistence: Some(Box::new(crate::REGRESSIONS)),
        ..ProptestConfig::default()
    }
}

const MARKDOWN_FILES: &[&str] = &[
    "SKILL.md",
    "skills/a/SKILL.md",
    "skills/b.md",
    "skills/a/extra.md",
    "skills/c/SKILL.md",
    "commands/run.md",
    "agents/helper.md",
    "dev.openhands/commands/go.md",
    "dev.openhands/agents/bot.md",
];

const JSON_FILES: &[&str] = &[
    "hooks/hooks.json",
    ".mcp.json",
    "mcp.json",
    "dev.openhands/hooks/hooks.json",
];

/// Front matter made of YAML fragments the loaders care about, and some they should not.
fn markdown() -> impl Strategy<Value = String> {
    let fragment = prop::sample::select(vec![
        "name: x\n",
        "name: \"\"\n",
        "name: [1, 2]\n",
        "description: a skill\n",
        "description: >\n  folded\n  text\n",
        "description: yes\n",
        "description: 3.5\n",
        "triggers: [deploy, \"ship it\"]\n",
        "triggers: deploy\n",
        "triggers:\n  - a\n  - 7\n",
        "allowed-tools: Bash Read\n",
        "tools: [Read, Write]\n",
        "model: inherit\n",
        "permission_mode: never_confirm\n",
        "disable-model-invocation: true\n",
        "metadata:\n  k: v\n  n: 1\n",
        "license: MIT\n",
        "inputs:\n  - name: env\n    description: where\n",
        "&a anchor\n",
        "*a\n",
        "!!binary aGk=\n",
        "? complex\n",
        "- list\n",
        ": :\n",
        "{\n",
        "'\n",
        "\"\n",
        "\t\n",
        "é ✓ 日本\n",
        "\u{0}\n",
        "---\n",
        "${CLAUDE_PLUGIN_ROOT}\n",
    ]);
    (
        any::<bool>(),
        prop::collection::vec(fragment, 0..8),
        prop::option::of("[a-z #\n]{0,40}"),
    )
        .prop_map(|(fenced, lines, body)| {
            let mut text = String::new();
            if fenced {
                text.push_str("---\n");
            }
            text.push_str(&lines.concat());
            if fenced {
                text.push_str("---\n");
            }
            text.push_str(body.as_deref().unwrap_or(""));
            text
        })
}

/// JSON values built from the keys and values the hooks, MCP and manifest loaders read.
fn json_value() -> impl Strategy<Value = Value> {
    let key = prop::sample::select(vec![
        "hooks",
        "PreToolUse",
        "PostToolUse",
        "pre_tool_use",
        "SessionStart",
        "Stop",
        "UnknownEvent",
        "matcher",
        "type",
        "command",
        "timeout",
        "async",
        "mcpServers",
        "url",
        "args",
        "env",
        "headers",
        "cwd",
        "name",
        "version",
        "description",
        "$schema",
        "skills",
        "entrypoint",
    ]);
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (-1e6f64..1e6).prop_map(Value::from),
        prop::sample::select(vec![
            "*",
            "Bash|Edit",
            "^(",
            "command",
            "http",
            "sse",
            "echo ${CLAUDE_PLUGIN_ROOT} ${PLUGIN_DATA}",
            "${OPENHANDS_PLUGIN_ROOT}/bin/server",
            "https://mcp.example/x",
            "review",
            "1.0.0",
            "",
            "../../etc/passwd",
        ])
        .prop_map(|s| Value::String(s.to_owned())),
    ];
    leaf.prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((key.clone(), inner), 0..5).prop_map(|pairs| {
                Value::Object(pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
            }),
        ]
    })
}

/// A hooks file shaped as the loaders expect, with random values in every slot.
fn hooks_value() -> impl Strategy<Value = Value> {
    let hook = (
        prop::sample::select(vec!["command", "prompt", "http"]),
        prop_oneof![
            json_value(),
            Just(Value::from("echo ${CLAUDE_PLUGIN_ROOT}"))
        ],
        prop::option::of(json_value()),
    )
        .prop_map(|(kind, command, timeout)| {
            let mut hook = serde_json::json!({ "type": kind, "command": command });
            if let Some(timeout) = timeout {
                hook["timeout"] = timeout;
            }
            hook
        });
    let matcher = (
        prop::option::of(json_value()),
        prop::collection::vec(hook, 0..3),
    )
        .prop_map(|(matcher, hooks)| {
            let mut m = serde_json::json!({ "hooks": hooks });
            if let Some(matcher) = matcher {
                m["matcher"] = matcher;
            }
            m
        });
    let event = prop::sample::select(vec![
        "PreToolUse",
        "PostToolUse",
        "UserPromptSubmit",
        "SessionStart",
        "SessionEnd",
        "Stop",
        "pre_tool_use",
        "Bogus",
    ]);
    (
        prop::collection::btree_map(event, prop::collection::vec(matcher, 0..3), 0..4),
        any::<bool>(),
    )
        .prop_map(|(events, wrapped)| {
            let events: serde_json::Map<String, Value> = events
                .into_iter()
                .map(|(k, v)| (k.to_owned(), Value::Array(v)))
                .collect();
            if wrapped {
                serde_json::json!({ "hooks": events })
            } else {
                Value::Object(events)
            }
        })
}

/// An MCP file: servers with mostly well-typed, sometimes random commands, args, env,
/// urls and types.
fn mcp_value() -> impl Strategy<Value = Value> {
    let text = prop::sample::select(vec![
        "node",
        "${CLAUDE_PLUGIN_ROOT}/bin/server",
        "${PLUGIN_DATA}/cache",
        "https://mcp.example/sse",
        "http://127.0.0.1:9/mcp",
        "",
        "${HOME}",
    ])
    .prop_map(Value::from);
    let typed = prop_oneof![
        text.clone().prop_map(|v| ("command", v)),
        prop::collection::vec(text.clone(), 0..3).prop_map(|v| ("args", Value::Array(v))),
        prop::collection::btree_map("[A-C]{1,2}", text.clone(), 0..3)
            .prop_map(|m| ("env", Value::Object(m.into_iter().collect()))),
        text.clone().prop_map(|v| ("url", v)),
        prop::sample::select(vec!["stdio", "http", "sse", "shttp", "websocket"])
            .prop_map(|t| ("type", Value::from(t))),
        prop::collection::btree_map("[a-c]{1,2}", text, 0..2)
            .prop_map(|m| ("headers", Value::Object(m.into_iter().collect()))),
    ];
    let random = (
        prop::sample::select(vec![
            "command", "args", "env", "url", "type", "headers", "cwd",
        ]),
        json_value(),
    );
    let server =
        prop::collection::vec(prop_oneof![4 => typed, 1 => random], 0..5).prop_map(|pairs| {
            Value::Object(pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
        });
    (
        prop::collection::btree_map("[a-c]{1,2}", server, 0..4),
        prop::bool::weighted(0.8),
    )
        .prop_map(|(servers, wrapped)| {
            let servers: serde_json::Map<String, Value> = servers.into_iter().collect();
            if wrapped {
                serde_json::json!({ "mcpServers": servers })
            } else {
                Value::Object(servers)
            }
        })
}

/// A manifest: usually valid (either layout), sometimes with a random field.
fn manifest_value() -> impl Strategy<Value = Value> {
    (
        any::<bool>(),
        prop::option::of((
            prop::sample::select(vec!["name", "version", "description", "skills", "hooks"]),
            json_value(),
        )),
    )
        .prop_map(|(agent_plugins, extra)| {
            let mut m = serde_json::json!({ "name": "fuzzed", "version": "1.0.0" });
            if agent_plugins {
                m["$schema"] = Value::from(berth_plugin::manifest::AGENT_PLUGINS_SCHEMA);
            }
            if let Some((key, value)) = extra {
                m[key] = value;
            }
            m
        })
}

/// JSON text: a valid value, or fragments that are not quite JSON.
fn json_text() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => json_value().prop_map(|v| v.to_string()),
        3 => hooks_value().prop_map(|v| v.to_string()),
        3 => mcp_value().prop_map(|v| v.to_string()),
        1 => prop::collection::vec(
            prop::sample::select(vec![
                "{", "}", "[", "]", ":", ",", "\"hooks\"", "\"mcpServers\"", "\"command\"",
                "1e999", "-0", "\"\\ud800\"", "null", "// c\n", "\u{feff}",
            ]),
            0..20,
        )
        .prop_map(|parts| parts.concat()),
    ]
}

#[derive(Debug, Clone)]
enum Content {
    Text(String),
    Bytes(Vec<u8>),
    Link(&'static str),
}

fn plugin_tree() -> impl Strategy<Value = Vec<(&'static str, Content)>> {
    let markdown_file = (prop::sample::select(MARKDOWN_FILES), markdown())
        .prop_map(|(path, text)| (path, Content::Text(text)));
    let json_file = (prop::sample::select(JSON_FILES), json_text())
        .prop_map(|(path, text)| (path, Content::Text(text)));
    let manifest_file = (
        prop::sample::select(vec![
            "plugin.json",
            ".claude-plugin/plugin.json",
            ".plugin/plugin.json",
        ]),
        prop_oneof![4 => manifest_value().prop_map(|v| v.to_string()), 1 => json_text()],
    )
        .prop_map(|(path, text)| (path, Content::Text(text)));
    let odd_file = prop_oneof![
        (
            prop::sample::select(MARKDOWN_FILES),
            prop::collection::vec(any::<u8>(), 0..16)
        )
            .prop_map(|(path, bytes)| (path, Content::Bytes(bytes))),
        (
            prop::sample::select(vec![
                "skills/l.md",
                "commands",
                "hooks/hooks.json",
                "skills/a"
            ]),
            prop::sample::select(vec![
                "../../../../outside",
                "/etc/hostname",
                ".",
                "skills",
                "loop"
            ]),
        )
            .prop_map(|(path, target)| (path, Content::Link(target))),
    ];
    prop::collection::vec(
        prop_oneof![4 => markdown_file, 4 => json_file, 1 => manifest_file, 1 => odd_file],
        0..10,
    )
}

fn write_tree(root: &Path, files: &[(&str, Content)]) {
    for (rel, content) in files {
        let path = root.join(rel);
        // The first writer of a path wins (a file or link may already stand where a
        // folder of this path would go).
        if std::fs::create_dir_all(path.parent().expect("parent")).is_err()
            || std::fs::symlink_metadata(&path).is_ok()
        {
            continue;
        }
        match content {
            Content::Text(text) => std::fs::write(&path, text).expect("write"),
            Content::Bytes(bytes) => std::fs::write(&path, bytes).expect("write"),
            Content::Link(target) => symlink(target, &path).expect("symlink"),
        }
    }
}

fn add_plugin(store: &Store, name: &str, files: &[(&str, Content)]) -> LockedPlugin {
    let staging = store.stage().expect("stage");
    write_tree(staging.path(), files);
    let entry = store.commit(staging, name, None).expect("commit");
    LockedPlugin {
        name: name.to_owned(),
        requested: None,
        plugin_version: None,
        dependencies: Vec::new(),
        needed_by: Vec::new(),
        auto_load: None,
        standalone_skill: false,
        definition: None,
        signature: None,
        npm: None,
        source: format!("./{name}"),
        git_ref: None,
        version: None,
        resolved_ref: None,
        repo_path: None,
        pin: Pin::Local(berth_lockfile_schema::LocalPin {
            path: format!("./{name}"),
        }),
        hash: entry.hash,
    }
}

proptest! {
    #![proptest_config(cases(256))]

    #[test]
    fn building_a_set_of_random_plugins_never_panics(first in plugin_tree(), second in plugin_tree()) {
        let scratch = tempfile::tempdir().expect("tempdir");
        let store = Store::new(scratch.path().join("store"));
        let lock = Lock {
            plugins: vec![add_plugin(&store, "alpha", &first), add_plugin(&store, "beta", &second)],
            agent: None,
            marketplaces: Vec::new(),
            payloads: Vec::new(),
            registry_keys: Vec::new(),
            tools: Vec::new(),
            exclude_newer: None,
        };
        match build_plugin_set(&store, &lock, &BuildOptions::default()) {
            Ok(set) => {
                for warning in &set.warnings {
                    prop_assert!(
                        warning.contains("`alpha`") || warning.contains("`beta`"),
                        "a warning that names no plugin: {warning}"
                    );
                }
                let json = set.to_json();
                prop_assert!(serde_json::from_str::<Value>(&json).is_ok());
                let again = build_plugin_set(&store, &lock, &BuildOptions::default())
                    .expect("the second build of the same store succeeds too");
                prop_assert_eq!(json, again.to_json());
            }
            Err(e) => {
                let message = e.to_string();
                prop_assert!(
                    message.contains("alpha") || message.contains("beta"),
                    "an error that names no plugin: {message}"
                );
            }
        }
    }
}

proptest! {
    #![proptest_config(cases(1024))]

    #[test]
    fn front_matter_parsing_never_panics(text in prop_oneof![markdown(), ".{0,200}"]) {
        if let Ok(doc) = berth_plugin::frontmatter::parse(&text) {
            // The body is stripped as Python's `str.strip()` strips it.
            prop_assert_eq!(berth_plugin::frontmatter::py_strip(&doc.content), doc.content.as_str());
        }
    }
}

#[test]
fn a_cancelled_build_stops_before_reading_plugins() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let store = Store::new(scratch.path().join("store"));
    let lock = Lock {
        plugins: vec![add_plugin(
            &store,
            "alpha",
            &[(
                "skills/a/SKILL.md",
                Content::Text("---\nname: a\n---\nbody".into()),
            )],
        )],
        agent: None,
        marketplaces: Vec::new(),
        payloads: Vec::new(),
        registry_keys: Vec::new(),
        tools: Vec::new(),
        exclude_newer: None,
    };
    let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let options = BuildOptions {
        cancel: Some(flag.clone()),
        ..BuildOptions::default()
    };
    let set = build_plugin_set(&store, &lock, &options).expect("not cancelled yet");
    assert_eq!(set.skills.len(), 1);
    flag.store(true, std::sync::atomic::Ordering::SeqCst);
    let err = build_plugin_set(&store, &lock, &options).expect_err("cancelled");
    assert!(matches!(err, berth_plugin::PluginError::Cancelled), "{err}");
}
