//! `berth marketplace remove`: the declaration taken out of the manifest (with the plugin
//! requests of it, under `--force`), then a new lock. The lock is made before either file
//! is written, so a failure leaves both as they were.

use anyhow::Result;
use berth_lockfile_schema::{Manifest, remove_marketplace};
use berth_resolver::{Network, Upgrade};

use crate::args::MarketplaceRemoveArgs;
use crate::commands::edit::{load, reparse, write_manifest};
use crate::commands::lock::{resolve, write_outcome};
use crate::context::{Context, Failure, error_text};

pub fn run(ctx: &Context, args: &MarketplaceRemoveArgs) -> Result<()> {
    let _hold = ctx.hold_store()?;
    let _guard = ctx.guard_lockfile()?;
    let text = load(ctx)?;
    let manifest = reparse(ctx, &text)?;
    let name = &args.name;
    super::declared(ctx, &manifest.marketplaces, name)?;
    if !args.force {
        refuse_if_asked(ctx, &manifest, name)?;
    }
    let removal = remove_marketplace(&ctx.manifest_label(), &text, name)?;
    let manifest = reparse(ctx, &removal.text)?;
    let previous = ctx.read_lock_to_replace()?;
    // Lock before writing anything: a plugin of another marketplace that needs one of
    // this marketplace's plugins fails here, naming the chain, and nothing changes.
    let lock = resolve(
        ctx,
        &manifest,
        previous.as_ref().map(|(l, _)| l),
        Upgrade::Nothing,
    )
    .map_err(|error| {
        let mut failure = match error.downcast::<Failure>() {
            Ok(failure) => failure,
            Err(other) => Failure {
                message: error_text(&other),
                notes: Vec::new(),
            },
        };
        failure.notes.push(format!(
            "nothing was written: `{}` and `{}` are as they were",
            ctx.manifest_label(),
            ctx.lock_label()
        ));
        failure
    })?;
    let lock = crate::commands::lock::admitted(
        ctx,
        previous.as_ref().map(|(l, _)| l),
        lock,
        &manifest,
        Network::Online,
    )?;
    write_manifest(ctx, &removal.text)?;
    let with = match removal.plugins.as_slice() {
        [] => String::new(),
        plugins => format!(
            " with the {} asked of it ({})",
            super::super::plugins(plugins.len()),
            plugins
                .iter()
                .map(|p| format!("`{p}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    ctx.printer.status(
        "Removed",
        &format!("marketplace `{name}` from `{}`{with}", ctx.manifest_label()),
    );
    write_outcome(ctx, previous.as_ref(), &lock)
}

/// Fails naming the `[[plugin]]` entries that ask for plugins of marketplace `name`, if
/// there are any.
fn refuse_if_asked(ctx: &Context, manifest: &Manifest, name: &str) -> Result<()> {
    let asking: Vec<String> = manifest
        .plugins
        .iter()
        .filter(|p| p.parsed_source().marketplace() == Some(name))
        .map(|p| format!("`{}` (line {})", p.display_source(), p.line))
        .collect();
    if asking.is_empty() {
        return Ok(());
    }
    let (them, count) = if asking.len() == 1 {
        ("it", "1 plugin".to_owned())
    } else {
        ("them", format!("{} plugins", asking.len()))
    };
    Err(Failure {
        message: format!(
            "`{}` still asks for {count} of marketplace `{name}`: {}; remove {them} first with `berth plugins remove NAME`, or pass `--force` to remove {them} with the marketplace",
            ctx.manifest_label(),
            asking.join(", "),
        ),
        notes: Vec::new(),
    }
    .into())
}
