//! `berth materialize`'s arguments: the target is a row of the runtime's `TARGETS`.

use std::path::PathBuf;

use berth_harness::{Harness, TARGETS};
use clap::Args;

use super::ProjectArgs;

#[derive(Debug, Args)]
pub struct MaterializeArgs {
    #[command(flatten)]
    pub project: ProjectArgs,

    /// The harness
    pub target: MaterializeTarget,

    /// First ask each recorded MCP server again and fail if its answer changed
    #[arg(long)]
    pub check_tools: bool,

    /// The folder to write (created if missing). For claude it may be left out: then it
    /// is your Claude Code folder (`$CLAUDE_CONFIG_DIR`, else `~/.claude`), which berth
    /// names and asks about on a terminal, and which needs `--yes` elsewhere
    pub dir: Option<PathBuf>,

    /// Write to the default folder without asking (claude, when DIR is left out)
    #[arg(long, short = 'y')]
    pub yes: bool,

    /// Write nothing; exit 1 naming every file edited, added or removed since
    #[arg(long)]
    pub check: bool,

    /// Take over what berth did not write where it writes (a folder or extension of a
    /// locked plugin's name, a symbolic link on the way): move each aside to
    /// NAME.berth-backup-N beside it, and say so; without this, berth refuses and writes
    /// nothing. Nothing is ever deleted
    #[arg(long, conflicts_with = "check")]
    pub force: bool,

    /// Use the lockfile as it is; without this, a manifest next to it must agree with it
    #[arg(long)]
    pub frozen: bool,

    /// claude only: enable the plugins in this repository instead of for the user, as
    /// `claude plugin install --scope project` does: REPO/.claude/settings.json gets
    /// `enabledPlugins` (commit it), DIR the installs, recorded for REPO
    #[arg(long = "project", value_name = "REPO")]
    pub project_repo: Option<PathBuf>,

    /// claude, codex and copilot: also write the client's managed settings into FILE (as
    /// root), which no user setting overrides, enforcing the lock: marketplaces restricted
    /// to berth's in DIR, and the locked plugins enabled where the client has such a key.
    /// claude: /etc/claude-code/managed-settings.d/berth.json (`strictKnownMarketplaces`,
    /// `extraKnownMarketplaces`, `enabledPlugins`); copilot:
    /// /etc/github-copilot/managed-settings.json (the same keys); codex:
    /// /etc/codex/requirements.toml (`[marketplaces]` `restrict_to_allowed_sources`,
    /// `allowed_sources`). FILE's other keys are kept
    #[arg(long, value_name = "FILE")]
    pub managed_settings: Option<PathBuf>,
}

/// A harness `berth materialize` writes for: a row of the runtime's `TARGETS`, whose id
/// is the name given here and whose folder is its help.
#[derive(Debug, Clone, Copy)]
pub struct MaterializeTarget(pub &'static dyn Harness);

impl clap::ValueEnum for MaterializeTarget {
    fn value_variants<'a>() -> &'a [Self] {
        static VARIANTS: std::sync::LazyLock<Vec<MaterializeTarget>> =
            std::sync::LazyLock::new(|| TARGETS.iter().map(|t| MaterializeTarget(*t)).collect());
        &VARIANTS
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.0.id()).help(self.0.folder()))
    }
}
