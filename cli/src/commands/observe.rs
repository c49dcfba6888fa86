//! `berth plugins observe`: what the locked MCP servers offer the model, recorded in the
//! lock (or, with `--check`, compared with it).

use anyhow::Result;

use crate::args::ObserveArgs;
use crate::context::{Context, Failure};
use crate::tools::{Again, Remote, check_against, observable, observe_lock, report};

pub fn run(ctx: &Context, args: &ObserveArgs) -> Result<()> {
    let _hold = ctx.hold_store()?;
    let _guard = ctx.guard_lockfile()?;
    let lock = ctx.require_lock("")?;
    let names: Vec<&str> = lock.plugins.iter().map(|p| p.name.as_str()).collect();
    for name in &args.names {
        if !names.contains(&name.as_str()) {
            return Err(Failure {
                message: format!(
                    "no plugin named `{name}` in `{}`{}",
                    ctx.lock_label(),
                    berth_lockfile_schema::suggest::did_you_mean(
                        &berth_lockfile_schema::suggest::nearest(name, names.iter().copied())
                    )
                ),
                notes: Vec::new(),
            }
            .into());
        }
    }
    let allowed = observable(ctx, &lock)?;
    for (plugin, why) in &allowed {
        let asked = args.names.is_empty() || args.names.contains(plugin);
        if let (true, Some(why)) = (asked, why) {
            ctx.printer.warn(&format!(
                "plugin `{plugin}` may not run ({why}), so its servers are not started"
            ));
        }
    }
    let remote = Remote {
        ask: args.remote,
        env: args.env,
    };
    let (records, made) = observe_lock(
        ctx,
        &lock,
        &|| Ok(allowed.clone()),
        &args.names,
        Again::All,
        remote,
    )?;
    if args.check {
        return check_against(ctx, &lock, &made);
    }
    report(ctx, &made);
    if records == lock.tools {
        ctx.printer.status(
            "Recorded",
            &format!(
                "{} servers in `{}` (unchanged)",
                records.len(),
                ctx.lock_label()
            ),
        );
        return Ok(());
    }
    let lock = berth_lockfile_schema::Lock {
        tools: records,
        ..lock
    };
    ctx.write_lock(&lock.to_toml())?;
    ctx.printer.status(
        "Recorded",
        &format!("{} servers in `{}`", lock.tools.len(), ctx.lock_label()),
    );
    Ok(())
}
