//! The command line, as clap derive structs. Doc comments here are the `--help` text.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

mod common;
mod marketplace;
mod materialize;
mod plugins;
mod serve;
mod store;

pub use common::{CacheArgs, FetchArgs, FormatArgs, ObserveSwitch, ProjectArgs, SandboxSwitch};
pub use marketplace::{
    MarketplaceAddArgs, MarketplaceArgs, MarketplaceCommand, MarketplaceListArgs,
    MarketplaceRemoveArgs, MarketplaceSearchArgs, MarketplaceUpdateArgs,
};
pub use materialize::MaterializeArgs;
pub use plugins::{
    AddArgs, ApproveArgs, DiffArgs, DiffFormat, ImportArgs, ImportFrom, ListArgs, LockArgs,
    ObserveArgs, OutdatedArgs, PluginsArgs, PluginsCommand, RemoveArgs, ShowArgs, SyncArgs,
    TreeArgs, UpdateArgs, VerifyArgs,
};
pub use serve::ServeArgs;
pub use store::{GcArgs, SignKeyCommand, StoreArgs, StoreCommand, StorePushArgs, StoreVerifyArgs};

/// Reproducible, content-addressed plugin sets for AI coding agents.
///
/// berth pins agent plugins (skills, commands, hooks, MCP servers) the way Nix pins flake
/// inputs: `plugins.toml` says where plugins come from, `berth plugins lock` pins each to an
/// exact commit and content hash in `plugins.lock`, and `berth plugins sync` fills a
/// content-addressed store that the agent runtime reads offline. An `[agent]` table may also
/// pin one custom agent package (a Python package, resolved with uv), which `berth agent
/// exec` runs offline from the store.
///
/// Typical use:
///
///   berth plugins lock      # resolve plugins.toml into plugins.lock
///   berth plugins sync      # fetch what the lock names into the store
///   berth plugins list      # show what is locked
///
/// In CI:
///
///   berth plugins lock --check && berth plugins verify
#[derive(Debug, Parser)]
#[command(
    name = "berth",
    version,
    propagate_version = true,
    max_term_width = 100,
    verbatim_doc_comment
)]
pub struct Cli {
    /// The store folder [default: $BERTH_STORE, else $XDG_CACHE_HOME/berth, else ~/.cache/berth]
    #[arg(
        long,
        global = true,
        value_name = "DIR",
        help_heading = "Global options"
    )]
    pub store: Option<PathBuf>,

    /// Say more about what is happening (repeat for more)
    #[arg(
        short,
        long,
        global = true,
        action = clap::ArgAction::Count,
        conflicts_with = "quiet",
        help_heading = "Global options"
    )]
    pub verbose: u8,

    /// Print only errors
    #[arg(short, long, global = true, help_heading = "Global options")]
    pub quiet: bool,

    /// When to color what berth prints: `auto` (on a terminal, unless `NO_COLOR` is set or
    /// `CLICOLOR_FORCE` asks for it anyway), `always` or `never`
    #[arg(
        long,
        global = true,
        value_name = "WHEN",
        default_value = "auto",
        help_heading = "Global options"
    )]
    pub color: ColorChoice,

    /// Accepted before the command for older scripts (`berth --substituter URL plugins
    /// sync`); the commands that fetch take it themselves
    #[arg(long = "substituter", value_name = "URL", hide = true)]
    pub substituters: Vec<String>,

    /// Accepted before the command for older scripts, as `--substituter`
    #[arg(long = "trusted-public-key", value_name = "KEY", hide = true)]
    pub trusted_public_keys: Vec<String>,

    #[command(subcommand)]
    pub command: Command,
}

/// The values of `--color`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    /// On a terminal, unless `NO_COLOR` is set (`CLICOLOR_FORCE` colors off a terminal too)
    Auto,
    /// Always
    Always,
    /// Never
    Never,
}

impl ColorChoice {
    /// Whether to color stderr, as <https://no-color.org> and `CLICOLOR_FORCE` say.
    pub fn on_stderr(self) -> bool {
        let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty() && v != "0");
        match self {
            Self::Always => true,
            Self::Never => false,
            Self::Auto if std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()) => false,
            Self::Auto if set("CLICOLOR_FORCE") => true,
            Self::Auto => std::io::IsTerminal::is_terminal(&std::io::stderr()),
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Lock, fetch and inspect plugins
    #[command(subcommand_required = true, arg_required_else_help = true)]
    Plugins(PluginsArgs),

    /// Declare marketplaces and see what they offer
    ///
    /// A marketplace is a git repository or folder whose `.claude-plugin/marketplace.json`
    /// (or `.plugin/marketplace.json`) lists plugins by name. Declared once in the manifest,
    /// its plugins are asked for as `PLUGIN@MARKETPLACE`; the lock pins the marketplace's
    /// commit and catalog hash, and each plugin's own commit or archive.
    #[command(
        subcommand_required = true,
        arg_required_else_help = true,
        after_help = "Examples:\n  \
        berth marketplace add official github:anthropics/claude-plugins-official\n  \
        berth marketplace list official\n  \
        berth plugins add code-review@official"
    )]
    Marketplace(MarketplaceArgs),

    /// Run a command with the locked plugin set, offline
    ///
    /// Builds the merged plugin set from the lock and the store alone, writes it to a file
    /// and runs CMD with `BERTH_PLUGIN_SET` (that file, the JSON of `berth plugins show
    /// --json`) and `BERTH_PLUGIN_PATHS` (the plugins' store folders, `:`-separated, in lock
    /// order). With an `[agent]` in the lock, CMD also runs in the agent's environment
    /// (`VIRTUAL_ENV`, its `bin/` first on `PATH`) with `BERTH_AGENT_ENTRY_POINT` (`name =
    /// module:attr`). berth then becomes CMD: its exit status is CMD's.
    #[command(after_help = "Examples:\n  \
        berth run my-agent --task review\n  \
        berth run --frozen -- sh -c 'jq .skills[].name \"$BERTH_PLUGIN_SET\"'")]
    Run(RunArgs),

    /// Run the locked plugin set's hooks
    #[command(subcommand_required = true, arg_required_else_help = true)]
    Hooks(HooksArgs),

    /// Record what MCP servers offer the model, remote ones included
    #[command(subcommand_required = true, arg_required_else_help = true)]
    Mcp(McpArgs),

    /// Run the locked custom agent package (the manifest's `[agent]`), offline
    #[command(subcommand_required = true, arg_required_else_help = true)]
    Agent(AgentArgs),

    /// Check and clean the store
    #[command(subcommand_required = true, arg_required_else_help = true)]
    Store(StoreArgs),

    /// Write the locked plugin set where a harness reads it natively, offline
    ///
    /// Built from the lock and the store alone, like `berth run`; every plugin is a link
    /// to its verified, read-only store entry. Running it again with nothing changed
    /// changes nothing; `--check` reports drift (a file edited, added or removed since)
    /// and exits 1. What the harness cannot express is a warning.
    ///
    /// TARGET is one of the harnesses listed under it, each with the folder it writes.
    #[command(after_help = "Examples:\n  \
        berth materialize claude ~/.claude           # then: claude plugin list\n  \
        berth materialize claude .berth/claude --check\n  \
        berth materialize claude ~/.claude --project .   # enabled in this repository only\n  \
        berth materialize gemini ~/.gemini           # then: gemini extensions list\n  \
        berth materialize codex ~/.codex             # then: codex plugin list")]
    Materialize(MaterializeArgs),

    /// Scan the locked plugins for hidden Unicode and check them against the policy
    ///
    /// Every file and name of every locked plugin in the store is read for characters a
    /// reviewer cannot see or a terminal acts on: bidirectional controls, tag characters,
    /// escape and C1 controls and invisible characters in a row (critical), one invisible
    /// or other control character alone (warnings), as written or as escapes in JSON, YAML
    /// and TOML strings. With a policy, its sources and capabilities are checked too. Exits 1 on a critical finding (unless the policy says `hidden_unicode =
    /// "warn"`) or a policy violation; never touches the network.
    #[command(after_help = "Examples:\n  \
        berth audit\n  \
        berth audit --policy berth-policy.toml\n  \
        berth audit --format sarif --output berth.sarif   # for code scanning")]
    Audit(AuditArgs),

    /// Serve conversations that keep exactly their locked plugin set
    ///
    /// Each conversation gets one lockfile, resolved when it starts and kept in the data
    /// folder; its plugin set is built from that lock and the shared store, so after a
    /// restart it is byte-for-byte the same even if upstream moved or vanished. By default
    /// only https sources on github.com, gitlab.com and bitbucket.org are fetched.
    #[command(after_help = "Examples:\n  \
        berth serve --addr 0.0.0.0:8000 --api-key \"$KEY\"\n  \
        berth serve --allow-host git.example.com --data-dir /var/lib/berth\n  \
        berth serve --allow-host git.corp.example --resolve git.corp.example=10.0.4.2\n  \
        berth serve --offline        # serve restored conversations, never fetch\n  \
        # one server of a fleet: conversations and plugins in a bucket every server shares\n  \
        berth serve --data-dir s3://fleet/conversations --push-to s3://fleet/cache \\\n              \
        --substituter s3://fleet/cache --ref-ttl 60 --drain-secs 10")]
    Serve(ServeArgs),

    /// Start a project: write a plugins.toml that explains itself
    ///
    /// The manifest lists no plugin yet; its comments show each kind of entry. Nothing
    /// else is written: `berth plugins add SOURCE` then adds a plugin and writes
    /// plugins.lock. Refused where a plugins.toml already exists.
    #[command(after_help = "Examples:\n  \
        berth init\n  \
        berth init agents/review     # in that folder, created if missing")]
    Init(InitArgs),

    /// Print a shell's completion script for berth
    ///
    /// Load it in the shell's startup file, or save it where the shell looks for
    /// completions.
    #[command(after_help = "Examples:\n  \
        berth completions bash > ~/.local/share/bash-completion/completions/berth\n  \
        berth completions zsh > \"${fpath[1]}/_berth\"\n  \
        berth completions fish > ~/.config/fish/completions/berth.fish")]
    Completions(CompletionsArgs),
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// The project folder (created if missing) [default: .]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Use the lockfile as it is; without this, a manifest next to it must agree with it
    #[arg(long)]
    pub frozen: bool,

    /// Refuse plugin sets with more skills than this
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub max_skills: usize,

    #[command(flatten)]
    pub project: ProjectArgs,

    /// The command and its arguments (`--` before it is optional; everything after CMD is
    /// CMD's, not berth's)
    #[arg(
        required = true,
        value_name = "CMD",
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub command: Vec<std::ffi::OsString>,
}

#[derive(Debug, Args)]
pub struct AuditArgs {
    #[command(flatten)]
    pub project: ProjectArgs,

    /// `text`, `json` or `sarif` (SARIF 2.1.0, as code-scanning tools read it)
    #[arg(long, value_name = "FORMAT", default_value = "text")]
    pub format: AuditFormat,

    /// Same as `--format json`
    #[arg(long, conflicts_with = "format")]
    pub json: bool,

    /// Write the report here instead of stdout (its folder is made if missing)
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// How `berth audit` prints its findings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AuditFormat {
    /// One line per finding
    Text,
    /// A JSON document
    Json,
    /// SARIF 2.1.0
    Sarif,
}

#[derive(Debug, Args)]
pub struct AgentArgs {
    #[command(flatten)]
    pub project: ProjectArgs,

    #[command(subcommand)]
    pub command: AgentCommand,
}

#[derive(Debug, Subcommand)]
pub enum AgentCommand {
    /// Call the locked agent's entry point in its environment, built offline from the store
    ///
    /// The environment is made from the locked wheels alone (uv in hash-checking mode, no
    /// index, no build, no other dependencies) the first time and shared by every
    /// conversation with the same lock. A small launcher loads exactly the locked entry
    /// point of the `openhands.agents` group and calls it with `sys.argv` set to the entry
    /// point's name and ARGS; an int result is the exit status, any other is printed.
    #[command(after_help = "Examples:\n  \
        berth agent exec\n  \
        berth agent exec -- --task review")]
    Exec(AgentExecArgs),
}

#[derive(Debug, Args)]
pub struct AgentExecArgs {
    /// Use the lockfile as it is; without this, a manifest next to it must agree with it
    #[arg(long)]
    pub frozen: bool,

    /// Arguments for the agent's entry point
    #[arg(last = true, value_name = "ARG")]
    pub args: Vec<std::ffi::OsString>,
}

#[derive(Debug, Args)]
pub struct McpArgs {
    #[command(flatten)]
    pub project: ProjectArgs,

    #[command(subcommand)]
    pub command: McpCommand,
}

#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// `berth plugins observe --remote`: every MCP server of the locked plugins, remote
    /// ones too (their first answer recorded, trust on first use)
    #[command(after_help = "Examples:\n  \
        berth mcp observe --env            # fill ${VAR} in remote servers' headers\n  \
        berth mcp observe --check --env    # CI: exit 1 if a server answers otherwise now")]
    Observe(McpObserveArgs),
}

#[derive(Debug, Args)]
pub struct McpObserveArgs {
    /// The plugins whose servers to observe [default: every plugin]
    pub names: Vec<String>,

    /// Write nothing: observe again and exit 1 naming each server whose answer is not
    /// the lock's record
    #[arg(long)]
    pub check: bool,

    /// Fill `${VAR}` in remote servers' headers from the environment (without it, such a
    /// header is not sent)
    #[arg(long)]
    pub env: bool,

    #[command(flatten)]
    pub sandbox: SandboxSwitch,
}

#[derive(Debug, Args)]
pub struct HooksArgs {
    #[command(flatten)]
    pub project: ProjectArgs,

    #[command(subcommand)]
    pub command: HooksCommand,
}

#[derive(Debug, Subcommand)]
pub enum HooksCommand {
    /// Run the command hooks that match an event, as the OpenHands SDK would
    ///
    /// Each matching command hook runs with `sh -c` in the project folder, gets the event
    /// as JSON on stdin and `OPENHANDS_PROJECT_DIR`, `OPENHANDS_SESSION_ID`,
    /// `OPENHANDS_EVENT_TYPE`, `OPENHANDS_TOOL_NAME` and `CLAUDE_PLUGIN_ROOT` in its
    /// environment. Exit 0 is success (stdout may hold JSON with `decision`, `reason`,
    /// `additionalContext`, `continue`); exit 2 blocks, with stderr as the reason; anything
    /// else is a failure that does not block. A hook past its timeout is killed with its
    /// whole process group. Prints one JSON result; exits 2 when the event is blocked.
    #[command(after_help = "Examples:\n  \
        berth hooks run pre_tool_use --tool-name terminal --input event.json\n  \
        berth hooks run SessionStart --session-id 42")]
    Run(HookRunArgs),
}

#[derive(Debug, Args)]
pub struct HookRunArgs {
    /// The event: pre_tool_use, post_tool_use, user_prompt_submit, session_start,
    /// session_end or stop (PascalCase such as `PreToolUse` works too)
    #[arg(value_parser = parse_event)]
    pub event: &'static str,

    /// The tool the event is about (tool events)
    #[arg(long, value_name = "NAME")]
    pub tool_name: Option<String>,

    /// The conversation's id, passed on as `OPENHANDS_SESSION_ID`
    #[arg(long, value_name = "ID")]
    pub session_id: Option<String>,

    /// A JSON object with more event fields (`tool_input`, `tool_response`, `message`,
    /// `metadata`); `-` reads it from stdin
    #[arg(long, value_name = "FILE")]
    pub input: Option<PathBuf>,

    /// The workspace the hooks run in [default: the current folder]
    #[arg(long, value_name = "DIR")]
    pub project_dir: Option<PathBuf>,

    /// Refuse plugin sets with more skills than this
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub max_skills: usize,
}

fn parse_event(text: &str) -> Result<&'static str, String> {
    berth_plugin::hooks::event_name(text).ok_or_else(|| {
        format!(
            "unknown event `{text}`; use one of {}",
            berth_plugin::hooks::EVENTS.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::Cli;

    #[test]
    fn the_command_line_is_well_formed() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
