//! Every document of every input format, in the order the review takes them: the files
//! harnesses read without a manifest naming them, every manifest's component fields, what
//! the marketplace entry defines, and the front matter of every markdown file.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use super::claude_layout::{self, APPS, COPILOT_FILES, FIELDS, MANIFESTS};
use super::marketplace_entry::ENTRY;
use super::{Document, JsonFile, Kind, Reader, agent_plugins_layout, plugin_path};
use crate::error::PluginError;
use berth_lockfile_schema::harness_keys::Place;

/// The files harnesses read without a manifest naming them.
const CONVENTIONAL: [(&str, Kind); 7] = [
    (claude_layout::HOOKS, Kind::Hooks),
    (agent_plugins_layout::HOOKS, Kind::Hooks),
    (claude_layout::MCP, Kind::Mcp),
    (agent_plugins_layout::MCP, Kind::Mcp),
    (claude_layout::LSP, Kind::Lsp),
    (claude_layout::MONITORS, Kind::Monitors),
    (claude_layout::SETTINGS, Kind::Settings),
];

/// What every input format's reader found in a plugin.
#[derive(Debug, Default)]
pub struct Everything {
    /// The documents, and what cannot be read, in reading order. A file named twice is
    /// listed twice.
    pub found: Vec<Found>,
    /// Executables a manifest declares for a harness to fetch (`binaries`): `bin/NAME` ->
    /// the declared `sha256`.
    pub binaries: BTreeMap<String, String>,
    /// Folders or files (inside the plugin) a manifest names as `workflows`.
    pub workflows: Vec<String>,
}

/// One thing found.
#[derive(Debug)]
pub enum Found {
    /// A document.
    Document(Document),
    /// A manifest that is there but cannot be read (never [`JsonFile::Text`] with a value).
    Manifest {
        /// The manifest.
        file: &'static str,
        /// What reading it gave.
        read: Arc<JsonFile>,
    },
    /// Codex's `.app.json`: app connectors, reached by URL through their provider.
    Apps,
    /// A manifest's `binaries` in a form no reader here knows (`FILE#binaries`).
    Binaries(String),
    /// A path a manifest's `workflows` names that is not inside the plugin.
    WorkflowOutside {
        /// The manifest.
        file: &'static str,
        /// The path as written.
        path: String,
    },
    /// A markdown file whose front matter names hooks or servers and cannot be read.
    FrontMatter {
        /// The file.
        file: String,
        /// Why.
        why: String,
    },
    /// A markdown file whose front matter names keys that grant or run, which berth's
    /// reading of it does not find.
    UnreadKeys {
        /// The file.
        file: String,
        /// The keys, as written.
        keys: Vec<String>,
    },
    /// A field in a form berth does not read, or an extension of a harness it does not
    /// know: what it holds cannot be modelled.
    UnknownForm {
        /// The file and field.
        source: String,
        /// What it is.
        what: String,
    },
    /// A key the table of harness keys does not know, at a place it lists.
    UnknownKey {
        /// The file (or `FILE#experimental`, `its marketplace entry`).
        source: String,
        /// The place.
        place: Place,
        /// The key, as written.
        key: String,
    },
}

impl Reader<'_> {
    /// Everything any harness may read of the plugin, whose files and links are `files`
    /// (relative, sorted): their markdown front matter is read too.
    pub fn everything(&mut self, files: &[&str]) -> Result<Everything, PluginError> {
        let mut all = Everything::default();
        for (file, kind) in CONVENTIONAL.into_iter().chain(COPILOT_FILES) {
            let document = self.file_checked(kind, file, false)?;
            all.found.push(Found::Document(document));
        }
        if self.root().exists(APPS)? {
            all.found.push(Found::Apps);
        }
        for file in MANIFESTS
            .into_iter()
            .chain([agent_plugins_layout::MANIFEST])
        {
            let read = self.json_checked(file)?;
            match read.as_deref() {
                None => {}
                Some(JsonFile::Text {
                    value: Ok(Value::Object(manifest)),
                    ..
                }) => self.manifest_fields(file, manifest, &mut all)?,
                Some(JsonFile::Text { value: Ok(_), .. }) => {}
                Some(_) => all
                    .found
                    .extend(read.map(|read| Found::Manifest { file, read })),
            }
        }
        self.gemini_extension(files, &mut all)?;
        if let Some(definition) = self.definition() {
            for (key, kind) in FIELDS {
                if let Some(value) = definition.components.get(key) {
                    let documents = self.field(kind, ENTRY, key, value)?;
                    all.found.extend(documents.into_iter().map(Found::Document));
                }
            }
            let unknown = definition
                .components
                .keys()
                .filter(|k| !Place::MarketplaceEntry.knows(k));
            all.found.extend(unknown.map(|key| Found::UnknownKey {
                source: ENTRY.to_owned(),
                place: Place::MarketplaceEntry,
                key: key.clone(),
            }));
        }
        let roots = ComponentRoots::of(self)?;
        for file in files {
            let front = self.front_matter(file, roots.place(file))?;
            all.found
                .extend(front.documents.into_iter().map(Found::Document));
            if let Some(why) = front.unreadable {
                all.found.push(Found::FrontMatter {
                    file: (*file).to_owned(),
                    why,
                });
            }
            if !front.unread.is_empty() {
                all.found.push(Found::UnreadKeys {
                    file: (*file).to_owned(),
                    keys: front.unread,
                });
            }
            if let Some(place) = roots.place(file) {
                all.found
                    .extend(front.unknown.into_iter().map(|key| Found::UnknownKey {
                        source: (*file).to_owned(),
                        place,
                        key,
                    }));
            }
            let is_skill = file.rsplit('/').next() == Some("SKILL.md");
            if let Some((dir, _)) = file.rsplit_once('/').filter(|_| is_skill) {
                let document = self.file_checked(Kind::Mcp, &format!("{dir}/.mcp.json"), true)?;
                all.found.push(Found::Document(document));
            }
        }
        Ok(all)
    }

    /// A manifest's component fields, its `experimental` ones, `binaries` and `workflows`,
    /// and the keys the table of harness keys does not know there.
    fn manifest_fields(
        &mut self,
        file: &'static str,
        manifest: &serde_json::Map<String, Value>,
        all: &mut Everything,
    ) -> Result<(), PluginError> {
        unknown_keys(file, Place::Manifest, manifest, all);
        if let Some(Value::Object(experimental)) = manifest.get("experimental") {
            let origin = format!("{file}#experimental");
            unknown_keys(&origin, Place::Experimental, experimental, all);
        }
        self.extensions(file, manifest.get("extensions"), all)?;
        for key in ["commands", "agents", "skills", "outputStyles"] {
            if let Some(value) = manifest.get(key).filter(|v| !names_paths(v)) {
                all.found.push(Found::UnknownForm {
                    source: format!("{file}#{key}"),
                    what: format!(
                        "`{key}` written as `{value}`, not as paths: inline components berth does not read"
                    ),
                });
            }
        }
        for (key, kind) in FIELDS {
            if let Some(value) = manifest.get(key) {
                let documents = self.field(kind, file, key, value)?;
                all.found.extend(documents.into_iter().map(Found::Document));
            }
            if let Some(value) = manifest.get("experimental").and_then(|e| e.get(key)) {
                let origin = format!("{file}#experimental");
                let documents = self.field(kind, &origin, key, value)?;
                all.found.extend(documents.into_iter().map(Found::Document));
            }
        }
        match manifest.get("binaries") {
            None | Some(Value::Null) => {}
            Some(Value::Object(binaries)) => {
                for (name, pin) in binaries {
                    let sha = pin.get("sha256").and_then(Value::as_str).unwrap_or("");
                    all.binaries.insert(format!("bin/{name}"), sha.to_owned());
                }
            }
            Some(_) => all.found.push(Found::Binaries(format!("{file}#binaries"))),
        }
        let workflows = match manifest.get("workflows") {
            Some(Value::String(path)) => vec![path.as_str()],
            Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        for path in workflows {
            match plugin_path(path) {
                Some(rel) => all.workflows.push(rel),
                None => all.found.push(Found::WorkflowOutside {
                    file,
                    path: path.to_owned(),
                }),
            }
        }
        Ok(())
    }
}

/// A Gemini CLI extension's manifest: a plugin holding one at its root is written for
/// Gemini CLI as the extension it is (`materialize gemini`).
pub const GEMINI_EXTENSION: &str = "gemini-extension.json";

impl Reader<'_> {
    /// A Gemini CLI extension's manifest (its `mcpServers`, and the keys the table does not
    /// know there), and each of its commands (`commands/**.toml`) whose prompt runs a shell
    /// line (`!{…}`, after a confirmation its policy may waive), which berth does not
    /// model. Gemini CLI reads the extension's `hooks/hooks.json`, `agents/` and `skills/`
    /// where every harness does, so they are read already.
    fn gemini_extension(
        &mut self,
        files: &[&str],
        all: &mut Everything,
    ) -> Result<(), PluginError> {
        let read = self.json_checked(GEMINI_EXTENSION)?;
        match read.as_deref() {
            None => return Ok(()),
            Some(JsonFile::Text {
                value: Ok(Value::Object(manifest)),
                ..
            }) => {
                unknown_keys(GEMINI_EXTENSION, Place::GeminiExtension, manifest, all);
                if let Some(value) = manifest.get("mcpServers") {
                    let documents = self.field(Kind::Mcp, GEMINI_EXTENSION, "mcpServers", value)?;
                    all.found.extend(documents.into_iter().map(Found::Document));
                }
            }
            // Not an object: Gemini CLI loads no extension from it.
            Some(JsonFile::Text { value: Ok(_), .. }) => {}
            Some(_) => all.found.extend(read.map(|read| Found::Manifest {
                file: GEMINI_EXTENSION,
                read,
            })),
        }
        self.gemini_commands(files, all)
    }

    /// What each Gemini CLI command (`commands/**.toml`) holds that berth does not model
    /// ([`gemini_command`]).
    fn gemini_commands(&mut self, files: &[&str], all: &mut Everything) -> Result<(), PluginError> {
        let commands = files
            .iter()
            .filter(|f| f.starts_with("commands/") && f.ends_with(".toml"));
        for file in commands {
            let bytes = self.root().read_bytes(file)?.unwrap_or_default();
            all.found
                .extend(gemini_command(file, &String::from_utf8_lossy(&bytes)));
        }
        Ok(())
    }

    /// An Agent Plugins manifest's `extensions`: Codex's `com.openai` (its hooks read as a
    /// manifest's), the OpenHands SDK's `dev.openhands`; any other namespace, or a value
    /// that is not an object, is something berth cannot model.
    fn extensions(
        &mut self,
        file: &'static str,
        extensions: Option<&Value>,
        all: &mut Everything,
    ) -> Result<(), PluginError> {
        let source = format!("{file}#extensions");
        let namespaces = match extensions {
            None | Some(Value::Null) => return Ok(()),
            Some(Value::Object(namespaces)) => namespaces,
            Some(other) => {
                all.found.push(Found::UnknownForm {
                    source,
                    what: format!("`extensions` that is not an object (`{other}`)"),
                });
                return Ok(());
            }
        };
        for (namespace, value) in namespaces {
            let place = match namespace.as_str() {
                "com.openai" => Place::OpenaiExtension,
                "dev.openhands" => Place::OpenhandsExtension,
                _ => {
                    all.found.push(Found::UnknownForm {
                        source: source.clone(),
                        what: format!(
                            "extensions of `{namespace}`, a harness berth does not know of"
                        ),
                    });
                    continue;
                }
            };
            let origin = format!("{source}.{namespace}");
            let Value::Object(object) = value else {
                all.found.push(Found::UnknownForm {
                    source: origin,
                    what: format!("extensions of `{namespace}` that are not an object"),
                });
                continue;
            };
            unknown_keys(&origin, place, object, all);
            if let Some(hooks) = object.get("hooks") {
                let documents = self.field(Kind::Hooks, &origin, "hooks", hooks)?;
                all.found.extend(documents.into_iter().map(Found::Document));
            }
        }
        Ok(())
    }
}

/// Whether a component field names paths (a path, or a list of them), the form berth
/// reads.
fn names_paths(value: &Value) -> bool {
    match value {
        Value::Null | Value::String(_) => true,
        Value::Array(items) => items.iter().all(Value::is_string),
        _ => false,
    }
}

/// Each key of `object` the table does not know at `place`, found at `source`.
fn unknown_keys(
    source: &str,
    place: Place,
    object: &serde_json::Map<String, Value>,
    all: &mut Everything,
) {
    all.found.extend(
        place
            .unknown(object)
            .into_iter()
            .map(|key| Found::UnknownKey {
                source: source.to_owned(),
                place,
                key: key.to_owned(),
            }),
    );
}

/// The folders a harness reads commands and sub-agents from: the conventional ones, and
/// those every manifest and the marketplace entry name.
struct ComponentRoots {
    commands: Vec<String>,
    agents: Vec<String>,
}

impl ComponentRoots {
    fn of(reader: &mut Reader<'_>) -> Result<Self, PluginError> {
        let mut roots = ComponentRoots {
            commands: vec![
                "commands".to_owned(),
                agent_plugins_layout::LAYOUT.commands.to_owned(),
            ],
            agents: vec![
                "agents".to_owned(),
                agent_plugins_layout::LAYOUT.agents.to_owned(),
            ],
        };
        for file in MANIFESTS
            .into_iter()
            .chain([agent_plugins_layout::MANIFEST])
        {
            if let Some(JsonFile::Text {
                value: Ok(Value::Object(manifest)),
                ..
            }) = reader.json(file)?.as_deref()
            {
                roots.commands.extend(paths(manifest.get("commands")));
                roots.agents.extend(paths(manifest.get("agents")));
            }
        }
        if let Some(definition) = reader.definition() {
            roots.commands.extend(definition.paths("commands"));
            roots.agents.extend(definition.paths("agents"));
        }
        Ok(roots)
    }

    /// Whose front matter the markdown file `rel` holds: a skill's (`SKILL.md`), a
    /// command's or an agent's (under one of their folders, or named), or none.
    fn place(&self, rel: &str) -> Option<Place> {
        let under = |roots: &[String]| {
            roots.iter().any(|root| {
                rel == root
                    || rel
                        .strip_prefix(root.as_str())
                        .is_some_and(|r| r.starts_with('/'))
            })
        };
        if !rel.to_ascii_lowercase().ends_with(".md") {
            None
        } else if rel.rsplit('/').next() == Some("SKILL.md") {
            Some(Place::SkillFrontMatter)
        } else if under(&self.commands) {
            Some(Place::CommandFrontMatter)
        } else if under(&self.agents) {
            Some(Place::AgentFrontMatter)
        } else {
            None
        }
    }
}

/// The plugin paths a manifest's component field names (a path, or a list of them).
fn paths(value: Option<&Value>) -> Vec<String> {
    let items: Vec<&Value> = match value {
        Some(Value::Array(items)) => items.iter().collect(),
        Some(other) => vec![other],
        None => Vec::new(),
    };
    items
        .into_iter()
        .filter_map(Value::as_str)
        .filter_map(plugin_path)
        .collect()
}

/// What the Gemini CLI command `file` (its `text`) holds that berth does not model, each
/// counted as every capability: a shell line in its prompt (`!{…}`), a key the table of
/// harness keys does not know (Gemini CLI 0.61.0 reads `prompt` and `description` and
/// drops the rest; a later one may not), or text berth cannot read as TOML (Gemini CLI's
/// parser may, and then berth cannot tell its keys).
fn gemini_command(file: &str, text: &str) -> Vec<Found> {
    let unknown = |what: &str| Found::UnknownForm {
        source: file.to_owned(),
        what: what.to_owned(),
    };
    let mut found = Vec::new();
    if text.contains("!{") {
        found.push(unknown(
            "a Gemini CLI command whose prompt runs a shell line (`!{…}`)",
        ));
    }
    match toml::from_str::<toml::Table>(text) {
        Ok(table) => found.extend(
            table
                .into_iter()
                .map(|(key, _)| key)
                .filter(|key| !Place::GeminiCommand.knows(key))
                .map(|key| Found::UnknownKey {
                    source: file.to_owned(),
                    place: Place::GeminiCommand,
                    key,
                }),
        ),
        Err(_) => found.push(unknown("a Gemini CLI command berth cannot read as TOML")),
    }
    found
}
