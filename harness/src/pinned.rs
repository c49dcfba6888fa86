//! A plugin whose runner lines the lock pins (`npx -y pkg@^1` rewritten to start the
//! stored closure), in a harness that reads the plugin's own folder (Claude Code, Codex):
//! the folder as its store entry, but with `.claude-plugin/plugin.json` naming the set's
//! MCP servers (and, when a hook or an LSP server is pinned, its hooks or LSP servers)
//! inline, rewritten, and the files whose definitions they replace (`.mcp.json`,
//! `hooks/hooks.json`, `.lsp.json`) left out.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use berth_lockfile_schema::plugin_manifest::Format;
use berth_lockfile_schema::runner::PayloadUse;
use serde_json::{Map, Value, json};

use super::files::{pretty, stdio_fields};
use super::plan::Planned;
use berth_plugin::error::PluginError;
use berth_plugin::hooks::pascal_case;
use berth_plugin::model::JsonFile;
use berth_runtime::set::{PluginInfo, PluginSet};

const MANIFEST: &str = ".claude-plugin/plugin.json";

/// What differs from the store entry: files written, and paths left out. (A server another
/// plugin overrides in the set is not among the inline ones: the set runs the other.)
#[derive(Debug, Clone, Default)]
pub(super) struct Overlay {
    /// Paths (relative to the plugin) written with these bytes.
    pub files: BTreeMap<PathBuf, Vec<u8>>,
    /// Paths of the entry left out.
    pub hidden: Vec<PathBuf>,
}

/// A server as Claude Code's `mcpServers` holds it.
fn claude_server(server: &berth_plugin::mcp::McpServer) -> Value {
    let mut out = Map::new();
    if server.transport == "stdio" {
        stdio_fields(server, &mut out);
    } else {
        out.insert("type".into(), json!(server.transport));
        out.insert("url".into(), json!(server.url));
        if !server.headers.is_empty() {
            out.insert("headers".into(), Value::Object(server.headers.clone()));
        }
    }
    Value::Object(out)
}

/// The overlay of `info` when the set starts any of its MCP servers or hooks from a
/// pinned payload; `None` when the store entry can be used as it is.
pub(super) fn overlay(set: &PluginSet, info: &PluginInfo) -> Result<Option<Overlay>, PluginError> {
    let name = info.locked.name.as_str();
    let pinned: Vec<_> = set.payloads.iter().filter(|p| p.plugin == name).collect();
    if pinned.is_empty() || info.manifest.format != Format::ClaudeCode {
        return Ok(None);
    }
    let model = info.model.as_deref();
    let mut manifest = match model.and_then(|m| m.found(MANIFEST)).and(model) {
        // What the set read of it (a manifest that is not a JSON object counts as empty).
        Some(model) => match model.json(MANIFEST) {
            Some(JsonFile::Text {
                value: Ok(Value::Object(map)),
                ..
            }) => map.clone(),
            _ => Map::new(),
        },
        // The set took another manifest (`.plugin/plugin.json`) and never read this one,
        // or was built without its models.
        None => match std::fs::read(info.path.join(MANIFEST)) {
            Ok(bytes) => match serde_json::from_slice(&bytes) {
                Ok(Value::Object(map)) => map,
                _ => Map::new(),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Map::new(),
            Err(e) => return Err(e.into()),
        },
    };
    manifest
        .entry("name")
        .or_insert_with(|| json!(info.locked.name));
    let mut overlay = Overlay::default();
    let servers: Map<String, Value> = set
        .mcp_servers
        .iter()
        .filter(|(_, _, p)| p == name)
        .map(|(n, s, _)| (n.clone(), claude_server(s)))
        .collect();
    manifest.insert("mcpServers".into(), Value::Object(servers));
    overlay.hidden.push(PathBuf::from(".mcp.json"));
    if pinned.iter().any(|p| p.used_by == PayloadUse::Hook) {
        let mut hooks = Map::new();
        for (event, matchers) in &set.hooks {
            let mine: Vec<Value> = matchers
                .iter()
                .filter(|(_, p)| p == name)
                .map(|(m, _)| {
                    let hooks: Vec<Value> = m
                        .hooks
                        .iter()
                        .map(|h| match h.kind.as_str() {
                            "command" => json!({"type": "command", "command": h.command, "timeout": h.timeout}),
                            _ => json!({"type": h.kind, "prompt": h.prompt}),
                        })
                        .collect();
                    json!({"matcher": m.matcher, "hooks": hooks})
                })
                .collect();
            if !mine.is_empty() {
                hooks.insert(pascal_case(event), Value::Array(mine));
            }
        }
        manifest.insert("hooks".into(), Value::Object(hooks));
        overlay.hidden.push(PathBuf::from("hooks/hooks.json"));
    }
    if pinned.iter().any(|p| p.used_by == PayloadUse::LspServer) {
        let servers: Map<String, Value> = set
            .lsp_servers
            .iter()
            .filter(|(_, _, p)| p == name)
            .map(|(n, s, _)| (n.clone(), s.clone()))
            .collect();
        manifest.insert("lspServers".into(), Value::Object(servers));
        overlay.hidden.push(PathBuf::from(".lsp.json"));
    }
    overlay
        .files
        .insert(PathBuf::from(MANIFEST), pretty(&Value::Object(manifest)));
    Ok(Some(overlay))
}

/// The plugin folder as links into `entry` where nothing differs and real folders on the
/// way to what `overlay` writes or leaves out; paths relative to the plugin.
pub(super) fn linked(entry: &Path, overlay: &Overlay) -> std::io::Result<Vec<(PathBuf, Planned)>> {
    fn walk(
        entry: &Path,
        rel: &Path,
        overlay: &Overlay,
        out: &mut Vec<(PathBuf, Planned)>,
    ) -> std::io::Result<()> {
        let mut children: Vec<_> = std::fs::read_dir(entry.join(rel))?
            .map(|e| e.map(|e| rel.join(e.file_name())))
            .collect::<Result<_, _>>()?;
        children.sort();
        for child in children {
            let touched = overlay
                .files
                .keys()
                .chain(&overlay.hidden)
                .any(|p| p.starts_with(&child));
            if overlay.hidden.contains(&child) || overlay.files.contains_key(&child) {
                continue;
            }
            if touched && std::fs::symlink_metadata(entry.join(&child))?.is_dir() {
                walk(entry, &child, overlay, out)?;
            } else {
                out.push((child.clone(), Planned::Link(entry.join(&child))));
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(entry, Path::new(""), overlay, &mut out)?;
    out.extend(
        overlay
            .files
            .iter()
            .map(|(p, bytes)| (p.clone(), Planned::File(bytes.clone()))),
    );
    Ok(out)
}

/// A folder an earlier run wrote, as it is now: links kept as links, files as their bytes
/// (an install of another project, kept unchanged).
pub(super) fn as_it_is(dir: &Path) -> std::io::Result<Vec<(PathBuf, Planned)>> {
    fn walk(dir: &Path, rel: &Path, out: &mut Vec<(PathBuf, Planned)>) -> std::io::Result<()> {
        for entry in std::fs::read_dir(dir.join(rel))? {
            let entry = entry?;
            let child = rel.join(entry.file_name());
            let kind = entry.file_type()?;
            if kind.is_symlink() {
                out.push((child, Planned::Link(std::fs::read_link(entry.path())?)));
            } else if kind.is_dir() {
                walk(dir, &child, out)?;
            } else {
                out.push((child, Planned::File(std::fs::read(entry.path())?)));
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(dir, Path::new(""), &mut out)?;
    Ok(out)
}
