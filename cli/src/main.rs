//! The `berth` command line: parses arguments, runs one command, maps the outcome to an
//! exit status (0 success, 1 failure, 2 usage).

mod args;
mod commands;
mod context;
mod governance;
mod printer;

use std::process::ExitCode;

use clap::Parser;

use crate::args::{AgentCommand, Cli, Command, HooksCommand, MarketplaceCommand, PluginsCommand};
use crate::context::{Context, Exit, Failure};
use crate::printer::{Printer, Verbosity};

fn main() -> ExitCode {
    let cli = Cli::try_parse().unwrap_or_else(|error| plugins_hint(error).exit());
    let verbosity = if cli.quiet {
        Verbosity::Quiet
    } else if cli.verbose > 0 {
        Verbosity::Verbose
    } else {
        Verbosity::Normal
    };
    init_tracing(cli.verbose, matches!(cli.command, Command::Serve(_)));
    let printer = Printer::new(verbosity);
    match run(&cli, printer) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            if let Some(Exit(code)) = error.downcast_ref::<Exit>() {
                return ExitCode::from(*code);
            }
            let printer = Printer::new(verbosity);
            match error.downcast_ref::<Failure>() {
                Some(failure) => {
                    printer.error(&failure.message);
                    for note in &failure.notes {
                        printer.note(note);
                    }
                }
                None => printer.error(&context::error_text(&error)),
            }
            ExitCode::FAILURE
        }
    }
}

/// A top-level subcommand that is a `berth plugins` one (`berth lock`): the usage error
/// says where it is; any other error as clap made it.
fn plugins_hint(error: clap::Error) -> clap::Error {
    use clap::CommandFactory as _;
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if error.kind() != ErrorKind::InvalidSubcommand {
        return error;
    }
    let Some(ContextValue::String(name)) = error.get(ContextKind::InvalidSubcommand) else {
        return error;
    };
    let mut cli = Cli::command();
    let is_plugins = cli
        .find_subcommand("plugins")
        .is_some_and(|p| p.get_subcommands().any(|s| s.get_name() == name));
    if !is_plugins {
        return error;
    }
    cli.error(
        ErrorKind::InvalidSubcommand,
        format!(
            "unrecognized subcommand '{name}'\n\n  tip: `{name}` is a command of `berth plugins`: `berth plugins {name}`"
        ),
    )
}

fn run(cli: &Cli, printer: Printer) -> anyhow::Result<()> {
    match &cli.command {
        Command::Plugins(plugins) => {
            let ctx = Context::new(cli, &plugins.project, printer)?;
            match &plugins.command {
                PluginsCommand::Lock(args) => commands::lock::run(&ctx, args),
                PluginsCommand::Sync(args) => commands::sync::run(&ctx, args),
                PluginsCommand::Verify(args) => commands::verify::run(&ctx, args),
                PluginsCommand::List(args) => commands::list::run(&ctx, args),
                PluginsCommand::Show(args) => commands::show::run(&ctx, args),
                PluginsCommand::Add(args) => commands::edit::add(&ctx, args),
                PluginsCommand::Remove(args) => commands::edit::remove(&ctx, args),
                PluginsCommand::Update(args) => commands::edit::update(&ctx, args),
                PluginsCommand::Diff(args) => commands::diff::run(&ctx, args),
                PluginsCommand::Tree(args) => commands::tree::run(&ctx, args),
                PluginsCommand::Outdated(args) => commands::outdated::run(&ctx, args),
                PluginsCommand::Approve(args) => commands::approve::run(&ctx, args),
                PluginsCommand::Import(args) => commands::import::run(&ctx, args),
            }
        }
        Command::Marketplace(market) => {
            let ctx = Context::new(cli, &market.project, printer)?;
            match &market.command {
                MarketplaceCommand::Add(args) => commands::marketplace::add(&ctx, args),
                MarketplaceCommand::List(args) => commands::marketplace::list(&ctx, args),
                MarketplaceCommand::Search(args) => commands::marketplace::search::run(&ctx, args),
                MarketplaceCommand::Update(args) => commands::marketplace::update::run(&ctx, args),
                MarketplaceCommand::Remove(args) => commands::marketplace::remove::run(&ctx, args),
            }
        }
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
        Command::Store(store) => commands::store::run(cli, store, printer),
        Command::Agent(agent) => {
            let ctx = Context::new(cli, &agent.project, printer)?;
            match &agent.command {
                AgentCommand::Exec(args) => commands::agent::exec(&ctx, args),
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

/// Library diagnostics (`tracing`) go to stderr: `-v` shows berth's debug messages,
/// `-vv` everyone's; `berth serve` logs requests at `info`. `BERTH_LOG` overrides with a
/// filter such as `berth_resolver=trace`.
fn init_tracing(verbose: u8, serving: bool) {
    let default = match (verbose, serving) {
        // A server logs its requests and the conversations it starts.
        (0, true) => "info",
        (0, false) => "warn",
        (1, _) => "info,berth=debug,berth_resolver=debug,berth_store=debug,berth_server=debug",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("BERTH_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(
            std::io::IsTerminal::is_terminal(&std::io::stderr())
                && std::env::var_os("NO_COLOR").is_none(),
        )
        .with_writer(std::io::stderr)
        .without_time()
        .with_target(false)
        .init();
}
