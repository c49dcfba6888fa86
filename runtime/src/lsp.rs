//! LSP servers (Claude Code's `lspServers` in `plugin.json` or a marketplace entry, and
//! `.lsp.json`): read as raw JSON, with the helpers a review shares (canonical JSON,
//! unique names, paths inside the plugin).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::error::RuntimeError;
use crate::root::PluginRoot;

/// The file Claude Code reads LSP servers from when the manifest names none.
const LSP_FILE: &str = ".lsp.json";

/// The plugin's LSP servers, by name, as raw JSON with object keys sorted: the manifest's
/// `lspServers` (an object, a path to a JSON file in the plugin, or a list of either),
/// then `.lsp.json`. What cannot be read is left out with a warning; a name given twice
/// is kept twice (the second as `name#2`), so that nothing is hidden from a review.
pub(crate) fn lsp_servers(
    root: &PluginRoot,
    manifest_file: Option<&str>,
    definition: Option<&berth_lockfile_schema::EntryDefinition>,
    warnings: &mut Vec<String>,
) -> Result<BTreeMap<String, Value>, RuntimeError> {
    let mut servers = BTreeMap::new();
    if let Some(value) = definition.and_then(|d| d.components.get("lspServers")) {
        add_lsp(
            root,
            "its marketplace entry",
            value,
            true,
            &mut servers,
            warnings,
        )?;
    }
    if let Some(file) = manifest_file
        && let Some(document) = read_json(root, file, warnings)?
        && let Some(value) = document.get("lspServers")
    {
        add_lsp(root, file, value, true, &mut servers, warnings)?;
    }
    if let Some(document) = read_json(root, LSP_FILE, warnings)? {
        add_lsp(root, LSP_FILE, &document, false, &mut servers, warnings)?;
    }
    Ok(servers)
}

fn add_lsp(
    root: &PluginRoot,
    file: &str,
    value: &Value,
    may_refer: bool,
    servers: &mut BTreeMap<String, Value>,
    warnings: &mut Vec<String>,
) -> Result<(), RuntimeError> {
    let plugin = root.plugin();
    match value {
        Value::Object(map) => {
            // A file may wrap its servers as `{"lspServers": {...}}`.
            let map = match map.get("lspServers") {
                Some(Value::Object(inner)) if map.len() == 1 => inner,
                _ => map,
            };
            for (name, server) in map {
                if server.is_object() {
                    insert_unique(servers, name, canonical(server), file, warnings, plugin);
                } else {
                    warnings.push(format!(
                        "plugin `{plugin}`: `{file}`: LSP server `{name}` ignored: it must be an object"
                    ));
                }
            }
        }
        Value::String(path) if may_refer => match plugin_path(path) {
            Some(rel) => {
                if let Some(document) = read_json(root, &rel, warnings)? {
                    add_lsp(root, &rel, &document, false, servers, warnings)?;
                } else {
                    warnings.push(format!(
                        "plugin `{plugin}`: `{file}`: LSP file `{path}` is missing or unreadable"
                    ));
                }
            }
            None => warnings.push(format!(
                "plugin `{plugin}`: `{file}`: LSP file `{path}` is not a path inside the plugin; ignored"
            )),
        },
        Value::Array(items) if may_refer => {
            for item in items {
                add_lsp(root, file, item, true, servers, warnings)?;
            }
        }
        _ => warnings.push(format!(
            "plugin `{plugin}`: `{file}`: LSP servers must be an object of servers; ignored"
        )),
    }
    Ok(())
}

/// The JSON document at `rel`, or `None` (with a warning when it exists but is not JSON).
fn read_json(
    root: &PluginRoot,
    rel: &str,
    warnings: &mut Vec<String>,
) -> Result<Option<Value>, RuntimeError> {
    let text = match root.read_text(rel) {
        Ok(Some(text)) => text,
        Ok(None) => return Ok(None),
        Err(RuntimeError::NotUtf8 { .. }) => {
            warnings.push(format!(
                "plugin `{}`: `{rel}` is not UTF-8 text; ignored",
                root.plugin()
            ));
            return Ok(None);
        }
        Err(e) => return Err(e),
    };
    match crate::json::parse_allowing_bom(&text) {
        Ok(value) => Ok(Some(value)),
        Err(why) => {
            warnings.push(format!(
                "plugin `{}`: `{rel}`: {why}; ignored",
                root.plugin()
            ));
            Ok(None)
        }
    }
}

/// Inserts `value` at `name`, or at `name#2`, `name#3`… when taken, with a warning.
pub(crate) fn insert_unique<T>(
    map: &mut BTreeMap<String, T>,
    name: &str,
    value: T,
    file: &str,
    warnings: &mut Vec<String>,
    plugin: &str,
) {
    if !map.contains_key(name) {
        map.insert(name.to_owned(), value);
        return;
    }
    let mut n = 2;
    while map.contains_key(&format!("{name}#{n}")) {
        n += 1;
    }
    let key = format!("{name}#{n}");
    warnings.push(format!(
        "plugin `{plugin}`: `{file}`: `{name}` is defined more than once; this one is reviewed as `{key}`"
    ));
    map.insert(key, value);
}

/// `value` with every object's keys sorted, so that equal definitions serialise alike.
pub(crate) fn canonical(value: &Value) -> Value {
    berth_lockfile_schema::canonical_json(value)
}

/// `path` as a normalised path inside the plugin: relative, without `..`.
pub(crate) fn plugin_path(path: &str) -> Option<String> {
    if path.starts_with('/') || path.contains('\\') {
        return None;
    }
    let mut parts = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => return None,
            part => parts.push(part),
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// `value` with plugin-root variables in every string (and key) filled with `root`, as
/// MCP definitions are.
pub(crate) fn expand_roots_in(value: Value, root: &str) -> Value {
    match value {
        Value::String(s) => Value::String(crate::expand::expand_roots(&s, root)),
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .map(|v| expand_roots_in(v, root))
                .collect(),
        ),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| {
                    (
                        crate::expand::expand_roots(&k, root),
                        expand_roots_in(v, root),
                    )
                })
                .collect(),
        ),
        other => other,
    }
}
