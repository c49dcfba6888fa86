//! `berth agent exec`, and the agent environment `berth run` activates.

use std::os::unix::process::CommandExt;

use anyhow::{Context as _, Result, bail};
use berth_lockfile_schema::LockedAgent;
use berth_runtime::agent_env::{AgentEnv, ensure_env};

use crate::args::AgentExecArgs;
use crate::context::Context;

/// The locked agent's environment, built offline from the store if it is not there yet.
pub fn env(ctx: &Context, agent: &LockedAgent) -> Result<AgentEnv> {
    let env = ensure_env(&ctx.store, agent)?;
    if env.created {
        ctx.printer.status(
            "Created",
            &format!(
                "the environment of agent `{}` {} ({})",
                agent.package,
                agent.version,
                env.path.display()
            ),
        );
    }
    Ok(env)
}

pub fn exec(ctx: &Context, args: &AgentExecArgs) -> Result<()> {
    let lock = ctx.runtime_lock(args.frozen)?;
    let Some(agent) = &lock.agent else {
        bail!(
            "`{}` locks no agent package; add an `[agent]` table to the manifest and run `berth plugins lock`",
            ctx.lock_label()
        );
    };
    let env = env(ctx, agent)?;
    let error = env.launcher(&args.args).exec();
    Err(error).with_context(|| format!("could not run `{}`", env.python().display()))
}
