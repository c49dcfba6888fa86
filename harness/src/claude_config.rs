//! Claude Code: a configuration folder (`CLAUDE_CONFIG_DIR`) as `claude plugin install`
//! leaves one, so that `claude plugin list` shows exactly the locked plugins, installed,
//! from a local marketplace named `berth`, with no network and no clone.
//!
//! berth writes `plugins/marketplaces/berth/` (the marketplace: its catalog and a link per
//! plugin), `plugins/cache/berth/NAME/VERSION` (the install, a link to the store entry),
//! and its own keys of `plugins/installed_plugins.json` (version 2),
//! `plugins/known_marketplaces.json` and `settings.json` (`enabledPlugins`,
//! `extraKnownMarketplaces`); every other key of those files is kept.
//!
//! In the project form ([`Scope::Project`]) the plugins are enabled for one repository,
//! as `claude plugin install --scope project` does: the repository's
//! `.claude/settings.json` gets `enabledPlugins` (the file a team commits), and the
//! configuration folder records installs with `scope: "project"` and `projectPath`. One
//! configuration folder holds the installs of every scope and project at once: each run
//! replaces the records of its own scope (and project) only, and an install folder is
//! named by version and content hash, so two projects locking one plugin differently do
//! not overwrite each other.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use berth_lockfile_schema::plugin_manifest::Format;
use berth_lockfile_schema::{GitPin, Pin};
use serde_json::{Map, Value, json};

use super::claude_catalog::{
    copied, definition_fields, needs_real_folder, unlisted_root_skills, written_entries,
};
use super::claude_rules::{CHECKED_WITH, refusals};
use super::files::pretty;
use super::plan::{Plan, Planned};
use super::{Destination, Harness};
use berth_plugin::error::PluginError;
use berth_runtime::set::{PluginInfo, PluginSet};

/// The marketplace the locked plugins are installed from: plugin ids are `NAME@berth`.
pub const MARKETPLACE: &str = "berth";

/// The time berth's entries say they were installed: fixed, so writing the same set again
/// changes nothing.
const INSTALLED_AT: &str = "1970-01-01T00:00:00.000Z";

const CATALOG: &str = "plugins/marketplaces/berth/.claude-plugin/marketplace.json";
const INSTALLED: &str = "plugins/installed_plugins.json";
const KNOWN: &str = "plugins/known_marketplaces.json";
const SETTINGS: &str = "settings.json";
const CACHE: &str = "plugins/cache/berth";

/// Where Claude Code enables the locked plugins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope<'a> {
    /// For the user, in every folder: the configuration folder's `settings.json`.
    User,
    /// In one repository (an absolute path): its `.claude/settings.json`.
    Project(&'a Path),
}

impl Scope<'_> {
    /// Whether an install record of `installed_plugins.json` belongs to this scope.
    fn owns(&self, record: &Value) -> bool {
        match self {
            Scope::User => record["scope"] == "user",
            Scope::Project(repo) => {
                record["scope"] == "project"
                    && record["projectPath"].as_str() == Some(&*repo.to_string_lossy())
            }
        }
    }
}

/// The version Claude Code shows and installs under: the plugin's own (from its
/// `plugin.json`) when it is a plain version string (starting with a letter or digit, so
/// never `.` or `..`), else the start of its content hash.
pub(super) fn version_of(info: &PluginInfo) -> String {
    let own = &info.manifest.version;
    let plain = own.len() <= 64
        && own.starts_with(|c: char| c.is_ascii_alphanumeric())
        && own
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+' | '_'));
    if info.manifest.file.is_some() && plain {
        own.clone()
    } else {
        info.locked.hash.to_nix32().chars().take(12).collect()
    }
}

/// Reads a JSON object berth merges its keys into; a missing file is an empty object, and
/// so is one reached through a symbolic link (never read: `apply` refuses to write there).
pub(super) fn read_object(root: &Path, rel: &str) -> Result<Map<String, Value>, PluginError> {
    match super::guard::read_unlinked(root, Path::new(rel))? {
        Some(bytes) => match serde_json::from_slice(&bytes) {
            Ok(Value::Object(map)) => Ok(map),
            _ => Err(PluginError::Invalid {
                plugin: MARKETPLACE.to_owned(),
                file: root.join(rel).display().to_string(),
                message: "is not a JSON object; fix or remove it, then materialize again"
                    .to_owned(),
            }),
        },
        None => Ok(Map::new()),
    }
}

/// `map[key]` as an object, made one if it is missing or not one.
pub(super) fn object<'a>(map: &'a mut Map<String, Value>, key: &str) -> &'a mut Map<String, Value> {
    let slot = map.entry(key).or_insert_with(|| json!({}));
    if !slot.is_object() {
        *slot = json!({});
    }
    slot.as_object_mut().expect("made an object")
}

/// Drops berth's ids that are no longer locked, then sets the current ones.
pub(super) fn set_ids(map: &mut Map<String, Value>, ids: &[(String, Value)]) {
    let suffix = format!("@{MARKETPLACE}");
    map.retain(|id, _| !id.ends_with(&suffix));
    for (id, value) in ids {
        map.insert(id.clone(), value.clone());
    }
}

/// The install folder of a plugin, relative to the configuration folder: by version and
/// content hash, so installs of one version with different contents (two projects) differ.
fn install_dir(info: &PluginInfo, version: &str) -> PathBuf {
    let hash: String = info.locked.hash.to_nix32().chars().take(12).collect();
    let key = if hash.starts_with(version) {
        hash
    } else {
        format!("{version}-{}", &hash[..8])
    };
    PathBuf::from(CACHE).join(&info.locked.name).join(key)
}

/// The ids berth enables, `NAME@berth`, one per locked name.
pub(super) fn enabled_ids(chosen: &[&PluginInfo]) -> Vec<(String, Value)> {
    chosen
        .iter()
        .map(|info| (format!("{}@{MARKETPLACE}", info.locked.name), json!(true)))
        .collect()
}

/// What a plugin folder berth writes is: a link to its store entry, or (a plugin whose
/// runner lines are pinned) a folder of links with its manifest rewritten.
#[derive(Debug, Clone)]
enum Folder {
    Link(PathBuf),
    Tree(Vec<(PathBuf, Planned)>),
}

impl Folder {
    /// Plans the folder at `at`.
    fn place(&self, plan: &mut Plan, at: &Path) {
        match self {
            Folder::Link(target) => {
                plan.files
                    .insert(at.to_path_buf(), Planned::Link(target.clone()));
            }
            Folder::Tree(files) => {
                for (rel, planned) in files {
                    plan.files.insert(at.join(rel), planned.clone());
                }
            }
        }
    }
}

/// The install records of other scopes and projects that stay, each with its install
/// folder as it is (a record whose folder is gone or not berth's is dropped).
fn kept_records(
    root: &Path,
    installs: &Map<String, Value>,
    scope: Scope<'_>,
) -> Vec<(String, Value, Folder)> {
    let suffix = format!("@{MARKETPLACE}");
    let cache = root.join(CACHE);
    let mut kept = Vec::new();
    let Some(plugins) = installs.get("plugins").and_then(Value::as_object) else {
        return kept;
    };
    for (id, records) in plugins.iter().filter(|(id, _)| id.ends_with(&suffix)) {
        for record in records.as_array().into_iter().flatten() {
            if scope.owns(record) {
                continue;
            }
            let Some(path) = record["installPath"].as_str().map(PathBuf::from) else {
                continue;
            };
            if !path.starts_with(&cache) {
                continue;
            }
            let folder = match std::fs::read_link(&path) {
                Ok(target) => Folder::Link(target),
                Err(_) if path.is_dir() => match super::pinned::as_it_is(&path) {
                    Ok(files) => Folder::Tree(files),
                    Err(_) => continue,
                },
                Err(_) => continue,
            };
            kept.push((id.clone(), record.clone(), folder));
        }
    }
    kept
}

/// Claude Code: its configuration folder, the plugins installed from a local marketplace.
#[derive(Debug, Clone, Copy)]
pub struct ClaudeConfig;

impl Harness for ClaudeConfig {
    fn id(&self) -> &'static str {
        "claude"
    }

    fn display_name(&self) -> &'static str {
        "Claude Code"
    }

    fn folder(&self) -> &'static str {
        "A Claude Code configuration folder (use it as `CLAUDE_CONFIG_DIR`): the locked plugins installed from a local marketplace named `berth`, enabled in `settings.json` (with `--project REPO`, enabled in that repository's `.claude/settings.json` instead); other keys of its files are kept"
    }

    fn has_project_form(&self) -> bool {
        true
    }

    fn managed_form(&self) -> Option<super::ManagedForm> {
        Some(super::ManagedForm::ClaudeCode)
    }

    fn cannot_express(&self, _set: &PluginSet, info: &PluginInfo) -> Vec<String> {
        let mut out = Vec::new();
        let refused = refusals(info);
        if !refused.is_empty() {
            out.push(format!(
                "plugin `{}`: Claude Code {CHECKED_WITH} refuses to install it: {}; berth writes it, Claude Code may not load it",
                info.locked.name,
                refused.join("; ")
            ));
        }
        if info.manifest.format != Format::AgentPlugins {
            return out;
        }
        // Claude Code reads `.claude-plugin/`, `hooks/`, `.mcp.json` and the rest of its own
        // layout whatever else is there; only the Agent Plugins files are unseen.
        let unseen: Vec<String> = AGENT_PLUGINS_FILES
            .into_iter()
            .filter(|f| std::fs::symlink_metadata(info.path.join(f)).is_ok())
            .map(|f| format!("`{f}`"))
            .collect();
        if !unseen.is_empty() {
            out.push(format!(
                "plugin `{}` has Agent Plugins 1.0 files Claude Code does not read ({}): what they define is not seen there",
                info.locked.name,
                unseen.join(", ")
            ));
        }
        out
    }

    fn plan(
        &self,
        set: &PluginSet,
        plugins: &[&PluginInfo],
        to: Destination<'_>,
    ) -> Result<Vec<(PathBuf, Plan)>, PluginError> {
        let scope = to.project.map_or(Scope::User, Scope::Project);
        let mut plans = vec![(
            to.root.to_path_buf(),
            config_plan(set, plugins, to.root, scope)?,
        )];
        if let Some(repo) = to.project {
            plans.push((repo.to_path_buf(), project_settings(plugins, repo)?));
        }
        Ok(plans)
    }
}

/// The Agent Plugins 1.0 files Claude Code does not read.
const AGENT_PLUGINS_FILES: [&str; 2] = ["mcp.json", "dev.openhands/"];

/// Each id's install records, with the folder each installs and what its catalog entry
/// says beyond name, source and version (the marketplace entry's locked definition).
type Records = BTreeMap<String, Vec<(Value, Folder, Map<String, Value>)>>;

/// The layout of `plugins` in the Claude Code configuration folder `root` (absolute),
/// merged with what `root` already holds, enabled in `scope`.
fn config_plan(
    set: &PluginSet,
    plugins: &[&PluginInfo],
    root: &Path,
    scope: Scope<'_>,
) -> Result<Plan, PluginError> {
    let mut plan = Plan::default();
    let market_rel = PathBuf::from("plugins/marketplaces").join(MARKETPLACE);
    plan.own(market_rel.clone(), "claude");
    plan.own(PathBuf::from(CACHE), "claude");
    let market_dir = root.join(&market_rel);
    let mut installs = read_object(root, INSTALLED)?;
    let kept = kept_records(root, &installs, scope);
    let mut records = install_records(set, plugins, root, scope, &mut plan)?;
    // Other scopes' and projects' installs stay, with what the catalog said of them.
    let written = written_entries(&read_object(root, CATALOG).unwrap_or_default());
    for (id, record, folder) in kept {
        let install = Path::new(record["installPath"].as_str().unwrap_or_default());
        if let Ok(rel) = install.strip_prefix(root) {
            folder.place(&mut plan, rel);
        }
        let name = id.trim_end_matches(&format!("@{MARKETPLACE}"));
        let fields = written.get(name).cloned().unwrap_or_default();
        records
            .entry(id)
            .or_default()
            .push((record, folder, fields));
    }
    catalog(&mut records, &mut plan);
    let source = json!({"source": "directory", "path": market_dir.display().to_string()});
    let mut known = read_object(root, KNOWN)?;
    // Folders a berth from before the mark wrote: Claude Code knows them as berth's
    // `directory` marketplace (a marketplace of the user's named `berth` has its own source).
    if known
        .get(MARKETPLACE)
        .is_some_and(|m| m["source"] == source)
    {
        plan.vouched = plan.owned.clone();
    }
    known.insert(
        MARKETPLACE.to_owned(),
        json!({
            "source": source,
            "installLocation": market_dir.display().to_string(),
            "lastUpdated": INSTALLED_AT,
        }),
    );
    plan.files
        .insert(PathBuf::from(KNOWN), Planned::Json(Value::Object(known)));
    installs.insert("version".to_owned(), json!(2));
    let records: Vec<(String, Value)> = records
        .into_iter()
        .map(|(id, list)| (id, list.into_iter().map(|(record, ..)| record).collect()))
        .collect();
    set_ids(object(&mut installs, "plugins"), &records);
    plan.files.insert(
        PathBuf::from(INSTALLED),
        Planned::Json(Value::Object(installs)),
    );
    let mut settings = read_object(root, SETTINGS)?;
    object(&mut settings, "extraKnownMarketplaces")
        .insert(MARKETPLACE.to_owned(), json!({"source": source}));
    if scope == Scope::User {
        set_ids(
            object(&mut settings, "enabledPlugins"),
            &enabled_ids(plugins),
        );
    }
    plan.files.insert(
        PathBuf::from(SETTINGS),
        Planned::Json(Value::Object(settings)),
    );
    Ok(plan)
}

/// The install of each of `plugins` in `scope`: its folder planned, its record made.
fn install_records(
    set: &PluginSet,
    plugins: &[&PluginInfo],
    root: &Path,
    scope: Scope<'_>,
    plan: &mut Plan,
) -> Result<Records, PluginError> {
    let mut records = Records::new();
    for info in plugins {
        let version = version_of(info);
        let install = install_dir(info, &version);
        let overlay = super::pinned::overlay(set, info)?;
        let left_out = unlisted_root_skills(info);
        let folder = if needs_real_folder(info) || !left_out.is_empty() {
            Folder::Tree(copied(info, overlay.as_ref(), &left_out)?)
        } else {
            match overlay {
                Some(overlay) => Folder::Tree(super::pinned::linked(&info.path, &overlay)?),
                None => Folder::Link(info.path.clone()),
            }
        };
        folder.place(plan, &install);
        let mut record = json!({
            "scope": "user",
            "installPath": root.join(&install).display().to_string(),
            "version": version,
            "installedAt": INSTALLED_AT,
            "lastUpdated": INSTALLED_AT,
        });
        if let Pin::Git(GitPin { rev, .. }) = &info.locked.pin {
            record["gitCommitSha"] = json!(rev.to_string());
        }
        if let Scope::Project(repo) = scope {
            record["scope"] = json!("project");
            record["projectPath"] = json!(repo.display().to_string());
        }
        records
            .entry(format!("{}@{MARKETPLACE}", info.locked.name))
            .or_default()
            .push((record, folder, definition_fields(info)));
    }
    Ok(records)
}

/// The marketplace's catalog: each id once, its first install by scope and project, so
/// that the folder is the same whichever project was written last.
fn catalog(records: &mut Records, plan: &mut Plan) {
    let mut entries = Vec::new();
    for (id, list) in records.iter_mut() {
        list.sort_by(|(a, ..), (b, ..)| {
            (a["scope"].as_str(), a["projectPath"].as_str())
                .cmp(&(b["scope"].as_str(), b["projectPath"].as_str()))
        });
        let (first, folder, fields) = &list[0];
        let name = id.trim_end_matches(&format!("@{MARKETPLACE}"));
        folder.place(
            plan,
            &PathBuf::from("plugins/marketplaces")
                .join(MARKETPLACE)
                .join(name),
        );
        let mut entry = json!({
            "name": name,
            "source": format!("./{name}"),
            "version": first["version"],
        });
        for (key, value) in fields {
            entry[key] = value.clone();
        }
        entries.push(entry);
    }
    let catalog = json!({
        "name": MARKETPLACE,
        "owner": {"name": "berth"},
        "metadata": {"description": "The plugins of a berth lock, written by `berth materialize claude`"},
        "plugins": entries,
    });
    plan.files
        .insert(PathBuf::from(CATALOG), Planned::File(pretty(&catalog)));
}

/// The repository side of the project form: `repo/.claude/settings.json` with
/// `enabledPlugins` naming exactly the locked plugins (`NAME@berth`), every other key kept.
/// It holds no path of this machine, so a team can commit it; each machine installs the
/// plugins with `berth materialize claude --project REPO`.
fn project_settings(plugins: &[&PluginInfo], repo: &Path) -> Result<Plan, PluginError> {
    let mut plan = Plan::default();
    let rel = ".claude/settings.json";
    let mut settings = read_object(repo, rel)?;
    set_ids(
        object(&mut settings, "enabledPlugins"),
        &enabled_ids(plugins),
    );
    plan.files
        .insert(PathBuf::from(rel), Planned::Json(Value::Object(settings)));
    Ok(plan)
}
