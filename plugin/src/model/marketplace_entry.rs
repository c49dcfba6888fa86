//! What a marketplace entry defines of its plugin (the lock's `definition`): `hooks`,
//! `mcpServers` and `lspServers` (a document inline, a path to one in the plugin, or a
//! list of either, read as a manifest's fields are), and the paths of `skills`,
//! `commands` and `agents`.

use serde_json::Value;

use super::claude_layout::FIELDS;
use super::{Body, Document, JsonFile, Kind, Reader, plugin_path};
use crate::error::PluginError;

/// Where an entry's documents come from, in messages.
pub const ENTRY: &str = "its marketplace entry";

impl Reader<'_> {
    /// The documents of `kind` the plugin's marketplace entry defines, in its order
    /// (none without an entry): its fields are a manifest's.
    pub fn entry(&mut self, kind: Kind) -> Result<Vec<Document>, PluginError> {
        let Some(definition) = self.definition() else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for (key, of) in FIELDS {
            if of == kind
                && let Some(value) = definition.components.get(key)
            {
                out.extend(self.field(kind, ENTRY, key, value)?);
            }
        }
        Ok(out)
    }

    /// The paths the entry lists under `key` (`skills`, `commands`, `agents`), made plain.
    pub fn entry_paths(&self, key: &str) -> Vec<String> {
        self.definition().map_or_else(Vec::new, |d| d.paths(key))
    }
}

/// What one document of a marketplace entry holds, read as Claude Code's install and the
/// OpenHands SDK read it.
#[derive(Debug)]
pub enum EntryValue {
    /// A value, with where it is (the path as the entry writes it, or `its marketplace
    /// entry`).
    Value(String, Value),
    /// The entry names this path, which is not a file of the plugin.
    Missing(String),
    /// The file at this path is not JSON, for this reason.
    Invalid(String, String),
}

impl Reader<'_> {
    /// The values of the documents of `kind` the entry defines, read as Claude Code's
    /// install and the OpenHands SDK read them: a file it names is UTF-8 JSON without a
    /// byte-order mark (one that is not UTF-8 is [`PluginError::NotUtf8`]).
    pub fn entry_values(&mut self, kind: Kind) -> Result<Vec<EntryValue>, PluginError> {
        let documents = self.entry(kind)?;
        documents
            .into_iter()
            .map(|document| self.entry_value(document))
            .collect()
    }

    fn entry_value(&mut self, document: Document) -> Result<EntryValue, PluginError> {
        let (path, read) = match document.body {
            Body::Inline(value) | Body::Odd { value, .. } => {
                return Ok(EntryValue::Value(document.origin, value));
            }
            Body::File { rel, written, read } => (written.unwrap_or(rel), read),
            // A bundle is a file as any other to this reading.
            Body::Bundle(path) => {
                let read = match plugin_path(&path) {
                    Some(rel) => self.json(&rel)?,
                    None => None,
                };
                (path, read)
            }
            Body::Outside(path) => return Ok(EntryValue::Missing(path)),
        };
        match read.as_deref() {
            None | Some(JsonFile::Unreachable) => Ok(EntryValue::Missing(path)),
            Some(JsonFile::NotUtf8) => Err(PluginError::NotUtf8 {
                plugin: self.root().plugin().to_owned(),
                file: path,
            }),
            Some(read) => match read.strict() {
                Some(Ok(value)) => Ok(EntryValue::Value(path, value)),
                Some(Err(why)) => Ok(EntryValue::Invalid(path, why)),
                None => Ok(EntryValue::Missing(path)),
            },
        }
    }
}
