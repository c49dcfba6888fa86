//! `--from claude [DIR]`: Claude Code's own record of its plugins (DIR, default
//! `$CLAUDE_CONFIG_DIR`, else `~/.claude`) as a manifest: every marketplace an enabled plugin
//! comes from, as `known_marketplaces.json` says where it is, and every plugin
//! `settings.json`'s `enabledPlugins` turns on, as `PLUGIN@MARKETPLACE`. A git marketplace
//! is pinned to the commit of Claude Code's own copy of it; a folder marketplace is read as
//! it is now (said so). Nothing of Claude Code's folder is written.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use serde_json::Value;

use super::Imported;
use super::manifest_of;
use super::records::{field, head_commit, optional, read_json, text};

/// Claude Code's configuration folder: as given, else `$CLAUDE_CONFIG_DIR`, else
/// `~/.claude`.
pub(super) fn config_dir(given: Option<&Path>) -> PathBuf {
    super::client_dir(given, "CLAUDE_CONFIG_DIR", ".claude")
}

/// The manifest of Claude Code's enabled plugins in `dir`, with each plugin's installed
/// folder (compared with what is locked).
pub(super) fn from_claude(
    dir: &Path,
    warn: &dyn Fn(&str),
) -> Result<(String, Vec<(String, PathBuf)>)> {
    let Records {
        settings_path,
        settings,
        installed_path,
        installed,
        known_path,
        known,
    } = Records::read(dir)?;
    let mut markets: BTreeMap<String, String> = BTreeMap::new();
    let mut entries = Vec::new();
    let mut left_out = Vec::new();
    for (id, on) in settings
        .get("enabledPlugins")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let Some((name, market)) = id.rsplit_once('@') else {
            warn(&format!(
                "`{id}` in `enabledPlugins` names no marketplace; left out"
            ));
            continue;
        };
        if on != &Value::Bool(true) {
            left_out.push(id.clone());
            continue;
        }
        let Some(record) = install_record(&installed, id) else {
            warn(&format!(
                "`{id}` is enabled but Claude Code has not installed it (`{}`); left out",
                installed_path.display()
            ));
            continue;
        };
        if !markets.contains_key(market) {
            let Some(table) = marketplace(&known, &settings, market, warn)? else {
                warn(&format!(
                    "`{id}`: its marketplace `{market}` is not in `{}` or `extraKnownMarketplaces` in a form berth reads; left out",
                    known_path.display()
                ));
                continue;
            };
            markets.insert(market.to_owned(), table);
        }
        let mut table = String::from("\n[[plugin]]\n");
        field(&mut table, "source", id);
        entries.push(Imported {
            name: name.to_owned(),
            table,
            folder: text(record, "installPath")
                .map(PathBuf::from)
                .unwrap_or_default(),
        });
    }
    if entries.is_empty() {
        bail!(
            "`{}` enables no installed plugin from a marketplace berth reads: nothing to import",
            settings_path.display()
        );
    }
    let mut header = format!(
        "# Imported by `berth plugins import --from claude` from `{}`.\n",
        dir.display()
    );
    for id in &left_out {
        header.push_str(&format!(
            "# `{id}` is installed but disabled there; left out.\n"
        ));
    }
    header.extend(markets.into_values());
    Ok(manifest_of(header, entries))
}

/// Claude Code's three records of its plugins, each `Null` where the file is missing but
/// `settings.json`.
struct Records {
    settings_path: PathBuf,
    settings: Value,
    installed_path: PathBuf,
    installed: Value,
    known_path: PathBuf,
    known: Value,
}

impl Records {
    fn read(dir: &Path) -> Result<Self> {
        let settings_path = dir.join("settings.json");
        if !settings_path.exists() {
            bail!(
                "`{}` does not exist: is `{}` Claude Code's configuration folder? Name it as `--from claude DIR`",
                settings_path.display(),
                dir.display()
            );
        }
        let optional = |path: &Path| -> Result<Value> {
            if path.exists() {
                read_json(path)
            } else {
                Ok(Value::Null)
            }
        };
        let installed_path = dir.join("plugins/installed_plugins.json");
        let known_path = dir.join("plugins/known_marketplaces.json");
        Ok(Self {
            settings: read_json(&settings_path)?,
            installed: optional(&installed_path)?,
            known: optional(&known_path)?,
            settings_path,
            installed_path,
            known_path,
        })
    }
}

/// `installed_plugins.json`'s record of `id`: the user-scope install, else the first.
fn install_record<'v>(installed: &'v Value, id: &str) -> Option<&'v Value> {
    let records = installed.get("plugins")?.get(id)?.as_array()?;
    records
        .iter()
        .find(|r| text(r, "scope") == Some("user"))
        .or_else(|| records.first())
}

/// The `[[marketplace]]` table of `name`, from `known_marketplaces.json` (where Claude Code
/// keeps what it added) or the settings' `extraKnownMarketplaces`.
fn marketplace(
    known: &Value,
    settings: &Value,
    name: &str,
    warn: &dyn Fn(&str),
) -> Result<Option<String>> {
    let record = known.get(name).or_else(|| {
        settings
            .get("extraKnownMarketplaces")
            .and_then(|m| m.get(name))
    });
    let Some(source) = record.and_then(|r| r.get("source")) else {
        return Ok(None);
    };
    let (declared, git) = match text(source, "source") {
        Some("directory") => match text(source, "path") {
            Some(path) => {
                warn(&format!(
                    "marketplace `{name}` is the folder `{path}`: locked as it is now, as Claude Code reads it"
                ));
                (path.to_owned(), false)
            }
            None => return Ok(None),
        },
        Some("github") => match text(source, "repo") {
            Some(repo) => (format!("github:{repo}"), true),
            None => return Ok(None),
        },
        Some("git") => match text(source, "url") {
            Some(url) if url.starts_with("git+") => (url.to_owned(), true),
            Some(url) => (format!("git+{url}"), true),
            None => return Ok(None),
        },
        _ => return Ok(None),
    };
    let mut table = String::from("\n[[marketplace]]\n");
    field(&mut table, "name", name);
    field(&mut table, "source", &declared);
    if git {
        // Pinned to the commit of Claude Code's own copy, else to what the source says.
        let copy = record
            .and_then(|r| text(r, "installLocation"))
            .map(Path::new);
        match copy.and_then(|c| head_commit(c).transpose()).transpose()? {
            Some(commit) => field(&mut table, "ref", &commit),
            None => {
                warn(&format!(
                    "marketplace `{name}`: Claude Code's copy records no commit; resolved now"
                ));
                optional(&mut table, "ref", text(source, "ref"));
            }
        }
    }
    optional(
        &mut table,
        "repo_path",
        text(source, "path").filter(|_| git),
    );
    Ok(Some(table))
}
