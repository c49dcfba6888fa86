//! Usage errors that point the way: a command typed at the top that lives under `berth
//! plugins` (`berth lock`), and a flag people bring from uv, Cargo or npm that is spelled
//! otherwise here (`plugins lock --locked`). Any other usage error is clap's own.

use clap::CommandFactory as _;
use clap::error::{ContextKind, ContextValue, ErrorKind};

use crate::args::Cli;

/// Flags other tools have that berth spells otherwise, per `berth plugins` command: what
/// to write instead.
const FLAG_TIPS: &[(&str, &str, &str)] = &[
    (
        "lock",
        "--locked",
        "to fail when plugins.lock is out of date (uv's and Cargo's `--locked`), use `berth plugins lock --check`; `--locked` is a flag of `berth plugins sync`",
    ),
    (
        "lock",
        "--frozen",
        "to check the lock without writing it, use `berth plugins lock --check`; `--frozen` is a flag of `berth plugins sync` and `berth run`",
    ),
    (
        "lock",
        "--dry-run",
        "`berth plugins lock --check` writes nothing and says what would change",
    ),
    (
        "sync",
        "--check",
        "to fail when plugins.lock is out of date without writing it, use `berth plugins sync --locked`",
    ),
    (
        "add",
        "--tag",
        "a tag or branch is `--ref NAME`; a semver range over the tags is `--version RANGE`",
    ),
    (
        "add",
        "--branch",
        "a tag or branch is `--ref NAME`; a semver range over the tags is `--version RANGE`",
    ),
    ("add", "--rev", "a commit, tag or branch is `--ref REF`"),
];

/// `error` with a tip where berth knows what was meant; otherwise `error` as clap made it.
pub fn with_tips(error: clap::Error) -> clap::Error {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match error.kind() {
        ErrorKind::InvalidSubcommand => plugins_command(error),
        ErrorKind::UnknownArgument => flag_tip(error, &args),
        _ => error,
    }
}

/// A top-level subcommand that is a `berth plugins` one (`berth lock`).
fn plugins_command(error: clap::Error) -> clap::Error {
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

/// A flag from another tool given to a `berth plugins` command that spells it otherwise.
fn flag_tip(error: clap::Error, args: &[String]) -> clap::Error {
    let Some(ContextValue::String(flag)) = error.get(ContextKind::InvalidArg) else {
        return error;
    };
    let flag = flag.split('=').next().unwrap_or(flag);
    let Some(command) = plugins_subcommand(args) else {
        return error;
    };
    let Some((_, _, tip)) = FLAG_TIPS
        .iter()
        .find(|(c, f, _)| *c == command && *f == flag)
    else {
        return error;
    };
    let mut cli = Cli::command();
    cli.build();
    let sub = cli
        .find_subcommand_mut("plugins")
        .and_then(|p| p.find_subcommand_mut(command))
        .expect("the tips name existing commands");
    sub.error(
        ErrorKind::UnknownArgument,
        format!("unexpected argument '{flag}' found\n\n  tip: {tip}"),
    )
}

/// The `berth plugins` command named on the command line, if any.
fn plugins_subcommand(args: &[String]) -> Option<&str> {
    let at = args.iter().position(|a| a == "plugins")?;
    args[at + 1..]
        .iter()
        .find(|a| !a.starts_with('-'))
        .map(String::as_str)
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory as _;

    use super::FLAG_TIPS;
    use crate::args::Cli;

    /// A tip names a command that exists and a flag that command does not have.
    #[test]
    fn tips_name_real_commands_and_missing_flags() {
        let cli = Cli::command();
        let plugins = cli.find_subcommand("plugins").expect("plugins");
        for (command, flag, _) in FLAG_TIPS {
            let sub = plugins
                .find_subcommand(command)
                .unwrap_or_else(|| panic!("no `plugins {command}`"));
            let long = flag.trim_start_matches("--");
            assert!(
                sub.get_arguments().all(|a| a.get_long() != Some(long)),
                "`plugins {command}` has `{flag}`: its tip would hide it"
            );
        }
    }
}
