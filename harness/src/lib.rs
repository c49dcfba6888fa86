//! Writing the locked plugin set where a harness reads it natively (`berth materialize`).
//!
//! A harness target is one [`Harness`] (its module: `claude_config.rs`, `codex.rs`,
//! `gemini_cli.rs`, `copilot.rs`, `opencode.rs`, `agent_plugins_folder.rs`) and one row of [`TARGETS`], which the CLI's
//! names come from. A target turns a [`PluginSet`] into [`Plan`]s of files and links to
//! verified store entries (`plan.rs`; `entry.rs` lists and copies an entry from what the
//! store's check just found of it) and names what the harness cannot express; `files.rs`
//! applies a plan (only what differs) and finds drift from it; `guard.rs` keeps every write inside
//! the folder and away from what berth did not write; `pinned.rs` is a plugin folder whose
//! manifest names its pinned servers inline, for the targets that read a plugin's folder.
//!
//! # Where things are
//!
//! `trait Harness` and the `TARGETS` table here, one target per file: `claude_config.rs`,
//! `codex.rs` (with `codex_commands.rs`), `gemini_cli.rs`, `copilot.rs`, `opencode.rs` (with
//! `opencode_forms.rs`) and `agent_plugins_folder.rs`
//! (with `agent_plugins_schema.rs`), `claude_catalog.rs` what a plugin's entry in berth's
//! Claude Code catalog says beyond its name, `managed.rs` the managed settings enforcing
//! the lock (Claude Code's, Copilot CLI's, Codex's requirements), `own.rs` a plugin's skills and servers as a
//! harness that keeps plugins apart sees them; `plan.rs` the paths a target writes;
//! `entry.rs` a plugin's store entry listed and copied from the paths the store's check
//! just found; `guard.rs` every name that becomes a path one plain component and nothing
//! berth did not write changed (refused, or with `--force` moved aside); `files.rs`
//! applying a plan idempotently and finding drift, a plan's paths checked and written a
//! few threads at once (`berth_runtime::parallel`); `pinned.rs` a plugin folder whose
//! manifest names its pinned servers inline.
//!
//! It uses the schema, the store, the plugin reader and the runtime's set; it must not read
//! the manifest or the network, or write outside the folder it was given.

mod agent_plugins_folder;
mod agent_plugins_schema;
mod claude_catalog;
mod claude_config;
mod claude_rules;
mod codex;
mod codex_commands;
mod copilot;
mod entry;
mod files;
mod gemini_cli;
mod gemini_parts;
mod guard;
mod managed;
mod opencode;
mod opencode_forms;
mod own;
mod pinned;
mod plan;

use std::path::{Path, PathBuf};

pub use agent_plugins_folder::AgentPluginsFolder;
pub use claude_config::{ClaudeConfig, MARKETPLACE};
pub use codex::Codex;
pub use copilot::CopilotCli;
pub use files::{Applied, Drift, apply, check};
pub use gemini_cli::GeminiCli;
pub use guard::{Foreign, foreign, move_aside};
pub use opencode::OpenCode;
pub use plan::{Plan, Planned};

use berth_plugin::error::PluginError;
use berth_runtime::set::{PluginInfo, PluginSet};

/// Every harness `berth materialize` writes for, in the order its help lists them.
pub static TARGETS: [&dyn Harness; 6] = [
    &ClaudeConfig,
    &Codex,
    &GeminiCli,
    &CopilotCli,
    &OpenCode,
    &AgentPluginsFolder,
];

/// The target named `id` (`claude`, `codex`, `gemini`, `copilot`, `opencode`,
/// `agent-plugins`).
pub fn target(id: &str) -> Option<&'static dyn Harness> {
    TARGETS.iter().copied().find(|t| t.id() == id)
}

/// Where a target writes: the harness's folder (absolute) and, for a target with a
/// project form, the repository (absolute, real) to enable the plugins in.
#[derive(Debug, Clone, Copy)]
pub struct Destination<'a> {
    /// The harness's folder.
    pub root: &'a Path,
    /// The repository of `--project`, when given.
    pub project: Option<&'a Path>,
    /// The managed settings file of `--managed-settings` (absolute), when given.
    pub managed: Option<&'a Path>,
}

/// The managed settings of a harness berth writes (`--managed-settings FILE`), which an
/// organisation installs where no user setting overrides them (`managed.rs` plans them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ManagedForm {
    /// Claude Code's managed settings, JSON.
    ClaudeCode,
    /// GitHub Copilot CLI's managed settings, JSON with Claude Code's keys.
    CopilotCli,
    /// Codex's requirements, TOML.
    Codex,
}

impl ManagedForm {
    /// Where the client reads them on Linux: the example FILE the CLI names.
    pub fn example(self) -> &'static str {
        match self {
            Self::ClaudeCode => "/etc/claude-code/managed-settings.d/berth.json",
            Self::CopilotCli => "/etc/github-copilot/managed-settings.json",
            Self::Codex => "/etc/codex/requirements.toml",
        }
    }
}

/// A harness berth writes the locked set for.
pub trait Harness: Sync {
    /// The name `berth materialize` takes (`claude`).
    fn id(&self) -> &'static str;

    /// The harness as people name it (`Claude Code`).
    fn display_name(&self) -> &'static str;

    /// What the folder it writes is, for `berth materialize --help`.
    fn folder(&self) -> &'static str;

    /// Whether it can enable the plugins in one repository instead of for the user
    /// (`--project REPO`).
    fn has_project_form(&self) -> bool {
        false
    }

    /// The harness's managed settings berth writes (`--managed-settings FILE`), which
    /// enforce the lock: only berth's marketplace, exactly the locked plugins.
    fn managed_form(&self) -> Option<ManagedForm> {
        None
    }

    /// Whether berth writes the harness's managed settings.
    fn has_managed_form(&self) -> bool {
        self.managed_form().is_some()
    }

    /// Whether it writes the set's reading of each plugin (its skills, servers, hooks)
    /// rather than the plugin's own folder for the harness to read: then what the set
    /// could not read (a server it dropped, a file it skipped) is missing there too, and
    /// the set's warnings are the target's.
    fn writes_the_sets_reading(&self) -> bool {
        false
    }

    /// Whether it writes the servers of a `.mcp.json` without its `mcpServers` wrapper, as
    /// Claude Code reads them (the set, reading as the SDK, has none of them and says so).
    fn reads_unwrapped_mcp(&self) -> bool {
        false
    }

    /// What of `plugin` (one of `set`'s plugins) the harness cannot express, one line
    /// each; `berth materialize` shows them as warnings.
    fn cannot_express(&self, set: &PluginSet, plugin: &PluginInfo) -> Vec<String>;

    /// The files and links that put `plugins` (the set's, one per name) where the harness
    /// reads them: one plan per folder written, the harness's folder first.
    fn plan(
        &self,
        set: &PluginSet,
        plugins: &[&PluginInfo],
        to: Destination<'_>,
    ) -> Result<Vec<(PathBuf, Plan)>, PluginError>;
}

impl std::fmt::Debug for dyn Harness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}

/// Everything `berth materialize` writes of `set` for `harness`: its plans, the first
/// carrying what the harness cannot express (and the plugins locked twice) as warnings.
pub fn materialize(
    harness: &dyn Harness,
    set: &PluginSet,
    to: Destination<'_>,
) -> Result<Vec<(PathBuf, Plan)>, PluginError> {
    let mut warnings = Vec::new();
    if harness.writes_the_sets_reading() {
        // Not the target's: a `.mcp.json` it reads as Claude Code does, and a skill or
        // server of the same name as another plugin's (each plugin is kept apart there:
        // both are written).
        let unwrapped =
            |w: &str| harness.reads_unwrapped_mcp() && w.ends_with(berth_plugin::mcp::UNWRAPPED);
        let kept_apart = |w: &str| {
            w.contains(berth_runtime::set::OVERRIDES)
                && (w.contains(": skill `") || w.contains(": MCP server `"))
        };
        warnings.extend(
            set.warnings
                .iter()
                .filter(|w| !unwrapped(w) && !kept_apart(w))
                .cloned(),
        );
    }
    let plugins = files::one_per_name(set, harness.display_name(), &mut warnings);
    for plugin in &plugins {
        warnings.extend(harness.cannot_express(set, plugin));
    }
    let mut plans = harness.plan(set, &plugins, to)?;
    if let (Some(file), Some(form)) = (to.managed, harness.managed_form()) {
        plans.push(managed::plan(form, &plugins, to.root, file)?);
    }
    let refused: usize = plans.iter().map(|(_, plan)| plan.refused.len()).sum();
    if let Some((_, first)) = plans.first_mut() {
        warnings.append(&mut first.warnings);
        first.warnings = warnings;
        first.plugins = plugins.len().saturating_sub(refused);
    }
    Ok(plans)
}
