//! Reading a plugin's files through its root, each once, into its [`PluginModel`].

use std::cell::RefCell;
use std::sync::Arc;

use berth_lockfile_schema::EntryDefinition;
use serde_json::Value;

use super::{Body, Document, JsonFile, Kind, Markdown, PluginModel};
use crate::error::PluginError;
use crate::manifest::{PluginManifest, read_manifest};
use crate::root::PluginRoot;

/// Reads one plugin's files into its model: what was read before is taken from the model,
/// never read again.
#[derive(Debug)]
pub struct Reader<'a> {
    root: &'a PluginRoot,
    definition: Option<&'a EntryDefinition>,
    model: &'a mut PluginModel,
}

impl<'a> Reader<'a> {
    /// A reader of the plugin at `root`, whose marketplace entry defines `definition` of
    /// it (the lock's), keeping what it reads in `model`.
    pub fn new(
        root: &'a PluginRoot,
        definition: Option<&'a EntryDefinition>,
        model: &'a mut PluginModel,
    ) -> Self {
        Self {
            root,
            definition,
            model,
        }
    }

    /// The plugin's folder.
    pub fn root(&self) -> &'a PluginRoot {
        self.root
    }

    /// What its marketplace entry defines of it.
    pub fn definition(&self) -> Option<&'a EntryDefinition> {
        self.definition
    }

    /// The plugin's manifest as the OpenHands SDK picks it (or its defaults), and what
    /// reading it noticed, each warning naming the plugin. An unusable manifest is
    /// [`PluginError::Invalid`], naming plugin and file. The files it reads stay in the
    /// model, so the component fields are read from the same text.
    pub fn manifest(&mut self) -> Result<(PluginManifest, Vec<String>), PluginError> {
        let root = self.root;
        let read = RefCell::new(Vec::new());
        let manifest = read_manifest(
            |rel| match root.read_text(rel) {
                Ok(text) => {
                    read.borrow_mut().push((rel.to_owned(), text.clone()));
                    Ok(text.map(String::into_bytes))
                }
                Err(e) => Err(e.to_string()),
            },
            root.plugin(),
        )
        .map_err(|e| PluginError::Invalid {
            plugin: root.plugin().to_owned(),
            file: e.file,
            message: e.message,
        })?;
        for (rel, text) in read.into_inner() {
            self.model
                .json
                .insert(rel, text.map(|text| Arc::new(json_text(text))));
        }
        let warnings = manifest
            .warnings
            .iter()
            .map(|w| format!("plugin `{}`: {w}", root.plugin()))
            .collect();
        Ok((manifest, warnings))
    }

    /// The JSON file at `rel` (normalised), read once; `None` when nothing is read there
    /// (nothing, a folder, or something that cannot be read).
    pub fn json(&mut self, rel: &str) -> Result<Option<Arc<JsonFile>>, PluginError> {
        if let Some(read) = self.model.json.get(rel) {
            return Ok(read.clone());
        }
        let read = self.root.read_bytes(rel)?.map(|bytes| {
            Arc::new(match String::from_utf8(bytes) {
                Ok(text) => json_text(text),
                Err(_) => JsonFile::NotUtf8,
            })
        });
        self.model.json.insert(rel.to_owned(), read.clone());
        Ok(read)
    }

    /// As [`Reader::json`], with a file that is not UTF-8 an error
    /// ([`PluginError::NotUtf8`]), as the OpenHands SDK's loaders take it.
    pub fn json_utf8(&mut self, rel: &str) -> Result<Option<Arc<JsonFile>>, PluginError> {
        match self.json(rel)? {
            Some(read) if matches!(*read, JsonFile::NotUtf8) => Err(PluginError::NotUtf8 {
                plugin: self.root.plugin().to_owned(),
                file: rel.to_owned(),
            }),
            read => Ok(read),
        }
    }

    /// As [`Reader::json`], but something there that cannot be read (a link leaving the
    /// plugin, a file too large) is [`JsonFile::Unreachable`], not nothing.
    pub fn json_checked(&mut self, rel: &str) -> Result<Option<Arc<JsonFile>>, PluginError> {
        if let Some(read) = self.json(rel)? {
            return Ok(Some(read));
        }
        if !self.root.exists(rel)? || self.root.is_dir(rel)? {
            return Ok(None);
        }
        let unreachable = Arc::new(JsonFile::Unreachable);
        self.model
            .json
            .insert(rel.to_owned(), Some(unreachable.clone()));
        Ok(Some(unreachable))
    }

    /// The document of `kind` in the file `rel`, named by no field, telling what cannot be
    /// read from nothing ([`Reader::json_checked`]); `keyed` as [`Document::keyed`].
    pub fn file_checked(
        &mut self,
        kind: Kind,
        rel: &str,
        keyed: bool,
    ) -> Result<Document, PluginError> {
        let read = self.json_checked(rel)?;
        let mut document = file_document(kind, rel, None, read);
        document.keyed = keyed;
        Ok(document)
    }

    /// The markdown file at `rel`, read once; `None` when nothing is read there.
    pub fn markdown(&mut self, rel: &str) -> Result<Option<Arc<Markdown>>, PluginError> {
        if let Some(read) = self.model.markdown.get(rel) {
            return Ok(read.clone());
        }
        let read = self.root.read_bytes(rel)?.map(|bytes| {
            Arc::new(match String::from_utf8(bytes) {
                Ok(text) => Markdown::Text(text),
                Err(e) => Markdown::NotUtf8(String::from_utf8_lossy(e.as_bytes()).into_owned()),
            })
        });
        self.model.markdown.insert(rel.to_owned(), read.clone());
        Ok(read)
    }
}

/// A JSON file's text and what it holds.
fn json_text(text: String) -> JsonFile {
    let value: Result<Value, String> = crate::json::parse_allowing_bom(&text);
    JsonFile::Text { text, value }
}

/// The document of `kind` in the file `rel`, as read.
pub(super) fn file_document(
    kind: Kind,
    rel: &str,
    written: Option<&str>,
    read: Option<Arc<JsonFile>>,
) -> Document {
    Document {
        kind,
        origin: rel.to_owned(),
        key: String::new(),
        source: rel.to_owned(),
        body: Body::File {
            rel: rel.to_owned(),
            written: written.map(str::to_owned),
            read,
        },
        keyed: false,
    }
}
