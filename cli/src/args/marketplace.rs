//! `berth marketplace`: declare, list, search, update and remove marketplaces.

use clap::{Args, Subcommand};

use super::{FetchArgs, FormatArgs, ProjectArgs};

#[derive(Debug, Args)]
pub struct MarketplaceArgs {
    #[command(flatten)]
    pub project: ProjectArgs,

    #[command(subcommand)]
    pub command: MarketplaceCommand,
}

#[derive(Debug, Subcommand)]
pub enum MarketplaceCommand {
    /// Declare a marketplace in the manifest (comments and layout kept), then lock
    ///
    /// The marketplace is read before anything is written: a source without a catalog,
    /// or a catalog that is not one, changes nothing.
    Add(MarketplaceAddArgs),

    /// List the plugins a declared marketplace offers
    ///
    /// Reads its catalog at the locked commit when the lock has one, else at its `ref`.
    List(MarketplaceListArgs),

    /// Find plugins in every declared marketplace by name, description or keyword
    ///
    /// QUERY is matched, ignoring case, as a substring of each catalog entry's name,
    /// `description` and `keywords`. Each catalog is read as `berth marketplace list`
    /// reads it: at the locked commit when the lock has one, else at its `ref`. No match
    /// is not an error (exit 0, as `cargo search`); the JSON document then lists none.
    #[command(after_help = "Examples:\n  \
        berth marketplace search review\n  \
        berth marketplace search lint --json\n  \
        berth marketplace search 'code review' --offline   # from the git cache only")]
    Search(MarketplaceSearchArgs),

    /// Move marketplaces to the newest commit of their `ref`, and relock their plugins
    ///
    /// Reads each named marketplace (every declared one without NAME) at its `ref` now and
    /// relocks the plugins asked of it, as `berth plugins lock --upgrade-plugin NAME`
    /// does: a plugin whose content is the same at the new commit keeps its pin. Other
    /// entries keep theirs. Prints each marketplace's old and new commit, or that it was
    /// already up to date; the lock is written only when the policy admits it.
    #[command(after_help = "Examples:\n  \
        berth marketplace update              # every declared marketplace\n  \
        berth marketplace update official     # one")]
    Update(MarketplaceUpdateArgs),

    /// Remove a marketplace from the manifest (comments and layout kept), then lock
    ///
    /// Refused while `[[plugin]]` entries still ask for plugins of it (`PLUGIN@NAME`),
    /// naming them: remove them first with `berth plugins remove`, or pass `--force` to
    /// remove them with it. The new lock is made before anything is written, so a
    /// failure leaves manifest and lock as they were.
    #[command(after_help = "Examples:\n  \
        berth marketplace remove official\n  \
        berth marketplace remove official --force   # and the plugins asked of it")]
    Remove(MarketplaceRemoveArgs),
}

#[derive(Debug, Args)]
pub struct MarketplaceAddArgs {
    /// The name plugins are asked for by (`PLUGIN@NAME`)
    pub name: String,

    /// The marketplace: `github:OWNER/REPO`, a git URL, or `./path`
    pub source: String,

    /// A branch, tag or full commit (git marketplaces)
    #[arg(long = "ref", value_name = "REF")]
    pub git_ref: Option<String>,

    /// The marketplace's folder inside the repository
    #[arg(long, value_name = "PATH")]
    pub repo_path: Option<String>,

    #[command(flatten)]
    pub observe: super::ObserveSwitch,

    #[command(flatten)]
    pub fetch: FetchArgs,
}

#[derive(Debug, Args)]
pub struct MarketplaceListArgs {
    /// The declared marketplace's name
    pub name: String,

    #[command(flatten)]
    pub output: FormatArgs,

    /// Never fetch: read the catalog from the git cache only
    #[arg(long)]
    pub offline: bool,

    #[command(flatten)]
    pub fetch: FetchArgs,
}

#[derive(Debug, Args)]
pub struct MarketplaceSearchArgs {
    /// What to look for (a substring, any case)
    pub query: String,

    #[command(flatten)]
    pub output: FormatArgs,

    /// Never fetch: read the catalogs from the git cache only
    #[arg(long)]
    pub offline: bool,

    #[command(flatten)]
    pub fetch: FetchArgs,
}

#[derive(Debug, Args)]
pub struct MarketplaceUpdateArgs {
    /// The declared marketplaces to update [default: all]
    pub names: Vec<String>,

    #[command(flatten)]
    pub observe: super::ObserveSwitch,

    #[command(flatten)]
    pub fetch: FetchArgs,
}

#[derive(Debug, Args)]
pub struct MarketplaceRemoveArgs {
    /// The declared marketplace's name
    pub name: String,

    /// Remove the `[[plugin]]` entries that ask for its plugins too
    #[arg(long)]
    pub force: bool,

    #[command(flatten)]
    pub observe: super::ObserveSwitch,

    #[command(flatten)]
    pub fetch: FetchArgs,
}
