//! `berth plugins add`, `remove` and `update`: edit the manifest with `toml_edit`, keeping
//! its comments, order and layout, then lock.

use anyhow::{Context as _, Result, bail};
use berth_lockfile_schema::{Manifest, PluginRequest, parse_manifest};
use berth_resolver::Upgrade;
use toml_edit::{ArrayOfTables, DocumentMut, Item, Table, value};

use super::lock::{lock_and_write, resolve};
use crate::args::{AddArgs, RemoveArgs, UpdateArgs};
use crate::context::{Context, Failure, write_atomically};

/// The manifest's text, and its parse; an absent manifest is an empty one.
fn load(ctx: &Context) -> Result<(String, DocumentMut)> {
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
    let doc: DocumentMut = text
        .parse()
        .with_context(|| format!("could not parse `{}`", ctx.manifest_label()))?;
    Ok((text, doc))
}

fn reparse(ctx: &Context, text: &str) -> Result<Manifest> {
    Ok(parse_manifest(&ctx.manifest_label(), text)?.manifest)
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
    let (_, mut doc) = load(ctx)?;
    let mut table = Table::new();
    table["source"] = value(&args.source);
    if let Some(r) = &args.git_ref {
        table["ref"] = value(r);
    }
    if let Some(v) = &args.version {
        table["version"] = value(v);
    }
    if let Some(p) = &args.repo_path {
        table["repo_path"] = value(p);
    }
    append(&mut doc, table)?;
    let text = doc.to_string();
    let manifest = reparse(ctx, &text)?;
    let previous = ctx.read_lock_to_replace()?;
    // Resolve before writing anything: the new plugin's name is only known once fetched.
    let lock = resolve(
        ctx,
        &manifest,
        previous.as_ref().map(|(l, _)| l),
        Upgrade::Nothing,
    )?;
    let new = lock.plugins.last().expect("the added entry is locked");
    if let Some((i, clash)) = lock.plugins[..lock.plugins.len() - 1]
        .iter()
        .enumerate()
        .find(|(_, p)| p.name == new.name)
        && !args.force
    {
        return Err(Failure {
            message: format!(
                "a plugin named `{}` is already in `{}` (entry {}, `{}`); pass `--force` to add it anyway (the later entry wins name clashes)",
                new.name,
                ctx.manifest_label(),
                i + 1,
                clash.source
            ),
            notes: Vec::new(),
        }
        .into());
    }
    write_atomically(&ctx.manifest_path, text.as_bytes())
        .with_context(|| format!("could not write `{}`", ctx.manifest_label()))?;
    ctx.printer.status(
        "Added",
        &format!("`{}` to `{}`", new.name, ctx.manifest_label()),
    );
    lock_and_write(ctx, &manifest, previous.as_ref(), Upgrade::Nothing)?;
    Ok(())
}

/// Appends a `[[plugin]]` table, or an inline table when the manifest writes its plugins
/// as `plugin = [{...}]`.
fn append(doc: &mut DocumentMut, mut table: Table) -> Result<()> {
    match doc.get_mut("plugin") {
        None => {
            let mut array = ArrayOfTables::new();
            table
                .decor_mut()
                .set_prefix(if doc.as_table().is_empty() { "" } else { "\n" });
            array.push(table);
            doc.insert("plugin", Item::ArrayOfTables(array));
        }
        Some(Item::ArrayOfTables(array)) => {
            table.decor_mut().set_prefix("\n");
            array.push(table);
        }
        Some(Item::Value(toml_edit::Value::Array(array))) => {
            array.push(table.into_inline_table());
        }
        Some(_) => bail!("`plugin` in the manifest is not a list of tables; fix it first"),
    }
    Ok(())
}

pub fn remove(ctx: &Context, args: &RemoveArgs) -> Result<()> {
    let _hold = ctx.hold_store()?;
    let _guard = ctx.guard_lockfile()?;
    let (_, mut doc) = load(ctx)?;
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
    let doomed: Vec<usize> = lock
        .plugins
        .iter()
        .enumerate()
        .filter(|(_, p)| p.name == args.name)
        .map(|(i, _)| i)
        .collect();
    if doomed.is_empty() {
        let names: Vec<String> = lock
            .plugins
            .iter()
            .map(|p| format!("`{}`", p.name))
            .collect();
        bail!(
            "no plugin named `{}` in `{}`; the plugins are {}",
            args.name,
            ctx.manifest_label(),
            if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(", ")
            }
        );
    }
    match doc.get_mut("plugin") {
        Some(Item::ArrayOfTables(array)) => {
            for i in doomed.iter().rev() {
                array.remove(*i);
            }
        }
        Some(Item::Value(toml_edit::Value::Array(array))) => {
            for i in doomed.iter().rev() {
                array.remove(*i);
            }
        }
        _ => bail!("`plugin` in the manifest is not a list of tables"),
    }
    let text = doc.to_string();
    let manifest = reparse(ctx, &text)?;
    write_atomically(&ctx.manifest_path, text.as_bytes())
        .with_context(|| format!("could not write `{}`", ctx.manifest_label()))?;
    ctx.printer.status(
        "Removed",
        &format!(
            "`{}` from `{}` ({} entries)",
            args.name,
            ctx.manifest_label(),
            doomed.len()
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
