//! The merged plugin set of docs/spec.md section 5: built from a lock and the store alone.

use std::path::{Path, PathBuf};

use berth_lockfile_schema::{GitPin, Lock, LockedPlugin, Pin};
use berth_store::Store;
use serde_json::{Map, Value, json};

use crate::agents::Agent;
use crate::components::Components;
use crate::error::RuntimeError;
use crate::hooks::{EVENTS, HookMatcher, matchers_to_json};
use crate::loading::{Job, Loaded, load_all};
use crate::manifest::PluginManifest;
use crate::mcp::McpServer;
use crate::skills::Skill;

/// Where plugins' writable data folders (`${PLUGIN_DATA}`) live, under the store root.
pub const PLUGIN_DATA_DIR: &str = "plugin-data-v1";

/// How to build the set.
#[derive(Debug, Clone)]
pub struct BuildOptions {
    /// At most this many skills (distinct names, commands included); `None`: no limit.
    pub max_skills: Option<usize>,
    /// Raised when the caller gives up (a server's request deadline, or its shutdown):
    /// the build stops at the next plugin or component with [`RuntimeError::Cancelled`].
    pub cancel: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// Leave MCP servers' runner lines (`npx -y pkg`) as the plugins wrote them, rather
    /// than starting the lock's pinned payloads, and make no view (what `lock` reads to
    /// pin them; nothing runs from this set).
    pub raw_commands: bool,
}

impl Default for BuildOptions {
    fn default() -> Self {
        Self {
            max_skills: Some(100),
            cancel: None,
            raw_commands: false,
        }
    }
}

/// A plugin of the set, as locked and as found in the store.
#[derive(Debug, Clone)]
pub struct PluginInfo {
    /// The lock entry.
    pub locked: LockedPlugin,
    /// Its manifest (or defaults).
    pub manifest: PluginManifest,
    /// Its store entry.
    pub path: PathBuf,
    /// Where hooks, MCP servers and commands see it: a link named after the plugin, in the
    /// set's view, that leads to `path` (`path` itself if the view could not be made).
    pub root: PathBuf,
    /// Its writable data folder.
    pub data_dir: PathBuf,
}

/// The merged plugin set.
#[derive(Debug, Clone)]
pub struct PluginSet {
    /// The plugins, in lock order.
    pub plugins: Vec<PluginInfo>,
    /// Skills by name: the last definition, at the first one's position; with its plugin.
    pub skills: Vec<(Skill, String)>,
    /// MCP servers by name, merged the same way; with their plugin.
    pub mcp_servers: Vec<(String, McpServer, String)>,
    /// Hook matchers per event, concatenated in plugin order; with their plugin.
    pub hooks: Vec<(&'static str, Vec<(HookMatcher, String)>)>,
    /// Sub-agents: the first definition of a name wins; with their plugin.
    pub agents: Vec<(Agent, String)>,
    /// LSP servers by name (`lspServers`, `.lsp.json`), merged like MCP servers, with
    /// plugin-root variables filled in; with their plugin.
    pub lsp_servers: Vec<(String, Value, String)>,
    /// What was dropped or overridden, naming plugin, file and entry.
    pub warnings: Vec<String>,
    /// The lock's pinned packages of runner lines, whose closures the MCP servers and
    /// hooks above start (empty when built with `raw_commands`).
    pub payloads: Vec<berth_lockfile_schema::LockedPayload>,
}

/// Builds the plugin set of `lock` from `store` alone: no network, no manifest, no source
/// folders. Every locked plugin must be in the store, unchanged since it was added.
pub fn build_plugin_set(
    store: &Store,
    lock: &Lock,
    options: &BuildOptions,
) -> Result<PluginSet, RuntimeError> {
    let mut set = PluginSet {
        plugins: Vec::new(),
        skills: Vec::new(),
        mcp_servers: Vec::new(),
        hooks: EVENTS.iter().map(|e| (*e, Vec::new())).collect(),
        agents: Vec::new(),
        lsp_servers: Vec::new(),
        warnings: Vec::new(),
        payloads: Vec::new(),
    };
    // Each entry is checked against its stat record, never trusted for being present: a
    // changed entry is refused here, naming it (the runtime is offline and repairs nothing;
    // `sync` does).
    let wanted: Vec<_> = lock
        .plugins
        .iter()
        .map(|p| (&p.hash, p.name.as_str()))
        .collect();
    let mut entries = Vec::with_capacity(lock.plugins.len());
    let mut trees = Vec::with_capacity(lock.plugins.len());
    for (locked, found) in lock
        .plugins
        .iter()
        .zip(store.checked_lookup_all_with_trees(&wanted))
    {
        let Some((entry, tree)) = found? else {
            return Err(RuntimeError::NotSynced {
                plugin: locked.name.clone(),
                path: store.entry_path(&locked.hash, &locked.name),
            });
        };
        entries.push(entry.path);
        trees.push(tree);
    }
    let named: Vec<(&str, &Path)> = lock
        .plugins
        .iter()
        .zip(&entries)
        .map(|(l, e)| (l.name.as_str(), e.as_path()))
        .collect();
    // Reading what a lock would run (`raw_commands`) needs no view: nothing runs from it.
    let view = (!options.raw_commands).then(|| store.plugin_view(&named));
    let roots = match view {
        None => entries.clone(),
        Some(Ok(view)) => view.paths,
        Some(Err(e)) => {
            set.warnings.push(format!(
                "could not make the plugin view in `{}` ({e}); plugins see their store paths, which do not end in their names",
                store.root().join(berth_store::VIEWS_DIR).display()
            ));
            entries.clone()
        }
    };
    let mut folders = CanonicalFolders::default();
    let mut jobs = Vec::with_capacity(lock.plugins.len());
    for (((locked, entry), exposed), tree) in
        lock.plugins.iter().zip(&entries).zip(roots).zip(trees)
    {
        jobs.push(Job {
            locked,
            path: folders.canonical(entry)?,
            tree,
            exposed,
            data_dir: plugin_data_dir(store, locked),
        });
    }
    let cancelled = || {
        options
            .cancel
            .as_ref()
            .is_some_and(|flag| flag.load(std::sync::atomic::Ordering::SeqCst))
    };
    let loaded = load_all(&jobs, &cancelled);
    for ((job, entry), loaded) in jobs.into_iter().zip(entries).zip(loaded) {
        let Loaded {
            manifest,
            components:
                Components {
                    skills,
                    commands,
                    hooks,
                    servers,
                    agents,
                    lsp,
                },
            mut warnings,
        } = loaded?;
        let locked = job.locked;
        let name = locked.name.as_str();
        set.warnings.append(&mut warnings);

        for skill in skills
            .into_iter()
            .chain(commands.iter().map(|c| c.to_skill(name)))
        {
            match set.skills.iter_mut().find(|(s, _)| s.name == skill.name) {
                Some(slot) => {
                    set.warnings.push(format!(
                        "plugin `{name}`: skill `{}` overrides the one from plugin `{}`",
                        skill.name, slot.1
                    ));
                    *slot = (skill, name.to_owned());
                }
                None => set.skills.push((skill, name.to_owned())),
            }
        }
        if let Some(max) = options.max_skills
            && set.skills.len() > max
        {
            return Err(RuntimeError::TooManySkills {
                message: format!(
                    "Total skills ({}) exceeds maximum ({max}): plugin `{name}` brings the set over the limit; raise it with `--max-skills`",
                    set.skills.len()
                ),
            });
        }
        for (server_name, server) in servers {
            match set
                .mcp_servers
                .iter_mut()
                .find(|(n, _, _)| *n == server_name)
            {
                Some(slot) => {
                    set.warnings.push(format!(
                        "plugin `{name}`: MCP server `{server_name}` overrides the one from plugin `{}`",
                        slot.2
                    ));
                    slot.1 = server;
                    slot.2 = name.to_owned();
                }
                None => set.mcp_servers.push((server_name, server, name.to_owned())),
            }
        }
        for (event, matchers) in hooks {
            let slot = set
                .hooks
                .iter_mut()
                .find(|(e, _)| *e == event)
                .expect("every event has a slot");
            slot.1
                .extend(matchers.into_iter().map(|m| (m, name.to_owned())));
        }
        for (server_name, server) in lsp {
            match set
                .lsp_servers
                .iter_mut()
                .find(|(n, _, _)| *n == server_name)
            {
                Some(slot) => {
                    set.warnings.push(format!(
                        "plugin `{name}`: LSP server `{server_name}` overrides the one from plugin `{}`",
                        slot.2
                    ));
                    slot.1 = server;
                    slot.2 = name.to_owned();
                }
                None => set.lsp_servers.push((server_name, server, name.to_owned())),
            }
        }
        for agent in agents {
            match set.agents.iter().find(|(a, _)| a.name == agent.name) {
                Some((_, first)) => set.warnings.push(format!(
                    "plugin `{name}`: agent `{}` is already defined by plugin `{first}`; the first definition is kept",
                    agent.name
                )),
                None => set.agents.push((agent, name.to_owned())),
            }
        }
        set.plugins.push(PluginInfo {
            locked: locked.clone(),
            manifest,
            path: entry,
            root: job.exposed,
            data_dir: job.data_dir,
        });
    }
    if !options.raw_commands {
        crate::payloads::rewrite(
            store,
            lock,
            &mut set.mcp_servers,
            &mut set.hooks,
            &mut set.lsp_servers,
        )?;
        set.payloads = lock.payloads.clone();
    }
    Ok(set)
}

/// The writable data folder of a locked plugin (`${PLUGIN_DATA}`), outside the read-only
/// store: `<store>/plugin-data-v1/<name>-<first 16 hex digits of sha256(source)>`. One per
/// plugin (its name and its source as locked), not per store entry, so an update of the
/// plugin finds the data its earlier version kept, as the OpenHands SDK keys its
/// `~/.openhands/plugin-data/<name>-<hash>` by plugin too.
pub fn plugin_data_dir(store: &Store, locked: &LockedPlugin) -> PathBuf {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(locked.source.as_bytes());
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    store
        .root()
        .join(PLUGIN_DATA_DIR)
        .join(format!("{}-{hex}", locked.name))
}

impl PluginSet {
    /// The set as the JSON document of docs/spec.md section 5, in a fixed order: the same lock and
    /// store give the same bytes.
    pub fn to_json_value(&self) -> Value {
        let plugins: Vec<Value> = self
            .plugins
            .iter()
            .map(|p| {
                let rev = match &p.locked.pin {
                    Pin::Git(GitPin { rev, .. }) => Some(rev.to_string()),
                    _ => None,
                };
                json!({
                    "name": p.locked.name,
                    "version": p.manifest.version,
                    "description": p.manifest.description,
                    "source": p.locked.source,
                    "rev": rev,
                    "hash": p.locked.hash.to_sri(),
                    "path": p.path.to_string_lossy(),
                    "root": p.root.to_string_lossy(),
                    "format": p.manifest.format.as_str(),
                    "entry_command": p.manifest.entry_command.as_ref().map(|c| format!("/{}:{c}", p.locked.name)),
                })
            })
            .collect();
        let skills: Vec<Value> = self
            .skills
            .iter()
            .map(|(s, plugin)| {
                json!({
                    "name": s.name,
                    "description": s.description,
                    "content": s.content,
                    "triggers": s.triggers,
                    "plugin": plugin,
                    "trigger": s.trigger.as_str(),
                    "type": s.kind,
                    "paths": s.paths,
                    "inputs": s.inputs,
                    "allowed_tools": s.allowed_tools,
                    "license": s.license,
                    "compatibility": s.compatibility,
                    "metadata": s.metadata,
                    "disable_model_invocation": s.disable_model_invocation,
                    "source": s.source,
                    "mcp_tools": s.mcp_tools,
                    "resources": s.resources,
                })
            })
            .collect();
        let mut servers = Map::new();
        for (name, s, plugin) in &self.mcp_servers {
            let mut server = s.to_json();
            server["plugin"] = Value::String(plugin.clone());
            servers.insert(name.clone(), server);
        }
        let mut hooks = Map::new();
        for (event, matchers) in &self.hooks {
            hooks.insert(
                (*event).to_owned(),
                matchers_to_json(matchers.iter().map(|(m, p)| (m, Some(p.as_str())))),
            );
        }
        let agents: Vec<Value> = self
            .agents
            .iter()
            .map(|(a, plugin)| {
                let mut agent = a.to_json();
                agent["plugin"] = Value::String(plugin.clone());
                agent
            })
            .collect();
        let mut lsp = Map::new();
        for (name, server, plugin) in &self.lsp_servers {
            let mut server = server.clone();
            if let Value::Object(map) = &mut server {
                map.insert("plugin".to_owned(), Value::String(plugin.clone()));
            }
            lsp.insert(name.clone(), server);
        }
        json!({
            "plugins": plugins,
            "skills": skills,
            "mcp_servers": servers,
            "hooks": hooks,
            "agents": agents,
            "lsp_servers": lsp,
            "warnings": self.warnings,
        })
    }

    /// The JSON text: two-space indented, one trailing newline.
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(&self.to_json_value())
            .expect("a plugin set always serialises");
        text.push('\n');
        text
    }

    /// Where each plugin is seen (its link in the set's view, ending in its name), in
    /// lock order.
    pub fn plugin_roots(&self) -> Vec<&Path> {
        self.plugins.iter().map(|p| p.root.as_path()).collect()
    }
}

/// Store entries made canonical with one `canonicalize` of the folder they share, instead
/// of one per entry (each resolves every component of the store's path again).
#[derive(Default)]
struct CanonicalFolders {
    known: Vec<(PathBuf, PathBuf)>,
}

impl CanonicalFolders {
    fn canonical(&mut self, entry: &Path) -> Result<PathBuf, RuntimeError> {
        let (Some(parent), Some(name)) = (entry.parent(), entry.file_name()) else {
            return Ok(fs_err::canonicalize(entry)?);
        };
        // An entry that is itself a link is resolved the long way.
        if fs_err::symlink_metadata(entry)?.file_type().is_symlink() {
            return Ok(fs_err::canonicalize(entry)?);
        }
        if let Some((_, real)) = self.known.iter().find(|(p, _)| p == parent) {
            return Ok(real.join(name));
        }
        let real = fs_err::canonicalize(parent)?;
        self.known.push((parent.to_path_buf(), real.clone()));
        Ok(real.join(name))
    }
}
