//! `berth store`: check, clean, push to and sign for binary caches.

use std::path::PathBuf;

use clap::{Args, Subcommand};

#[derive(Debug, Args)]
pub struct StoreArgs {
    #[command(subcommand)]
    pub command: StoreCommand,
}

#[derive(Debug, Subcommand)]
pub enum StoreCommand {
    /// Re-hash every store entry; exit 1 if any no longer matches its name
    Verify(StoreVerifyArgs),

    /// Remove store entries and caches that no registered lockfile or conversation uses
    ///
    /// Roots are the lockfiles berth has locked or synced and the data folders of `berth
    /// serve` (links under `<store>/roots/`, like Nix's indirect roots): a lockfile deleted
    /// or moved stops holding its entries. gc waits for running syncs and servers starting
    /// conversations, and they wait for it.
    Gc(GcArgs),

    /// Upload store entries to a binary cache in Nix's format
    ///
    /// Writes `nix-cache-info`, `nar/<filehash>.nar.zst` and, last, `<hash>.narinfo` (a
    /// content-addressed narinfo, `CA: fixed:r:sha256:...`), so a reader never sees a
    /// narinfo without its NAR and Nix itself can copy the plugin (`nix copy --from
    /// file://DIR /nix/store/...`). Entries already in the cache are skipped. Other
    /// machines then fetch from it with `--substituter URL`.
    ///
    ///   berth store push file:///srv/berth-cache                   # the plugins of ./plugins.lock
    ///   berth store push file:///srv/berth-cache --all             # every entry of the store
    #[command(verbatim_doc_comment)]
    Push(StorePushArgs),

    /// Make a signing key for `store push --sign-key`
    ///
    /// Writes the secret key (Nix's format, `NAME:BASE64`, readable only by you) to
    /// `--secret-key-file` and prints the public key, which readers pass to
    /// `--trusted-public-key` (or Nix to `trusted-public-keys`).
    ///
    ///   berth store sign-key generate cache.example.org-1 --secret-key-file ~/.config/berth/cache.key
    #[command(subcommand, verbatim_doc_comment)]
    SignKey(SignKeyCommand),

    /// Print the Nix store path of a locked plugin
    ///
    /// The path Nix gives the plugin folder as a fixed-output source
    /// (`nix-store --add-fixed --recursive sha256`), which names it in binary caches.
    Path(StorePathArgs),
}

#[derive(Debug, Subcommand)]
pub enum SignKeyCommand {
    /// Generate a key pair: the secret key to a file, the public key to stdout
    Generate(SignKeyGenerateArgs),
}

#[derive(Debug, Args)]
pub struct SignKeyGenerateArgs {
    /// The key's name (by convention the cache's host and a number: `cache.example.org-1`)
    pub name: String,

    /// Where to write the secret key (must not exist)
    #[arg(long, value_name = "FILE")]
    pub secret_key_file: PathBuf,
}

#[derive(Debug, Args)]
pub struct StorePushArgs {
    /// The cache: `file:///path/to/folder`
    #[arg(value_name = "DEST")]
    pub dest: String,

    /// Push the plugins of this lockfile
    #[arg(
        long,
        value_name = "FILE",
        default_value = "plugins.lock",
        conflicts_with = "all"
    )]
    pub lockfile: PathBuf,

    /// Push every entry in the store
    #[arg(long)]
    pub all: bool,

    /// Sign each narinfo with this secret key file (`berth store sign-key generate`, or
    /// `nix key generate-secret`)
    #[arg(long, value_name = "FILE")]
    pub sign_key: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct StorePathArgs {
    /// The plugin's name in the lock
    pub name: String,

    /// The lockfile
    #[arg(long, value_name = "FILE", default_value = "plugins.lock")]
    pub lockfile: PathBuf,
}

#[derive(Debug, Args)]
pub struct StoreVerifyArgs {
    /// Remove the entries that are corrupt (a later sync fetches them again)
    #[arg(long)]
    pub repair: bool,

    #[command(flatten)]
    pub output: super::FormatArgs,

    /// How many entries to hash at once [default: the number of cores]
    #[arg(short, long, value_name = "N")]
    pub jobs: Option<usize>,

    #[command(flatten)]
    pub caches: super::CacheArgs,
}

#[derive(Debug, Args)]
pub struct GcArgs {
    /// Say what would be removed, remove nothing
    #[arg(long)]
    pub dry_run: bool,

    #[command(flatten)]
    pub output: super::FormatArgs,
}
