//! Claude Code: a configuration folder (`CLAUDE_CONFIG_DIR`) as `claude plugin install`
//! leaves one, so that `claude plugin list` shows exactly the locked plugins, installed,
//! from a local marketplace named `berth`, with no network and no clone.
//!
//! berth writes `plugins/marketplaces/berth/` (the marketplace: its catalog and a link per
//! plugin), `plugins/cache/berth/NAME/VERSION` (the install, a link to the store entry),
//! and its own keys of `plugins/installed_plugins.json` (version 2),
//! `plugins/known_marketplaces.json` and `settings.json` (`enabledPlugins`,
//! `extraKnownMarketplaces`); every other key of those files is kept.

use std::path::{Path, PathBuf};

use berth_lockfile_schema::Pin;
use berth_lockfile_schema::plugin_manifest::Format;
use serde_json::{Map, Value, json};

use super::files::{Plan, Planned, one_per_name};
use crate::error::RuntimeError;
use crate::set::PluginSet;

/// The marketplace the locked plugins are installed from: plugin ids are `NAME@berth`.
pub const MARKETPLACE: &str = "berth";

/// The time berth's entries say they were installed: fixed, so writing the same set again
/// changes nothing.
const INSTALLED_AT: &str = "1970-01-01T00:00:00.000Z";

const CATALOG: &str = "plugins/marketplaces/berth/.claude-plugin/marketplace.json";
const INSTALLED: &str = "plugins/installed_plugins.json";
const KNOWN: &str = "plugins/known_marketplaces.json";
const SETTINGS: &str = "settings.json";

/// The version Claude Code shows and installs under: the plugin's own (from its
/// `plugin.json`) when it is a plain version string, else the start of its content hash.
pub(super) fn version_of(info: &crate::set::PluginInfo) -> String {
    let own = &info.manifest.version;
    let plain = !own.is_empty()
        && own.len() <= 64
        && own
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+' | '_'));
    if info.manifest.file.is_some() && plain {
        own.clone()
    } else {
        info.locked.hash.to_nix32().chars().take(12).collect()
    }
}

/// Reads a JSON object berth merges its keys into; a missing file is an empty object.
fn read_object(root: &Path, rel: &str) -> Result<Map<String, Value>, RuntimeError> {
    let path = root.join(rel);
    match std::fs::read(&path) {
        Ok(bytes) => match serde_json::from_slice(&bytes) {
            Ok(Value::Object(map)) => Ok(map),
            _ => Err(RuntimeError::Invalid {
                plugin: MARKETPLACE.to_owned(),
                file: path.display().to_string(),
                message: "is not a JSON object; fix or remove it, then materialize again"
                    .to_owned(),
            }),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Map::new()),
        Err(e) => Err(e.into()),
    }
}

/// `map[key]` as an object, made one if it is missing or not one.
fn object<'a>(map: &'a mut Map<String, Value>, key: &str) -> &'a mut Map<String, Value> {
    let slot = map.entry(key).or_insert_with(|| json!({}));
    if !slot.is_object() {
        *slot = json!({});
    }
    slot.as_object_mut().expect("made an object")
}

/// Drops berth's ids that are no longer locked, then sets the current ones.
fn set_ids(map: &mut Map<String, Value>, ids: &[(String, Value)]) {
    let suffix = format!("@{MARKETPLACE}");
    map.retain(|id, _| !id.ends_with(&suffix));
    for (id, value) in ids {
        map.insert(id.clone(), value.clone());
    }
}

fn pretty(value: &Value) -> Vec<u8> {
    let mut text = serde_json::to_vec_pretty(value).expect("JSON is always serialisable");
    text.push(b'\n');
    text
}

/// The layout of `set` in the Claude Code configuration folder `root` (absolute), merged
/// with what `root` already holds.
pub fn plan(set: &PluginSet, root: &Path) -> Result<Plan, RuntimeError> {
    let mut plan = Plan {
        owned: vec![
            PathBuf::from("plugins/marketplaces").join(MARKETPLACE),
            PathBuf::from("plugins/cache").join(MARKETPLACE),
        ],
        ..Plan::default()
    };
    let market_dir = root.join("plugins/marketplaces").join(MARKETPLACE);
    let chosen = one_per_name(set, "Claude Code", &mut plan.warnings);
    let mut entries = Vec::new();
    let mut installed = Vec::new();
    let mut enabled = Vec::new();
    for info in chosen {
        let name = &info.locked.name;
        let version = version_of(info);
        let id = format!("{name}@{MARKETPLACE}");
        if info.manifest.format == Format::AgentPlugins {
            plan.warnings.push(format!(
                "plugin `{name}` is an Agent Plugins 1.0 plugin: Claude Code reads the Claude Code layout only, so its `mcp.json` servers and its `dev.openhands/` hooks, commands and agents are not seen there"
            ));
        }
        plan.files.insert(
            PathBuf::from("plugins/marketplaces")
                .join(MARKETPLACE)
                .join(name),
            Planned::Link(info.path.clone()),
        );
        let install = PathBuf::from("plugins/cache")
            .join(MARKETPLACE)
            .join(name)
            .join(&version);
        plan.files
            .insert(install.clone(), Planned::Link(info.path.clone()));
        let mut entry = json!({
            "name": name,
            "source": format!("./{name}"),
            "version": version,
        });
        if !info.manifest.description.is_empty() {
            entry["description"] = json!(info.manifest.description);
        }
        entries.push(entry);
        let mut record = json!({
            "scope": "user",
            "installPath": root.join(&install).display().to_string(),
            "version": version,
            "installedAt": INSTALLED_AT,
            "lastUpdated": INSTALLED_AT,
        });
        if let Pin::Git { rev, .. } = &info.locked.pin {
            record["gitCommitSha"] = json!(rev.to_string());
        }
        installed.push((id.clone(), json!([record])));
        enabled.push((id, json!(true)));
    }
    let catalog = json!({
        "name": MARKETPLACE,
        "owner": {"name": "berth"},
        "metadata": {"description": "The plugins of a berth lock, written by `berth materialize claude`"},
        "plugins": entries,
    });
    plan.files
        .insert(PathBuf::from(CATALOG), Planned::File(pretty(&catalog)));

    let source = json!({"source": "directory", "path": market_dir.display().to_string()});
    let mut known = read_object(root, KNOWN)?;
    known.insert(
        MARKETPLACE.to_owned(),
        json!({
            "source": source,
            "installLocation": market_dir.display().to_string(),
            "lastUpdated": INSTALLED_AT,
        }),
    );
    plan.files.insert(
        PathBuf::from(KNOWN),
        Planned::File(pretty(&Value::Object(known))),
    );

    let mut installs = read_object(root, INSTALLED)?;
    installs.insert("version".to_owned(), json!(2));
    set_ids(object(&mut installs, "plugins"), &installed);
    plan.files.insert(
        PathBuf::from(INSTALLED),
        Planned::File(pretty(&Value::Object(installs))),
    );

    let mut settings = read_object(root, SETTINGS)?;
    object(&mut settings, "extraKnownMarketplaces")
        .insert(MARKETPLACE.to_owned(), json!({"source": source}));
    set_ids(object(&mut settings, "enabledPlugins"), &enabled);
    plan.files.insert(
        PathBuf::from(SETTINGS),
        Planned::File(pretty(&Value::Object(settings))),
    );
    Ok(plan)
}
