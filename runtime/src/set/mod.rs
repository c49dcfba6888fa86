//! The merged plugin set of docs/spec.md section 5: built from a lock and the store alone.
//! `merge.rs` adds each plugin's components in lock order; `json.rs` writes the document.

mod json;
mod merge;
pub use merge::OVERRIDES;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use berth_lockfile_schema::{Lock, LockedPlugin};
use berth_store::{EntryTree, Store};
use serde_json::Value;

use crate::loading::{Job, load_all};
use berth_plugin::agents::Agent;
use berth_plugin::error::PluginError;
use berth_plugin::hooks::{EVENTS, HookMatcher};
use berth_plugin::manifest::PluginManifest;
use berth_plugin::mcp::McpServer;
use berth_plugin::model::PluginModel;
use berth_plugin::skills::Skill;

/// Where plugins' writable data folders (`${PLUGIN_DATA}`) live, under the store root.
pub const PLUGIN_DATA_DIR: &str = "plugin-data-v1";

/// How to build the set.
#[derive(Debug, Clone)]
pub struct BuildOptions {
    /// At most this many skills (distinct names, commands included); `None`: no limit.
    pub max_skills: Option<usize>,
    /// Raised when the caller gives up (a server's request deadline, or its shutdown):
    /// the build stops at the next plugin or component with [`PluginError::Cancelled`].
    pub cancel: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// Leave MCP servers' runner lines (`npx -y pkg`) as the plugins wrote them, rather
    /// than starting the lock's pinned payloads, and make no view (what `lock` reads to
    /// pin them; nothing runs from this set).
    pub raw_commands: bool,
    /// Keep what was read of each plugin ([`PluginInfo::model`]) for what reads it after
    /// the set: a review, the runs beyond the set, a harness target. Without it, each
    /// plugin's model is dropped on the thread that read it, as soon as the set has its
    /// components, and a later reading reads the plugin again.
    pub keep_models: bool,
    /// Make no view: plugins are seen at their store entries. What observing MCP servers
    /// builds, so a server's command line names its own plugin's entry, the same whatever
    /// else the set holds.
    pub no_view: bool,
}

impl Default for BuildOptions {
    fn default() -> Self {
        Self {
            max_skills: Some(100),
            cancel: None,
            raw_commands: false,
            keep_models: false,
            no_view: false,
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
    /// What was read of it, when the set was built to keep it
    /// ([`BuildOptions::keep_models`]): what a harness target, or a reading wider than the
    /// set's, takes without reading the plugin again.
    pub model: Option<Arc<PluginModel>>,
    /// Its entry's paths as the store's check found them on disk while the set was built
    /// (`None` when the store had no stat record to check them by).
    pub tree: Option<Arc<EntryTree>>,
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
    /// The plugins that lost a skill or an MCP server to a later plugin's of the same
    /// name (what a harness that keeps plugins apart reads again of them, and only of
    /// them).
    pub overridden: Vec<String>,
    /// The lock's pinned packages of runner lines, whose closures the MCP servers and
    /// hooks above start (empty when built with `raw_commands`).
    pub payloads: Vec<berth_lockfile_schema::LockedPayload>,
    /// The lock's records of what its MCP servers offered the model (`[[tools]]`).
    pub tools: Vec<berth_lockfile_schema::LockedTools>,
}

/// Builds the plugin set of `lock` from `store` alone: no network, no manifest, no source
/// folders. Every locked plugin must be in the store, unchanged since it was added.
pub fn build_plugin_set(
    store: &Store,
    lock: &Lock,
    options: &BuildOptions,
) -> Result<PluginSet, PluginError> {
    let mut set = PluginSet {
        plugins: Vec::new(),
        skills: Vec::new(),
        mcp_servers: Vec::new(),
        hooks: EVENTS.iter().map(|e| (*e, Vec::new())).collect(),
        agents: Vec::new(),
        lsp_servers: Vec::new(),
        warnings: Vec::new(),
        overridden: Vec::new(),
        payloads: Vec::new(),
        tools: lock.tools.clone(),
    };
    let (entries, trees) = checked_entries(store, lock)?;
    let roots = exposed_roots(store, lock, &entries, options, &mut set.warnings);
    let mut folders = CanonicalFolders::default();
    let mut jobs = Vec::with_capacity(lock.plugins.len());
    for (((locked, entry), exposed), tree) in
        lock.plugins.iter().zip(&entries).zip(roots).zip(trees)
    {
        jobs.push(Job {
            locked,
            path: folders.canonical(entry)?,
            tree: tree.map(Arc::new),
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
    let loaded = load_all(&jobs, options.keep_models, &cancelled);
    for ((job, entry), loaded) in jobs.into_iter().zip(entries).zip(loaded) {
        set.merge(job, entry, loaded?, options.max_skills)?;
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

/// Each locked plugin's store entry and the paths its stat record lists, checked against
/// the record, never trusted for being present: a changed entry is refused here, naming
/// it (the runtime is offline and repairs nothing; `sync` does).
fn checked_entries(
    store: &Store,
    lock: &Lock,
) -> Result<(Vec<PathBuf>, Vec<Option<EntryTree>>), PluginError> {
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
            return Err(PluginError::NotSynced {
                plugin: locked.name.clone(),
                path: store.entry_path(&locked.hash, &locked.name),
            });
        };
        entries.push(entry.path);
        trees.push(tree);
    }
    Ok((entries, trees))
}

/// Where hooks, MCP servers and commands see each plugin: its link in the set's view, or
/// its store entry when the view cannot be made (with a warning) or is not needed.
fn exposed_roots(
    store: &Store,
    lock: &Lock,
    entries: &[PathBuf],
    options: &BuildOptions,
    warnings: &mut Vec<String>,
) -> Vec<PathBuf> {
    // Reading what a lock would run (`raw_commands`) needs no view: nothing runs from it;
    // observing asks for none (`no_view`).
    if options.raw_commands || options.no_view {
        return entries.to_vec();
    }
    let named: Vec<(&str, &Path)> = lock
        .plugins
        .iter()
        .zip(entries)
        .map(|(l, e)| (l.name.as_str(), e.as_path()))
        .collect();
    match store.plugin_view(&named) {
        Ok(view) => view.paths,
        Err(e) => {
            warnings.push(format!(
                "could not make the plugin view in `{}` ({e}); plugins see their store paths, which do not end in their names",
                store.root().join(berth_store::VIEWS_DIR).display()
            ));
            entries.to_vec()
        }
    }
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

/// Store entries made canonical with one `canonicalize` of the folder they share, instead
/// of one per entry (each resolves every component of the store's path again).
#[derive(Default)]
struct CanonicalFolders {
    known: Vec<(PathBuf, PathBuf)>,
}

impl CanonicalFolders {
    fn canonical(&mut self, entry: &Path) -> Result<PathBuf, PluginError> {
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
