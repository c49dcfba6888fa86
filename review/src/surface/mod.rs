//! A plugin's capability surface: what it can run (hooks, MCP and LSP servers, executables,
//! every file that is not prose) and what it tells the agent (skills, commands, agents).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::prose::{is_prose, running_parts, shell_spans};
use super::sources::named_paths;
use super::walk::{FileEntry, FolderDigest, files_and_links, sha256_hex};
use berth_plugin::components::{Components, load_components};
use berth_plugin::error::PluginError;
use berth_plugin::model::{PluginModel, Reader};
use berth_plugin::root::PluginRoot;
use berth_plugin::runs::runs_of;
use links::Links;

mod links;

pub use super::shape::{
    Component, DATA_PLACEHOLDER, HookEntry, McpEntry, ROOT_PLACEHOLDER, Surface,
};

/// The surface of plugin `plugin` stored at `entry`: what any harness berth supports would
/// run ([`berth_plugin::runs`]: every manifest, hooks file, server file, the marketplace entry's
/// `definition` and markdown front matter, read leniently, what cannot be modelled counted
/// as its capability), every file that is not prose, and the skills, commands and agents
/// as the runtime loads them, all from one reading of the plugin ([`berth_plugin::model`]). Paths
/// read `${CLAUDE_PLUGIN_ROOT}`, whatever the store's path.
///
/// A `SKILL.md` skill's digest covers every regular file of its folder (the whole plugin
/// for a root `SKILL.md`): SHA-256 over each file's relative path, a NUL, its length in
/// decimal, a NUL and its bytes, in path order. Symlinks are listed, never followed.
pub fn surface_of(
    plugin: &str,
    entry: &Path,
    definition: Option<&berth_lockfile_schema::EntryDefinition>,
) -> Result<Surface, PluginError> {
    surface_from(plugin, entry, definition, PluginModel::default())
}

/// As [`surface_of`], from `model`, what was read of the entry before (the model a plugin
/// set kept): only what was not is read now.
pub fn surface_from(
    plugin: &str,
    entry: &Path,
    definition: Option<&berth_lockfile_schema::EntryDefinition>,
    mut model: PluginModel,
) -> Result<Surface, PluginError> {
    let root = PluginRoot::new(plugin, entry)?.exposed_at(PathBuf::from(ROOT_PLACEHOLDER));
    let mut reader = Reader::new(&root, definition, &mut model);
    let (manifest, mut warnings) = reader.manifest()?;
    let components = load_components(
        &mut reader,
        &manifest,
        Path::new(DATA_PLACEHOLDER),
        &mut warnings,
        &|| Ok(()),
    )?;
    let all = files_and_links(root.path())?;
    let rels: Vec<&str> = all.iter().map(|f| f.rel.as_str()).collect();
    let runs = runs_of(&mut reader, &rels)?;
    warnings.extend(runs.warnings);
    warnings.extend(root.take_skipped());
    let mut surface = Surface {
        hooks: runs.hooks,
        mcp_servers: runs.mcp_servers,
        lsp_servers: runs.lsp_servers,
        unmodeled: runs.unmodeled,
        definition: definition.map(|d| {
            let value = serde_json::json!({"strict": d.strict, "components": d.components});
            berth_lockfile_schema::canonical_json(&value).to_string()
        }),
        ..Surface::default()
    };
    let skill_dirs: BTreeSet<&str> = components
        .skills
        .iter()
        .filter(|s| s.kind == "agentskills")
        .map(|s| s.source.rsplit_once('/').map_or("", |(dir, _)| dir))
        .collect();
    let digests = add_files(&mut surface, &all, &runs.workflows, &skill_dirs)?;
    for (path, sha) in runs.declared_binaries {
        surface
            .executables
            .entry(path)
            .or_insert_with(|| format!("declared sha256:{sha}"));
    }
    let texts = Texts {
        root: &root,
        model: &model,
        digests,
    };
    add_components(&mut surface, &components, &texts)?;
    surface.warnings = warnings;
    Ok(surface)
}

/// Every file and link of the plugin recorded in the surface ([`add_file`]); the digest of
/// each regular file, and of each skill folder in `skill_dirs`.
fn add_files(
    surface: &mut Surface,
    all: &[FileEntry],
    workflows: &[String],
    skill_dirs: &BTreeSet<&str>,
) -> Result<Digests, PluginError> {
    let named = named_by_commands(surface, all);
    let mut folders: BTreeMap<&str, FolderDigest> = skill_dirs
        .iter()
        .map(|dir| (*dir, FolderDigest::new(dir)))
        .collect();
    let mut files = BTreeMap::new();
    let links = Links::of(all);
    for file in all {
        let Some(bytes) = add_file(surface, file, &named, workflows, &links)? else {
            continue;
        };
        for (dir, folder) in &mut folders {
            if dir.is_empty()
                || file
                    .rel
                    .strip_prefix(*dir)
                    .is_some_and(|r| r.starts_with('/'))
            {
                folder.add(&file.rel, &bytes);
            }
        }
        files.insert(file.rel.clone(), sha256_hex(&bytes));
    }
    let folders = folders
        .into_iter()
        .map(|(dir, folder)| (dir.to_owned(), folder.finish()))
        .collect();
    Ok(Digests { files, folders })
}

/// The digests of a plugin's regular files and skill folders, by path.
struct Digests {
    files: BTreeMap<String, String>,
    folders: BTreeMap<String, String>,
}

/// What the surface takes of a skill's, command's or agent's file: what was read of it
/// before, or (a link, which the walk does not follow) the file itself.
struct Texts<'a> {
    root: &'a PluginRoot,
    model: &'a PluginModel,
    digests: Digests,
}

impl Texts<'_> {
    /// The digest of the file `rel`, the shell lines its text runs, and, when the text
    /// starts with a byte-order mark (which hides its front matter from the set's
    /// readers, not from Claude Code's), its front matter as Claude Code reads it.
    fn file(&self, rel: &str) -> Result<TextRead, PluginError> {
        if let (Some(digest), Some(text)) = (self.digests.files.get(rel), self.model.markdown(rel))
        {
            return Ok(TextRead::of(digest.clone(), text.lossy()));
        }
        let bytes = fs_err::read(self.root.path().join(rel))?;
        Ok(TextRead::of(
            sha256_hex(&bytes),
            &String::from_utf8_lossy(&bytes),
        ))
    }
}

/// What the surface takes of one component's file.
struct TextRead {
    digest: String,
    shell: Vec<String>,
    /// The front matter Claude Code reads behind a byte-order mark.
    behind_mark: Option<serde_json::Map<String, Value>>,
}

impl TextRead {
    fn of(digest: String, text: &str) -> Self {
        let behind_mark = text
            .starts_with('\u{feff}')
            .then(|| berth_plugin::frontmatter::parse_lenient(text).ok())
            .flatten()
            .map(|document| document.meta);
        Self {
            digest,
            shell: shell_spans(text),
            behind_mark,
        }
    }

    /// The tools the first of `keys` lists behind a byte-order mark (a string split at
    /// commas and blanks, or a list), when there is a mark; else `tools` as read.
    fn tools(&self, keys: &[&str], tools: Option<Vec<String>>) -> Option<Vec<String>> {
        let Some(meta) = &self.behind_mark else {
            return tools;
        };
        let value = keys.iter().find_map(|k| meta.get(*k))?;
        Some(match value {
            Value::String(s) => s
                .split([',', ' '])
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(str::to_owned)
                .collect(),
            Value::Array(items) => items
                .iter()
                .map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_owned))
                .collect(),
            other => vec![other.to_string()],
        })
    }
}

/// The skills, commands and agents of `components` in the surface.
fn add_components(
    surface: &mut Surface,
    components: &Components,
    texts: &Texts<'_>,
) -> Result<(), PluginError> {
    let listed = |tools: &[String]| (!tools.is_empty()).then(|| tools.to_vec());
    const ALLOWED: [&str; 2] = ["allowed-tools", "allowed_tools"];
    for skill in &components.skills {
        let read = texts.file(&skill.source)?;
        let digest = if skill.kind == "agentskills" {
            let dir = skill.source.rsplit_once('/').map_or("", |(dir, _)| dir);
            texts.digests.folders[dir].clone()
        } else {
            read.digest.clone()
        };
        let component = Component {
            digest,
            tools: read.tools(&ALLOWED, skill.allowed_tools.clone()),
            shell: read.shell,
        };
        surface
            .skills
            .entry(skill.name.clone())
            .or_insert(component);
    }
    for command in &components.commands {
        let read = texts.file(&command.source)?;
        let component = Component {
            tools: read.tools(&ALLOWED, listed(&command.allowed_tools)),
            digest: read.digest,
            shell: read.shell,
        };
        surface.commands.insert(command.name.clone(), component);
    }
    for agent in &components.agents {
        // The runtime keeps the first sub-agent of a name.
        if !surface.agents.contains_key(&agent.name) {
            let read = texts.file(&agent.source)?;
            let component = Component {
                tools: read.tools(&["tools"], listed(&agent.tools)),
                digest: read.digest,
                shell: read.shell,
            };
            surface.agents.insert(agent.name.clone(), component);
        }
    }
    Ok(())
}

/// The regular files a hook, an MCP server or an LSP server names in its command,
/// arguments or working folder.
fn named_by_commands(surface: &Surface, all: &[FileEntry]) -> BTreeSet<String> {
    let present: BTreeSet<&str> = all
        .iter()
        .filter(|f| f.link.is_none())
        .map(|f| f.rel.as_str())
        .collect();
    let mut named = BTreeSet::new();
    for hook in &surface.hooks {
        for text in std::iter::once(&hook.command).chain(&hook.args) {
            named_paths(text, &present, &mut named);
        }
    }
    for server in surface.mcp_servers.values() {
        for text in server.command.iter().chain(&server.args) {
            named_paths(text, &present, &mut named);
        }
    }
    for server in surface.lsp_servers.values() {
        let args = server.shown.get("args").and_then(Value::as_array);
        let texts = server
            .shown
            .get("command")
            .into_iter()
            .chain(args.into_iter().flatten());
        for text in texts.filter_map(Value::as_str) {
            named_paths(text, &present, &mut named);
        }
    }
    named
}

/// Records `file` in the surface: in `files` unless it is prose (a prose file's running
/// parts in `prose_runs`, its digest in `prose`), in `named_files` when a command names
/// it, in `executables` when it is executable, under `bin/` or a workflow; a link with its
/// target and, when that is a file of the plugin, the target's digest. Returns a regular
/// file's bytes.
fn add_file(
    surface: &mut Surface,
    file: &FileEntry,
    named: &BTreeSet<String>,
    workflows: &[String],
    links: &Links<'_>,
) -> Result<Option<Vec<u8>>, PluginError> {
    let in_workflows = std::iter::once("workflows")
        .chain(workflows.iter().map(String::as_str))
        .any(|w| file.rel == w || file.rel.strip_prefix(w).is_some_and(|r| r.starts_with('/')));
    let runs = file.executable || file.rel.starts_with("bin/") || in_workflows;
    if let Some(target) = &file.link {
        let shown = match links.content(&file.rel)? {
            Some(digest) => format!("-> {target} {digest}"),
            None => format!("-> {target}"),
        };
        if runs {
            surface.executables.insert(file.rel.clone(), shown.clone());
        }
        surface.files.insert(file.rel.clone(), shown);
        return Ok(None);
    }
    let bytes = file.read()?;
    let digest = sha256_hex(&bytes);
    if named.contains(&file.rel) {
        surface.named_files.insert(file.rel.clone(), digest.clone());
    }
    if runs {
        surface.executables.insert(file.rel.clone(), digest.clone());
    }
    if is_prose(&file.rel) {
        surface.prose.insert(file.rel.clone(), digest.clone());
    }
    if is_prose(&file.rel) && !named.contains(&file.rel) {
        let parts = running_parts(&String::from_utf8_lossy(&bytes));
        if !parts.is_empty() {
            surface.prose_runs.insert(file.rel.clone(), parts);
        }
    } else {
        let mark = if file.executable { " +x" } else { "" };
        surface
            .files
            .insert(file.rel.clone(), format!("{digest}{mark}"));
    }
    Ok(Some(bytes))
}

#[cfg(test)]
mod tests;
