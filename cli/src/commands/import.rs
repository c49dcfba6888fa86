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
//! The manifest is written only once its lock is made: nothing is half-written.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};
use berth_lockfile_schema::toml_string;
use berth_resolver::Upgrade;
use serde_json::Value;

use super::edit::{reparse, write_manifest};
use super::lock::{resolve, write_outcome};
use crate::args::ImportArgs;
use crate::context::Context;

/// The largest record read (a conversation's `meta.json` holds its start request).
const MAX_RECORD_BYTES: u64 = 16 << 20;

pub fn run(ctx: &Context, args: &ImportArgs) -> Result<()> {
    let _hold = ctx.hold_store()?;
    if ctx.manifest_path.exists() {
        bail!(
            "`{}` exists already; `import` writes a new manifest: run it in another folder, or name a new one with `--manifest`",
            ctx.manifest_label()
        );
    }
    let (text, installed) = match (&args.conversation, &args.installed) {
        (Some(dir), _) => (from_conversation(dir)?, Vec::new()),
        (None, Some(dir)) => from_installed(&installed_dir(dir.as_deref()))?,
        (None, None) => bail!("say what to import: `--conversation DIR` or `--installed [DIR]`"),
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
    // An installed folder edited since it was installed is not what its commit holds.
    for (name, folder) in &installed {
        let Some(locked) = lock.plugins.iter().find(|p| &p.name == name) else {
            continue;
        };
        let here =
            berth_store::hash_path_excluding(folder, berth_store::Exclude::top_level(&[".git"]));
        if here.ok().is_some_and(|h| h != locked.hash) {
            ctx.printer.warn(&format!(
                "plugin `{name}`: its installed folder `{}` differs from its recorded commit; the lock pins the commit",
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
    if let Some(given) = given {
        return given.to_path_buf();
    }
    let base = std::env::var_os("OH_PERSISTENCE_DIR")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".openhands")))
        .unwrap_or_else(|| PathBuf::from(".openhands"));
    base.join("plugins").join("installed")
}

/// A JSON record, bounded.
fn read_json(path: &Path) -> Result<Value> {
    let size = std::fs::metadata(path)
        .with_context(|| format!("could not read `{}`", path.display()))?
        .len();
    if size > MAX_RECORD_BYTES {
        bail!(
            "`{}` is {size} bytes, more than a record berth reads",
            path.display()
        );
    }
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("could not read `{}`", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("`{}` is not JSON", path.display()))
}

/// A string field of `value`, if any.
fn text<'v>(value: &'v Value, key: &str) -> Option<&'v str> {
    value
        .get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
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

/// The manifest of the SDK's installed plugins (`.installed.json`): each enabled one at
/// its recorded commit, the disabled ones as comments; with each plugin's folder.
fn from_installed(dir: &Path) -> Result<(String, Vec<(String, PathBuf)>)> {
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
    let mut out = format!(
        "# Imported by `berth plugins import --installed` from `{}`.\n",
        path.display()
    );
    let mut folders = Vec::new();
    let mut enabled = 0;
    for (name, info) in extensions {
        let Some(source) = text(info, "source") else {
            bail!("`{}`: plugin `{name}` has no `source`", path.display());
        };
        if info.get("enabled").and_then(Value::as_bool) == Some(false) {
            out.push_str(&format!(
                "\n# `{name}` ({source}) is installed but disabled: not imported.\n"
            ));
            continue;
        }
        enabled += 1;
        out.push_str("\n[[plugin]]\n");
        field(&mut out, "source", source);
        let requested = text(info, "requested_ref");
        match text(info, "resolved_ref") {
            Some(commit) => {
                field(&mut out, "ref", commit);
                out.pop();
                out.push_str(&format!(
                    "   # recorded at install{}\n",
                    requested.map_or(String::new(), |r| format!(" from `{r}`"))
                ));
            }
            None => optional(&mut out, "ref", requested),
        }
        optional(&mut out, "repo_path", text(info, "repo_path"));
        let folder = text(info, "install_path").map_or_else(|| dir.join(name), PathBuf::from);
        folders.push((name.clone(), folder));
    }
    if enabled == 0 {
        bail!(
            "`{}` records no enabled plugin: nothing to import",
            path.display()
        );
    }
    Ok((out, folders))
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

fn field(out: &mut String, key: &str, value: &str) {
    out.push_str(&format!("{key} = {}\n", toml_string(value)));
}

fn optional(out: &mut String, key: &str, value: Option<&str>) {
    if let Some(value) = value {
        field(out, key, value);
    }
}
