//! `--from copilot [DIR]`: GitHub Copilot CLI's own record of its plugins (DIR, default
//! `$COPILOT_HOME`, else `~/.copilot`) as a manifest: every plugin `settings.json`'s
//! `enabledPlugins` turns on, as `PLUGIN@MARKETPLACE`, with its marketplace as the same
//! file's `extraKnownMarketplaces` says where it is, and every plugin installed directly
//! (`config.json`'s `installedPlugins` with no marketplace) that is enabled. Copilot
//! records no commit: a git marketplace is pinned to the commit of Copilot's clone of it
//! (`$XDG_CACHE_HOME/copilot/marketplaces/`, else `~/.cache/copilot/marketplaces/`) where
//! there is one, else resolved now; a folder marketplace (whose plugins Copilot reads in
//! place) is locked as it is now; each said so. Nothing of Copilot's folder is written.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};
use serde_json::Value;

use super::Imported;
use super::manifest_of;
use super::records::{field, head_commit, optional, read_json, read_regular, text};

/// The largest `config.json` or git `config` read.
const MAX_CONFIG_BYTES: u64 = 4 << 20;

/// Copilot's folder: as given, else `$COPILOT_HOME`, else `~/.copilot`.
pub(super) fn config_dir(given: Option<&Path>) -> PathBuf {
    super::client_dir(given, "COPILOT_HOME", ".copilot")
}

/// The manifest of Copilot's enabled plugins in `dir`, with each installed one's folder.
pub(super) fn from_copilot(
    dir: &Path,
    warn: &dyn Fn(&str),
) -> Result<(String, Vec<(String, PathBuf)>)> {
    let settings_path = dir.join("settings.json");
    if !settings_path.exists() {
        bail!(
            "`{}` does not exist: is `{}` Copilot CLI's folder? Name it as `--from copilot DIR`",
            settings_path.display(),
            dir.display()
        );
    }
    let settings = read_json(&settings_path)?;
    let installed = installed_plugins(&dir.join("config.json"))?;
    let mut markets: BTreeMap<String, String> = BTreeMap::new();
    let mut entries = Vec::new();
    let mut left_out = Vec::new();
    let enabled_ids = settings.get("enabledPlugins").and_then(Value::as_object);
    for (id, on) in enabled_ids.into_iter().flatten() {
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
        if !markets.contains_key(market) {
            let Some(table) = marketplace(&settings, market, warn)? else {
                warn(&format!(
                    "`{id}`: its marketplace `{market}` is not in `{}`'s `extraKnownMarketplaces` in a form berth reads; left out",
                    settings_path.display()
                ));
                continue;
            };
            markets.insert(market.to_owned(), table);
        }
        let mut table = String::from("\n[[plugin]]\n");
        field(&mut table, "source", id);
        // A marketplace's copy, where Copilot made one (a folder marketplace's plugins are
        // read in place: nothing to compare).
        let folder = installed
            .iter()
            .find(|p| text(p, "name") == Some(name) && text(p, "marketplace") == Some(market))
            .and_then(|p| text(p, "cache_path"))
            .map(PathBuf::from)
            .unwrap_or_default();
        entries.push(Imported {
            name: name.to_owned(),
            table,
            folder,
        });
    }
    for plugin in installed
        .iter()
        .filter(|p| text(p, "marketplace").is_none())
    {
        direct(plugin, &mut entries, &mut left_out, warn);
    }
    if entries.is_empty() {
        bail!(
            "`{}` enables no plugin berth reads: nothing to import",
            dir.display()
        );
    }
    let mut header = format!(
        "# Imported by `berth plugins import --from copilot` from `{}`.\n",
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

/// `config.json`'s `installedPlugins` (the file starts with `//` comment lines), or none.
fn installed_plugins(path: &Path) -> Result<Vec<Value>> {
    if !path.exists() {
        return Ok(Vec::new());
    }
    let bytes = read_regular(path, MAX_CONFIG_BYTES)?;
    let text = String::from_utf8_lossy(&bytes);
    let json: String = text
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let config: Value =
        serde_json::from_str(&json).with_context(|| format!("`{}` is not JSON", path.display()))?;
    Ok(config
        .get("installedPlugins")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default())
}

/// A plugin installed directly (from a folder or a repository, no marketplace).
fn direct(
    plugin: &Value,
    entries: &mut Vec<Imported>,
    left_out: &mut Vec<String>,
    warn: &dyn Fn(&str),
) {
    let Some(name) = text(plugin, "name") else {
        return;
    };
    if plugin.get("enabled") == Some(&Value::Bool(false)) {
        left_out.push(name.to_owned());
        return;
    }
    let source = plugin.get("source").unwrap_or(&Value::Null);
    let mut table = String::from("\n[[plugin]]\n");
    match (
        text(source, "source"),
        text(source, "path"),
        text(source, "repo"),
    ) {
        (Some("local"), Some(path), _) => {
            warn(&format!(
                "plugin `{name}` was installed from the folder `{path}`: locked from that folder as it is now"
            ));
            field(&mut table, "source", path);
        }
        (Some("github"), _, Some(repo)) => {
            warn(&format!(
                "plugin `{name}`: Copilot records no commit for it; resolved now"
            ));
            field(&mut table, "source", &format!("github:{repo}"));
            optional(&mut table, "ref", text(source, "ref"));
            optional(&mut table, "repo_path", text(source, "path"));
        }
        _ => {
            warn(&format!(
                "plugin `{name}` was installed from a source berth does not read (`{source}`); left out"
            ));
            return;
        }
    }
    entries.push(Imported {
        name: name.to_owned(),
        table,
        folder: text(plugin, "cache_path")
            .map(PathBuf::from)
            .unwrap_or_default(),
    });
}

/// The `[[marketplace]]` table of `name`, from the settings' `extraKnownMarketplaces`.
fn marketplace(settings: &Value, name: &str, warn: &dyn Fn(&str)) -> Result<Option<String>> {
    let Some(source) = settings
        .get("extraKnownMarketplaces")
        .and_then(|m| m.get(name))
        .and_then(|r| r.get("source"))
    else {
        return Ok(None);
    };
    let mut table = String::from("\n[[marketplace]]\n");
    field(&mut table, "name", name);
    let url = match (text(source, "source"), text(source, "path")) {
        (Some("directory"), Some(path)) => {
            warn(&format!(
                "marketplace `{name}` is the folder `{path}`: locked as it is now, as Copilot reads it"
            ));
            field(&mut table, "source", path);
            return Ok(Some(table));
        }
        (Some("github"), _) => match text(source, "repo") {
            Some(repo) => {
                field(&mut table, "source", &format!("github:{repo}"));
                format!("github.com/{repo}")
            }
            None => return Ok(None),
        },
        (Some("git" | "url"), _) => match text(source, "url") {
            Some(url) => {
                field(
                    &mut table,
                    "source",
                    &format!("git+{}", url.trim_start_matches("git+")),
                );
                url.trim_start_matches("git+").to_owned()
            }
            None => return Ok(None),
        },
        _ => return Ok(None),
    };
    match clone_commit(&url)? {
        Some(commit) => field(&mut table, "ref", &commit),
        None => {
            warn(&format!(
                "marketplace `{name}`: Copilot records no commit and berth finds no clone of it; resolved now"
            ));
            optional(&mut table, "ref", text(source, "ref"));
        }
    }
    optional(&mut table, "repo_path", text(source, "path"));
    Ok(Some(table))
}

/// The commit of Copilot's clone of the marketplace at `url` (a URL, or `github.com/O/R`):
/// the folder under its cache of marketplaces whose `origin` is that URL.
fn clone_commit(url: &str) -> Result<Option<String>> {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")));
    let Some(clones) = cache.map(|c| c.join("copilot/marketplaces")) else {
        return Ok(None);
    };
    let Ok(read) = std::fs::read_dir(&clones) else {
        return Ok(None);
    };
    let wanted = url.trim_end_matches('/').trim_end_matches(".git");
    let mut folders: Vec<PathBuf> = read.filter_map(|e| e.ok().map(|e| e.path())).collect();
    folders.sort();
    for folder in folders {
        let config = folder.join(".git/config");
        if !config.is_file() {
            continue;
        }
        let bytes = read_regular(&config, MAX_CONFIG_BYTES)?;
        let origin = String::from_utf8_lossy(&bytes).lines().find_map(|line| {
            let (key, value) = line.trim().split_once('=')?;
            (key.trim() == "url").then(|| value.trim().to_owned())
        });
        let same = origin.is_some_and(|o| {
            let o = o.trim_end_matches('/').trim_end_matches(".git");
            o == wanted || o.ends_with(&format!("://{wanted}"))
        });
        if same {
            return head_commit(&folder);
        }
    }
    Ok(None)
}
