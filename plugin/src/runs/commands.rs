//! Commands a harness runs on its own, outside hooks files: Claude Code's monitors (run
//! for the whole session), the command keys of a plugin's settings (a status line, a key
//! helper), and an MCP server's `headersHelper` (run at every connection). Each is a hook
//! to the review.

use berth_lockfile_schema::governance::Capability;
use berth_lockfile_schema::harness_keys::Place;
use serde_json::{Map, Value, json};

use super::hooks::hooks;
use super::values::{raw, snake_case, text, unknown_keys, unmodeled};
use super::{HookEntry, Runs};
use crate::hooks::DEFAULT_TIMEOUT_SECS;

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

/// Claude Code monitors: shell commands run for the whole session.
pub(super) fn monitors(source: &str, value: Value, runs: &mut Runs) {
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
        if let Value::Object(monitor) = &item {
            unknown_keys(runs, Place::Monitor, monitor, source);
        }
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
pub(super) fn settings(source: &str, value: Value, runs: &mut Runs) {
    let Value::Object(mut map) = value else {
        return;
    };
    unknown_keys(runs, Place::Settings, &map, source);
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

/// A server's `headersHelper` (Codex: `http_headers_helper`): a shell command the harness
/// runs each time it connects to the server (every session start), whose output is the
/// request's headers. It is a
/// local command of any server, remote ones included: a hook of event `headers_helper`,
/// matched on the server's name.
pub(super) fn headers_helper(source: &str, name: &str, def: &Map<String, Value>, runs: &mut Runs) {
    // Claude Code's key, and Codex's.
    for key in ["headersHelper", "http_headers_helper"] {
        match def.get(key) {
            None | Some(Value::Null) => {}
            Some(Value::String(command)) => {
                let written = json!({"server": name, key: command});
                let entry =
                    shell_command("headers_helper", name, command.clone(), source, &written);
                runs.hooks.push(entry);
            }
            Some(other) => unmodeled(
                runs,
                Capability::Hooks,
                source,
                format!("MCP server `{name}` has a `{key}` berth cannot read (`{other}`)"),
            ),
        }
    }
}
