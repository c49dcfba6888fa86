//! Codex CLI: a Codex home folder (`CODEX_HOME`, `~/.codex`) in which the locked plugins
//! are installed from a local marketplace named `berth`, as `codex plugin add` leaves
//! them: `berth-marketplace/.claude-plugin/marketplace.json` (Codex reads Claude Code's
//! catalog) with a link per plugin, `plugins/cache/berth/NAME/VERSION/` (the install: a
//! real folder, as Codex takes only real folders there, of links to the store entry's
//! folders and read-only copies of its files), and
//! berth's tables of `config.toml` (`[marketplaces.berth]`, `[plugins."NAME@berth"]`);
//! every other table of `config.toml` is kept.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};
use toml_edit::{DocumentMut, Item, Table, value};

// The marketplace the locked plugins are installed from is named as Claude Code's:
// plugin ids are `NAME@berth`.
use super::claude_catalog::definition_fields;
use super::claude_config::{MARKETPLACE, version_of};
use super::codex_commands::migrated_commands;
use super::entry::{Kind, children, copy_of};
use super::files::pretty;
use super::own::own;
use super::pinned::Overlay;
use super::plan::{Plan, Planned};
use super::{Destination, Harness};
use berth_plugin::error::PluginError;
use berth_runtime::set::{PluginInfo, PluginSet};

pub(super) const MARKET_DIR: &str = "berth-marketplace";
/// The folders of a plugin Codex reads its manifest from, which it takes only as real
/// folders.
const MANIFEST_DIRS: [&str; 2] = [".claude-plugin", ".codex-plugin"];
const CONFIG: &str = "config.toml";

/// Codex CLI: its home folder, the plugins installed from a local marketplace.
#[derive(Debug, Clone, Copy)]
pub struct Codex;

impl Harness for Codex {
    fn id(&self) -> &'static str {
        "codex"
    }

    fn display_name(&self) -> &'static str {
        "Codex"
    }

    fn folder(&self) -> &'static str {
        "A Codex CLI home folder (`CODEX_HOME`, `~/.codex`): the plugins installed from a local marketplace named `berth`"
    }

    fn managed_form(&self) -> Option<super::ManagedForm> {
        Some(super::ManagedForm::Codex)
    }

    fn cannot_express(&self, set: &PluginSet, info: &PluginInfo) -> Vec<String> {
        let name = &info.locked.name;
        let mut out = Vec::new();
        if set.lsp_servers.iter().any(|(_, _, p)| p == name) {
            out.push(format!(
                "plugin `{name}`: its LSP servers are not read by Codex"
            ));
        }
        // The commands Codex makes no skill of are said by `install`, which reads them.
        out
    }

    fn plan(
        &self,
        set: &PluginSet,
        plugins: &[&PluginInfo],
        to: Destination<'_>,
    ) -> Result<Vec<(PathBuf, Plan)>, PluginError> {
        let mut plan = Plan::default();
        plan.own(PathBuf::from(MARKET_DIR), "codex");
        plan.own(PathBuf::from("plugins/cache").join(MARKETPLACE), "codex");
        let mut entries = Vec::new();
        for info in plugins {
            entries.push(install(set, info, &mut plan)?);
        }
        let ids: Vec<String> = plugins
            .iter()
            .map(|info| format!("{}@{MARKETPLACE}", info.locked.name))
            .collect();
        let catalog = json!({
            "name": MARKETPLACE,
            "owner": {"name": "berth"},
            "plugins": entries,
        });
        plan.files.insert(
            PathBuf::from(MARKET_DIR).join(".claude-plugin/marketplace.json"),
            Planned::File(pretty(&catalog)),
        );
        let (config, vouched) = config(to.root, &ids)?;
        if vouched {
            plan.vouched = plan.owned.clone();
        }
        plan.files
            .insert(PathBuf::from(CONFIG), Planned::File(config.into_bytes()));
        Ok(vec![(to.root.to_path_buf(), plan)])
    }
}

/// Plans one plugin's marketplace folder and install; its catalog entry.
fn install(set: &PluginSet, info: &PluginInfo, plan: &mut Plan) -> Result<Value, PluginError> {
    let name = &info.locked.name;
    let version = version_of(info);
    let install = PathBuf::from("plugins/cache")
        .join(MARKETPLACE)
        .join(name)
        .join(&version);
    // A plugin whose runner lines are pinned: its manifest names the servers inline,
    // rewritten, in the marketplace's folder and the install alike.
    let overlay = super::pinned::overlay(set, info)?.unwrap_or_default();
    market_folder(info, &overlay, plan)?;
    let real = real_folders(set, info, &overlay);
    installed(info, Path::new(""), &overlay, &real, &install, plan)?;
    for (rel, bytes) in &overlay.files {
        plan.files
            .insert(install.join(rel), Planned::File(bytes.clone()));
    }
    let definition = definition_fields(info);
    what_codex_adds(info, &definition, &version, &install, plan);
    let mut entry = json!({"name": name, "source": format!("./{name}"), "version": version});
    if !info.manifest.description.is_empty() {
        entry["description"] = json!(info.manifest.description);
    }
    for (key, value) in definition {
        entry[key] = value;
    }
    Ok(entry)
}

/// The plugin's folder in berth's marketplace: a link to its store entry, or, with an
/// overlay, a folder of links with the overlay's files.
pub(super) fn market_folder(
    info: &PluginInfo,
    overlay: &Overlay,
    plan: &mut Plan,
) -> Result<(), PluginError> {
    let dir = PathBuf::from(MARKET_DIR).join(&info.locked.name);
    if overlay.files.is_empty() {
        plan.files.insert(dir, Planned::Link(info.path.clone()));
    } else {
        for (rel, planned) in super::pinned::linked(&info.path, overlay)? {
            plan.files.insert(dir.join(rel), planned);
        }
    }
    Ok(())
}

/// The install's real folders: the manifest folders, each skill's folder (Codex names a
/// skill by its folder's real path, and a path into the store is longer: with 100
/// plugins, Codex 0.169's skill list in the prompt held 139 skills instead of 210), and
/// those on the way to what the overlay writes or leaves out.
fn real_folders(set: &PluginSet, info: &PluginInfo, overlay: &Overlay) -> Vec<PathBuf> {
    let mut real: Vec<PathBuf> = MANIFEST_DIRS.iter().map(PathBuf::from).collect();
    real.extend(own(set, info).skills.iter().filter_map(|skill| {
        let (folder, file) = skill.source.rsplit_once('/')?;
        file.eq_ignore_ascii_case("skill.md")
            .then(|| PathBuf::from(folder))
    }));
    real.extend(overlay.files.keys().chain(&overlay.hidden).cloned());
    real
}

/// What Codex's own `plugin add` writes into an install: a manifest for a plugin without
/// one, from the catalog entry's `definition` (without it Codex reads no component of
/// the plugin), and skills made of the commands it can run as skills (the rest warned).
fn what_codex_adds(
    info: &PluginInfo,
    definition: &Map<String, Value>,
    version: &str,
    install: &Path,
    plan: &mut Plan,
) {
    let name = &info.locked.name;
    if info.manifest.file.is_none() {
        let mut manifest = definition.clone();
        manifest.insert("version".to_owned(), json!(version));
        manifest.insert("name".to_owned(), json!(name));
        plan.files.insert(
            install.join(".codex-plugin/plugin.json"),
            Planned::File(
                serde_json::to_vec_pretty(&Value::Object(manifest)).expect("JSON is serialisable"),
            ),
        );
    }
    let (migrated, left) = migrated_commands(info);
    for (rel, bytes) in migrated {
        plan.files.insert(install.join(rel), Planned::File(bytes));
    }
    if !left.is_empty() {
        plan.warnings.push(format!(
            "plugin `{name}`: Codex runs no skill for its command(s) {}: its own install makes skills only of commands with a `description` and without `$ARGUMENTS`, `$1`, `{{{{…}}}}`, shell lines (`!`) or `@file` references, of at most 4,000 bytes as a skill, and berth writes what it would",
            left.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", ")
        ));
    }
}

/// Plans the install of the store entry `entry`'s folder `rel` at `install`: a real
/// folder (Codex takes no link there) whose folders are links into the entry, which Codex
/// follows, and whose files are read-only copies: Codex skips a linked manifest or
/// `SKILL.md`. The folders in `real` and those on the way to them are real folders
/// planned the same way; what `overlay` writes or leaves out is left out, and so are the
/// entry's own links.
fn installed(
    info: &PluginInfo,
    rel: &Path,
    overlay: &Overlay,
    real: &[PathBuf],
    install: &Path,
    plan: &mut Plan,
) -> Result<(), PluginError> {
    for (path, kind) in children(info, rel)? {
        if overlay.hidden.contains(&path) || overlay.files.contains_key(&path) {
            continue;
        }
        if kind == Kind::File {
            plan.files.insert(install.join(&path), copy_of(info, &path));
        } else if kind == Kind::Folder {
            if real.iter().any(|p| p.starts_with(&path)) {
                installed(info, &path, overlay, real, install, plan)?;
            } else {
                plan.files
                    .insert(install.join(&path), Planned::Link(info.path.join(&path)));
            }
        }
    }
    Ok(())
}

/// `config.toml` of the Codex home `root` with berth's marketplace and exactly `ids`
/// enabled, every other table kept; and whether it held berth's marketplace already (so
/// a berth from before the mark wrote the folders it names).
fn config(root: &Path, ids: &[String]) -> Result<(String, bool), PluginError> {
    let path = root.join(CONFIG);
    // Read without following a link (`apply` refuses to write through one).
    let existing = match super::guard::read_unlinked(root, Path::new(CONFIG))? {
        Some(bytes) => String::from_utf8(bytes).map_err(|_| PluginError::Invalid {
            plugin: MARKETPLACE.to_owned(),
            file: path.display().to_string(),
            message: "is not UTF-8; fix or remove it, then materialize again".to_owned(),
        })?,
        None => String::new(),
    };
    let mut doc: DocumentMut = existing.parse().map_err(|e| PluginError::Invalid {
        plugin: MARKETPLACE.to_owned(),
        file: path.display().to_string(),
        message: format!("is not TOML ({e}); fix or remove it, then materialize again"),
    })?;
    let table = |doc: &mut DocumentMut, key: &str| -> Result<(), PluginError> {
        if !doc.contains_key(key) {
            let mut t = Table::new();
            t.set_implicit(true);
            doc.insert(key, Item::Table(t));
        }
        if doc[key].is_table() {
            Ok(())
        } else {
            Err(PluginError::Invalid {
                plugin: MARKETPLACE.to_owned(),
                file: path.display().to_string(),
                message: format!("has `{key}` that is not a table"),
            })
        }
    };
    table(&mut doc, "marketplaces")?;
    let source = root.join(MARKET_DIR).display().to_string();
    let vouched = doc["marketplaces"]
        .get(MARKETPLACE)
        .and_then(|m| m.get("source"))
        .and_then(Item::as_str)
        == Some(source.as_str());
    // Berth's tables are replaced only when they differ, so a file already holding them
    // is written back as the user formatted it (and `--check` sees no drift in it).
    let local = doc["marketplaces"]
        .get(MARKETPLACE)
        .and_then(|m| m.get("source_type"))
        .and_then(Item::as_str)
        == Some("local");
    if !(vouched && local) {
        let mut market = Table::new();
        market.insert("source_type", value("local"));
        market.insert("source", value(source));
        doc["marketplaces"][MARKETPLACE] = Item::Table(market);
    }
    table(&mut doc, "plugins")?;
    let plugins = doc["plugins"].as_table_mut().expect("a table");
    let suffix = format!("@{MARKETPLACE}");
    let stale: Vec<String> = plugins
        .iter()
        .map(|(k, _)| k.to_owned())
        .filter(|k| k.ends_with(&suffix) && !ids.contains(k))
        .collect();
    for key in stale {
        plugins.remove(&key);
    }
    for id in ids {
        let enabled = plugins
            .get(id)
            .and_then(|t| t.get("enabled"))
            .and_then(Item::as_bool);
        if enabled != Some(true) {
            let mut t = Table::new();
            t.insert("enabled", value(true));
            plugins.insert(id, Item::Table(t));
        }
    }
    Ok((doc.to_string(), vouched))
}
