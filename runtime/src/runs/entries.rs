//! One document's hooks, monitors, status lines and servers, read leniently: whatever a
//! harness could take is an entry, and what cannot be modelled counts as the capability.

use std::collections::BTreeMap;

use berth_lockfile_schema::canonical_json;
use berth_lockfile_schema::governance::Capability;
use serde_json::{Map, Value, json};

use super::found::Readable;
use super::{HookEntry, LspEntry, McpEntry, Runs, Unmodeled};
use crate::hooks::DEFAULT_TIMEOUT_SECS;
use crate::lsp::insert_unique;
use crate::model::Kind;

/// Settings keys whose value is a command a harness runs (Claude Code applies a plugin's
/// `subagentStatusLine`; the others are its settings' command keys, read as well).
const SETTINGS_COMMANDS: [&str; 7] = [
    "subagentStatusLine",
    "statusLine",
    "fileSuggestion",
    "apiKeyHelper",
    "awsAuthRefresh",
    "awsCredentialExport",
    "otelHeadersHelper",
];

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
        Kind::Monitors => monitors(&source, value, runs),
        Kind::Settings => settings(&source, value, runs),
        Kind::Mcp => mcp(&source, value, keyed, plugin, runs),
        Kind::Lsp => lsp(&source, value, keyed, plugin, runs),
    }
}

fn unmodeled(runs: &mut Runs, capability: Capability, source: &str, what: String) {
    runs.unmodeled.push(Unmodeled {
        capability,
        source: source.to_owned(),
        what,
    });
}

/// `PreToolUse`, `preToolUse` or `pre_tool_use` as `pre_tool_use`.
pub(crate) fn snake_case(key: &str) -> String {
    let mut snake = String::with_capacity(key.len() + 4);
    let mut previous_lower = false;
    for c in key.chars() {
        if c.is_uppercase() && previous_lower {
            snake.push('_');
        }
        previous_lower = c.is_lowercase() || c.is_ascii_digit();
        snake.extend(c.to_lowercase());
    }
    snake
}

/// A JSON value as text: a string as it is, anything else as JSON.
fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn raw(value: &Value) -> String {
    canonical_json(value).to_string()
}

/// A hooks document: `{"hooks": {EVENT: [...]}}`, the events alone, or both.
fn hooks(source: &str, value: Value, runs: &mut Runs) {
    let Value::Object(top) = value else {
        return unmodeled(
            runs,
            Capability::Hooks,
            source,
            "hooks that are not a JSON object".to_owned(),
        );
    };
    let mut events: Vec<(String, Value)> = Vec::new();
    for (key, value) in top {
        match (key.as_str(), value) {
            ("hooks", Value::Object(inner)) => events.extend(inner),
            ("description" | "$schema", _) => {}
            (_, value) => events.push((key, value)),
        }
    }
    for (key, list) in events {
        let event = snake_case(&key);
        let Value::Array(groups) = list else {
            unmodeled(
                runs,
                Capability::Hooks,
                source,
                format!("hooks of `{key}` that are not a list"),
            );
            continue;
        };
        for group in groups {
            match group {
                Value::Object(group) => matcher_group(source, &event, &group, runs),
                other => unmodeled(
                    runs,
                    Capability::Hooks,
                    source,
                    format!("a `{key}` entry that is not an object (`{other}`)"),
                ),
            }
        }
    }
}

fn matcher_group(source: &str, event: &str, group: &Map<String, Value>, runs: &mut Runs) {
    let matcher = group.get("matcher").map_or("*".to_owned(), text);
    match group.get("hooks") {
        Some(Value::Array(list)) => {
            for hook in list {
                match hook {
                    Value::Object(hook) => hook_entry(source, event, &matcher, hook, runs),
                    other => unmodeled(
                        runs,
                        Capability::Hooks,
                        source,
                        format!("a hook on `{event}` that is not an object (`{other}`)"),
                    ),
                }
            }
        }
        // A hook written without its matcher group.
        None if group.contains_key("command") || group.contains_key("type") => {
            hook_entry(source, event, &matcher, group, runs);
        }
        None => {}
        Some(other) => unmodeled(
            runs,
            Capability::Hooks,
            source,
            format!("hooks on `{event}` that are not a list (`{other}`)"),
        ),
    }
}

fn hook_entry(
    source: &str,
    event: &str,
    matcher: &str,
    hook: &Map<String, Value>,
    runs: &mut Runs,
) {
    let kind = hook.get("type").map_or("command".to_owned(), text);
    let field = |key: &str| hook.get(key).map(text);
    let command = match kind.as_str() {
        "command" => field("command"),
        "prompt" | "agent" => field("prompt").or_else(|| field("system_prompt")),
        "mcp_tool" => Some(format!(
            "{}/{}",
            field("server").unwrap_or_default(),
            field("tool").unwrap_or_default()
        )),
        "http" => field("url"),
        _ => None,
    };
    let command = match command {
        Some(command) => command,
        None if kind == "command" => {
            return unmodeled(
                runs,
                Capability::Hooks,
                source,
                format!("a command hook on `{event}` without a command"),
            );
        }
        // A kind berth does not know is still a hook: shown as written.
        None => raw(&Value::Object(hook.clone())),
    };
    let args = match hook.get("args") {
        Some(Value::Array(items)) => items.iter().map(text).collect(),
        Some(other) => vec![text(other)],
        None => Vec::new(),
    };
    let timeout = match hook.get("timeout") {
        Some(Value::Number(n)) => n
            .as_u64()
            .or_else(|| n.as_f64().filter(|f| *f >= 0.0).map(|f| f.ceil() as u64))
            .unwrap_or(DEFAULT_TIMEOUT_SECS),
        Some(Value::String(s)) => s.trim().parse().unwrap_or(DEFAULT_TIMEOUT_SECS),
        _ => DEFAULT_TIMEOUT_SECS,
    };
    let is_async = ["async", "async_", "asyncRewake"].iter().any(|k| {
        hook.get(*k)
            .is_some_and(|v| v != &Value::Bool(false) && !v.is_null())
    });
    runs.hooks.push(HookEntry {
        event: event.to_owned(),
        matcher: matcher.to_owned(),
        kind,
        command,
        args,
        timeout,
        is_async,
        source: source.to_owned(),
        raw: raw(&json!({"matcher": matcher, "hook": hook})),
    });
}

/// Claude Code monitors: shell commands run for the whole session.
fn monitors(source: &str, value: Value, runs: &mut Runs) {
    let list = match value {
        Value::Array(list) => list,
        Value::Object(mut map) => match map.remove("monitors") {
            Some(Value::Array(list)) => list,
            _ => {
                return unmodeled(
                    runs,
                    Capability::Hooks,
                    source,
                    "monitors that are not a list".to_owned(),
                );
            }
        },
        _ => {
            return unmodeled(
                runs,
                Capability::Hooks,
                source,
                "monitors that are not a list".to_owned(),
            );
        }
    };
    for item in list {
        let command = item.get("command").map(text);
        let Some(command) = command.filter(|_| item.is_object()) else {
            unmodeled(
                runs,
                Capability::Hooks,
                source,
                format!("a monitor berth cannot read (`{item}`)"),
            );
            continue;
        };
        // A monitor runs for the whole session, beside what it watches: no timeout.
        let when = item.get("when").map_or("always".to_owned(), text);
        let mut entry = shell_command("monitor", &when, command, source, &item);
        (entry.timeout, entry.is_async) = (0, true);
        runs.hooks.push(entry);
    }
}

/// A shell command a harness runs on its own (a monitor, a status line), as a hook of
/// `event`.
fn shell_command(
    event: &str,
    matcher: &str,
    command: String,
    source: &str,
    written: &Value,
) -> HookEntry {
    HookEntry {
        event: event.to_owned(),
        matcher: matcher.to_owned(),
        kind: "command".to_owned(),
        command,
        args: Vec::new(),
        timeout: DEFAULT_TIMEOUT_SECS,
        is_async: false,
        source: source.to_owned(),
        raw: raw(written),
    }
}

/// Plugin settings: the keys that run commands, and any `hooks` among them.
fn settings(source: &str, value: Value, runs: &mut Runs) {
    let Value::Object(mut map) = value else {
        return;
    };
    if let Some(inner) = map.remove("hooks") {
        hooks(&format!("{source}#hooks"), inner, runs);
    }
    for key in SETTINGS_COMMANDS {
        let Some(value) = map.get(key) else {
            continue;
        };
        let command = match value {
            Value::String(s) => Some(s.clone()),
            Value::Object(o) => o.get("command").map(text),
            _ => None,
        };
        let Some(command) = command else {
            unmodeled(
                runs,
                Capability::Hooks,
                source,
                format!("a `{key}` berth cannot read"),
            );
            continue;
        };
        let entry = shell_command(&snake_case(key), "*", command, source, value);
        runs.hooks.push(entry);
    }
}

/// The servers of a servers document: its `wrapper` object's (`mcpServers`,
/// `lspServers`) when it has one, else the document's own entries; a server that is not
/// an object, like a document that is not one, counts as a stdio server berth cannot
/// model.
fn servers(
    source: &str,
    value: Value,
    wrapper: &str,
    noun: &str,
    runs: &mut Runs,
) -> Vec<(String, Map<String, Value>)> {
    let mut cannot = |what: String| unmodeled(runs, Capability::McpStdio, source, what);
    let Value::Object(mut map) = value else {
        cannot(format!("{noun} servers that are not a JSON object"));
        return Vec::new();
    };
    let map = match map.remove(wrapper) {
        Some(Value::Object(inner)) => inner,
        Some(other) => {
            cannot(format!("`{wrapper}` that is not an object (`{other}`)"));
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
            _ => cannot(format!("{noun} server `{name}` that is not an object")),
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
    for (name, def) in servers(source, value, "mcpServers", "MCP", runs) {
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
            unmodeled(
                runs,
                Capability::McpStdio,
                source,
                format!("MCP server `{name}` (`{transport}`) with neither a command nor a URL"),
            );
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
    for (name, def) in servers(source, value, "lspServers", "LSP", runs) {
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
