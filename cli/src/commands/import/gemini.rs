//! `--from gemini [DIR]`: Gemini CLI's own record of its extensions (DIR, default
//! `$GEMINI_CLI_HOME/.gemini`, else `~/.gemini`) as a manifest: each `extensions/NAME/`
//! with its install record (`.gemini-extension-install.json`: `source` and `type`), enabled
//! for the user as `extensions/extension-enablement.json` says (its rules evaluated at the
//! home folder, as Gemini CLI's `extensions disable` writes them). A `git` install is pinned
//! to the commit of the clone Gemini CLI copied (`extensions/NAME/.git`); a `local` copy and
//! a `link` are locked from their folder as it is now, a `github-release` at its tag, each
//! said so. Nothing of Gemini CLI's folder is written.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use serde_json::Value;

use super::Imported;
use super::manifest_of;
use super::records::{field, head_commit, read_json, text};

/// The install record Gemini CLI writes into each extension it installs.
pub(super) const INSTALL_RECORD: &str = ".gemini-extension-install.json";

/// Gemini CLI's folder: as given, else `$GEMINI_CLI_HOME/.gemini`, else `~/.gemini`.
pub(super) fn config_dir(given: Option<&Path>) -> PathBuf {
    given.map_or_else(
        || super::client_dir(None, "GEMINI_CLI_HOME", "").join(".gemini"),
        Path::to_path_buf,
    )
}

/// The manifest of Gemini CLI's enabled extensions in `dir`, with each one's folder.
pub(super) fn from_gemini(
    dir: &Path,
    warn: &dyn Fn(&str),
) -> Result<(String, Vec<(String, PathBuf)>)> {
    let extensions = dir.join("extensions");
    let Ok(read) = std::fs::read_dir(&extensions) else {
        bail!(
            "`{}` does not exist: is `{}` Gemini CLI's folder (`~/.gemini`)? Name it as `--from gemini DIR`",
            extensions.display(),
            dir.display()
        );
    };
    let enablement_path = extensions.join("extension-enablement.json");
    let enablement = if enablement_path.exists() {
        read_json(&enablement_path)?
    } else {
        Value::Null
    };
    let home = dir.parent().unwrap_or(Path::new("/"));
    let mut folders: Vec<PathBuf> = read
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir()))
        .collect();
    folders.sort();
    let mut entries = Vec::new();
    let mut left_out = Vec::new();
    for folder in folders {
        let Some(found) = extension(&folder, warn)? else {
            continue;
        };
        if !enabled(&enablement, &found.name, home, warn) {
            left_out.push(found.name);
            continue;
        }
        entries.push(found.imported);
    }
    if entries.is_empty() {
        bail!(
            "`{}` holds no enabled extension berth reads: nothing to import",
            extensions.display()
        );
    }
    let mut header = format!(
        "# Imported by `berth plugins import --from gemini` from `{}`.\n",
        dir.display()
    );
    for name in &left_out {
        header.push_str(&format!(
            "# `{name}` is installed but disabled there; left out.\n"
        ));
    }
    Ok(manifest_of(header, entries))
}

/// One installed extension: its name as Gemini CLI knows it, and what is imported.
struct Found {
    name: String,
    imported: Imported,
}

/// The extension in `folder`, or `None` (said so) where there is nothing berth imports.
fn extension(folder: &Path, warn: &dyn Fn(&str)) -> Result<Option<Found>> {
    let shown = folder.display();
    if folder.join(".berth").exists() {
        warn(&format!(
            "`{shown}` was written by `berth materialize gemini`: import the lock it came from instead; left out"
        ));
        return Ok(None);
    }
    let record_path = folder.join(INSTALL_RECORD);
    let record = if record_path.exists() {
        read_json(&record_path)?
    } else {
        Value::Null
    };
    let kind = text(&record, "type");
    let source = text(&record, "source");
    // A link is loaded from its source; any other install from its own folder.
    let loaded = match (kind, source) {
        (Some("link"), Some(source)) => PathBuf::from(source),
        _ => folder.to_path_buf(),
    };
    let manifest_path = loaded.join("gemini-extension.json");
    if !manifest_path.exists() {
        warn(&format!(
            "`{shown}` has no `gemini-extension.json` (at `{}`): Gemini CLI loads no extension from it; left out",
            loaded.display()
        ));
        return Ok(None);
    }
    let manifest = read_json(&manifest_path)?;
    let Some(name) = text(&manifest, "name").map(str::to_owned) else {
        warn(&format!(
            "`{}` has no `name`: Gemini CLI loads no extension from it; left out",
            manifest_path.display()
        ));
        return Ok(None);
    };
    let table = source_table(&name, kind, source, &record, folder, warn)?;
    let copy = folder.display().to_string();
    let locked_as = match (kind, source) {
        (Some("local"), Some(source)) if Path::new(source).is_dir() => source,
        (Some("git" | "github-release" | "link"), Some(source)) => source,
        _ => copy.as_str(),
    }
    .trim_end_matches('/')
    .rsplit('/')
    .next()
    .unwrap_or_default()
    .trim_end_matches(".git")
    .to_owned();
    Ok(Some(Found {
        imported: Imported {
            name: locked_as,
            table,
            folder: loaded,
        },
        name,
    }))
}

/// The `[[plugin]]` table of the extension `name` (in `folder`) as its install record
/// says where it came from (`kind`, `source`).
fn source_table(
    name: &str,
    kind: Option<&str>,
    source: Option<&str>,
    record: &Value,
    folder: &Path,
    warn: &dyn Fn(&str),
) -> Result<String> {
    let shown = folder.display();
    let mut table = String::from("\n[[plugin]]\n");
    match (kind, source) {
        (Some("git"), Some(url)) => git_source(&mut table, name, url, record, folder, warn)?,
        (Some("github-release"), Some(repo)) => {
            field(&mut table, "source", &github(repo));
            match text(record, "releaseTag").or_else(|| text(record, "ref")) {
                Some(tag) => {
                    field(&mut table, "ref", tag);
                    warn(&format!(
                        "extension `{name}`: Gemini CLI installed the release archive of `{tag}`; the lock holds the tag's git tree, which a built release asset may differ from"
                    ));
                }
                None => warn(&format!(
                    "extension `{name}`: Gemini CLI records no release tag for it; resolved now"
                )),
            }
        }
        (Some("local"), Some(path)) if Path::new(path).is_dir() => {
            warn(&format!(
                "extension `{name}` was copied from the folder `{path}`: locked from that folder as it is now"
            ));
            field(&mut table, "source", path);
        }
        (Some("link"), Some(path)) => {
            warn(&format!(
                "extension `{name}` is the folder `{path}`, linked: locked as it is now, as Gemini CLI reads it"
            ));
            field(&mut table, "source", path);
        }
        _ => {
            warn(&format!(
                "extension `{name}`: no install record berth reads, or its source folder is gone: locked from its copy `{shown}` as it is now"
            ));
            field(&mut table, "source", &shown.to_string());
        }
    }
    Ok(table)
}

/// A `git` install's source, pinned to the commit of the clone Gemini CLI copied into the
/// extension's folder, else to the `ref` it asked for (resolved now, said so).
fn git_source(
    table: &mut String,
    name: &str,
    url: &str,
    record: &Value,
    folder: &Path,
    warn: &dyn Fn(&str),
) -> Result<()> {
    let declared = if url.starts_with("github:") || url.contains("://github.com/") {
        github(url)
    } else {
        format!("git+{}", url.trim_start_matches("git+"))
    };
    field(table, "source", &declared);
    match head_commit(folder)? {
        Some(commit) => field(table, "ref", &commit),
        None => {
            warn(&format!(
                "extension `{name}`: Gemini CLI's copy records no commit; resolved now"
            ));
            if let Some(reference) = text(record, "ref") {
                field(table, "ref", reference);
            }
        }
    }
    Ok(())
}

/// `OWNER/REPO`, `github:OWNER/REPO` or a github.com URL as `github:OWNER/REPO`.
fn github(source: &str) -> String {
    let rest = source
        .trim_start_matches("github:")
        .trim_start_matches("https://github.com/")
        .trim_start_matches("http://github.com/")
        .trim_end_matches('/')
        .trim_end_matches(".git");
    format!("github:{rest}")
}

/// Whether `name` is enabled for the user: the last rule of its `overrides` matching the
/// home folder wins (`!` disables; a trailing `*` takes the folders below too), as Gemini
/// CLI's `ExtensionEnablementManager.isEnabled` decides. Rules for other folders are named.
fn enabled(enablement: &Value, name: &str, home: &Path, warn: &dyn Fn(&str)) -> bool {
    let at = format!("{}/", home.display().to_string().trim_end_matches('/'));
    let rules = enablement
        .get(name)
        .and_then(|e| e.get("overrides"))
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect::<Vec<_>>())
        .unwrap_or_default();
    let mut on = true;
    let mut elsewhere = Vec::new();
    for rule in rules {
        let (disable, base) = match rule.strip_prefix('!') {
            Some(base) => (true, base),
            None => (false, rule),
        };
        let matches = match base.strip_suffix('*') {
            Some(prefix) => {
                let prefix = prefix.trim_end_matches('/');
                at == format!("{prefix}/") || at.starts_with(&format!("{prefix}/"))
            }
            None => at == base,
        };
        if matches {
            on = !disable;
        } else {
            elsewhere.push(rule);
        }
    }
    if !elsewhere.is_empty() {
        warn(&format!(
            "extension `{name}` is enabled or disabled in some folders only ({}): imported as it is for `{}`",
            elsewhere.join(", "),
            home.display()
        ));
    }
    on
}
