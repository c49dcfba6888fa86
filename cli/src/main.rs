//! The `berth` command line: parses arguments, runs one command, maps the outcome to an
//! exit status (0 success, 1 failure, 2 usage).
//!
//! # Where things are
//!
//! Clap arguments, one module per command, the printer, exit codes, the project's policy
//! and approvals and the gate each command passes (`governance.rs`), signing approvals with
//! `ssh-keygen` (`commands/approve/ssh.rs`), `[sources] require_signed` checked on the
//! objects the resolver reads (`signed_sources.rs`, called by `admit`, `lock --check` and
//! `verify`), observing a lock's MCP servers, `jobs` at a time, and keeping their manifests
//! in the store (`tools/`, asking again in `tools/check.rs`; remote ones through the server
//! crate's `mcp_remote.rs`, which `berth serve` also asks them again with), usage errors
//! that point the way (`usage.rs`), docs/commands.md's generated reference (`reference.rs`,
//! a test).
//!
//! It uses everything; it must not hold logic another front end would need.

mod args;
mod commands;
mod context;
mod failure;
mod governance;
mod printer;
#[cfg(test)]
mod reference;
mod signed_sources;
mod tools;
mod usage;

use std::process::ExitCode;

use berth_review::sandbox;
use clap::Parser;

use crate::args::{
    AgentCommand, Cli, Command, HooksCommand, MarketplaceArgs, MarketplaceCommand, McpCommand,
    PluginsArgs, PluginsCommand,
};
use crate::context::{Context, Exit, Failure};
use crate::printer::{Printer, Verbosity};

fn main() -> ExitCode {
    // Inside the sandbox berth runs itself again to confine and start a plugin's program:
    // a hidden command, handled before anything else is read.
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() == Some(std::ffi::OsStr::new(sandbox::HELPER_COMMAND)) {
        sandbox::exec_inside(args.collect());
    }
    sandbox::helper_is_this_program();
    let cli = Cli::try_parse().unwrap_or_else(|error| usage::with_tips(error).exit());
    let verbosity = if cli.quiet {
        Verbosity::Quiet
    } else if cli.verbose > 0 {
        Verbosity::Verbose
    } else {
        Verbosity::Normal
    };
    let color = cli.color.on_stderr();
    init_tracing(cli.verbose, matches!(cli.command, Command::Serve(_)), color);
    let printer = Printer::new(verbosity, color);
    match run(&cli, printer) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            if let Some(Exit(code)) = error.downcast_ref::<Exit>() {
                return ExitCode::from(*code);
            }
            let printer = Printer::new(verbosity, color);
            match error.downcast_ref::<Failure>() {
                Some(failure) => {
                    printer.error(&failure.message);
                    for note in &failure.notes {
                        printer.note(note);
                    }
                }
                None => printer.error(&context::error_text(&error)),
            }
            if failure::could_not_write(&error) {
                printer.note(failure::READ_ONLY_HINT);
            }
            ExitCode::FAILURE
        }
    }
}

fn run(cli: &Cli, printer: Printer) -> anyhow::Result<()> {
    match &cli.command {
        Command::Plugins(plugins) => run_plugins(cli, plugins, printer),
        Command::Marketplace(market) => run_marketplace(cli, market, printer),
        Command::Run(args) => {
            let ctx = Context::new(cli, &args.project, printer)?;
            commands::run::run(&ctx, args)
        }
        Command::Materialize(args) => {
            let ctx = Context::new(cli, &args.project, printer)?;
            commands::materialize::run(&ctx, args)
        }
        Command::Audit(args) => {
            let ctx = Context::new(cli, &args.project, printer)?;
            commands::audit::run(&ctx, args)
        }
        Command::Serve(args) => commands::serve::run(cli, args, printer),
        Command::Init(args) => commands::init::run(args, &printer),
        Command::Completions(args) => {
            commands::init::completions(args.shell);
            Ok(())
        }
        Command::Store(store) => commands::store::run(cli, store, printer),
        Command::Agent(agent) => {
            let ctx = Context::new(cli, &agent.project, printer)?;
            match &agent.command {
                AgentCommand::Exec(args) => commands::agent::exec(&ctx, args),
            }
        }
        Command::Mcp(mcp) => {
            let ctx = Context::new(cli, &mcp.project, printer)?;
            match &mcp.command {
                McpCommand::Observe(args) => commands::observe::run(
                    &ctx.sandboxed(&args.sandbox),
                    &crate::args::ObserveArgs {
                        names: args.names.clone(),
                        check: args.check,
                        remote: true,
                        env: args.env,
                        sandbox: args.sandbox,
                    },
                ),
            }
        }
        Command::Hooks(hooks) => {
            let ctx = Context::new(cli, &hooks.project, printer)?;
            match &hooks.command {
                HooksCommand::Run(args) => commands::hooks::run(&ctx, args),
            }
        }
    }
}

/// `berth plugins …`: the fetching commands get their fetch options.
fn run_plugins(cli: &Cli, plugins: &PluginsArgs, printer: Printer) -> anyhow::Result<()> {
    let ctx = Context::new(cli, &plugins.project, printer)?;
    match &plugins.command {
        PluginsCommand::Lock(args) => commands::lock::run(
            &ctx.fetching(cli, &args.fetch)?.observing(&args.observe),
            args,
        ),
        PluginsCommand::Sync(args) => commands::sync::run(
            &ctx.fetching(cli, &args.fetch)?.observing(&args.observe),
            args,
        ),
        PluginsCommand::Verify(args) => {
            commands::verify::run(&ctx.fetching(cli, &args.fetch)?, args)
        }
        PluginsCommand::List(args) => commands::list::run(&ctx, args),
        PluginsCommand::Show(args) => commands::show::run(&ctx, args),
        PluginsCommand::Add(args) => commands::edit::add(
            &ctx.fetching(cli, &args.fetch)?.observing(&args.observe),
            args,
        ),
        PluginsCommand::Remove(args) => commands::edit::remove(
            &ctx.fetching(cli, &args.fetch)?.observing(&args.observe),
            args,
        ),
        PluginsCommand::Update(args) => commands::edit::update(
            &ctx.fetching(cli, &args.fetch)?.observing(&args.observe),
            args,
        ),
        PluginsCommand::Diff(args) => commands::diff::run(&ctx.fetching(cli, &args.fetch)?, args),
        PluginsCommand::Tree(args) => commands::tree::run(&ctx, args),
        PluginsCommand::Observe(args) => {
            commands::observe::run(&ctx.sandboxed(&args.sandbox), args)
        }
        PluginsCommand::Outdated(args) => {
            commands::outdated::run(&ctx.fetching(cli, &args.fetch)?, args)
        }
        PluginsCommand::Approve(args) => commands::approve::run(&ctx, args),
        PluginsCommand::Import(args) => {
            commands::import::run(&ctx.fetching(cli, &args.fetch)?, args)
        }
    }
}

/// `berth marketplace …`.
fn run_marketplace(cli: &Cli, market: &MarketplaceArgs, printer: Printer) -> anyhow::Result<()> {
    let ctx = Context::new(cli, &market.project, printer)?;
    match &market.command {
        MarketplaceCommand::Add(args) => commands::marketplace::add(
            &ctx.fetching(cli, &args.fetch)?.observing(&args.observe),
            args,
        ),
        MarketplaceCommand::List(args) => {
            commands::marketplace::list(&ctx.fetching(cli, &args.fetch)?, args)
        }
        MarketplaceCommand::Search(args) => {
            commands::marketplace::search::run(&ctx.fetching(cli, &args.fetch)?, args)
        }
        MarketplaceCommand::Update(args) => commands::marketplace::update::run(
            &ctx.fetching(cli, &args.fetch)?.observing(&args.observe),
            args,
        ),
        MarketplaceCommand::Remove(args) => commands::marketplace::remove::run(
            &ctx.fetching(cli, &args.fetch)?.observing(&args.observe),
            args,
        ),
    }
}

/// Library diagnostics (`tracing`) go to stderr: `-v` shows berth's debug messages,
/// `-vv` everyone's; `berth serve` logs requests at `info`. `BERTH_LOG` overrides with a
/// filter such as `berth_resolver=trace`.
fn init_tracing(verbose: u8, serving: bool, color: bool) {
    let default = match (verbose, serving) {
        // A server logs its requests and the conversations it starts.
        // Only berth's own warnings: a library's log line (a TLS failure, say) would come
        // before the error that already says it.
        (0, true) => "info",
        (0, false) => {
            "off,berth=warn,berth_resolver=warn,berth_store=warn,berth_runtime=warn,berth_transport=warn,berth_uv=warn"
        }
        (1, _) => "info,berth=debug,berth_resolver=debug,berth_store=debug,berth_server=debug",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("BERTH_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(color)
        .with_writer(std::io::stderr)
        .without_time()
        .with_target(false)
        .init();
}
