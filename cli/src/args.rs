//! The command line, as clap derive structs. Doc comments here are the `--help` text.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Reproducible, content-addressed plugin sets for AI coding agents.
///
/// berth pins agent plugins (skills, commands, hooks, MCP servers) the way Nix pins flake
/// inputs: `plugins.toml` says where plugins come from, `berth plugins lock` pins each to an
/// exact commit and content hash in `plugins.lock`, and `berth plugins sync` fills a
/// content-addressed store that the agent runtime reads offline.
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

    /// Print only errors and warnings
    #[arg(short, long, global = true, help_heading = "Global options")]
    pub quiet: bool,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Lock, fetch and inspect plugins
    #[command(subcommand_required = true, arg_required_else_help = true)]
    Plugins(PluginsArgs),
}

#[derive(Debug, Args)]
pub struct PluginsArgs {
    /// The manifest
    #[arg(
        long,
        global = true,
        value_name = "FILE",
        default_value = "plugins.toml",
        help_heading = "Project options"
    )]
    pub manifest: PathBuf,

    /// The lockfile [default: the manifest's path with `.lock`]
    #[arg(
        long,
        global = true,
        value_name = "FILE",
        help_heading = "Project options"
    )]
    pub lockfile: Option<PathBuf>,

    /// How many plugins to resolve or fetch at once [default: 8]
    #[arg(
        short,
        long,
        global = true,
        value_name = "N",
        help_heading = "Project options"
    )]
    pub jobs: Option<usize>,

    #[command(subcommand)]
    pub command: PluginsCommand,
}

#[derive(Debug, Subcommand)]
pub enum PluginsCommand {
    /// Resolve plugins.toml into plugins.lock
    ///
    /// Entries that are new or whose request changed (`source`, `ref`, `version`,
    /// `repo_path`, `hash`, `name`) are resolved to an exact commit and content hash; every
    /// other entry keeps its pin, so with an unchanged manifest nothing is fetched and the
    /// lockfile stays byte-identical. Local folders are re-hashed every time.
    #[command(after_help = "Examples:\n  \
        berth plugins lock                         # pin new and changed entries\n  \
        berth plugins lock --upgrade               # move every branch and tag\n  \
        berth plugins lock --upgrade-plugin review # move one plugin\n  \
        berth plugins lock --check                 # CI: fail if the lock is stale")]
    Lock(LockArgs),

    /// Make every locked plugin present in the store, verified
    ///
    /// Locks first if the lockfile is missing or out of date (unless `--locked` or
    /// `--frozen`). Every store entry is checked against the lock's hash before it is added.
    /// Local folders are re-hashed; one that changed since it was locked stops the sync
    /// until `berth plugins lock` records the change.
    #[command(after_help = "Examples:\n  \
        berth plugins sync                      # lock if needed, then fetch\n  \
        berth plugins sync --locked             # CI: the committed lock must be current\n  \
        berth plugins sync --frozen --offline   # deploy: exactly the lock, no network")]
    Sync(SyncArgs),

    /// Fetch every locked plugin afresh and check it still hashes to the lock
    ///
    /// Bypasses the store and the git cache. Exits 1 naming each plugin that differs or
    /// cannot be fetched, with the expected and actual hash.
    Verify(VerifyArgs),

    /// List the locked plugins
    List(ListArgs),
}

#[derive(Debug, Args)]
pub struct LockArgs {
    /// Write nothing; exit 1 naming what would change (for CI)
    #[arg(long)]
    pub check: bool,

    /// Re-resolve every entry, moving branches and tags to their current commits
    #[arg(long, conflicts_with = "upgrade_plugin")]
    pub upgrade: bool,

    /// Re-resolve the named plugin only (repeatable)
    #[arg(long, value_name = "NAME")]
    pub upgrade_plugin: Vec<String>,

    /// Never use the network: resolve from what the git cache last saw
    #[arg(long)]
    pub offline: bool,
}

#[derive(Debug, Args)]
pub struct SyncArgs {
    /// Fail if the lockfile is missing or out of date instead of updating it
    #[arg(long, conflicts_with = "frozen")]
    pub locked: bool,

    /// Use the lockfile as it is, without reading the manifest
    #[arg(long)]
    pub frozen: bool,

    /// Never use the network; fail naming every plugin that is not already available
    #[arg(long)]
    pub offline: bool,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Print the result as JSON on stdout
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Print the locked plugins as JSON on stdout
    #[arg(long)]
    pub json: bool,
}
