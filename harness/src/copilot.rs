//! GitHub Copilot CLI: a Copilot home folder (`COPILOT_HOME`, `~/.copilot`) in which the
//! locked plugins are installed from a local marketplace named `berth`, as `copilot plugin
//! marketplace add DIR` and `copilot plugin install NAME@berth` leave them: Copilot reads a
//! local marketplace's plugins live from its folder (it copies nothing), so berth writes
//! `berth-marketplace/` (Claude Code's catalog, which Copilot reads, and a link per plugin
//! to its store entry) and its own keys of `settings.json` (`extraKnownMarketplaces.berth`,
//! a `directory` source, and `enabledPlugins`); every other key of that file is kept.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::claude_catalog::definition_fields;
use super::claude_config::{MARKETPLACE, enabled_ids, object, read_object, set_ids};
use super::codex::{MARKET_DIR, market_folder};
use super::files::pretty;
use super::guard::read_entry_file;
use super::plan::{Plan, Planned};
use super::{Destination, Harness};
use berth_plugin::error::PluginError;
use berth_runtime::set::{PluginInfo, PluginSet};

const SETTINGS: &str = "settings.json";

/// GitHub Copilot CLI: its home folder, the plugins installed from a local marketplace.
#[derive(Debug, Clone, Copy)]
pub struct CopilotCli;

impl Harness for CopilotCli {
    fn id(&self) -> &'static str {
        "copilot"
    }

    fn display_name(&self) -> &'static str {
        "GitHub Copilot CLI"
    }

    fn folder(&self) -> &'static str {
        "A GitHub Copilot CLI home folder (`COPILOT_HOME`, `~/.copilot`): the plugins installed from a local marketplace named `berth`, enabled in `settings.json`; its other keys are kept"
    }

    fn managed_form(&self) -> Option<super::ManagedForm> {
        Some(super::ManagedForm::CopilotCli)
    }

    fn cannot_express(&self, _set: &PluginSet, _info: &PluginInfo) -> Vec<String> {
        // Copilot reads the plugin's own folder, as from its own install of it: what it
        // cannot read there, its own install cannot read either.
        Vec::new()
    }

    fn plan(
        &self,
        set: &PluginSet,
        plugins: &[&PluginInfo],
        to: Destination<'_>,
    ) -> Result<Vec<(PathBuf, Plan)>, PluginError> {
        let mut plan = Plan::default();
        plan.own(PathBuf::from(MARKET_DIR), "copilot");
        let plugins = one_per_folder(plugins, &mut plan);
        let mut entries = Vec::new();
        for info in &plugins {
            // A plugin whose runner lines are pinned: its manifest names the servers
            // inline, rewritten.
            let overlay = super::pinned::overlay(set, info)?.unwrap_or_default();
            market_folder(info, &overlay, &mut plan)?;
            entries.push(entry(info));
        }
        let catalog = json!({
            "name": MARKETPLACE,
            "owner": {"name": "berth"},
            "metadata": {"description": "The plugins of a berth lock, written by `berth materialize copilot`"},
            "plugins": entries,
        });
        plan.files.insert(
            PathBuf::from(MARKET_DIR).join(".claude-plugin/marketplace.json"),
            Planned::File(pretty(&catalog)),
        );
        let mut settings = read_object(to.root, SETTINGS)?;
        let source = json!({
            "source": "directory",
            "path": to.root.join(MARKET_DIR).display().to_string(),
        });
        object(&mut settings, "extraKnownMarketplaces")
            .insert(MARKETPLACE.to_owned(), json!({"source": source}));
        set_ids(
            object(&mut settings, "enabledPlugins"),
            &enabled_ids(&plugins),
        );
        plan.files.insert(
            PathBuf::from(SETTINGS),
            Planned::Json(Value::Object(settings)),
        );
        Ok(vec![(to.root.to_path_buf(), plan)])
    }
}

/// The plugins Copilot's own install takes: one per folder of a marketplace. Copilot
/// lists a marketplace's plugins by their folder, so of entries naming the same one
/// (`anthropics/skills` gives `./` to all three of its plugins) it installs the first
/// and leaves the others out without a word; berth writes the first locked and says so of
/// the others.
fn one_per_folder<'a>(plugins: &[&'a PluginInfo], plan: &mut Plan) -> Vec<&'a PluginInfo> {
    let mut folders: BTreeMap<(&str, &str, Option<&str>), &str> = BTreeMap::new();
    let mut kept = Vec::new();
    for info in plugins {
        let locked = &info.locked;
        let market = locked.requested.as_deref().and_then(|r| r.rsplit_once('@'));
        let Some((_, market)) = market else {
            kept.push(*info);
            continue;
        };
        let folder = (market, locked.source.as_str(), locked.repo_path.as_deref());
        match folders.get(&folder) {
            Some(first) => {
                plan.warnings.push(format!(
                    "plugin `{}` is not written for GitHub Copilot CLI: its marketplace entry names the same folder as plugin `{first}`, and Copilot's own install takes one plugin per folder (the first)",
                    locked.name
                ));
                plan.refused.push(locked.name.clone());
            }
            None => {
                folders.insert(folder, &locked.name);
                kept.push(*info);
            }
        }
    }
    kept
}

/// A plugin's catalog entry: what its own marketplace entry said beyond name and source
/// (its locked definition), so Copilot builds it from berth's folder as from the original.
fn entry(info: &PluginInfo) -> Value {
    let name = &info.locked.name;
    let mut entry = json!({"name": name, "source": format!("./{name}")});
    // The version its own catalog entry or manifest gave (Copilot shows the entry's, else
    // the manifest's, and none for a plugin whose manifest states none).
    let version = info
        .locked
        .plugin_version
        .clone()
        .or_else(|| stated_version(info));
    if let Some(version) = version {
        entry["version"] = json!(version);
    }
    if !info.manifest.description.is_empty() {
        entry["description"] = json!(info.manifest.description);
    }
    for (key, value) in definition_fields(info) {
        entry[key] = value;
    }
    entry
}

/// The `version` the plugin's own manifest states, if it states one: the manifest berth
/// reads fills in `1.0.0` for none (as the OpenHands SDK does), which Copilot does not.
fn stated_version(info: &PluginInfo) -> Option<String> {
    let bytes = read_entry_file(&info.path, Path::new(info.manifest.file?))?;
    let manifest: Value = serde_json::from_slice(&bytes).ok()?;
    manifest.get("version")?.as_str().map(str::to_owned)
}
