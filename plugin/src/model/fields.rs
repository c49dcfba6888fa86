//! A component field, read the same way whatever holds it (a manifest, a marketplace
//! entry): a document written inline, a path to a file of the plugin, or a list of either.

use serde_json::Value;

use super::reader::file_document;
use super::{Body, Document, Kind, Reader, plugin_path};
use crate::error::PluginError;

impl Reader<'_> {
    /// The documents the field `key` of `origin` (a manifest's path, or `its marketplace
    /// entry`) holds, in the order it lists them. A path is read (once, however often it
    /// is named); what is neither a path nor a document is kept as [`Body::Odd`].
    pub fn field(
        &mut self,
        kind: Kind,
        origin: &str,
        key: &str,
        value: &Value,
    ) -> Result<Vec<Document>, PluginError> {
        let mut out = Vec::new();
        match value {
            Value::Null => {}
            Value::String(path) => out.push(self.named(kind, origin, key, path)?),
            // A monitors list is the document itself.
            Value::Array(_) if kind == Kind::Monitors => out.push(inline(kind, origin, key, value)),
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    out.push(match item {
                        Value::String(path) => self.named(kind, origin, key, path)?,
                        Value::Object(_) => inline(kind, origin, &format!("{key}[{i}]"), item),
                        other => odd(kind, origin, key, other, true),
                    });
                }
            }
            Value::Object(_) => out.push(inline(kind, origin, key, value)),
            other => out.push(odd(kind, origin, key, other, false)),
        }
        Ok(out)
    }

    /// The document at a path a field names: a JSON file of the plugin, or an MCP bundle
    /// (a `.mcpb` or `.dxt` file, or a URL).
    fn named(
        &mut self,
        kind: Kind,
        origin: &str,
        key: &str,
        path: &str,
    ) -> Result<Document, PluginError> {
        let lower = path.to_ascii_lowercase();
        let body = if kind == Kind::Mcp
            && (lower.ends_with(".mcpb") || lower.ends_with(".dxt") || lower.contains("://"))
        {
            Body::Bundle(path.to_owned())
        } else if let Some(rel) = plugin_path(path) {
            let read = self.json_checked(&rel)?;
            let mut document = file_document(kind, &rel, Some(path), read);
            document.origin = origin.to_owned();
            document.key = key.to_owned();
            return Ok(document);
        } else {
            Body::Outside(path.to_owned())
        };
        Ok(Document {
            kind,
            origin: origin.to_owned(),
            key: key.to_owned(),
            source: format!("{origin}#{key}"),
            body,
            keyed: false,
        })
    }
}

fn inline(kind: Kind, origin: &str, key: &str, value: &Value) -> Document {
    Document {
        kind,
        origin: origin.to_owned(),
        key: key.to_owned(),
        source: format!("{origin}#{key}"),
        body: Body::Inline(value.clone()),
        keyed: false,
    }
}

fn odd(kind: Kind, origin: &str, key: &str, value: &Value, in_list: bool) -> Document {
    Document {
        kind,
        origin: origin.to_owned(),
        key: key.to_owned(),
        source: format!("{origin}#{key}"),
        body: Body::Odd {
            value: value.clone(),
            in_list,
        },
        keyed: false,
    }
}
