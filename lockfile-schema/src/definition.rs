//! A plugin as its marketplace entry defines it: Claude Code's `strict` flag and the
//! component fields (`skills`, `commands`, `agents`, `hooks`, `mcpServers`,
//! `lspServers`) a catalog entry may give. Pinned in the lock, so the runtime builds the
//! plugin as Claude Code installs it without reading the catalog again.
//!
//! A catalog is untrusted: every path must stay inside the plugin's folder (relative, no
//! `..`), and the definition is kept as written otherwise. Any other key of the entry that
//! a harness may act on (`monitors`, `settings`, a key the table of harness keys does not
//! know) is kept too, so the review reads it; the keys known to be inert are not.

use serde_json::{Map, Value};

use crate::harness_keys::Place;

/// The component fields an entry may define, in the order the lock writes them.
pub const COMPONENT_KEYS: [&str; 6] = [
    "skills",
    "commands",
    "agents",
    "hooks",
    "mcpServers",
    "lspServers",
];

/// What a marketplace entry says of its plugin's components.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryDefinition {
    /// `strict` (Claude Code's default, true): the plugin's own files define it and the
    /// entry's fields add to them. False: the entry alone defines the plugin: its name is
    /// the entry's, its components only those the entry lists.
    pub strict: bool,
    /// The component fields the entry gives, as written (paths relative to the plugin's
    /// folder), by key.
    pub components: Map<String, Value>,
}

/// `path` made plain (`./skills/x/` -> `skills/x`), or why a catalog may not name it.
pub fn plugin_path(path: &str) -> Result<String, String> {
    let trimmed = path.trim_start_matches("./").trim_end_matches('/');
    let bad = path.starts_with('/')
        || path.starts_with('~')
        || path.contains('\\')
        || path.contains('\0')
        || trimmed.split('/').any(|s| s == "..");
    if bad {
        return Err(format!(
            "names `{path}`, which is not a path inside the plugin's folder"
        ));
    }
    Ok(if trimmed.is_empty() || trimmed == "." {
        ".".to_owned()
    } else {
        trimmed.to_owned()
    })
}

/// Whether an entry's `key`, not one of [`COMPONENT_KEYS`], is kept in its definition:
/// anything but its name, source, `strict` and the keys known to be inert
/// ([`Place::MarketplaceEntry`]).
fn kept_beside(key: &str) -> bool {
    let place = Place::MarketplaceEntry;
    let inert = place.knows(key) && !place.models(key);
    !matches!(key, "name" | "source" | "strict") && !COMPONENT_KEYS.contains(&key) && !inert
}

/// `a list`, `a number`, … for messages.
fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Checks every path a component field holds.
fn check_paths(key: &str, value: &Value) -> Result<(), String> {
    let one = |v: &Value| match v {
        Value::String(p) => plugin_path(p)
            .map(drop)
            .map_err(|why| format!("`{key}` {why}")),
        Value::Object(_) if matches!(key, "hooks" | "mcpServers" | "lspServers") => Ok(()),
        other => Err(format!(
            "`{key}` holds {}, not a path{}",
            json_type(other),
            if matches!(key, "hooks" | "mcpServers" | "lspServers") {
                " or an object"
            } else {
                ""
            }
        )),
    };
    match value {
        Value::Array(items) => items.iter().try_for_each(one),
        other => one(other),
    }
}

/// `value` with every object's keys sorted, so equal JSON always writes the same text.
pub fn canonical_json(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), canonical_json(&map[k])))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(canonical_json).collect()),
        other => other.clone(),
    }
}

impl EntryDefinition {
    /// The definition a catalog entry gives: `None` for a strict entry without component
    /// fields (the plugin's folder alone defines it), or why it cannot be used.
    pub fn from_entry(entry: &Value) -> Result<Option<EntryDefinition>, String> {
        let strict = match entry.get("strict") {
            None | Some(Value::Null) => true,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err("has a `strict` that is not true or false".into()),
        };
        let mut components = Map::new();
        for key in COMPONENT_KEYS {
            match entry.get(key) {
                None | Some(Value::Null) => {}
                Some(value) => {
                    check_paths(key, value)?;
                    components.insert(key.to_owned(), canonical_json(value));
                }
            }
        }
        // Every other key a harness may act on is kept as written, so the review reads it:
        // `monitors`, `settings`, and any key the table of harness keys does not know.
        if let Value::Object(map) = entry {
            for (key, value) in map.iter().filter(|(k, v)| kept_beside(k) && !v.is_null()) {
                components.insert(key.clone(), canonical_json(value));
            }
        }
        Ok((!strict || !components.is_empty()).then_some(EntryDefinition { strict, components }))
    }

    /// The canonical JSON the lock keeps (`{"strict":…, "skills": …}`, keys sorted).
    pub fn to_json(&self) -> String {
        let mut map = Map::new();
        map.insert("strict".to_owned(), Value::Bool(self.strict));
        for (k, v) in &self.components {
            map.insert(k.clone(), v.clone());
        }
        serde_json::to_string(&canonical_json(&Value::Object(map))).expect("JSON is serialisable")
    }

    /// Reads what [`EntryDefinition::to_json`] wrote, checking it as a catalog entry.
    pub fn from_json(text: &str) -> Result<EntryDefinition, String> {
        let value: Value =
            serde_json::from_str(text).map_err(|e| format!("`definition` is not JSON: {e}"))?;
        let Value::Object(map) = &value else {
            return Err("`definition` is not a JSON object".into());
        };
        if let Some(key) = map
            .keys()
            .find(|k| *k != "strict" && !COMPONENT_KEYS.contains(&k.as_str()) && !kept_beside(k))
        {
            return Err(format!("`definition` has an unknown field `{key}`"));
        }
        Ok(Self::from_entry(&value)?.unwrap_or(EntryDefinition {
            strict: true,
            components: Map::new(),
        }))
    }

    /// The paths a path-list component (`skills`, `commands`, `agents`) names, made plain.
    pub fn paths(&self, key: &str) -> Vec<String> {
        let values: Vec<&Value> = match self.components.get(key) {
            Some(Value::Array(items)) => items.iter().collect(),
            Some(other) => vec![other],
            None => Vec::new(),
        };
        values
            .into_iter()
            .filter_map(Value::as_str)
            .filter_map(|p| plugin_path(p).ok())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_strict_false_entry_round_trips_and_a_plain_one_has_none() {
        let entry = json!({"name": "document-skills", "source": "./", "strict": false,
            "skills": ["./skills/xlsx", "./skills/docx/"],
            "mcpServers": {"b": {"command": "x"}, "a": {"url": "https://e.example"}}});
        let def = EntryDefinition::from_entry(&entry)
            .expect("valid")
            .expect("some");
        assert!(!def.strict);
        assert_eq!(def.paths("skills"), ["skills/xlsx", "skills/docx"]);
        let text = def.to_json();
        assert!(text.starts_with("{\"mcpServers\":{\"a\":"), "{text}");
        assert_eq!(EntryDefinition::from_json(&text).expect("round trip"), def);
        assert_eq!(
            EntryDefinition::from_entry(&json!({"name": "x", "source": "./x"})).expect("valid"),
            None
        );
    }

    #[test]
    fn keys_a_harness_may_act_on_are_kept_and_inert_ones_dropped() {
        let entry = json!({"name": "x", "source": "./x", "category": "dev", "version": "1",
            "monitors": [{"command": "tail -f log"}], "frobnicate": {"run": "id"}});
        let def = EntryDefinition::from_entry(&entry)
            .expect("valid")
            .expect("some");
        let mut keys: Vec<&str> = def.components.keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(keys, ["frobnicate", "monitors"]);
        assert_eq!(
            EntryDefinition::from_json(&def.to_json()).expect("round trip"),
            def
        );
        let plain = json!({"name": "x", "source": "./x", "category": "dev", "policy": {}});
        assert_eq!(EntryDefinition::from_entry(&plain).expect("valid"), None);
    }

    #[test]
    fn paths_leaving_the_plugin_are_refused() {
        for bad in ["../x", "/etc", "~/x", "a/../../b"] {
            let entry = json!({"name": "x", "strict": false, "skills": [bad]});
            assert!(EntryDefinition::from_entry(&entry).is_err(), "{bad}");
        }
        let entry = json!({"name": "x", "hooks": 3});
        assert!(EntryDefinition::from_entry(&entry).is_err());
        assert_eq!(plugin_path("./").expect("root"), ".");
    }
}
