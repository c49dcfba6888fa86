//! LSP servers (Claude Code's `lspServers` in `plugin.json` or a marketplace entry, and
//! `.lsp.json`): read from the component model as raw JSON, with the helpers a review
//! shares (canonical JSON, unique names).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::error::PluginError;
use crate::model::{Body, ENTRY, JsonFile, Kind, LSP_FILE, Reader};

/// The plugin's LSP servers, by name, as raw JSON with object keys sorted: its marketplace
/// entry's `lspServers`, then the manifest's (`manifest_file`, an object, a path to a JSON
/// file in the plugin, or a list of either), then `.lsp.json`. What cannot be read is left
/// out with a warning; a name given twice is kept twice (the second as `name#2`), so that
/// nothing is hidden from a review.
pub(crate) fn lsp_servers(
    reader: &mut Reader<'_>,
    manifest_file: Option<&str>,
    warnings: &mut Vec<String>,
) -> Result<BTreeMap<String, Value>, PluginError> {
    let mut lsp = Lsp {
        servers: BTreeMap::new(),
        warnings,
    };
    if let Some(value) = reader
        .definition()
        .and_then(|d| d.components.get("lspServers"))
    {
        lsp.field(reader, ENTRY, value)?;
    }
    if let Some(file) = manifest_file
        && let Some(document) = lsp.json(reader, file)?
        && let Some(value) = document.get("lspServers")
    {
        lsp.field(reader, file, value)?;
    }
    if let Some(document) = lsp.json(reader, LSP_FILE)? {
        lsp.document(LSP_FILE, &document, reader.root().plugin());
    }
    Ok(lsp.servers)
}

/// LSP servers as they are read.
struct Lsp<'a> {
    servers: BTreeMap<String, Value>,
    warnings: &'a mut Vec<String>,
}

impl Lsp<'_> {
    /// A field naming LSP servers in `file`: an object of them, a path to a file of them,
    /// or a list of either.
    fn field(
        &mut self,
        reader: &mut Reader<'_>,
        file: &str,
        value: &Value,
    ) -> Result<(), PluginError> {
        let plugin = reader.root().plugin().to_owned();
        if value.is_null() {
            self.not_servers(&plugin, file);
            return Ok(());
        }
        for document in reader.field(Kind::Lsp, file, "lspServers", value)? {
            match document.body {
                Body::Inline(value) => self.document(file, &value, &plugin),
                Body::File { rel, written, .. } => match self.json(reader, &rel)? {
                    Some(value) => self.document(&rel, &value, &plugin),
                    None => self.warnings.push(format!(
                        "plugin `{plugin}`: `{file}`: LSP file `{}` is missing or unreadable",
                        written.unwrap_or(rel)
                    )),
                },
                Body::Outside(path) | Body::Bundle(path) => self.warnings.push(format!(
                    "plugin `{plugin}`: `{file}`: LSP file `{path}` is not a path inside the plugin; ignored"
                )),
                Body::Odd {
                    value: value @ Value::Array(_),
                    in_list: true,
                } => self.field(reader, file, &value)?,
                Body::Odd { .. } => self.not_servers(&plugin, file),
            }
        }
        Ok(())
    }

    /// A document of LSP servers read from `file`: an object of them (a file may wrap them
    /// as `{"lspServers": {...}}`).
    fn document(&mut self, file: &str, value: &Value, plugin: &str) {
        let Value::Object(map) = value else {
            return self.not_servers(plugin, file);
        };
        let map = match map.get("lspServers") {
            Some(Value::Object(inner)) if map.len() == 1 => inner,
            _ => map,
        };
        for (name, server) in map {
            if server.is_object() {
                insert_unique(
                    &mut self.servers,
                    name,
                    canonical(server),
                    file,
                    self.warnings,
                    plugin,
                );
            } else {
                self.warnings.push(format!(
                    "plugin `{plugin}`: `{file}`: LSP server `{name}` ignored: it must be an object"
                ));
            }
        }
    }

    fn not_servers(&mut self, plugin: &str, file: &str) {
        self.warnings.push(format!(
            "plugin `{plugin}`: `{file}`: LSP servers must be an object of servers; ignored"
        ));
    }

    /// The JSON document at `rel`, or `None` (with a warning when it is there but is not
    /// JSON).
    fn json(&mut self, reader: &mut Reader<'_>, rel: &str) -> Result<Option<Value>, PluginError> {
        let plugin = reader.root().plugin();
        match reader.json(rel)?.as_deref() {
            None | Some(JsonFile::Unreachable) => Ok(None),
            Some(JsonFile::NotUtf8) => {
                self.warnings.push(format!(
                    "plugin `{plugin}`: `{rel}` is not UTF-8 text; ignored"
                ));
                Ok(None)
            }
            Some(JsonFile::Text {
                value: Ok(value), ..
            }) => Ok(Some(value.clone())),
            Some(JsonFile::Text {
                value: Err(why), ..
            }) => {
                self.warnings
                    .push(format!("plugin `{plugin}`: `{rel}`: {why}; ignored"));
                Ok(None)
            }
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
