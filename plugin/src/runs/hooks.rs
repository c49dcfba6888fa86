//! Hooks documents (`{"hooks": {EVENT: [...]}}`, the events alone, or both): every event,
//! every matcher group and every hook of any type, read leniently.

use berth_lockfile_schema::governance::Capability;
use berth_lockfile_schema::harness_keys::Place;
use serde_json::{Map, Value, json};

use super::values::{raw, snake_case, text, unknown_keys, unmodeled};
use super::{HookEntry, Runs};
use crate::hooks::DEFAULT_TIMEOUT_SECS;

/// A hooks document: `{"hooks": {EVENT: [...]}}`, the events alone, or both.
pub(super) fn hooks(source: &str, value: Value, runs: &mut Runs) {
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
            // Claude Code loads these JavaScript modules as hooks: code berth cannot read.
            ("modules", value) => {
                for capability in [Capability::Hooks, Capability::Executables] {
                    unmodeled(
                        runs,
                        capability,
                        source,
                        format!("hook modules `{value}`, JavaScript a harness loads and runs"),
                    );
                }
            }
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
    let written_alone = !group.contains_key("hooks")
        && (group.contains_key("command") || group.contains_key("type"));
    if !written_alone {
        unknown_keys(runs, Place::HookGroup, group, source);
    }
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
    let mut known = hook.clone();
    known.remove("matcher");
    unknown_keys(runs, Place::Hook, &known, source);
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
