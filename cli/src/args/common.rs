//! Options several commands share: where the project's files are, where plugins are
//! fetched from, and how data is printed. A command flattens only the groups it uses, so
//! its `--help` lists only options it reads.

use std::path::PathBuf;

use clap::Args;

/// How a command that prints data prints it: every such command takes `--format` (text
/// for people, JSON for programs) and `--json` as its short form.
#[derive(Debug, Args)]
pub struct FormatArgs {
    /// `text` for people, `json` for programs (a documented, stable document)
    #[arg(long, value_name = "FORMAT", default_value = "text")]
    pub format: OutputFormat,

    /// Same as `--format json`
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
}

impl FormatArgs {
    /// Whether JSON was asked for, by either spelling.
    pub fn json(&self) -> bool {
        self.json || self.format == OutputFormat::Json
    }
}

/// The formats of [`FormatArgs`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// For a terminal
    Text,
    /// JSON on stdout
    Json,
}

/// Whether locking starts MCP servers to record what they offer (`[[tools]]`): the option
/// of the commands that lock (lock, sync, add, remove, update, marketplace update).
#[derive(Debug, Args)]
pub struct ObserveSwitch {
    /// Start no MCP server to record what it offers the model (`[[tools]]` in the lock);
    /// records already made are kept. Also `BERTH_NO_OBSERVE=1`. Refused under a policy's
    /// `tools` rule
    #[arg(long)]
    pub no_observe: bool,

    #[command(flatten)]
    pub sandbox: SandboxSwitch,
}

/// How the MCP servers a command observes are started: the option of every command that
/// observes. Only this flag runs them outside the sandbox; no variable does.
#[derive(Debug, Clone, Copy, Args)]
pub struct SandboxSwitch {
    /// Where no sandbox can be made (no bubblewrap, no user namespaces, macOS), start the
    /// MCP servers observed anyway, as you: with your files, and with your network where
    /// `unshare` cannot cut it. Only for plugins you trust
    #[arg(long)]
    pub observe_unsandboxed: bool,
}

/// Where the project's files are: the options of every command that reads them.
#[derive(Debug, Args)]
pub struct ProjectArgs {
    /// The manifest [default: `plugins.toml` in the current folder or the nearest folder
    /// above it that has one, as Cargo finds `Cargo.toml`]
    #[arg(
        long,
        global = true,
        value_name = "FILE",
        help_heading = "Project options"
    )]
    pub manifest: Option<PathBuf>,

    /// The lockfile [default: the manifest's path with `.lock`]
    #[arg(
        long,
        global = true,
        value_name = "FILE",
        help_heading = "Project options"
    )]
    pub lockfile: Option<PathBuf>,

    /// The policy: which sources and capabilities may run [default: `berth-policy.toml`
    /// next to the manifest, if there is one]
    #[arg(
        long,
        global = true,
        value_name = "FILE",
        env = "BERTH_POLICY",
        help_heading = "Project options"
    )]
    pub policy: Option<PathBuf>,
}

/// Where plugins are fetched from, and how many at once: the options of the commands that
/// may fetch (lock, sync, add, update, verify, diff, import, the marketplace commands).
#[derive(Debug, Args)]
pub struct FetchArgs {
    /// How many plugins to resolve or fetch at once [default: 8]
    #[arg(short, long, value_name = "N", help_heading = "Fetch options")]
    pub jobs: Option<usize>,

    /// The Python package index for the `[agent]` package and `uvx` payloads (may hold
    /// `${VAR}` credentials) [default: uv's configured index (`UV_INDEX_URL`,
    /// `UV_DEFAULT_INDEX`, `uv.toml`), else https://pypi.org/simple]
    #[arg(
        long,
        value_name = "URL",
        env = "BERTH_INDEX_URL",
        help_heading = "Fetch options"
    )]
    pub index_url: Option<String>,

    #[command(flatten)]
    pub caches: CacheArgs,
}

/// The binary caches tried before upstream, and the keys their narinfos must be signed by.
#[derive(Debug, Args, Default)]
pub struct CacheArgs {
    /// A binary cache to try, in order, before a plugin is fetched from upstream
    /// (`file:///path`, `http(s)://`, `s3://`); repeatable. $BERTH_SUBSTITUTERS holds
    /// several, space-separated
    #[arg(
        long = "substituter",
        value_name = "URL",
        env = "BERTH_SUBSTITUTERS",
        value_delimiter = ' ',
        help_heading = "Fetch options"
    )]
    pub substituters: Vec<String>,

    /// Use a substituter's plugin only when its narinfo is signed by this key
    /// (`NAME:BASE64`, as `berth store sign-key generate` prints it); repeatable.
    /// $BERTH_TRUSTED_PUBLIC_KEYS holds several, space-separated
    #[arg(
        long = "trusted-public-key",
        value_name = "KEY",
        env = "BERTH_TRUSTED_PUBLIC_KEYS",
        value_delimiter = ' ',
        help_heading = "Fetch options"
    )]
    pub trusted_public_keys: Vec<String>,
}
