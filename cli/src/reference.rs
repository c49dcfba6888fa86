//! The reference part of docs/commands.md, generated from the clap definition itself:
//! every command with its usage, its summary and each option, so the page cannot name a
//! flag that is gone or miss one that was added. The test below fails when the page's
//! copy differs; `BERTH_UPDATE_DOCS=1 cargo test -p berth --bin berth reference` writes it.

use std::fmt::Write as _;

use clap::{Arg, Command};

/// Where the generated part starts and ends in docs/commands.md.
const BEGIN: &str = "<!-- reference: generated from the command line by cli/src/reference.rs; do not edit by hand -->";
const END: &str = "<!-- end of reference -->";

/// The options every command takes, listed once at the top rather than under each.
const GLOBAL: &str = "Global options";

/// The reference: the global options, then every command that runs something.
fn reference(cli: &mut Command) -> String {
    cli.build();
    let mut out = String::new();
    out.push_str("### Every command\n\n");
    for arg in cli.get_arguments().filter(|a| shown(a)) {
        option_line(&mut out, arg);
    }
    out.push('\n');
    for sub in cli.get_subcommands_mut() {
        command(&mut out, sub);
    }
    out
}

/// Whether an option is listed: not `--help`/`--version`, not hidden.
fn shown(arg: &Arg) -> bool {
    !arg.is_hide_set() && !matches!(arg.get_id().as_str(), "help" | "version")
}

/// One command's section, then its subcommands'.
fn command(out: &mut String, cmd: &mut Command) {
    if cmd.get_name() == "help" {
        return;
    }
    let path = cmd.get_bin_name().unwrap_or(cmd.get_name()).to_owned();
    let about = cmd.get_about().map(|a| a.to_string()).unwrap_or_default();
    let _ = writeln!(out, "### `{path}`\n\n{about}\n");
    let usage = cmd.render_usage().to_string();
    let usage = usage.trim_start_matches("Usage: ").trim();
    let _ = writeln!(out, "`{usage}`\n");
    let args: Vec<&Arg> = cmd
        .get_arguments()
        .filter(|a| shown(a) && a.get_help_heading() != Some(GLOBAL))
        .collect();
    if !args.is_empty() {
        for arg in args {
            option_line(out, arg);
        }
        out.push('\n');
    }
    for sub in cmd.get_subcommands_mut() {
        command(out, sub);
    }
}

/// `- `--flag VALUE`: its help (its values, its default)`.
fn option_line(out: &mut String, arg: &Arg) {
    let value = arg
        .get_value_names()
        .and_then(|names| names.first())
        .map(|n| n.to_string())
        .unwrap_or_else(|| arg.get_id().as_str().to_uppercase());
    let takes_value = arg.get_action().takes_values();
    let name = match (arg.get_long(), arg.get_short()) {
        (Some(long), Some(short)) if takes_value => format!("-{short}, --{long} {value}"),
        (Some(long), Some(short)) => format!("-{short}, --{long}"),
        (Some(long), None) if takes_value => format!("--{long} {value}"),
        (Some(long), None) => format!("--{long}"),
        (None, Some(short)) => format!("-{short}"),
        (None, None) => value,
    };
    let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
    let mut line = format!("- `{name}`: {help}");
    let values: Vec<String> = arg
        .get_possible_values()
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| format!("`{}`", v.get_name()))
        .collect();
    if !values.is_empty() && takes_value {
        let _ = write!(line, " (one of {})", values.join(", "));
    }
    let defaults: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|d| d.to_string_lossy().into_owned())
        .collect();
    if !defaults.is_empty() && takes_value {
        let _ = write!(line, " [default: `{}`]", defaults.join(" "));
    }
    if let Some(env) = arg.get_env() {
        let _ = write!(line, " [env: `{}`]", env.to_string_lossy());
    }
    let _ = writeln!(out, "{}", line.replace('\n', " "));
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory as _;

    use super::{BEGIN, END, reference};

    /// docs/commands.md holds the reference as the command line defines it now.
    #[test]
    fn docs_commands_md_has_the_current_reference() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/commands.md");
        let page = std::fs::read_to_string(path).expect("read docs/commands.md");
        let generated = reference(&mut crate::args::Cli::command());
        let (before, rest) = page
            .split_once(BEGIN)
            .expect("docs/commands.md has the reference's start marker");
        let (current, after) = rest
            .split_once(END)
            .expect("docs/commands.md has the reference's end marker");
        let wanted = format!("\n\n{generated}");
        if current == wanted {
            return;
        }
        if std::env::var_os("BERTH_UPDATE_DOCS").is_some() {
            std::fs::write(path, format!("{before}{BEGIN}{wanted}{END}{after}"))
                .expect("write docs/commands.md");
            return;
        }
        panic!(
            "docs/commands.md's reference is out of date with the command line; run `BERTH_UPDATE_DOCS=1 cargo test -p berth --bin berth reference` and commit the page"
        );
    }
}
