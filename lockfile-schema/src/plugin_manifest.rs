//! Plugin format detection and the plugin's own manifest (`plugin.json`), with the
//! OpenHands SDK's rules. Shared with the resolver, which names plugins at lock time.

use serde_json::{Map, Value};

/// Plugin files larger than this are skipped with a warning (the runtime never reads them,
/// `lock` names them): plugin files are text an agent reads, and a hostile plugin must not
/// make berth read gigabytes. Real plugins carry skills of several MiB (the SDK loads a
/// 9 MiB one), so the bound sits well above.
pub const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// The two plugin layouts berth reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `.plugin/` or `.claude-plugin/plugin.json`, `commands/`, `hooks/`, `.mcp.json`.
    ClaudeCode,
    /// A root `plugin.json` with `$schema`, `mcp.json`, `dev.openhands/`.
    AgentPlugins,
}

impl Format {
    /// The name used in the plugin set.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::ClaudeCode => "claude-code",
            Format::AgentPlugins => "agent-plugins",
        }
    }
}

/// The `$schema` an Agent Plugins 1.0 manifest must name.
pub const AGENT_PLUGINS_SCHEMA: &str = "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json";

/// Where a Claude Code manifest may be, in the order they are looked for.
const CLAUDE_MANIFESTS: [&str; 2] = [".plugin/plugin.json", ".claude-plugin/plugin.json"];

const AGENT_PLUGINS_FIELDS: [&str; 10] = [
    "$schema",
    "name",
    "version",
    "description",
    "author",
    "homepage",
    "repository",
    "license",
    "keywords",
    "extensions",
];

/// A plugin's manifest, or the defaults when it has none.
#[derive(Debug, Clone, PartialEq)]
pub struct PluginManifest {
    /// Its layout.
    pub format: Format,
    /// The file it came from, relative to the plugin (`None`: no manifest).
    pub file: Option<&'static str>,
    /// `name`.
    pub name: String,
    /// `version` (default `1.0.0`).
    pub version: String,
    /// `description`.
    pub description: String,
    /// `author` as `{name, email, url}`.
    pub author: Option<Map<String, Value>>,
    /// The command `/plugin:command` the plugin is entered with.
    pub entry_command: Option<String>,
    /// Things worth telling the user that did not stop the load.
    pub warnings: Vec<String>,
}

/// Why a manifest is unusable: the file and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{file}`: {message}")]
pub struct ManifestError {
    /// The manifest, relative to the plugin.
    pub file: String,
    /// What is wrong.
    pub message: String,
}

/// Reads a plugin's manifest through `read` (a regular file's bytes, or `None` when there
/// is no such file). `folder_name` names a plugin without a manifest.
pub fn read_manifest(
    read: impl Fn(&str) -> Result<Option<Vec<u8>>, String>,
    folder_name: &str,
) -> Result<PluginManifest, ManifestError> {
    let error = |file: &str, message: String| ManifestError {
        file: file.to_owned(),
        message,
    };
    // A root plugin.json claims the plugin for Agent Plugins when it has a `$schema` or is
    // not a JSON object at all; an object without `$schema` is ignored (Claude Code layout).
    if let Some(bytes) = read("plugin.json").map_err(|m| error("plugin.json", m))? {
        let parsed = parse_json(&bytes, true);
        let claims = match &parsed {
            Ok(Value::Object(map)) => map.contains_key("$schema"),
            _ => true,
        };
        if claims {
            return agent_plugins(parsed.map_err(|m| error("plugin.json", m))?)
                .map_err(|m| error("plugin.json", m));
        }
    }
    for file in CLAUDE_MANIFESTS {
        if let Some(bytes) = read(file).map_err(|m| error(file, m))? {
            let value = parse_json(&bytes, false).map_err(|m| error(file, m))?;
            let mut manifest = claude_code(value).map_err(|m| error(file, m))?;
            manifest.file = Some(file);
            return Ok(manifest);
        }
    }
    Ok(PluginManifest {
        format: Format::ClaudeCode,
        file: None,
        name: folder_name.to_owned(),
        version: "1.0.0".to_owned(),
        description: format!("Plugin loaded from {folder_name}"),
        author: None,
        entry_command: None,
        warnings: Vec::new(),
    })
}

fn parse_json(bytes: &[u8], allow_bom: bool) -> Result<Value, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "is not UTF-8".to_owned())?;
    if allow_bom {
        crate::plugin_json::parse_allowing_bom(text)
    } else {
        crate::plugin_json::parse(text)
    }
}

fn string_field(
    map: &Map<String, Value>,
    key: &str,
    default: Option<&str>,
) -> Result<Option<String>, String> {
    match map.get(key) {
        None => Ok(default.map(str::to_owned)),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(format!("`{key}` must be a string, not `{other}`")),
    }
}

fn claude_code(value: Value) -> Result<PluginManifest, String> {
    let Value::Object(map) = value else {
        return Err("must hold a JSON object".into());
    };
    let name = match map.get("name") {
        Some(Value::String(name)) => name.clone(),
        Some(other) => return Err(format!("`name` must be a string, not `{other}`")),
        None => return Err("`name` is required".into()),
    };
    let author = match map.get("author") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(author_from_string(s)),
        Some(Value::Object(obj)) => Some(author_object(obj)?),
        Some(other) => {
            return Err(format!(
                "`author` must be an object or a string, not `{other}`"
            ));
        }
    };
    let entry_command = match map.get("entry_command") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => return Err(format!("`entry_command` must be a string, not `{other}`")),
    };
    Ok(PluginManifest {
        format: Format::ClaudeCode,
        file: None,
        version: string_field(&map, "version", Some("1.0.0"))?.unwrap_or_default(),
        description: string_field(&map, "description", Some(""))?.unwrap_or_default(),
        name,
        author,
        entry_command,
        warnings: Vec::new(),
    })
}

/// `"Name <email>"` as the SDK splits it.
fn author_from_string(s: &str) -> Map<String, Value> {
    let mut author = Map::new();
    if s.contains('<') && s.contains('>') {
        let name = s.split('<').next().unwrap_or("").trim();
        let email = s
            .split('<')
            .nth(1)
            .and_then(|rest| rest.split('>').next())
            .unwrap_or("")
            .trim();
        author.insert("name".into(), Value::String(name.into()));
        author.insert("email".into(), Value::String(email.into()));
    } else {
        author.insert("name".into(), Value::String(s.trim().into()));
        author.insert("email".into(), Value::Null);
    }
    author.insert("url".into(), Value::Null);
    author
}

fn author_object(obj: &Map<String, Value>) -> Result<Map<String, Value>, String> {
    let mut author = Map::new();
    for (key, default) in [
        ("name", Value::String(String::new())),
        ("email", Value::Null),
        ("url", Value::Null),
    ] {
        let value = match obj.get(key) {
            None => default,
            Some(Value::String(s)) => Value::String(s.clone()),
            Some(Value::Null) if key != "name" => Value::Null,
            Some(other) => return Err(format!("`author.{key}` must be a string, not `{other}`")),
        };
        author.insert(key.into(), value);
    }
    Ok(author)
}

fn agent_plugins(value: Value) -> Result<PluginManifest, String> {
    let Value::Object(mut map) = value else {
        return Err("must contain a JSON object".into());
    };
    let schema = map
        .get("$schema")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if schema != AGENT_PLUGINS_SCHEMA {
        return Err(format!(
            "unsupported or missing `$schema` `{schema}`; supported: `{AGENT_PLUGINS_SCHEMA}`"
        ));
    }
    let mut warnings = drop_ignored(&mut map);
    let name = match map.get("name") {
        Some(Value::String(name)) => name.clone(),
        Some(other) => return Err(format!("`name` must be a string, not `{other}`")),
        None => return Err("`name` is required".into()),
    };
    if !valid_agent_plugins_name(&name) {
        return Err(format!(
            "`name` `{name}` must be 1-64 lower-case letters, digits, `.` and `-`, starting and ending with a letter or digit, without `--` or `..`"
        ));
    }
    let author = agent_plugins_author(map.get("author"))?;
    if let Some(keywords) = map.get("keywords")
        && !keywords
            .as_array()
            .is_some_and(|k| k.iter().all(Value::is_string))
    {
        return Err("`keywords` must be a list of strings".into());
    }
    let entry_command = entry_command(&map, &mut warnings)?;
    Ok(PluginManifest {
        format: Format::AgentPlugins,
        file: Some("plugin.json"),
        version: string_field(&map, "version", Some("1.0.0"))?.unwrap_or_default(),
        description: string_field(&map, "description", Some(""))?.unwrap_or_default(),
        name,
        author,
        entry_command,
        warnings,
    })
}

/// Removes the fields Agent Plugins does not define (and `extensions` that is not an
/// object), with a warning for each.
fn drop_ignored(map: &mut Map<String, Value>) -> Vec<String> {
    let mut warnings = Vec::new();
    let unknown: Vec<String> = map
        .keys()
        .filter(|k| !AGENT_PLUGINS_FIELDS.contains(&k.as_str()))
        .cloned()
        .collect();
    if !unknown.is_empty() {
        warnings.push(format!(
            "`plugin.json`: ignoring unknown top-level field(s) {}",
            unknown.join(", ")
        ));
        for key in &unknown {
            map.remove(key);
        }
    }
    if map.get("extensions").is_some_and(|e| !e.is_object()) {
        warnings.push("`plugin.json`: ignoring non-object `extensions`".into());
        map.remove("extensions");
    }
    warnings
}

/// An Agent Plugins `author`: an object of `name`, `email` and `url` only.
fn agent_plugins_author(author: Option<&Value>) -> Result<Option<Map<String, Value>>, String> {
    match author {
        None => Ok(None),
        Some(Value::Object(obj)) => {
            if let Some(extra) = obj
                .keys()
                .find(|k| !["name", "email", "url"].contains(&k.as_str()))
            {
                return Err(format!("`author` has an unknown field `{extra}`"));
            }
            Ok(Some(author_object(obj)?))
        }
        Some(other) => Err(format!("`author` must be an object, not `{other}`")),
    }
}

/// The OpenHands `entry_command` among the `extensions`, each of which must be an object.
fn entry_command(
    map: &Map<String, Value>,
    warnings: &mut Vec<String>,
) -> Result<Option<String>, String> {
    let Some(Value::Object(extensions)) = map.get("extensions") else {
        return Ok(None);
    };
    if let Some((key, _)) = extensions.iter().find(|(_, v)| !v.is_object()) {
        return Err(format!("`extensions.{key}` must be an object"));
    }
    match extensions
        .get("dev.openhands")
        .and_then(|o| o.get("entry_command"))
    {
        Some(Value::String(s)) if !s.is_empty() => return Ok(Some(s.clone())),
        None | Some(Value::Null) | Some(Value::String(_)) => {}
        Some(other) => warnings.push(format!(
            "`plugin.json`: ignoring non-string `dev.openhands` entry_command `{other}`"
        )),
    }
    Ok(None)
}

/// `^(?!.*(?:--|\.\.))[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?$`, at most 64 characters.
fn valid_agent_plugins_name(name: &str) -> bool {
    let ok_char = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    !name.is_empty()
        && name.len() <= 64
        && !name.contains("--")
        && !name.contains("..")
        && name.starts_with(ok_char)
        && name.ends_with(ok_char)
        && name.chars().all(|c| ok_char(c) || c == '.' || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(files: &[(&str, &str)]) -> Result<PluginManifest, ManifestError> {
        read_manifest(
            |rel| {
                Ok(files
                    .iter()
                    .find(|(p, _)| *p == rel)
                    .map(|(_, c)| c.as_bytes().to_vec()))
            },
            "folder",
        )
    }

    #[test]
    fn detection_and_lookup_order() {
        let dot = manifest(&[
            (".claude-plugin/plugin.json", r#"{"name": "claude"}"#),
            (".plugin/plugin.json", r#"{"name": "dot"}"#),
        ])
        .expect("valid");
        assert_eq!((dot.name.as_str(), dot.format), ("dot", Format::ClaudeCode));
        // A root plugin.json without `$schema` is not read at all.
        let ignored = manifest(&[("plugin.json", r#"{"name": "root"}"#)]).expect("valid");
        assert_eq!(ignored.name, "folder");
        assert_eq!(ignored.description, "Plugin loaded from folder");
        let ap = manifest(&[
            ("plugin.json", &format!(r#"{{"$schema": "{AGENT_PLUGINS_SCHEMA}", "name": "gamma", "extensions": {{"dev.openhands": {{"entry_command": "hello"}}}}}}"#)),
            (".claude-plugin/plugin.json", r#"{"name": "claude"}"#),
        ])
        .expect("valid");
        assert_eq!(
            (ap.name.as_str(), ap.format),
            ("gamma", Format::AgentPlugins)
        );
        assert_eq!(ap.entry_command.as_deref(), Some("hello"));
    }

    #[test]
    fn authors() {
        let m = manifest(&[(
            ".plugin/plugin.json",
            r#"{"name": "b", "author": "Bea Example <bea@example.com>"}"#,
        )])
        .expect("valid");
        let author = m.author.expect("author");
        assert_eq!(author["name"], "Bea Example");
        assert_eq!(author["email"], "bea@example.com");
    }

    #[test]
    fn errors_name_the_file() {
        let err = manifest(&[(".claude-plugin/plugin.json", r#"{"version": "1"}"#)])
            .expect_err("no name");
        assert_eq!(err.file, ".claude-plugin/plugin.json");
        assert!(
            manifest(&[("plugin.json", "[1]")]).is_err(),
            "a non-object root manifest is Agent Plugins, and invalid"
        );
        assert!(
            manifest(&[(
                "plugin.json",
                &format!(r#"{{"$schema": "{AGENT_PLUGINS_SCHEMA}", "name": "Bad Name"}}"#)
            )])
            .is_err()
        );
        assert!(manifest(&[(".plugin/plugin.json", r#"{"name": "x", "version": null}"#)]).is_err());
    }
}
