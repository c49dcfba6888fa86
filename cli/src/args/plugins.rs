//! `berth plugins`: lock, sync, verify, list, edit and show the project's plugins.

use clap::{Args, Subcommand};

use super::ProjectArgs;

#[derive(Debug, Args)]
pub struct PluginsArgs {
    #[command(flatten)]
    pub project: ProjectArgs,

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
    /// lockfile stays byte-identical. Local folders are re-hashed every time. An `[agent]`
    /// package is resolved with uv (0.13.9, from `$BERTH_UV` or PATH) against
    /// `--index-url`, and every wheel of its closure is locked by sha256.
    #[command(after_help = "Examples:\n  \
        berth plugins lock                         # pin new and changed entries\n  \
        berth plugins lock --upgrade               # move every branch and tag\n  \
        berth plugins lock --upgrade-plugin review # move one plugin\n  \
        berth plugins lock --check                 # CI: fail if the lock is stale")]
    Lock(LockArgs),

    /// Make every locked plugin present in the store, verified
    ///
    /// Locks first if the lockfile is missing or out of date (unless `--locked` or
    /// `--frozen`). Every store entry, and every wheel of a locked `[agent]`, is checked
    /// against the lock's hash before it is added.
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

    /// Add a plugin to the manifest, then lock
    ///
    /// The new entry is appended to plugins.toml, keeping its comments and layout, and
    /// resolved; a plugin whose name is already in the manifest is refused unless
    /// `--force` (later entries win name clashes).
    #[command(after_help = "Examples:\n  \
        berth plugins add github:acme/review-tools --ref v1.2.0 --repo-path plugins/review\n  \
        berth plugins add https://example.com/lint-1.0.tar.gz\n  \
        berth plugins add git@github.com:acme/tools.git --version '^1.2'")]
    #[command(disable_version_flag = true)]
    Add(AddArgs),

    /// Remove the plugins with this name from the manifest, then lock
    Remove(RemoveArgs),

    /// Move the named plugins (or all) to the newest commit their branch, tag or version allows
    Update(UpdateArgs),

    /// Show the locked plugins as a tree: each manifest entry, and the plugins it needs
    ///
    /// Reads the lock alone (no network, no store). Under each plugin the manifest asks
    /// for (and each a marketplace auto-loads) come the plugins it depends on, as the lock
    /// resolved them; a plugin shown before is marked `(*)` and not expanded again. A
    /// plugin of a marketplace shows where it was picked (`from official@<commit>`), any
    /// other its source, ref and commit. `--invert NAME` shows who needs NAME instead.
    #[command(after_help = "Examples:
  \
        berth plugins tree
  \
        berth plugins tree --invert shared     # what pulls `shared` in
  \
        berth plugins tree --json")]
    Tree(TreeArgs),

    /// Show each plugin's current, allowed and newest pin, and what an update changes
    ///
    /// Resolves every branch, tag and version range (and every marketplace) afresh, in
    /// memory, twice: as the manifest asks (ALLOWED: where `berth plugins update` moves a
    /// plugin) and as if it asked for no version (NEWEST: the highest version tag, the
    /// default branch for a commit, npm's `latest`); the manifest and the lock are not
    /// written. For each plugin that would move, or that its `ref` or `version` holds
    /// back, it prints the three pins and what the new content may run (hooks, MCP and LSP
    /// servers, executables: the summary `berth plugins diff` gives); plugins are fetched
    /// into the store, as `diff` does, to compare them. Exits 0 whether or not anything is
    /// outdated (as `cargo outdated`); `--exit-code` exits 1 when an update would move
    /// something, for CI.
    #[command(after_help = "Examples:
  \
        berth plugins outdated
  \
        berth plugins outdated --exit-code   # CI: fail while anything would move
  \
        berth plugins outdated --json")]
    Outdated(OutdatedArgs),

    /// Show the merged plugin set: skills, MCP servers, hooks, agents
    ///
    /// Built from the lock and the store alone; never touches the network. `--json` prints
    /// the document `berth run` passes to agents (docs/spec.md section 5).
    Show(ShowArgs),

    /// Show what changes between two locks: hooks, MCP servers, executables, skills
    ///
    /// Lists each plugin that was added, removed, or whose content moved, and inside it
    /// what it may run: hooks (event, matcher, the exact command), MCP and LSP servers
    /// (command and arguments, or URL), executables and the files commands name, skills,
    /// commands and agents (changed means the content differs) and their allowed tools. A
    /// plugin whose content did not change is not listed. What is not in the store is
    /// fetched as `sync` would.
    #[command(after_help = "Examples:\n  \
        berth plugins diff --from HEAD                 # the lock at git's HEAD vs the file\n  \
        berth plugins diff --from origin/main --format markdown   # a pull-request comment\n  \
        berth plugins diff --from old.lock --to new.lock --json")]
    Diff(DiffArgs),

    /// Approve the plugins' current capability surface for a policy's `approve` rules
    ///
    /// Records, in `plugins.approvals.toml` next to the lock, the digest of what each
    /// plugin runs (its hook commands, MCP and LSP definitions, executables and every
    /// plugin file they name) with who approved it and when. A change to any of those
    /// needs a new approval; a change to skill or command text alone does not.
    #[command(after_help = "Examples:\n  \
        berth plugins approve review\n  \
        berth plugins approve --all --by 'Alice <alice@example.com>'")]
    Approve(ApproveArgs),

    /// Write a new manifest and its lock from a client's or an OpenHands deployment's records
    ///
    /// `--from claude [DIR]` reads Claude Code's enabled plugins (`settings.json`), the
    /// marketplaces they come from (`known_marketplaces.json`; a git one pinned to the
    /// commit of Claude Code's copy) and locks each as `PLUGIN@MARKETPLACE`; then
    /// `berth materialize claude` gives Claude Code the same plugins from the lock.
    /// `--from codex [DIR]` reads Codex's `config.toml` the same way.
    /// `--conversation DIR` reads a conversation the OpenHands agent server persisted
    /// (`meta.json`: its plugins and its agent's registered marketplaces, each plugin pinned
    /// to the commit it ran where the record keeps one); `--installed` reads the SDK's
    /// installed plugins (`.installed.json`), the enabled ones each pinned to the commit
    /// recorded at install; `--ambient` what the SDK would load by itself (user, installed
    /// and project plugins), each folder locked as it is now. Everything is resolved now; the manifest is written only once
    /// its lock is made, and an existing manifest is never replaced.
    #[command(after_help = "Examples:\n  \
        berth plugins import --from claude              # ~/.claude\n  \
        berth plugins import --conversation workspace/conversations/3f2a…\n  \
        berth plugins import --installed                # ~/.openhands/plugins/installed\n  \
        berth plugins --manifest team.toml import --installed /srv/oh/plugins/installed")]
    Import(ImportArgs),

    /// Record what the locked MCP servers offer the model: tools, prompts, resources
    ///
    /// Each stdio server whose code the lock pins (a program in its plugin, or a locked
    /// `npx`/`uvx` package) is started offline in a scratch folder, with a minimal
    /// environment (the variables it declares set to a placeholder, no proxies, no network
    /// where the machine allows), asked `initialize`, `tools/list`, `prompts/list`,
    /// `resources/list` and `resources/templates/list`, and stopped
    /// (`BERTH_OBSERVE_TIMEOUT` seconds at most, default 15). The answer is kept in the
    /// store and the lock records its hash (`[[tools]]`), so `plugins diff` shows a changed
    /// description and an approval covers it. Observing runs plugin code: only plugins the
    /// policy and the approvals let run are observed.
    #[command(after_help = "Examples:\n  \
        berth plugins observe                 # every server, recorded in plugins.lock\n  \
        berth plugins observe review          # the servers of one plugin\n  \
        berth plugins observe --check         # CI: exit 1 if any server answers otherwise now\n  \
        berth plugins observe --remote --env  # also record remote servers' first answer")]
    Observe(ObserveArgs),
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// A conversation folder the OpenHands agent server persisted (holding `meta.json`)
    #[arg(long, value_name = "DIR", conflicts_with = "installed")]
    pub conversation: Option<std::path::PathBuf>,

    /// The SDK's installed plugins [default: `$OH_PERSISTENCE_DIR/plugins/installed`, else
    /// `~/.openhands/plugins/installed`]
    #[arg(long, value_name = "DIR", num_args = 0..=1, conflicts_with = "ambient")]
    #[allow(clippy::option_option)] // absent, given without a folder, given with one
    pub installed: Option<Option<std::path::PathBuf>>,

    /// The plugins the OpenHands SDK loads by itself into a conversation in WORK_DIR (the
    /// user's, the enabled installed ones, the project's) [default: .]
    #[arg(long, value_name = "WORK_DIR", num_args = 0..=1, conflicts_with = "conversation")]
    #[allow(clippy::option_option)] // absent, given without a folder, given with one
    pub ambient: Option<Option<std::path::PathBuf>>,

    /// A coding agent's own install: its enabled plugins and their marketplaces, read from
    /// its configuration folder (DIR)
    #[arg(long, value_name = "CLIENT", conflicts_with_all = ["conversation", "installed", "ambient"])]
    pub from: Option<ImportFrom>,

    /// The client's configuration folder, with `--from`
    #[arg(value_name = "DIR", requires = "from")]
    pub dir: Option<std::path::PathBuf>,

    #[command(flatten)]
    pub fetch: super::FetchArgs,
}

/// The clients `plugins import --from` reads.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ImportFrom {
    /// Claude Code: `settings.json`'s `enabledPlugins`, `plugins/installed_plugins.json`
    /// and `plugins/known_marketplaces.json` [DIR default: `$CLAUDE_CONFIG_DIR`, else
    /// `~/.claude`]
    Claude,
    /// Codex: `config.toml`'s `[marketplaces.NAME]` and `[plugins."PLUGIN@MARKETPLACE"]`,
    /// and its installs under `plugins/cache/` [DIR default: `$CODEX_HOME`, else `~/.codex`]
    Codex,
    /// Gemini CLI: each extension under `extensions/` with its install record
    /// (`.gemini-extension-install.json`) and `extensions/extension-enablement.json`
    /// [DIR default: `$GEMINI_CLI_HOME/.gemini`, else `~/.gemini`]
    Gemini,
    /// GitHub Copilot CLI: `settings.json`'s `enabledPlugins` and `extraKnownMarketplaces`,
    /// and `config.json`'s `installedPlugins` [DIR default: `$COPILOT_HOME`, else
    /// `~/.copilot`]
    Copilot,
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The old lock: a file, or a git revision whose lockfile is read (`HEAD`, `main~3`)
    #[arg(long, value_name = "FILE|REV")]
    pub from: String,

    /// The new lock [default: the project's lockfile]
    #[arg(long, value_name = "FILE")]
    pub to: Option<std::path::PathBuf>,

    /// Print JSON on stdout (same as `--format json`)
    #[arg(long, conflicts_with = "format")]
    pub json: bool,

    /// `text`, `json` or `markdown` (for a pull-request comment)
    #[arg(long, value_name = "FORMAT", default_value = "text")]
    pub format: DiffFormat,

    /// Never use the network: a plugin not in the store or git cache is an error
    #[arg(long)]
    pub offline: bool,

    #[command(flatten)]
    pub fetch: super::FetchArgs,
}

/// How `berth plugins diff` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DiffFormat {
    /// For a terminal
    Text,
    /// The documented JSON document
    Json,
    /// Markdown, for a pull-request comment
    Markdown,
}

#[derive(Debug, Args)]
pub struct ApproveArgs {
    /// The plugins to approve, by locked name
    #[arg(required_unless_present = "all", conflicts_with = "all")]
    pub names: Vec<String>,

    /// Approve every locked plugin
    #[arg(long)]
    pub all: bool,

    /// Who approves [default: git's `user.name <user.email>`]
    #[arg(long, value_name = "WHO")]
    pub by: Option<String>,

    /// Sign each approval with this SSH key (`ssh-keygen -Y sign`): a private key file, a
    /// public key file whose private key the SSH agent holds, or `ssh-agent` for the
    /// agent's first key that the policy's `allowed_signers` lists
    #[arg(long, value_name = "KEY")]
    pub sign: Option<String>,
}

#[derive(Debug, Args)]
pub struct AddArgs {
    /// The source: `github:OWNER/REPO[/PATH]`, a git or archive URL, `./path`, or
    /// `PLUGIN@MARKETPLACE` for a plugin of a declared marketplace
    pub source: String,

    /// A branch, tag or full commit (git sources)
    #[arg(long = "ref", value_name = "REF", conflicts_with = "range")]
    pub git_ref: Option<String>,

    /// A semver range matched against the repository's tags, such as `^1.2`
    #[arg(long = "version", id = "range", value_name = "RANGE")]
    pub version: Option<String>,

    /// The plugin's folder inside the repository or archive
    #[arg(long, value_name = "PATH")]
    pub repo_path: Option<String>,

    /// Add it even if a plugin of the same name is already in the manifest
    #[arg(long)]
    pub force: bool,

    #[command(flatten)]
    pub observe: super::ObserveSwitch,

    #[command(flatten)]
    pub fetch: super::FetchArgs,
}

#[derive(Debug, Args)]
pub struct RemoveArgs {
    /// The plugin's name, as `berth plugins list` shows it
    pub name: String,

    #[command(flatten)]
    pub observe: super::ObserveSwitch,

    #[command(flatten)]
    pub fetch: super::FetchArgs,
}

#[derive(Debug, Args)]
pub struct UpdateArgs {
    /// The plugins to update [default: all]
    pub names: Vec<String>,

    #[command(flatten)]
    pub observe: super::ObserveSwitch,

    #[command(flatten)]
    pub fetch: super::FetchArgs,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    #[command(flatten)]
    pub output: super::FormatArgs,

    /// First ask each recorded MCP server again and fail if its answer changed
    #[arg(long)]
    pub check_tools: bool,

    /// Refuse plugin sets with more skills than this
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub max_skills: usize,

    /// Fail if the lockfile is out of date with the manifest instead of warning
    #[arg(long)]
    pub locked: bool,

    /// Leave out what the review reads of each plugin (`review` in the JSON, what other
    /// harnesses would run in the readable form), and skip reading every file for it: for
    /// programs that only want the set. A policy beside the lock is still enforced
    #[arg(long)]
    pub no_review: bool,
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

    #[command(flatten)]
    pub observe: super::ObserveSwitch,

    #[command(flatten)]
    pub fetch: super::FetchArgs,
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

    /// Then ask each recorded MCP server again and fail if its answer changed (always
    /// under a policy's `tools = "pinned"`)
    #[arg(long)]
    pub check_tools: bool,

    #[command(flatten)]
    pub observe: super::ObserveSwitch,

    #[command(flatten)]
    pub fetch: super::FetchArgs,
}

#[derive(Debug, Args)]
pub struct ObserveArgs {
    /// The plugins whose servers to observe [default: every plugin]
    pub names: Vec<String>,

    /// Write nothing: observe again and exit 1 naming each server whose answer is not
    /// the lock's record
    #[arg(long)]
    pub check: bool,

    /// Ask remote servers too, and record their answer as it is now (trust on first use:
    /// their code is not pinned); `--check --remote` asks them again
    #[arg(long)]
    pub remote: bool,

    /// Fill `${VAR}` in remote servers' headers from the environment (without it, such a
    /// header is not sent)
    #[arg(long, requires = "remote")]
    pub env: bool,

    #[command(flatten)]
    pub sandbox: super::SandboxSwitch,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    #[command(flatten)]
    pub output: super::FormatArgs,

    #[command(flatten)]
    pub fetch: super::FetchArgs,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub output: super::FormatArgs,

    /// Fail if the lockfile is out of date with the manifest instead of warning
    #[arg(long)]
    pub locked: bool,
}

#[derive(Debug, Args)]
pub struct TreeArgs {
    /// Show the plugins that need NAME (its locked name), up to the manifest's entries
    #[arg(long, value_name = "NAME")]
    pub invert: Option<String>,

    #[command(flatten)]
    pub output: super::FormatArgs,
}

#[derive(Debug, Args)]
pub struct OutdatedArgs {
    /// Exit 1 when anything would move (the report is printed either way)
    #[arg(long)]
    pub exit_code: bool,

    #[command(flatten)]
    pub output: super::FormatArgs,

    #[command(flatten)]
    pub fetch: super::FetchArgs,
}
