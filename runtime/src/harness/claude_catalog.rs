//! What a plugin's entry in berth's marketplace for Claude Code says beyond its name,
//! source and version: the locked definition of its own marketplace entry (so Claude Code
//! builds it from berth's folder as from the original), what berth wrote there before,
//! and an entry Claude Code would refuse.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::set::PluginInfo;

/// What a plugin's catalog entry says beyond name, source and version: its marketplace
/// entry's `strict` and component fields, as the lock pinned them, so Claude Code builds
/// the plugin from berth's marketplace as it did from the original.
pub(super) fn definition_fields(info: &PluginInfo) -> Map<String, Value> {
    let mut out = Map::new();
    if let Some(definition) = &info.locked.definition {
        if !definition.strict {
            out.insert("strict".to_owned(), json!(false));
        }
        for (key, value) in &definition.components {
            out.insert(key.clone(), value.clone());
        }
    }
    out
}

/// The entries of the catalog berth wrote before, by name: what they say beyond name,
/// source and version (for installs of other scopes, whose plugins this run does not
/// hold).
pub(super) fn written_entries(
    catalog: &Map<String, Value>,
) -> BTreeMap<String, Map<String, Value>> {
    let mut out = BTreeMap::new();
    for entry in catalog
        .get("plugins")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let (Some(name), Some(fields)) = (entry["name"].as_str(), entry.as_object()) {
            let mut fields = fields.clone();
            for key in ["name", "source", "version", "description"] {
                fields.remove(key);
            }
            out.insert(name.to_owned(), fields);
        }
    }
    out
}

/// The paths of the plugin's marketplace entry's `agents` that are not `.md` files (a
/// folder, say), which make Claude Code refuse to install the plugin; `None` if none.
pub(super) fn agents_not_markdown(info: &PluginInfo) -> Option<String> {
    let agents = info.locked.definition.as_ref()?.components.get("agents")?;
    let paths: Vec<String> = match agents {
        Value::String(path) => vec![path.clone()],
        Value::Array(items) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    };
    let bad: Vec<String> = paths
        .into_iter()
        .filter(|p| !p.ends_with(".md"))
        .map(|p| format!("`{p}`"))
        .collect();
    (!bad.is_empty()).then(|| bad.join(", "))
}
