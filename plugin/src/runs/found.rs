//! What the readers found, as the review takes it: each file once (the first place that
//! names it), what cannot be read counted as every capability its kind may grant, and what
//! no harness reads named in a warning.

use std::collections::BTreeSet;

use berth_lockfile_schema::governance::Capability;
use serde_json::Value;

use super::{Runs, Unmodeled};
use crate::model::{Body, Document, Everything, Found, JsonFile, Kind};

/// A document the review reads: what it defines, where, and its value.
pub(super) struct Readable {
    pub(super) kind: Kind,
    pub(super) source: String,
    pub(super) value: Value,
    pub(super) keyed: bool,
}

/// What a document of `kind` may grant, when it cannot be read.
fn capabilities(kind: Kind) -> &'static [Capability] {
    match kind {
        Kind::Hooks | Kind::Monitors | Kind::Settings => &[Capability::Hooks],
        Kind::Mcp => &[Capability::McpStdio, Capability::McpRemote],
        Kind::Lsp => &[Capability::McpStdio],
    }
}

/// The documents of `everything` the review reads, in order; what cannot be read goes to
/// `runs.unmodeled`, what is merely odd to `runs.warnings`, declared binaries and
/// workflows to `runs`.
pub(super) fn readable(everything: Everything, plugin: &str, runs: &mut Runs) -> Vec<Readable> {
    runs.declared_binaries.extend(everything.binaries);
    runs.workflows.extend(everything.workflows);
    let mut noted = Noted {
        plugin,
        runs,
        seen: BTreeSet::new(),
    };
    let mut out = Vec::new();
    for found in everything.found {
        match found {
            Found::Document(document) => out.extend(noted.document(document)),
            Found::Manifest { file, read } => noted.unreadable(file, &read, &[Capability::Hooks]),
            Found::Apps => noted.unmodeled(
                Capability::McpRemote,
                ".app.json",
                "Codex app connectors, reached by URL through their provider".to_owned(),
            ),
            Found::Binaries(source) => noted.unmodeled(
                Capability::Executables,
                &source,
                "executables a harness fetches into `bin/`, in a form berth cannot read".to_owned(),
            ),
            Found::WorkflowOutside { file, path } => noted.warn(format!(
                "`{file}`: workflows `{path}` is not a path inside the plugin; no harness reads it"
            )),
            Found::UnreadKeys { file, keys } => {
                let keys = keys.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>();
                noted.unknown(
                    &file,
                    format!(
                        "its front matter names {}, which berth's reading of it does not find; a harness reading it another way may apply them",
                        keys.join(", ")
                    ),
                );
            }
            Found::UnknownForm { source, what } => noted.unknown(&source, what),
            Found::UnknownKey { source, place, key } => {
                noted.unknown(&source, super::unknown_key(place, &key));
            }
            Found::FrontMatter { file, why } => {
                for capability in [Capability::Hooks, Capability::McpStdio] {
                    noted.unmodeled(
                        capability,
                        &file,
                        format!(
                            "its front matter names hooks or servers and cannot be read ({why}); a harness may read it"
                        ),
                    );
                }
            }
        }
    }
    out
}

struct Noted<'a> {
    plugin: &'a str,
    runs: &'a mut Runs,
    /// The files already taken: a file named again is not read again.
    seen: BTreeSet<String>,
}

impl Noted<'_> {
    fn unmodeled(&mut self, capability: Capability, source: &str, what: String) {
        self.runs.unmodeled.push(Unmodeled {
            capability,
            source: source.to_owned(),
            what,
        });
    }

    /// What berth cannot model and cannot tell the capability of: it counts as every
    /// capability.
    fn unknown(&mut self, source: &str, what: String) {
        for capability in Capability::ALL {
            self.unmodeled(capability, source, what.clone());
        }
    }

    fn warn(&mut self, message: String) {
        self.runs
            .warnings
            .push(format!("plugin `{}`: {message}", self.plugin));
    }

    /// A file there that cannot be read counts as every one of `capabilities`.
    fn unreadable(&mut self, rel: &str, read: &JsonFile, capabilities: &[Capability]) {
        let why = match read {
            JsonFile::Text {
                value: Err(why), ..
            } => why.clone(),
            JsonFile::Text { value: Ok(_), .. } => return,
            JsonFile::NotUtf8 => "it is not UTF-8 text".to_owned(),
            JsonFile::Unreachable => {
                "it is a link leaving the plugin, or too large to read".to_owned()
            }
        };
        for capability in capabilities {
            self.unmodeled(
                *capability,
                rel,
                format!("berth cannot read it ({why}), and a harness may"),
            );
        }
    }

    /// The document, when the review reads it.
    fn document(&mut self, document: Document) -> Option<Readable> {
        let Document {
            kind,
            origin,
            key,
            source,
            body,
            keyed,
        } = document;
        let value = match body {
            Body::Inline(value) => value,
            Body::File { rel, read, .. } => {
                if !self.seen.insert(rel.clone()) {
                    return None;
                }
                let read = read?;
                match &*read {
                    JsonFile::Text {
                        value: Ok(value), ..
                    } => value.clone(),
                    other => {
                        self.unreadable(&rel, other, capabilities(kind));
                        return None;
                    }
                }
            }
            Body::Outside(path) => {
                self.warn(format!(
                    "`{origin}`: {} file `{path}` is not a path inside the plugin; no harness reads it",
                    kind.noun()
                ));
                return None;
            }
            Body::Bundle(path) => {
                self.unmodeled(
                    Capability::McpStdio,
                    &source,
                    format!("an MCP bundle `{path}`, whose servers berth cannot read"),
                );
                return None;
            }
            Body::Odd { value, in_list } => {
                self.warn(if in_list {
                    format!(
                        "`{origin}`: `{key}` holds `{value}`, which is neither a path nor {}; no harness reads it",
                        kind.noun()
                    )
                } else {
                    format!(
                        "`{origin}`: `{key}` is `{value}`, neither a path nor {}; no harness reads it",
                        kind.noun()
                    )
                });
                return None;
            }
        };
        Some(Readable {
            kind,
            source,
            value,
            keyed,
        })
    }
}
