//! What each observed MCP server of a plugin offered the model, as part of its surface:
//! the manifest's hash is approved with the rest, and a reviewer reads what changed tool
//! by tool (a description turned into instructions, a schema that asks for more).

use std::collections::BTreeMap;

use berth_lockfile_schema::{LockedTools, TOOLS_ENTRY_NAME, ToolsTrust};
use berth_store::Store;
use serde::Serialize;
use serde_json::Value;

/// One server's record, as the surface keeps it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolsPin {
    /// NAR hash (SRI) of the manifest's store entry, when observed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub manifest: Option<String>,
    /// Why the server was not observed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unobserved: Option<String>,
    /// Whether the record is a remote server's first answer.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub first_use: bool,
    /// What it offers, by `tool NAME`, `prompt NAME`, `resource URI`, `template URI` and
    /// `instructions`, read from the manifest in the store (empty when it is not there).
    #[serde(skip)]
    pub offers: BTreeMap<String, Value>,
}

/// A lock's `[[tools]]` records with the manifest each names, read from `store` (`None`
/// when it is not there, or changed since it was added).
pub fn load_manifests(store: &Store, tools: &[LockedTools]) -> Vec<(LockedTools, Option<Value>)> {
    tools
        .iter()
        .map(|t| {
            (
                t.clone(),
                t.manifest.as_ref().and_then(|h| read_manifest(store, h)),
            )
        })
        .collect()
}

/// The manifest in the store entry of hash `hash`.
pub fn read_manifest(store: &Store, hash: &berth_lockfile_schema::Sha256Hash) -> Option<Value> {
    let entry = store.checked_lookup(hash, TOOLS_ENTRY_NAME).ok()??;
    let text = std::fs::read_to_string(entry.path.join(MANIFEST_FILE)).ok()?;
    serde_json::from_str(&text).ok()
}

/// The file of a manifest's store entry.
pub const MANIFEST_FILE: &str = "manifest.json";

/// Each offer of a manifest by its key (see [`ToolsPin::offers`]).
fn offers_of(manifest: &Value) -> BTreeMap<String, Value> {
    let mut offers = BTreeMap::new();
    for (list, kind, key) in [
        ("tools", "tool", "name"),
        ("prompts", "prompt", "name"),
        ("resources", "resource", "uri"),
        ("resourceTemplates", "template", "uriTemplate"),
    ] {
        for item in manifest
            .get(list)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let id = item.get(key).and_then(Value::as_str).unwrap_or("?");
            offers.insert(format!("{kind} {id}"), item.clone());
        }
    }
    if let Some(text) = manifest.get("instructions") {
        offers.insert("instructions".to_owned(), text.clone());
    }
    offers
}

/// The records of plugin `plugin` among `tools`, by server.
pub fn pins_of(plugin: &str, tools: &[(LockedTools, Option<Value>)]) -> BTreeMap<String, ToolsPin> {
    tools
        .iter()
        .filter(|(t, _)| t.plugin == plugin)
        .map(|(t, manifest)| {
            (
                t.server.clone(),
                ToolsPin {
                    manifest: t.manifest.as_ref().map(|h| h.to_sri()),
                    unobserved: t.unobserved.clone(),
                    first_use: t.trust == ToolsTrust::FirstUse,
                    offers: manifest.as_ref().map(offers_of).unwrap_or_default(),
                },
            )
        })
        .collect()
}

/// What one server offers differently.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct OffersChange {
    /// Offers only the new manifest has (`tool search`), with what they say.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub added: BTreeMap<String, Value>,
    /// Offers only the old one has.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub removed: Vec<String>,
    /// Offers in both that differ: what changed of each (`description`,
    /// `inputSchema`, ...), old and new.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub changed: BTreeMap<String, BTreeMap<String, (Value, Value)>>,
    /// The record's state, when it changed: observed, not observed and why, first use.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record: Option<(String, String)>,
}

impl OffersChange {
    pub fn is_empty(&self) -> bool {
        self.added.is_empty()
            && self.removed.is_empty()
            && self.changed.is_empty()
            && self.record.is_none()
    }
}

/// What changed between two plugins' records, by server.
pub fn tools_diff(
    old: &BTreeMap<String, ToolsPin>,
    new: &BTreeMap<String, ToolsPin>,
) -> BTreeMap<String, OffersChange> {
    let empty = ToolsPin {
        manifest: None,
        unobserved: Some("no record".to_owned()),
        first_use: false,
        offers: BTreeMap::new(),
    };
    let servers: std::collections::BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    servers
        .into_iter()
        .filter_map(|server| {
            let (o, n) = (
                old.get(server).unwrap_or(&empty),
                new.get(server).unwrap_or(&empty),
            );
            let change = offers_change(o, n);
            (!change.is_empty()).then(|| (server.clone(), change))
        })
        .collect()
}

fn offers_change(old: &ToolsPin, new: &ToolsPin) -> OffersChange {
    let mut change = OffersChange::default();
    for (key, value) in &new.offers {
        match old.offers.get(key) {
            None => {
                change.added.insert(key.clone(), value.clone());
            }
            Some(before) if before != value => {
                change
                    .changed
                    .insert(key.clone(), fields_changed(before, value));
            }
            Some(_) => {}
        }
    }
    change.removed = old
        .offers
        .keys()
        .filter(|k| !new.offers.contains_key(*k))
        .cloned()
        .collect();
    let state = |p: &ToolsPin| match (&p.unobserved, p.first_use) {
        (Some(why), _) => format!("not observed: {why}"),
        (None, true) => "first answer of a remote server".to_owned(),
        (None, false) => "observed".to_owned(),
    };
    if state(old) != state(new) {
        change.record = Some((state(old), state(new)));
    }
    change
}

/// The fields of an offer that differ (the whole value for a string such as
/// `instructions`).
fn fields_changed(old: &Value, new: &Value) -> BTreeMap<String, (Value, Value)> {
    let (Some(o), Some(n)) = (old.as_object(), new.as_object()) else {
        return BTreeMap::from([("text".to_owned(), (old.clone(), new.clone()))]);
    };
    o.keys()
        .chain(n.keys())
        .filter(|k| o.get(*k) != n.get(*k))
        .map(|k| {
            (
                k.clone(),
                (
                    o.get(k).cloned().unwrap_or(Value::Null),
                    n.get(k).cloned().unwrap_or(Value::Null),
                ),
            )
        })
        .collect()
}
