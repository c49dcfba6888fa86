//! One document's hooks, monitors, status lines and servers, read leniently: whatever a
//! harness could take is an entry, and what cannot be modelled counts as the capability.

use std::collections::BTreeMap;

use berth_lockfile_schema::canonical_json;
use berth_lockfile_schema::governance::Capability;
use berth_lockfile_schema::harness_keys::Place;
use serde_json::{Map, Value};

use super::commands;
use super::found::Readable;
use super::hooks::hooks;
use super::values::{raw, text, unknown_keys, unmodeled};
use super::{LspEntry, McpEntry, Runs};
use crate::lsp::insert_unique;
use crate::model::Kind;

/// Adds what `document` defines to `runs`.
pub(super) fn add(document: Readable, plugin: &str, runs: &mut Runs) {
    let Readable {
        kind,
        source,
        value,
        keyed,
    } = document;
    match kind {
        Kind::Hooks => hooks(&source, value, runs),
        Kind::Monitors => commands::monitors(&source, value, runs),
        Kind::Settings => commands::settings(&source, value, runs),
        Kind::Mcp => mcp(&source, value, keyed, plugin, runs),
        Kind::Lsp => lsp(&source, value, keyed, plugin, runs),
    }
}

/// The servers of a servers document: its `wrapper` object's (`mcpServers`,
/// `lspServers`) when it has one, else the document's own entries; a server that is not
/// an object, like a document that is not one, counts as a stdio server berth cannot
/// model. Beside a wrapper, a key the table does not know at `place` counts as every
/// capability (Claude Code drops it today; a harness may read it tomorrow).
fn servers(
    source: &str,
    value: Value,
    (wrapper, place): (&str, Place),
    noun: &str,
    runs: &mut Runs,
) -> Vec<(String, Map<String, Value>)> {
    let cannot = |runs: &mut Runs, what: String| {
        unmodeled(runs, Capability::McpStdio, source, what);
    };
    let Value::Object(mut map) = value else {
        cannot(runs, format!("{noun} servers that are not a JSON object"));
        return Vec::new();
    };
    let map = match map.remove(wrapper) {
        Some(Value::Object(inner)) => {
            unknown_keys(runs, place, &map, source);
            inner
        }
        Some(other) => {
            cannot(
                runs,
                format!("`{wrapper}` that is not an object (`{other}`)"),
            );
            return Vec::new();
        }
        None => {
            map.remove("$schema");
            map
        }
    };
    let mut out = Vec::new();
    for (name, server) in map {
        match server {
            Value::Object(def) => out.push((name, def)),
            _ => cannot(
                runs,
                format!("{noun} server `{name}` that is not an object"),
            ),
        }
    }
    out
}

/// The name a server is reviewed under.
fn server_key(keyed: bool, source: &str, name: String) -> String {
    if keyed {
        format!("{source}#{name}")
    } else {
        name
    }
}

fn strings(map: &Map<String, Value>, key: &str) -> BTreeMap<String, String> {
    match map.get(key) {
        Some(Value::Object(o)) => o.iter().map(|(k, v)| (k.clone(), text(v))).collect(),
        _ => BTreeMap::new(),
    }
}

fn mcp(source: &str, value: Value, keyed: bool, plugin: &str, runs: &mut Runs) {
    for (name, def) in servers(source, value, ("mcpServers", Place::McpFile), "MCP", runs) {
        unknown_keys(runs, Place::McpServer, &def, source);
        commands::headers_helper(source, &name, &def, runs);
        let field = |key: &str| def.get(key).filter(|v| !v.is_null()).map(text);
        let command = field("command");
        let url = field("url")
            .or_else(|| field("httpUrl"))
            .or_else(|| field("serverUrl"));
        let transport = field("type")
            .or_else(|| field("transport"))
            .map(|t| t.to_ascii_lowercase())
            .unwrap_or_else(|| {
                if command.is_none() && url.is_some() {
                    "http"
                } else {
                    "stdio"
                }
                .to_owned()
            });
        if command.is_none() && url.is_none() {
            // Started or reached, berth cannot tell: it counts as both.
            for capability in [Capability::McpStdio, Capability::McpRemote] {
                unmodeled(
                    runs,
                    capability,
                    source,
                    format!("MCP server `{name}` (`{transport}`) with neither a command nor a URL"),
                );
            }
            continue;
        }
        let args = match def.get("args") {
            Some(Value::Array(items)) => items.iter().map(text).collect(),
            Some(other) if !other.is_null() => vec![text(other)],
            _ => Vec::new(),
        };
        let env_values = strings(&def, "env");
        let header_values = strings(&def, "headers");
        let entry = McpEntry {
            transport,
            command,
            args,
            url,
            env_keys: env_values.keys().cloned().collect(),
            header_keys: header_values.keys().cloned().collect(),
            cwd: field("cwd"),
            source: source.to_owned(),
            env_values,
            header_values,
            raw: raw(&Value::Object(def)),
        };
        add_unique(
            &mut runs.mcp_servers,
            &server_key(keyed, source, name),
            entry,
            source,
            plugin,
            &mut runs.warnings,
        );
    }
}

fn lsp(source: &str, value: Value, keyed: bool, plugin: &str, runs: &mut Runs) {
    for (name, def) in servers(source, value, ("lspServers", Place::LspFile), "LSP", runs) {
        unknown_keys(runs, Place::LspServer, &def, source);
        let written = raw(&Value::Object(def.clone()));
        let mut shown = def;
        if let Some(Value::Object(env)) = shown.get_mut("env") {
            for value in env.values_mut() {
                *value = Value::String("(set)".to_owned());
            }
        }
        let entry = LspEntry {
            shown: canonical_json(&Value::Object(shown)),
            raw: written,
        };
        add_unique(
            &mut runs.lsp_servers,
            &server_key(keyed, source, name),
            entry,
            source,
            plugin,
            &mut runs.warnings,
        );
    }
}

/// `insert_unique`, except that the same definition read twice is kept once.
fn add_unique<T: PartialEq>(
    map: &mut BTreeMap<String, T>,
    name: &str,
    value: T,
    source: &str,
    plugin: &str,
    warnings: &mut Vec<String>,
) {
    let same = |k: &String, v: &T| {
        (k == name || k.strip_prefix(name).is_some_and(|r| r.starts_with('#'))) && *v == value
    };
    if map.iter().any(|(k, v)| same(k, v)) {
        return;
    }
    insert_unique(map, name, value, source, warnings, plugin);
}
