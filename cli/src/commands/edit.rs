//! `berth plugins add`, `remove` and `update`: read the manifest, have
//! `berth_lockfile_schema` edit its text (comments, order and layout kept), write it, then
//! lock.

use anyhow::{Context as _, Result};
use berth_lockfile_schema::{
    Manifest, NewPlugin, PluginRequest, add_plugin, parse_manifest, remove_plugin,
};
use berth_resolver::Upgrade;

use super::lock::{admitted, lock_and_write, resolve, write_outcome};
use crate::args::{AddArgs, RemoveArgs, UpdateArgs};
use crate::context::{Context, Failure, write_atomically};

/// The manifest's text; an absent manifest is an empty one.
pub(crate) fn load(ctx: &Context) -> Result<String> {
    let text = match std::fs::read_to_string(&ctx.manifest_path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => {
            return Err(e).with_context(|| format!("could not read `{}`", ctx.manifest_label()));
        }
    };
    // Validate with berth's own parser first, for its messages (file, line, column).
    if !text.is_empty() {
        ctx.read_manifest()?;
    }
    Ok(text)
}

pub(crate) fn reparse(ctx: &Context, text: &str) -> Result<Manifest> {
    Ok(parse_manifest(&ctx.manifest_label(), text)?.manifest)
}

pub(crate) fn write_manifest(ctx: &Context, text: &str) -> Result<()> {
    write_atomically(&ctx.manifest_path, text.as_bytes())
        .with_context(|| format!("could not write `{}`", ctx.manifest_label()))
}

pub fn add(ctx: &Context, args: &AddArgs) -> Result<()> {
    let _hold = ctx.hold_store()?;
    // The request must be valid on its own before the manifest is touched.
    PluginRequest::new(
        &args.source,
        args.git_ref.as_deref(),
        args.version.as_deref(),
        args.repo_path.as_deref(),
    )
    .map_err(|message| anyhow::anyhow!("{message}"))?;
    let _guard = ctx.guard_lockfile()?;
    let entry = NewPlugin {
        source: &args.source,
        git_ref: args.git_ref.as_deref(),
        version: args.version.as_deref(),
        repo_path: args.repo_path.as_deref(),
    };
    let text = add_plugin(&ctx.manifest_label(), &load(ctx)?, &entry)?;
    let manifest = reparse(ctx, &text)?;
    let previous = ctx.read_lock_to_replace()?;
    // Lock before writing anything: the new plugin's name is only known once fetched. This
    // lock is the one written below, so the new entry is resolved once.
    let lock = resolve(
        ctx,
        &manifest,
        previous.as_ref().map(|(l, _)| l),
        Upgrade::Nothing,
    )
    .map_err(|e| new_entry_named(ctx, &manifest, e))?;
    let new = lock.plugins.last().expect("the added entry is locked");
    let added = new.name.clone();
    if let Some((i, clash)) = lock.plugins[..lock.plugins.len() - 1]
        .iter()
        .enumerate()
        .find(|(_, p)| p.name == new.name)
        && !args.force
    {
        let place = match &clash.auto_load {
            Some(market) => format!("the lock, auto-loaded by marketplace `{market}`"),
            None => {
                // Its place among the manifest's entries (what only a dependency or a
                // marketplace brings is not one).
                let entry = lock.plugins[..i]
                    .iter()
                    .filter(|p| p.is_requested())
                    .count()
                    + 1;
                format!(
                    "`{}` (entry {entry}, `{}`)",
                    ctx.manifest_label(),
                    clash.source
                )
            }
        };
        return Err(Failure {
            message: format!(
                "a plugin named `{}` is already in {place}; pass `--force` to add it anyway (the later entry wins name clashes)",
                new.name,
            ),
            notes: Vec::new(),
        }
        .into());
    }
    let lock = admitted(
        ctx,
        previous.as_ref().map(|(l, _)| l),
        lock,
        &manifest,
        berth_resolver::Network::Online,
    )?;
    write_manifest(ctx, &text)?;
    ctx.printer
        .status("Added", &format!("`{added}` to `{}`", ctx.manifest_label()));
    write_outcome(ctx, previous.as_ref(), &lock)
}

/// A failure to lock the entry being added names it as the new entry: the line the
/// manifest's label would give is in text that was never written.
fn new_entry_named(ctx: &Context, manifest: &Manifest, error: anyhow::Error) -> anyhow::Error {
    let Some(new) = manifest.plugins.last() else {
        return error;
    };
    let mut failure = match error.downcast::<Failure>() {
        Ok(failure) => failure,
        Err(other) => return other,
    };
    let label = format!("{}:{}: ", ctx.manifest_label(), new.line);
    let named = |text: &str| text.replace(&label, "the new entry ");
    failure.message = named(&failure.message);
    for note in &mut failure.notes {
        *note = named(note);
    }
    failure.into()
}

pub fn remove(ctx: &Context, args: &RemoveArgs) -> Result<()> {
    let _hold = ctx.hold_store()?;
    let _guard = ctx.guard_lockfile()?;
    let text = load(ctx)?;
    let manifest = ctx.read_manifest()?;
    let previous = ctx.read_lock_to_replace()?;
    // Names come from the lock, made current first (without moving any pin).
    let lock = match &previous {
        Some((lock, _)) if lock.staleness(&manifest).is_empty() => lock.clone(),
        _ => resolve(
            ctx,
            &manifest,
            previous.as_ref().map(|(l, _)| l),
            Upgrade::Nothing,
        )?,
    };
    let removal = remove_plugin(&ctx.manifest_label(), &text, &lock, &args.name)?;
    let manifest = reparse(ctx, &removal.text)?;
    write_manifest(ctx, &removal.text)?;
    ctx.printer.status(
        "Removed",
        &format!(
            "`{}` from `{}` ({} {})",
            args.name,
            ctx.manifest_label(),
            removal.removed,
            if removal.removed == 1 {
                "entry"
            } else {
                "entries"
            }
        ),
    );
    lock_and_write(ctx, &manifest, previous.as_ref(), Upgrade::Nothing)?;
    Ok(())
}

pub fn update(ctx: &Context, args: &UpdateArgs) -> Result<()> {
    let _hold = ctx.hold_store()?;
    let _guard = ctx.guard_lockfile()?;
    let manifest = ctx.read_manifest()?;
    let previous = ctx.read_lock_to_replace()?;
    let upgrade = if args.names.is_empty() {
        Upgrade::All
    } else {
        Upgrade::Plugins(args.names.clone())
    };
    lock_and_write(ctx, &manifest, previous.as_ref(), upgrade)?;
    Ok(())
}
