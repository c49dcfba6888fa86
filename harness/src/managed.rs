//! The managed settings `berth materialize TARGET DIR --managed-settings FILE` writes: the
//! policy an organisation installs where a client reads it and no user setting overrides
//! it, enforcing the lock. Each restricts where plugins may come from to berth's local
//! marketplace in DIR, whose catalog holds exactly the locked plugins; every other key of
//! FILE is kept.
//!
//! - Claude Code (`/etc/claude-code/managed-settings.json`, or a file of
//!   `/etc/claude-code/managed-settings.d/`) and GitHub Copilot CLI
//!   (`/etc/github-copilot/managed-settings.json`) read one JSON form:
//!   `strictKnownMarketplaces` (exactly berth's marketplace: one from anywhere else is
//!   refused when added and its plugins are not loaded), `extraKnownMarketplaces`
//!   (registers berth's) and `enabledPlugins` (the locked plugins, enabled whatever the
//!   user's settings say).
//! - Codex (`/etc/codex/requirements.toml`) reads `[marketplaces]`:
//!   `restrict_to_allowed_sources = true` and `allowed_sources` exactly berth's local
//!   marketplace. Its requirements have no key enabling plugins: `config.toml` in DIR does.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use toml_edit::{DocumentMut, Item, Table, value};

use super::ManagedForm;
use super::claude_config::{MARKETPLACE, enabled_ids, object, read_object, set_ids};
use super::codex::MARKET_DIR;
use super::plan::{Plan, Planned};
use berth_plugin::error::PluginError;
use berth_runtime::set::PluginInfo;

/// The plan of the managed settings FILE (absolute) of `form` for the locked `plugins`
/// installed in the harness folder `root` (absolute): the folder FILE is in, and FILE
/// relative to it.
pub(super) fn plan(
    form: ManagedForm,
    plugins: &[&PluginInfo],
    root: &Path,
    file: &Path,
) -> Result<(PathBuf, Plan), PluginError> {
    match form {
        ManagedForm::ClaudeCode => {
            let market = root.join("plugins/marketplaces").join(MARKETPLACE);
            json_form(plugins, &market, file)
        }
        ManagedForm::CopilotCli => json_form(plugins, &root.join(MARKET_DIR), file),
        // Codex's requirements have no key that enables plugins: `config.toml` does.
        ManagedForm::Codex => requirements(&root.join(MARKET_DIR), file),
    }
}

/// FILE's folder and name.
fn split(file: &Path) -> (PathBuf, PathBuf) {
    let folder = file.parent().unwrap_or(Path::new("/")).to_path_buf();
    let name = file.file_name().map(PathBuf::from).unwrap_or_default();
    (folder, name)
}

/// The JSON form (Claude Code, Copilot CLI) of FILE for `plugins`, berth's marketplace
/// the folder `market`.
fn json_form(
    plugins: &[&PluginInfo],
    market: &Path,
    file: &Path,
) -> Result<(PathBuf, Plan), PluginError> {
    let (folder, name) = split(file);
    let mut settings = read_object(&folder, &name.to_string_lossy())?;
    let source = json!({"source": "directory", "path": market.display().to_string()});
    // Exactly berth's: an allowlist is the whole list, not berth's entry among others.
    settings.insert("strictKnownMarketplaces".to_owned(), json!([source]));
    object(&mut settings, "extraKnownMarketplaces")
        .insert(MARKETPLACE.to_owned(), json!({"source": source}));
    set_ids(
        object(&mut settings, "enabledPlugins"),
        &enabled_ids(plugins),
    );
    let mut plan = Plan::default();
    plan.files
        .insert(name, Planned::Json(Value::Object(settings)));
    Ok((folder, plan))
}

/// Codex's `requirements.toml` FILE allowing marketplaces from the folder `market` only,
/// every other key kept, and berth's keys written back as the file has them when they
/// already say this (so `--check` sees no drift in the user's formatting).
fn requirements(market: &Path, file: &Path) -> Result<(PathBuf, Plan), PluginError> {
    let (folder, name) = split(file);
    let invalid = |message: String| PluginError::Invalid {
        plugin: MARKETPLACE.to_owned(),
        file: file.display().to_string(),
        message,
    };
    let existing = match super::guard::read_unlinked(&folder, &name)? {
        Some(bytes) => String::from_utf8(bytes).map_err(|_| {
            invalid("is not UTF-8; fix or remove it, then materialize again".to_owned())
        })?,
        None => String::new(),
    };
    let mut doc: DocumentMut = existing.parse().map_err(|e| {
        invalid(format!(
            "is not TOML ({e}); fix or remove it, then materialize again"
        ))
    })?;
    if !doc.contains_key("marketplaces") {
        doc.insert("marketplaces", Item::Table(Table::new()));
    }
    let Some(marketplaces) = doc["marketplaces"].as_table_mut() else {
        return Err(invalid("has `marketplaces` that is not a table".to_owned()));
    };
    if marketplaces
        .get("restrict_to_allowed_sources")
        .and_then(Item::as_bool)
        != Some(true)
    {
        marketplaces.insert("restrict_to_allowed_sources", value(true));
    }
    let path = market.display().to_string();
    let sources = marketplaces.get("allowed_sources");
    let berth = sources.and_then(|s| s.get(MARKETPLACE));
    let field = |key: &str| berth.and_then(|b| b.get(key)).and_then(Item::as_str);
    // Exactly berth's: an allowlist is the whole list, not berth's entry among others.
    let only_berth = sources
        .and_then(Item::as_table_like)
        .is_some_and(|s| s.len() == 1)
        && berth
            .and_then(Item::as_table_like)
            .is_some_and(|b| b.len() == 2)
        && field("source") == Some("local")
        && field("path") == Some(path.as_str());
    if !only_berth {
        let mut entry = Table::new();
        entry.insert("source", value("local"));
        entry.insert("path", value(path));
        let mut allowed = Table::new();
        allowed.set_implicit(true);
        allowed.insert(MARKETPLACE, Item::Table(entry));
        marketplaces.insert("allowed_sources", Item::Table(allowed));
    }
    let mut plan = Plan::default();
    plan.files
        .insert(name, Planned::File(doc.to_string().into_bytes()));
    Ok((folder, plan))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes `requirements` plans for FILE holding `before`, berth's marketplace `/m`.
    fn planned(before: &str) -> String {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("requirements.toml");
        std::fs::write(&file, before).expect("write");
        let (folder, plan) = requirements(Path::new("/m"), &file).expect("a plan");
        assert_eq!(folder, dir.path());
        match plan.files.get(Path::new("requirements.toml")) {
            Some(Planned::File(bytes)) => String::from_utf8(bytes.clone()).expect("UTF-8"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn requirements_allow_berths_marketplace_only_and_keep_the_rest_as_written() {
        // Another allowed source is dropped: the allowlist is exactly berth's.
        let before = "# the organisation's\nallowed_approval_policies = [\"on-request\"]\n\n[marketplaces]\nrestrict_to_allowed_sources = false\n\n[marketplaces.allowed_sources.corp]\nsource = \"git\"\nurl = \"https://example.com/m.git\"\n";
        let after = planned(before);
        assert_eq!(
            after,
            "# the organisation's\nallowed_approval_policies = [\"on-request\"]\n\n[marketplaces]\nrestrict_to_allowed_sources = true\n\n[marketplaces.allowed_sources.berth]\nsource = \"local\"\npath = \"/m\"\n"
        );
        // A file already saying this is planned as it is, however it is formatted.
        let inline = "[marketplaces]  # ours\nrestrict_to_allowed_sources = true\nallowed_sources = { berth = { source = \"local\", path = \"/m\" } }\n";
        assert_eq!(planned(inline), inline);
        assert_eq!(planned(&after), after);
    }
}
