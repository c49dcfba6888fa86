//! Claude Code's managed settings for a berth lock (`berth materialize claude DIR
//! --managed-settings FILE`): the policy an organisation installs where Claude Code reads
//! managed settings (on Linux `/etc/claude-code/managed-settings.json`, or a file of
//! `/etc/claude-code/managed-settings.d/`), which no user setting overrides. It restricts
//! marketplaces to berth's (`strictKnownMarketplaces`: a marketplace from anywhere else is
//! refused when added, and the plugins of one added before are not loaded), registers it
//! (`extraKnownMarketplaces`) and enables exactly the locked plugins (`enabledPlugins`).
//! Every other key of FILE is kept.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::claude_config::{MARKETPLACE, object, read_object, set_ids};
use super::plan::{Plan, Planned};
use berth_plugin::error::PluginError;
use berth_runtime::set::PluginInfo;

/// The plan of the managed settings file `file` (absolute) for the locked `plugins`,
/// installed in the Claude Code configuration folder `root`: relative to `file`'s folder.
pub(super) fn plan(
    plugins: &[&PluginInfo],
    root: &Path,
    file: &Path,
) -> Result<(PathBuf, Plan), PluginError> {
    let folder = file.parent().unwrap_or(Path::new("/")).to_path_buf();
    let name = file.file_name().map(PathBuf::from).unwrap_or_default();
    let mut settings = read_object(&folder, &name.to_string_lossy())?;
    let source = json!({
        "source": "directory",
        "path": root.join("plugins/marketplaces").join(MARKETPLACE).display().to_string(),
    });
    // Exactly berth's: an allowlist is the whole list, not berth's entry among others.
    settings.insert("strictKnownMarketplaces".to_owned(), json!([source]));
    object(&mut settings, "extraKnownMarketplaces")
        .insert(MARKETPLACE.to_owned(), json!({"source": source}));
    let ids: Vec<(String, Value)> = plugins
        .iter()
        .map(|info| (format!("{}@{MARKETPLACE}", info.locked.name), json!(true)))
        .collect();
    set_ids(object(&mut settings, "enabledPlugins"), &ids);
    let mut plan = Plan::default();
    plan.files
        .insert(name, Planned::Json(Value::Object(settings)));
    Ok((folder, plan))
}
