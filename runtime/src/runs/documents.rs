//! The documents a harness may read hooks, servers, monitors and settings from: every
//! manifest's component fields (inline, a path, or a list of either), the conventional
//! files, the marketplace entry's definition, and markdown front matter.

use std::collections::BTreeSet;

use berth_lockfile_schema::EntryDefinition;
use berth_lockfile_schema::governance::Capability;
use serde_json::Value;

use super::{Runs, Unmodeled};
use crate::error::RuntimeError;
use crate::lsp::plugin_path;
use crate::root::PluginRoot;

/// What a document defines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// Hooks by event (`{"hooks": {...}}` or the events alone).
    Hooks,
    /// MCP servers by name (`{"mcpServers": {...}}` or the servers alone).
    Mcp,
    /// LSP servers by name (`{"lspServers": {...}}` or the servers alone).
    Lsp,
    /// Claude Code monitors (a list, or `{"monitors": [...]}`).
    Monitors,
    /// Claude Code plugin settings (`settings.json`, a manifest's `settings`).
    Settings,
}

impl Kind {
    /// What a document of this kind may grant, when it cannot be read.
    pub(super) fn capabilities(self) -> &'static [Capability] {
        match self {
            Kind::Hooks | Kind::Monitors | Kind::Settings => &[Capability::Hooks],
            Kind::Mcp => &[Capability::McpStdio, Capability::McpRemote],
            Kind::Lsp => &[Capability::McpStdio],
        }
    }

    fn noun(self) -> &'static str {
        match self {
            Kind::Hooks => "hooks",
            Kind::Mcp => "MCP servers",
            Kind::Lsp => "LSP servers",
            Kind::Monitors => "monitors",
            Kind::Settings => "settings",
        }
    }
}

/// One document, read.
#[derive(Debug, Clone)]
pub(super) struct Document {
    pub(super) kind: Kind,
    /// The file, `FILE#field` for a manifest's inline value, or `its marketplace entry#field`.
    pub(super) source: String,
    pub(super) value: Value,
    /// Whether its servers are named `<source>#<name>` (a markdown file's front matter, a
    /// skill folder's `.mcp.json`) rather than by their own name.
    pub(super) keyed: bool,
}

/// Every manifest a harness may take: Claude Code reads `.claude-plugin/`, Codex the first
/// of `.codex-plugin/`, `.claude-plugin/`, `.cursor-plugin/` and an Agent Plugins root
/// `plugin.json`, the OpenHands SDK `.plugin/` before `.claude-plugin/`. All are read.
pub(super) const MANIFESTS: [&str; 5] = [
    ".claude-plugin/plugin.json",
    ".codex-plugin/plugin.json",
    ".cursor-plugin/plugin.json",
    ".plugin/plugin.json",
    "plugin.json",
];

/// The files harnesses read without a manifest naming them.
const CONVENTIONAL: [(&str, Kind); 7] = [
    ("hooks/hooks.json", Kind::Hooks),
    ("dev.openhands/hooks/hooks.json", Kind::Hooks),
    (".mcp.json", Kind::Mcp),
    ("mcp.json", Kind::Mcp),
    (".lsp.json", Kind::Lsp),
    ("monitors/monitors.json", Kind::Monitors),
    ("settings.json", Kind::Settings),
];

/// A manifest's component fields that hold documents.
const FIELDS: [(&str, Kind); 5] = [
    ("hooks", Kind::Hooks),
    ("mcpServers", Kind::Mcp),
    ("lspServers", Kind::Lsp),
    ("monitors", Kind::Monitors),
    ("settings", Kind::Settings),
];

/// Front-matter keys holding hooks or servers (the SDK's, Claude Code's and their aliases).
const FRONT_MATTER: [(&str, Kind); 7] = [
    ("hooks", Kind::Hooks),
    ("mcp_servers", Kind::Mcp),
    ("mcpServers", Kind::Mcp),
    ("mcp-servers", Kind::Mcp),
    ("mcp_config", Kind::Mcp),
    ("mcp_tools", Kind::Mcp),
    ("lspServers", Kind::Lsp),
];

struct Finder<'a> {
    root: &'a PluginRoot,
    runs: &'a mut Runs,
    found: Vec<Document>,
    /// The files already read as documents.
    seen: BTreeSet<String>,
}

/// Every document of the plugin at `root`, whose files and links are `files` (relative,
/// sorted), and its marketplace entry's `definition`. What cannot be read goes to
/// `runs.unmodeled`, what is merely odd to `runs.warnings`; declared binaries and
/// workflows to `runs`.
pub(super) fn find(
    root: &PluginRoot,
    definition: Option<&EntryDefinition>,
    files: &[&str],
    runs: &mut Runs,
) -> Result<Vec<Document>, RuntimeError> {
    let mut finder = Finder {
        root,
        runs,
        found: Vec::new(),
        seen: BTreeSet::new(),
    };
    for (file, kind) in CONVENTIONAL {
        finder.by_path(kind, file, false)?;
    }
    if root.exists(".app.json")? {
        finder.unmodeled(
            Capability::McpRemote,
            ".app.json",
            "Codex app connectors, reached by URL through their provider".to_owned(),
        );
    }
    for file in MANIFESTS {
        let Some(Value::Object(manifest)) = finder.read_json(file, &[Capability::Hooks])? else {
            continue;
        };
        finder.manifest(file, &manifest)?;
    }
    if let Some(definition) = definition {
        for (key, kind) in FIELDS {
            if let Some(value) = definition.components.get(key) {
                finder.field(kind, "its marketplace entry", key, value)?;
            }
        }
    }
    for file in files {
        finder.front_matter(file)?;
        let is_skill = file.rsplit('/').next() == Some("SKILL.md");
        if let Some((dir, _)) = file.rsplit_once('/').filter(|_| is_skill) {
            finder.by_path(Kind::Mcp, &format!("{dir}/.mcp.json"), true)?;
        }
    }
    Ok(finder.found)
}

impl Finder<'_> {
    fn unmodeled(&mut self, capability: Capability, source: &str, what: String) {
        self.runs.unmodeled.push(Unmodeled {
            capability,
            source: source.to_owned(),
            what,
        });
    }

    fn warn(&mut self, message: String) {
        self.runs
            .warnings
            .push(format!("plugin `{}`: {message}", self.root.plugin()));
    }

    /// The JSON at `rel`, `None` when there is no file. A file there that cannot be read
    /// (not JSON, not UTF-8, too large, a link leaving the plugin) counts as every one of
    /// `capabilities`.
    fn read_json(
        &mut self,
        rel: &str,
        capabilities: &[Capability],
    ) -> Result<Option<Value>, RuntimeError> {
        let why = match self.root.read_text(rel) {
            Ok(Some(text)) => match crate::json::parse_allowing_bom(&text) {
                Ok(value) => return Ok(Some(value)),
                Err(why) => why,
            },
            Ok(None) if !self.root.exists(rel)? || self.root.is_dir(rel)? => return Ok(None),
            Ok(None) => "it is a link leaving the plugin, or too large to read".to_owned(),
            Err(RuntimeError::NotUtf8 { .. }) => "it is not UTF-8 text".to_owned(),
            Err(e) => return Err(e),
        };
        for capability in capabilities {
            self.unmodeled(
                *capability,
                rel,
                format!("berth cannot read it ({why}), and a harness may"),
            );
        }
        Ok(None)
    }

    /// The document of `kind` at `rel`, once.
    fn by_path(&mut self, kind: Kind, rel: &str, keyed: bool) -> Result<(), RuntimeError> {
        if !self.seen.insert(rel.to_owned()) {
            return Ok(());
        }
        if let Some(value) = self.read_json(rel, kind.capabilities())? {
            self.found.push(Document {
                kind,
                source: rel.to_owned(),
                value,
                keyed,
            });
        }
        Ok(())
    }

    /// A manifest's component fields, its `experimental` ones, `binaries` and `workflows`.
    fn manifest(
        &mut self,
        file: &str,
        manifest: &serde_json::Map<String, Value>,
    ) -> Result<(), RuntimeError> {
        for (key, kind) in FIELDS {
            if let Some(value) = manifest.get(key) {
                self.field(kind, file, key, value)?;
            }
            if let Some(value) = manifest.get("experimental").and_then(|e| e.get(key)) {
                self.field(kind, &format!("{file}#experimental"), key, value)?;
            }
        }
        match manifest.get("binaries") {
            None | Some(Value::Null) => {}
            Some(Value::Object(binaries)) => {
                for (name, pin) in binaries {
                    let sha = pin.get("sha256").and_then(Value::as_str).unwrap_or("");
                    self.runs
                        .declared_binaries
                        .insert(format!("bin/{name}"), sha.to_owned());
                }
            }
            Some(_) => self.unmodeled(
                Capability::Executables,
                &format!("{file}#binaries"),
                "executables a harness fetches into `bin/`, in a form berth cannot read".to_owned(),
            ),
        }
        let workflows = match manifest.get("workflows") {
            Some(Value::String(path)) => vec![path.as_str()],
            Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        for path in workflows {
            match plugin_path(path) {
                Some(rel) => self.runs.workflows.push(rel),
                None => self.warn(format!(
                    "`{file}`: workflows `{path}` is not a path inside the plugin; no harness reads it"
                )),
            }
        }
        Ok(())
    }

    /// A component field: an inline document, a path to one, or a list of either.
    fn field(
        &mut self,
        kind: Kind,
        origin: &str,
        key: &str,
        value: &Value,
    ) -> Result<(), RuntimeError> {
        match value {
            Value::Null => {}
            Value::String(path) => self.named(kind, origin, key, path)?,
            // A monitors list is the document itself.
            Value::Array(_) if kind == Kind::Monitors => self.inline(kind, origin, key, value),
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    match item {
                        Value::String(path) => self.named(kind, origin, key, path)?,
                        Value::Object(_) => self.inline(kind, origin, &format!("{key}[{i}]"), item),
                        other => self.warn(format!(
                            "`{origin}`: `{key}` holds `{other}`, which is neither a path nor {}; no harness reads it",
                            kind.noun()
                        )),
                    }
                }
            }
            Value::Object(_) => self.inline(kind, origin, key, value),
            other => self.warn(format!(
                "`{origin}`: `{key}` is `{other}`, neither a path nor {}; no harness reads it",
                kind.noun()
            )),
        }
        Ok(())
    }

    fn inline(&mut self, kind: Kind, origin: &str, key: &str, value: &Value) {
        self.found.push(Document {
            kind,
            source: format!("{origin}#{key}"),
            value: value.clone(),
            keyed: false,
        });
    }

    /// A path a field names: a JSON file in the plugin, or an MCPB bundle (a file or URL).
    fn named(
        &mut self,
        kind: Kind,
        origin: &str,
        key: &str,
        path: &str,
    ) -> Result<(), RuntimeError> {
        let lower = path.to_ascii_lowercase();
        if kind == Kind::Mcp
            && (lower.ends_with(".mcpb") || lower.ends_with(".dxt") || lower.contains("://"))
        {
            self.unmodeled(
                Capability::McpStdio,
                &format!("{origin}#{key}"),
                format!("an MCP bundle `{path}`, whose servers berth cannot read"),
            );
            return Ok(());
        }
        match plugin_path(path) {
            Some(rel) => self.by_path(kind, &rel, false),
            None => {
                self.warn(format!(
                    "`{origin}`: {} file `{path}` is not a path inside the plugin; no harness reads it",
                    kind.noun()
                ));
                Ok(())
            }
        }
    }

    /// The hooks and servers in the front matter of the markdown file `rel`.
    fn front_matter(&mut self, rel: &str) -> Result<(), RuntimeError> {
        if !rel.to_ascii_lowercase().ends_with(".md") {
            return Ok(());
        }
        let text = match self.root.read_text(rel) {
            Ok(Some(text)) => text,
            Ok(None) => return Ok(()),
            Err(RuntimeError::NotUtf8 { .. }) => {
                let bytes = fs_err::read(self.root.path().join(rel))?;
                String::from_utf8_lossy(&bytes).into_owned()
            }
            Err(e) => return Err(e),
        };
        let Some(block) = front_matter_block(&text) else {
            return Ok(());
        };
        let lower = block.to_ascii_lowercase();
        if !["hooks", "mcp", "lsp"].iter().any(|k| lower.contains(k)) {
            return Ok(());
        }
        let meta = match crate::frontmatter::parse(&text) {
            Ok(document) => document.meta,
            Err(why) => {
                for capability in [Capability::Hooks, Capability::McpStdio] {
                    self.unmodeled(
                        capability,
                        rel,
                        format!(
                            "its front matter names hooks or servers and cannot be read ({why}); a harness may read it"
                        ),
                    );
                }
                return Ok(());
            }
        };
        for (key, kind) in FRONT_MATTER {
            if let Some(value) = meta.get(key).filter(|v| !v.is_null()) {
                self.found.push(Document {
                    kind,
                    source: rel.to_owned(),
                    value: value.clone(),
                    keyed: true,
                });
            }
        }
        Ok(())
    }
}

/// The front matter of a markdown text: between a first line of `---` and the next such
/// line (a byte-order mark and leading blank lines allowed), or a first line that opens a
/// JSON object.
fn front_matter_block(text: &str) -> Option<&str> {
    let text = text.trim_start_matches('\u{feff}').trim_start();
    if text.starts_with('{') {
        return Some(text);
    }
    let rest = text.strip_prefix("---")?;
    let end = rest.find("\n---").unwrap_or(rest.len());
    Some(&rest[..end])
}
