//! `--from codex [DIR]`: Codex's own record of its plugins (DIR, default `$CODEX_HOME`, else
//! `~/.codex`) as a manifest: `config.toml`'s `[marketplaces.NAME]` (a local folder, or a
//! git source at its `ref`) and every `[plugins."PLUGIN@MARKETPLACE"]` with `enabled = true`
//! that Codex has installed (`plugins/cache/MARKETPLACE/PLUGIN/VERSION/`). Codex records no
//! commit for a git marketplace: one without a full commit as its `ref` is resolved now,
//! and said so. Nothing of Codex's folder is written.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};
use toml_edit::{DocumentMut, Item};

use super::{Imported, field, manifest_of, optional, read_regular};

/// The largest `config.toml` read.
const MAX_CONFIG_BYTES: u64 = 4 << 20;

/// Codex's folder: as given, else `$CODEX_HOME`, else `~/.codex`.
pub(super) fn config_dir(given: Option<&Path>) -> PathBuf {
    super::client_dir(given, "CODEX_HOME", ".codex")
}

/// The manifest of Codex's enabled, installed plugins in `dir`, with each one's installed
/// folder.
pub(super) fn from_codex(
    dir: &Path,
    warn: &dyn Fn(&str),
) -> Result<(String, Vec<(String, PathBuf)>)> {
    let path = dir.join("config.toml");
    if !path.exists() {
        bail!(
            "`{}` does not exist: is `{}` Codex's folder? Name it as `--from codex DIR`",
            path.display(),
            dir.display()
        );
    }
    let text = String::from_utf8(read_regular(&path, MAX_CONFIG_BYTES)?)
        .with_context(|| format!("`{}` is not UTF-8", path.display()))?;
    let config: DocumentMut = text
        .parse()
        .with_context(|| format!("`{}` is not TOML", path.display()))?;
    let mut markets: BTreeMap<String, String> = BTreeMap::new();
    let mut entries = Vec::new();
    let mut left_out = Vec::new();
    let plugins = config.get("plugins").and_then(Item::as_table_like);
    for (id, table) in plugins.into_iter().flat_map(|t| t.iter()) {
        let Some((name, market)) = id.rsplit_once('@') else {
            warn(&format!(
                "`[plugins.\"{id}\"]` names no marketplace; left out"
            ));
            continue;
        };
        let enabled = table
            .as_table_like()
            .and_then(|t| t.get("enabled"))
            .and_then(Item::as_bool);
        if enabled != Some(true) {
            left_out.push(id.to_owned());
            continue;
        }
        let Some(folder) = installed(dir, market, name) else {
            warn(&format!(
                "`{id}` is enabled but Codex has not installed it (`{}`); left out",
                dir.join("plugins/cache").join(market).join(name).display()
            ));
            continue;
        };
        if !markets.contains_key(market) {
            let Some(table) = marketplace(&config, market, warn) else {
                warn(&format!(
                    "`{id}`: its marketplace `{market}` is not in `{}` in a form berth reads; left out",
                    path.display()
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
            folder,
        });
    }
    if entries.is_empty() {
        bail!(
            "`{}` enables no installed plugin from a marketplace berth reads: nothing to import",
            path.display()
        );
    }
    let mut header = format!(
        "# Imported by `berth plugins import --from codex` from `{}`.\n",
        dir.display()
    );
    for id in &left_out {
        header.push_str(&format!("# `{id}` is not enabled there; left out.\n"));
    }
    header.extend(markets.into_values());
    Ok(manifest_of(header, entries))
}

/// The folder Codex installed `name` of `market` into: its one version folder (the newest
/// by name where there are several).
fn installed(dir: &Path, market: &str, name: &str) -> Option<PathBuf> {
    if [market, name]
        .iter()
        .any(|part| part.is_empty() || part.contains('/') || part.starts_with('.'))
    {
        return None;
    }
    let mut versions: Vec<PathBuf> =
        std::fs::read_dir(dir.join("plugins/cache").join(market).join(name))
            .ok()?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_dir())
            .collect();
    versions.sort();
    versions.pop()
}

/// `[marketplaces.NAME]` as a `[[marketplace]]` table.
fn marketplace(config: &DocumentMut, name: &str, warn: &dyn Fn(&str)) -> Option<String> {
    let table = config
        .get("marketplaces")
        .and_then(Item::as_table_like)?
        .get(name)?
        .as_table_like()?;
    let text = |key: &str| {
        table
            .get(key)
            .and_then(Item::as_str)
            .filter(|s| !s.is_empty())
    };
    let source = text("source")?;
    let mut out = String::from("\n[[marketplace]]\n");
    field(&mut out, "name", name);
    match text("source_type") {
        Some("local") => {
            warn(&format!(
                "marketplace `{name}` is the folder `{source}`: locked as it is now, as Codex reads it"
            ));
            field(&mut out, "source", source);
        }
        Some("git") => {
            let declared = if source.contains("://") || source.starts_with("git@") {
                format!("git+{}", source.trim_start_matches("git+"))
            } else {
                format!("github:{source}")
            };
            field(&mut out, "source", &declared);
            let reference = text("ref");
            if !reference.is_some_and(|r| r.len() == 40 && r.bytes().all(|b| b.is_ascii_hexdigit()))
            {
                warn(&format!(
                    "marketplace `{name}`: Codex records no commit for it; resolved now"
                ));
            }
            optional(&mut out, "ref", reference);
        }
        _ => return None,
    }
    Some(out)
}
