//! `berth plugins import`: an OpenHands deployment's own record of its plugins as a new
//! manifest and its lock, so it adopts berth without rewriting its conversations.
//!
//! - `--conversation DIR`: a conversation the agent server persisted: the start request's
//!   `plugins` (`meta.json`) and its agent's `registered_marketplaces` (`base_state.json`,
//!   where 1.58.2 keeps the agent; `meta.json` where an older server kept it there); a
//!   `resolved_plugins` list, where one is given, pins each plugin to the commit it ran.
//! - `--installed [DIR]`: the SDK's installed plugins (`.installed.json`, written by
//!   `install_plugin`), the enabled ones each pinned to its recorded commit.
//!
//! - `--from claude|codex|gemini|copilot [DIR]`: a client's enabled plugins and their
//!   marketplaces (`claude.rs`, `codex.rs`, `gemini.rs`, `copilot.rs`), read with
//!   `records.rs`.
//!
//! The manifest is written only once its lock is made: nothing is half-written.

mod claude;
mod codex;
mod copilot;
mod gemini;
mod records;

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};
use berth_lockfile_schema::toml_string;
use berth_resolver::Upgrade;
use serde_json::Value;

use super::edit::{reparse, write_manifest};
use super::lock::{resolve, write_outcome};
use crate::args::{ImportArgs, ImportFrom};
use crate::context::Context;
use records::{client_dir, field, optional, read_json, read_regular, text};

/// The largest plugin manifest read for a plugin's name.
const MAX_MANIFEST_BYTES: u64 = 1 << 20;

pub fn run(ctx: &Context, args: &ImportArgs) -> Result<()> {
    let _hold = ctx.hold_store()?;
    if ctx.manifest_path.exists() {
        bail!(
            "`{}` exists already; `import` writes a new manifest: run it in another folder, or name a new one with `--manifest`",
            ctx.manifest_label()
        );
    }
    let warn = |warning: &str| ctx.printer.warn(warning);
    let (text, installed) = match (&args.conversation, &args.installed, &args.ambient) {
        _ if matches!(args.from, Some(ImportFrom::Claude)) => {
            claude::from_claude(&claude::config_dir(args.dir.as_deref()), &warn)?
        }
        _ if matches!(args.from, Some(ImportFrom::Codex)) => {
            codex::from_codex(&codex::config_dir(args.dir.as_deref()), &warn)?
        }
        _ if matches!(args.from, Some(ImportFrom::Gemini)) => {
            gemini::from_gemini(&gemini::config_dir(args.dir.as_deref()), &warn)?
        }
        _ if matches!(args.from, Some(ImportFrom::Copilot)) => {
            copilot::from_copilot(&copilot::config_dir(args.dir.as_deref()), &warn)?
        }
        (Some(dir), _, _) => (from_conversation(dir)?, Vec::new()),
        (None, Some(dir), _) => from_installed(&installed_dir(dir.as_deref()))?,
        (None, None, Some(work_dir)) => {
            from_ambient(work_dir.as_deref().unwrap_or(Path::new(".")), &warn)?
        }
        (None, None, None) => bail!(
            "say what to import: `--from claude|codex|gemini|copilot [DIR]`, `--conversation DIR`, `--installed [DIR]` or `--ambient [WORK_DIR]`"
        ),
    };
    let manifest = reparse(ctx, &text)
        .with_context(|| "the imported record makes no valid manifest".to_owned())?;
    let _guard = ctx.guard_lockfile()?;
    let lock = resolve(ctx, &manifest, None, Upgrade::Nothing)?;
    ctx.admit(
        None,
        &lock,
        Some(&manifest),
        berth_resolver::Network::Online,
        true,
    )?;
    // An installed folder edited since it was installed is not what its commit holds (nor,
    // for a copy of a folder, what the folder holds now). Gemini CLI's copy holds its
    // install record beside the extension.
    for (name, folder) in &installed {
        let Some(locked) = lock.plugins.iter().find(|p| &p.name == name) else {
            continue;
        };
        let here = berth_store::hash_path_excluding(
            folder,
            berth_store::Exclude::top_level(&[".git", gemini::INSTALL_RECORD]),
        );
        if here.ok().is_some_and(|h| h != locked.hash) {
            ctx.printer.warn(&format!(
                "plugin `{name}`: its installed folder `{}` differs from its recorded commit (or, copied from a folder, from that folder as it is now); the lock pins that",
                folder.display()
            ));
        }
    }
    write_manifest(ctx, &text)?;
    ctx.printer.status(
        "Imported",
        &format!(
            "{} into `{}`",
            super::approve::count(manifest.plugins.len(), "plugin"),
            ctx.manifest_label()
        ),
    );
    write_outcome(ctx, None, &lock)
}

/// `--installed`'s folder: as given, else the SDK's (`$OH_PERSISTENCE_DIR/plugins/installed`,
/// else `~/.openhands/plugins/installed`).
fn installed_dir(given: Option<&Path>) -> PathBuf {
    given.map(Path::to_path_buf).unwrap_or_else(|| {
        client_dir(None, "OH_PERSISTENCE_DIR", ".openhands").join("plugins/installed")
    })
}

/// The manifest of a persisted conversation: its registered marketplaces, then its plugins.
fn from_conversation(dir: &Path) -> Result<String> {
    let path = dir.join("meta.json");
    let meta = read_json(&path)?;
    let mut out = format!(
        "# Imported by `berth plugins import --conversation` from `{}`.\n",
        path.display()
    );
    const REGISTERED: &str = "/agent/agent_context/registered_marketplaces";
    let state = dir.join("base_state.json");
    let in_state = if state.exists() {
        read_json(&state)?.pointer(REGISTERED).cloned()
    } else {
        None
    };
    let registrations = meta
        .pointer(REGISTERED)
        .cloned()
        .or(in_state)
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_default();
    for (i, reg) in registrations.iter().enumerate() {
        registration(&mut out, reg)
            .with_context(|| format!("`{}`: registered marketplace {}", path.display(), i + 1))?;
    }
    let plugins = meta
        .get("plugins")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let resolved = meta
        .get("resolved_plugins")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for (i, plugin) in plugins.iter().enumerate() {
        let Some(source) = text(plugin, "source") else {
            bail!("`{}`: plugin {} has no `source`", path.display(), i + 1);
        };
        let repo_path = text(plugin, "repo_path");
        let asked = text(plugin, "ref");
        // The commit it ran, when the record kept it (`ResolvedPluginSource`).
        let ran = resolved
            .iter()
            .find(|r| text(r, "repo_path") == repo_path && text(r, "original_ref") == asked)
            .and_then(|r| text(r, "resolved_ref"));
        out.push_str("\n[[plugin]]\n");
        field(&mut out, "source", source);
        match (ran, asked) {
            (Some(commit), Some(asked)) if commit != asked => {
                field(&mut out, "ref", commit);
                out.pop();
                out.push_str(&format!(
                    "   # the commit `{asked}` was when the conversation ran\n"
                ));
            }
            (Some(commit), _) => field(&mut out, "ref", commit),
            (None, asked) => optional(&mut out, "ref", asked),
        }
        optional(&mut out, "repo_path", repo_path);
    }
    if plugins.is_empty() && registrations.is_empty() {
        bail!(
            "`{}` names no plugins and no registered marketplaces: nothing to import",
            path.display()
        );
    }
    Ok(out)
}

/// One plugin to import: its name as the SDK knows it, its `[[plugin]]` table, and its
/// folder on this machine.
struct Imported {
    name: String,
    table: String,
    folder: PathBuf,
}

/// The manifest of the SDK's installed plugins (`.installed.json`): each enabled one at
/// its recorded commit, the disabled ones as comments; with each plugin's folder.
fn from_installed(dir: &Path) -> Result<(String, Vec<(String, PathBuf)>)> {
    let path = dir.join(".installed.json");
    let (entries, comments) = installed(dir)?;
    if entries.is_empty() {
        bail!(
            "`{}` records no enabled plugin: nothing to import",
            path.display()
        );
    }
    let header = format!(
        "# Imported by `berth plugins import --installed` from `{}`.\n{comments}",
        path.display()
    );
    Ok(manifest_of(header, entries))
}

/// The enabled plugins `.installed.json` in `dir` records, and a comment line for each
/// disabled one.
fn installed(dir: &Path) -> Result<(Vec<Imported>, String)> {
    let path = dir.join(".installed.json");
    let record = read_json(&path).with_context(|| {
        format!(
            "`{}` holds no record of installed plugins (the SDK's `install_plugin` writes `.installed.json`)",
            dir.display()
        )
    })?;
    let Some(extensions) = record.get("extensions").and_then(Value::as_object) else {
        bail!("`{}` has no `extensions` object", path.display());
    };
    let mut entries = Vec::new();
    let mut comments = String::new();
    for (name, info) in extensions {
        let Some(source) = text(info, "source") else {
            bail!("`{}`: plugin `{name}` has no `source`", path.display());
        };
        if info.get("enabled").and_then(Value::as_bool) == Some(false) {
            comments.push_str(&format!(
                "\n# `{name}` ({source}) is installed but disabled: not imported.\n"
            ));
            continue;
        }
        let mut table = String::from("\n[[plugin]]\n");
        field(&mut table, "source", source);
        let requested = text(info, "requested_ref");
        match text(info, "resolved_ref") {
            Some(commit) => {
                field(&mut table, "ref", commit);
                table.pop();
                table.push_str(&format!(
                    "   # recorded at install{}\n",
                    requested.map_or(String::new(), |r| format!(" from `{r}`"))
                ));
            }
            None => optional(&mut table, "ref", requested),
        }
        optional(&mut table, "repo_path", text(info, "repo_path"));
        let folder = text(info, "install_path").map_or_else(|| dir.join(name), PathBuf::from);
        entries.push(Imported {
            name: name.clone(),
            table,
            folder,
        });
    }
    Ok((entries, comments))
}

/// The manifest `header` then `entries`, with each entry's name and folder.
fn manifest_of(header: String, entries: Vec<Imported>) -> (String, Vec<(String, PathBuf)>) {
    let mut out = header;
    let mut folders = Vec::new();
    for entry in entries {
        out.push_str(&entry.table);
        folders.push((entry.name, entry.folder));
    }
    (out, folders)
}

/// The manifest of the plugins the SDK loads by itself into a conversation in `work_dir`
/// (its `load_available_plugins(work_dir, include_user=True, include_project=True)`): the
/// user's (`~/.agents/plugins/*`, then `$OH_PERSISTENCE_DIR/plugins/*`, the earlier of a
/// name winning; then the enabled installed plugins at their recorded commits), then the
/// project's (`.agents/plugins/*` and `.openhands/plugins/*` of `work_dir`, then of its git
/// root), which replace a user plugin of the same name. Folders are imported by their
/// path on this machine, as they are now.
fn from_ambient(work_dir: &Path, warn: &dyn Fn(&str)) -> Result<(String, Vec<(String, PathBuf)>)> {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default();
    let persistence = std::env::var_os("OH_PERSISTENCE_DIR")
        .filter(|d| !d.is_empty())
        .map_or_else(|| home.join(".openhands"), PathBuf::from);
    let installed_dir = persistence.join("plugins").join("installed");
    let mut user: Vec<Imported> = Vec::new();
    for dir in [home.join(".agents/plugins"), persistence.join("plugins")] {
        for found in plugin_folders(&dir, &installed_dir, warn) {
            if !user.iter().any(|u| u.name == found.name) {
                user.push(found);
            }
        }
    }
    let record = installed_dir.join(".installed.json");
    match std::fs::symlink_metadata(&record) {
        Ok(meta) if meta.is_file() => {
            for found in installed(&installed_dir)?.0 {
                if !user.iter().any(|u| u.name == found.name) {
                    user.push(found);
                }
            }
        }
        Ok(_) => warn(&format!(
            "`{}` is not a regular file, so it is not read: its installed plugins are not imported",
            record.display()
        )),
        Err(_) => {}
    }
    let work_dir = std::fs::canonicalize(work_dir)
        .with_context(|| format!("`{}` is not a folder here", work_dir.display()))?;
    let mut roots = vec![work_dir.clone()];
    if let Some(root) = work_dir.ancestors().find(|d| d.join(".git").exists())
        && root != work_dir
    {
        roots.push(root.to_path_buf());
    }
    let mut project: Vec<Imported> = Vec::new();
    for root in &roots {
        for sub in [".agents/plugins", ".openhands/plugins"] {
            for found in plugin_folders(&root.join(sub), Path::new(""), warn) {
                if !project.iter().any(|p| p.name == found.name) {
                    project.push(found);
                }
            }
        }
    }
    // A project plugin replaces a user plugin of its name, in that one's place.
    let mut entries = user;
    for found in project {
        match entries.iter_mut().find(|e| e.name == found.name) {
            Some(slot) => *slot = found,
            None => entries.push(found),
        }
    }
    if entries.is_empty() {
        bail!(
            "the OpenHands SDK would load no plugin by itself for `{}`: nothing to import",
            work_dir.display()
        );
    }
    let header = format!(
        "# Imported by `berth plugins import --ambient` for `{}`: the plugins the OpenHands SDK loads by itself there.\n",
        work_dir.display()
    );
    Ok(manifest_of(header, entries))
}

/// Each plugin folder in `dir` (sorted by name; `skip` left out), named as the SDK's
/// `Plugin.load` names it: its manifest's `name`, else the folder's. A manifest that is not
/// a regular file is never read: `warn` names it.
fn plugin_folders(dir: &Path, skip: &Path, warn: &dyn Fn(&str)) -> Vec<Imported> {
    let Ok(read) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut folders: Vec<PathBuf> = read
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir() && p != skip)
        .collect();
    folders.sort();
    folders
        .into_iter()
        .map(|folder| {
            let named = [".plugin/plugin.json", ".claude-plugin/plugin.json"]
                .iter()
                .find_map(|m| {
                    let path = folder.join(m);
                    std::fs::symlink_metadata(&path).ok()?;
                    // Only a regular file is read, bounded; anything else is named and left
                    // out (the folder's name stands in), as the resolver reads manifests.
                    let bytes = read_regular(&path, MAX_MANIFEST_BYTES)
                        .map_err(|e| warn(&format!("{e:#}; the plugin is named after its folder")))
                        .ok()?;
                    let value: Value = serde_json::from_slice(&bytes).ok()?;
                    value.get("name")?.as_str().map(str::to_owned)
                });
            let name = named.unwrap_or_else(|| {
                folder
                    .file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned()
            });
            let mut table = String::from("\n[[plugin]]\n");
            field(&mut table, "source", &folder.display().to_string());
            Imported {
                name,
                table,
                folder,
            }
        })
        .collect()
}

/// A registered marketplace as a `[[marketplace]]` table.
fn registration(out: &mut String, reg: &Value) -> Result<()> {
    let (Some(name), Some(source)) = (text(reg, "name"), text(reg, "source")) else {
        bail!("it has no `name` or `source`");
    };
    out.push_str("\n[[marketplace]]\n");
    field(out, "name", name);
    field(out, "source", source);
    optional(out, "ref", text(reg, "ref"));
    optional(out, "repo_path", text(reg, "repo_path"));
    match reg.get("auto_load") {
        Some(Value::Bool(true)) => out.push_str("auto_load = true\n"),
        Some(Value::Array(names)) if !names.is_empty() => {
            let names: Vec<String> = names
                .iter()
                .filter_map(Value::as_str)
                .map(toml_string)
                .collect();
            out.push_str(&format!("auto_load = [{}]\n", names.join(", ")));
        }
        _ => {}
    }
    Ok(())
}
