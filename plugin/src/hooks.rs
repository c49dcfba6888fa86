//! Hook definitions (`hooks/hooks.json`): the six events, matchers, and what berth keeps
//! when part of a file is invalid.

use serde_json::Value;

use crate::error::PluginError;
use crate::expand::expand_roots;
use crate::manifest::Format;
use crate::model::{Reader, layout};

/// The events, snake_case, in the order the plugin set lists them.
pub const EVENTS: [&str; 6] = [
    "pre_tool_use",
    "post_tool_use",
    "user_prompt_submit",
    "session_start",
    "session_end",
    "stop",
];

/// The default hook timeout, in seconds.
pub const DEFAULT_TIMEOUT_SECS: u64 = 60;

/// One matcher and the hooks it runs.
#[derive(Debug, Clone, PartialEq)]
pub struct HookMatcher {
    /// `*`, an exact tool name, a regex, or `/regex/`.
    pub matcher: String,
    /// The hooks, in file order.
    pub hooks: Vec<HookDefinition>,
}

/// One hook.
#[derive(Debug, Clone, PartialEq)]
pub struct HookDefinition {
    /// `command`, `prompt` or `agent`.
    pub kind: String,
    /// The shell command (`command` hooks), plugin-root variables expanded.
    pub command: String,
    /// Seconds before it is killed.
    pub timeout: u64,
    /// Whether it runs in the background without blocking.
    pub is_async: bool,
    /// `name`.
    pub name: Option<String>,
    /// `prompt` (prompt hooks).
    pub prompt: Option<String>,
    /// `system_prompt` (agent hooks).
    pub system_prompt: Option<String>,
    /// `tools` an agent hook may use.
    pub tools: Vec<String>,
    /// `max_iterations` of an agent hook (default 3).
    pub max_iterations: u64,
}

/// The default `max_iterations` of an agent hook, as in the SDK.
pub const DEFAULT_MAX_ITERATIONS: u64 = 3;

/// `PreToolUse`, `preToolUse` or `pre_tool_use` as the snake_case event, if it is one.
pub fn event_name(key: &str) -> Option<&'static str> {
    let mut snake = String::with_capacity(key.len() + 4);
    for (i, c) in key.chars().enumerate() {
        if c.is_uppercase() && i > 0 {
            snake.push('_');
        }
        snake.extend(c.to_lowercase());
    }
    EVENTS.iter().copied().find(|e| *e == snake)
}

/// The PascalCase name hooks see in `OPENHANDS_EVENT_TYPE`.
pub fn pascal_case(event: &str) -> String {
    event
        .split('_')
        .map(|part| {
            let mut chars = part.chars();
            chars
                .next()
                .map(|c| c.to_uppercase().chain(chars).collect::<String>())
                .unwrap_or_default()
        })
        .collect()
}

/// Whether `matcher` selects a hook for `tool_name` (the SDK's rules): `*` and `""`
/// always; events without a tool only those; `/re/` and strings with regex characters
/// match the whole name as a regex; anything else exactly.
pub fn matches(matcher: &str, tool_name: Option<&str>) -> bool {
    if matcher == "*" || matcher.is_empty() {
        return true;
    }
    let Some(tool) = tool_name else {
        return false;
    };
    let full = |pattern: &str| {
        regex::Regex::new(&format!("^(?:{pattern})$"))
            .ok()
            .map(|re| re.is_match(tool))
    };
    if matcher.len() > 2 && matcher.starts_with('/') && matcher.ends_with('/') {
        return full(&matcher[1..matcher.len() - 1]).unwrap_or(false);
    }
    if matcher.contains(['|', '.', '*', '+', '?', '[', ']', '(', ')', '^', '$', '\\'])
        && let Some(result) = full(matcher)
    {
        return result;
    }
    matcher == tool
}

/// Matchers as the plugin set writes them, each with its plugin when given.
pub fn matchers_to_json<'a>(
    matchers: impl Iterator<Item = (&'a HookMatcher, Option<&'a str>)>,
) -> Value {
    Value::Array(
        matchers
            .map(|(m, plugin)| {
                let hooks: Vec<Value> = m
                    .hooks
                    .iter()
                    .map(|h| {
                        serde_json::json!({
                            "type": h.kind,
                            "command": h.command,
                            "timeout": h.timeout,
                            "async": h.is_async,
                            "name": h.name,
                            "prompt": h.prompt,
                            "system_prompt": h.system_prompt,
                            "tools": h.tools,
                            "max_iterations": h.max_iterations,
                        })
                    })
                    .collect();
                // Built in place: `json!` would copy `hooks` once more (it serialises
                // every value it is given).
                let mut entry = serde_json::Map::new();
                entry.insert("matcher".to_owned(), Value::String(m.matcher.clone()));
                entry.insert("hooks".to_owned(), Value::Array(hooks));
                if let Some(plugin) = plugin {
                    entry.insert("plugin".to_owned(), Value::String(plugin.to_owned()));
                }
                Value::Object(entry)
            })
            .collect(),
    )
}

/// Loads the hooks file of the plugin's layout (`format`), read through `reader`. Where
/// the SDK drops the whole file for one unknown event or one invalid entry, berth drops
/// that event or entry and records a warning.
pub fn load_hooks(
    reader: &mut Reader<'_>,
    format: Format,
    warnings: &mut Vec<String>,
) -> Result<Vec<(&'static str, Vec<HookMatcher>)>, PluginError> {
    let file = layout(format).hooks;
    let Some(read) = reader.json_utf8(file)? else {
        return Ok(Vec::new());
    };
    let root = reader.root();
    let plugin = root.plugin();
    let mut warn =
        |message: String| warnings.push(format!("plugin `{plugin}`: `{file}`: {message}"));
    let value = match read.strict() {
        Some(Ok(value)) => value,
        Some(Err(why)) => {
            warn(format!("{why}; no hooks loaded from it"));
            return Ok(Vec::new());
        }
        None => return Ok(Vec::new()),
    };
    Ok(hooks_from_value(
        value,
        &root.exposed().to_string_lossy(),
        &mut warn,
    ))
}

/// The events of a hooks document (`{"hooks": {...}}` or the events alone), with
/// plugin-root variables in commands expanded to `root`. What is invalid is dropped
/// entry by entry, each with a message to `warn`.
pub(crate) fn hooks_from_value(
    value: Value,
    root: &str,
    warn: &mut dyn FnMut(String),
) -> Vec<(&'static str, Vec<HookMatcher>)> {
    let Value::Object(mut top) = value else {
        warn("must hold a JSON object; no hooks loaded from it".into());
        return Vec::new();
    };
    if let Some(inner) = top.remove("hooks") {
        if !top.is_empty() {
            let extra: Vec<&String> = top.keys().collect();
            warn(format!(
                "top-level keys next to `hooks` are ignored: {}",
                extra
                    .iter()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        match inner {
            Value::Object(map) => top = map,
            _ => {
                warn("`hooks` must be an object; no hooks loaded from it".into());
                return Vec::new();
            }
        }
    }
    let mut events: Vec<(&'static str, Vec<HookMatcher>)> = Vec::new();
    for (key, value) in top {
        let Some(event) = event_name(&key) else {
            warn(format!(
                "unknown hook event `{key}` ignored (known: {})",
                EVENTS.join(", ")
            ));
            continue;
        };
        if events.iter().any(|(e, _)| *e == event) {
            warn(format!(
                "event `{key}` is given twice (as `{event}` too); the second is ignored"
            ));
            continue;
        }
        let Value::Array(entries) = value else {
            warn(format!("event `{key}` must be a list of matchers; ignored"));
            continue;
        };
        let mut matchers = Vec::new();
        for (i, entry) in entries.into_iter().enumerate() {
            match matcher_from(entry, root) {
                Ok((matcher, dropped)) => {
                    for why in dropped {
                        warn(format!("`{key}` entry {}: {why}", i + 1));
                    }
                    matchers.push(matcher);
                }
                Err(why) => warn(format!("`{key}` entry {} ignored: {why}", i + 1)),
            }
        }
        events.push((event, matchers));
    }
    events
}

/// One matcher entry; returns it and the reasons hooks inside it were dropped.
fn matcher_from(entry: Value, root: &str) -> Result<(HookMatcher, Vec<String>), String> {
    let Value::Object(map) = entry else {
        return Err("must be an object".into());
    };
    let matcher = match map.get("matcher") {
        None => "*".to_owned(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => return Err(format!("`matcher` must be a string, not `{other}`")),
    };
    let hooks = match map.get("hooks") {
        None => Vec::new(),
        Some(Value::Array(hooks)) => hooks.clone(),
        Some(other) => return Err(format!("`hooks` must be a list, not `{other}`")),
    };
    let mut kept = Vec::new();
    let mut dropped = Vec::new();
    for (i, hook) in hooks.into_iter().enumerate() {
        match definition_from(hook, root) {
            Ok(def) => kept.push(def),
            Err(why) => dropped.push(format!("hook {} ignored: {why}", i + 1)),
        }
    }
    Ok((
        HookMatcher {
            matcher,
            hooks: kept,
        },
        dropped,
    ))
}

fn definition_from(hook: Value, root: &str) -> Result<HookDefinition, String> {
    let Value::Object(map) = hook else {
        return Err("must be an object".into());
    };
    let text = |key: &str| -> Result<Option<String>, String> {
        match map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(format!("`{key}` must be a string, not `{other}`")),
        }
    };
    let kind = text("type")?.unwrap_or_else(|| "command".to_owned());
    if !["command", "prompt", "agent"].contains(&kind.as_str()) {
        return Err(format!(
            "`type` `{kind}` is not `command`, `prompt` or `agent`"
        ));
    }
    let command = text("command")?.unwrap_or_default();
    let prompt = text("prompt")?;
    // Pydantic's lax int: whole numbers, also as strings or as floats without a fraction.
    let whole = |key: &str, default: u64| -> Result<u64, String> {
        match map.get(key) {
            None => Ok(default),
            Some(Value::Number(n)) => n
                .as_u64()
                .or_else(|| {
                    n.as_f64()
                        .filter(|f| f.fract() == 0.0 && *f >= 0.0)
                        .map(|f| f as u64)
                })
                .ok_or(format!("`{key}` `{n}` must be a whole number")),
            Some(Value::String(s)) => s
                .trim()
                .parse()
                .map_err(|_| format!("`{key}` `{s}` must be a whole number")),
            Some(other) => Err(format!("`{key}` must be a number, not `{other}`")),
        }
    };
    let timeout = whole("timeout", DEFAULT_TIMEOUT_SECS)?;
    let max_iterations = whole("max_iterations", DEFAULT_MAX_ITERATIONS)?;
    let tools = match map.get("tools") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|t| {
                t.as_str()
                    .map(str::to_owned)
                    .ok_or("`tools` must hold strings only")
            })
            .collect::<Result<_, _>>()?,
        Some(other) => return Err(format!("`tools` must be a list, not `{other}`")),
    };
    let is_async = match map.get("async").or_else(|| map.get("async_")) {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => return Err(format!("`async` must be true or false, not `{other}`")),
    };
    match kind.as_str() {
        "command" if command.is_empty() => {
            return Err("`command` is required for a command hook".into());
        }
        "prompt" if prompt.is_none() => return Err("`prompt` is required for a prompt hook".into()),
        "prompt" | "agent" if !command.is_empty() => {
            return Err(format!("a {kind} hook cannot have a `command`"));
        }
        "prompt" | "agent" if is_async => return Err(format!("a {kind} hook cannot be `async`")),
        _ => {}
    }
    Ok(HookDefinition {
        command: expand_roots(&command, root),
        kind,
        timeout,
        is_async,
        name: text("name")?,
        prompt,
        system_prompt: text("system_prompt")?,
        tools,
        max_iterations,
    })
}

#[cfg(test)]
mod tests {
    use super::{event_name, matches, pascal_case};

    #[test]
    fn event_names() {
        assert_eq!(event_name("PreToolUse"), Some("pre_tool_use"));
        assert_eq!(event_name("preToolUse"), Some("pre_tool_use"));
        assert_eq!(event_name("session_start"), Some("session_start"));
        assert_eq!(event_name("Notification"), None);
        assert_eq!(event_name("PRE_TOOL_USE"), None);
        assert_eq!(pascal_case("user_prompt_submit"), "UserPromptSubmit");
    }

    #[test]
    fn matcher_rules() {
        assert!(matches("*", None));
        assert!(matches("", Some("x")));
        assert!(
            !matches("terminal", None),
            "events without a tool only fire `*`"
        );
        assert!(matches("terminal", Some("terminal")));
        assert!(!matches("terminal", Some("terminal2")));
        assert!(matches("terminal|file_editor", Some("file_editor")));
        assert!(matches("/file_.*/", Some("file_editor")));
        assert!(
            !matches("/file_.*/", Some("a_file_editor")),
            "regexes match the whole name"
        );
        assert!(!matches("Bash", Some("bash")), "case-sensitive");
    }
}
