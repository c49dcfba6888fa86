//! What can go wrong while resolving or fetching one plugin.

use std::path::PathBuf;

use berth_lockfile_schema::Sha256Hash;
use berth_lockfile_schema::plugin_manifest::ManifestError;
use berth_store::{NarError, StoreError};

mod age;
mod agent;
mod causes;
mod denied;
mod kind;
mod pins;
mod signature;

pub use age::TooNew;
pub use agent::{AgentLockError, WheelProblem};
pub use causes::{ArchiveProblem, DownloadError, LocalPathProblem};
pub use denied::{DeniedSource, PolicyDenied};
pub use kind::ErrorKind;
pub use pins::PinMismatch;
pub use signature::SignatureRefused;

use berth_transport::http::Upstream;
use berth_transport::policy::Refusal;
use berth_transport::tree_path::NoFolder;
use berth_transport::url::UrlError;

/// Why one plugin could not be resolved, fetched or verified. Messages name what failed
/// and say what to do next; URLs in them have their credentials removed.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// Talking to a git remote or a package index failed.
    #[error("could not fetch from `{url}`: {cause}")]
    Fetch {
        /// The remote, credentials removed.
        url: String,
        /// What the git library or uv said.
        #[source]
        cause: Upstream,
    },
    /// The host could not be reached at all: no connection, no name, no trusted TLS.
    #[error("could not reach `{url}`: {why}")]
    Unreachable {
        /// The remote or URL, credentials removed.
        url: String,
        /// Why, in a few words.
        why: String,
    },
    /// A source URL that does not parse.
    #[error("`{url}` is not a valid URL ({source})")]
    InvalidUrl {
        /// The URL, credentials removed.
        url: String,
        /// What the URL parser said.
        #[source]
        source: url::ParseError,
    },
    /// A password would go over plain http to another machine.
    #[error("`{url}`: refusing to send credentials over plain http to another machine; use https")]
    PlainHttpCredentials {
        /// The URL, credentials removed.
        url: String,
    },
    /// No branch or tag of that name.
    #[error("`{url}` has no branch or tag named `{git_ref}`")]
    RefNotFound {
        /// The remote, credentials removed.
        url: String,
        /// The requested ref.
        git_ref: String,
    },
    /// The remote has no commits.
    #[error("`{url}` has no commits on its default branch")]
    EmptyRepository {
        /// The remote, credentials removed.
        url: String,
    },
    /// The commit is neither cached nor obtainable from the remote.
    #[error("commit `{rev}` is not in `{url}`")]
    CommitNotFound {
        /// The remote, credentials removed.
        url: String,
        /// The commit.
        rev: String,
    },
    /// A binary cache could not be written (`--push-to`).
    #[error(transparent)]
    BinaryCache(#[from] berth_transport::cache::CacheError),
    /// Reading the local git cache failed.
    #[error("git cache at `{}`: {source}", path.display())]
    Cache {
        /// The bare repository.
        path: PathBuf,
        /// What the git library said (about local files: no credentials in it).
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// `repo_path` is not a folder at that commit.
    #[error("`repo_path` `{repo_path}` {} at commit `{rev}`", problem.describe(repo_path, "repository"))]
    RepoPath {
        /// The normalised repo_path.
        repo_path: String,
        /// The commit.
        rev: String,
        /// What is there instead of a folder.
        problem: Box<NoFolder>,
    },
    /// The git tree holds something that cannot be written safely.
    #[error("commit `{rev}` has an unsafe path `{path}`; refusing to export it")]
    UnsafeTree {
        /// The commit.
        rev: String,
        /// The offending path.
        path: String,
    },
    /// The git tree holds an entry named like `.git` (any spelling git refuses).
    #[error("commit `{rev}`: `{path}` {}", berth_store::nar::GIT_NAME_REFUSED)]
    GitName {
        /// The entry's path in the tree.
        path: String,
        /// The commit.
        rev: String,
    },
    /// The policy's `[sources]` refuses a source before it is contacted.
    #[error(transparent)]
    PolicyDenied(Box<PolicyDenied>),
    /// A lock's pin, checked against its source, does not give what the lock says.
    #[error(transparent)]
    Pin(Box<PinMismatch>),
    /// The network is needed but `--offline` was given.
    #[error("{what} is not available offline; run without `--offline` to fetch it")]
    Offline {
        /// What was needed.
        what: String,
    },
    /// A local source folder does not exist or is not a folder.
    #[error(
        "local plugin folder `{}` {}{problem}",
        path.display(),
        link.as_ref().map(|t| format!("is a symlink to `{}`, which ", t.display())).unwrap_or_default()
    )]
    LocalPath {
        /// The resolved path.
        path: PathBuf,
        /// Where the path leads when it is a symlink.
        link: Option<PathBuf>,
        /// What is wrong.
        #[source]
        problem: LocalPathProblem,
    },
    /// A local source changed since it was locked. (The plugin's name is the label of
    /// the error that carries this one, so the message does not repeat it.)
    #[error(
        "its folder `{path}` changed since it was locked (locked `{expected}`, now `{actual}`); run `berth plugins lock` to lock the new content"
    )]
    LocalChanged {
        /// The plugin.
        name: String,
        /// The path as written.
        path: String,
        /// The locked hash.
        expected: Sha256Hash,
        /// The current hash.
        actual: Sha256Hash,
    },
    /// The content does not hash to what the lock or manifest says.
    #[error("hash mismatch for `{name}`: expected `{expected}`, got `{actual}`")]
    HashMismatch {
        /// The plugin.
        name: String,
        /// Expected.
        expected: Sha256Hash,
        /// Actual.
        actual: Sha256Hash,
    },
    /// The manifest's `name` differs from the plugin's own name.
    #[error("the plugin is named `{actual}`, but the manifest expects `{expected}`")]
    NameMismatch {
        /// From the manifest.
        expected: String,
        /// From the plugin.
        actual: String,
    },
    /// The plugin's manifest (`plugin.json`) is unusable.
    #[error("{}: {}", .0.file, .0.message)]
    PluginManifest(#[from] ManifestError),
    /// The plugin's name (from its manifest or folder) cannot name a plugin.
    #[error(
        "{file}: `{name}` is not a valid plugin name (it must not be empty or hold `/`, `\\` or `:`)"
    )]
    InvalidPluginName {
        /// Where the name comes from: the manifest, or "the folder name".
        file: String,
        /// The name.
        name: String,
    },
    /// The source policy refused a URL on the way (a redirect, say).
    #[error("`{url}`: {why}")]
    Refused {
        /// The source, redacted.
        url: String,
        /// What the policy said.
        #[source]
        why: Refusal,
    },
    /// The remote or download did not answer in time.
    #[error("`{url}` timed out: {cause}")]
    Timeout {
        /// The remote or URL, credentials removed.
        url: String,
        /// What timed out.
        #[source]
        cause: Upstream,
    },
    /// The caller cancelled the work (a deadline passed) before it was done.
    #[error("cancelled: the work was stopped before it finished (a deadline passed)")]
    Cancelled,
    /// `${VAR}` in a source names an unset variable.
    #[error("environment variable `{name}` used in the source is not set; export it and try again")]
    MissingEnv {
        /// The variable.
        name: String,
    },
    /// Downloading an archive failed.
    #[error("could not download `{url}`: {cause}")]
    Download {
        /// The URL, credentials removed.
        url: String,
        /// What went wrong.
        #[source]
        cause: DownloadError,
    },
    /// An archive was refused or could not be unpacked.
    #[error("archive `{url}`: {problem}")]
    Archive {
        /// The URL, credentials removed.
        url: String,
        /// What is wrong.
        #[source]
        problem: ArchiveProblem,
    },
    /// The downloaded archive is not the one the lock or manifest names.
    #[error("archive hash mismatch for `{name}`: expected `{expected}`, got `{actual}`")]
    ArchiveHashMismatch {
        /// The plugin (or the URL when the plugin is not known yet).
        name: String,
        /// Expected.
        expected: Sha256Hash,
        /// Actual.
        actual: Sha256Hash,
    },
    /// The release-age cutoff leaves nothing to lock.
    #[error(transparent)]
    TooNew(#[from] TooNew),
    /// No tag satisfies a `version` range.
    #[error("no tag of `{url}` matches `version = \"{range}\"`{}", nearest_hint(.nearest))]
    NoMatchingVersion {
        /// The remote, credentials removed.
        url: String,
        /// The range.
        range: String,
        /// The closest semver tags, newest first.
        nearest: Vec<String>,
    },
    /// `--upgrade-plugin NAME` names no locked plugin.
    #[error("no locked plugin is named `{name}`; `berth plugins list` shows the names")]
    UnknownPlugin {
        /// The name given.
        name: String,
    },
    /// A lock entry's `source` that does not parse.
    #[error("plugin `{name}`: its locked source {source}")]
    LockedSource {
        /// The plugin.
        name: String,
        /// What the parser said.
        #[source]
        source: berth_lockfile_schema::SourceError,
    },
    /// A `version` range that is not a semver requirement.
    #[error("`version = \"{range}\"`: {source}")]
    VersionRange {
        /// The range as written.
        range: String,
        /// What the semver parser said.
        #[source]
        source: semver::Error,
    },
    /// A file berth reads whole (a catalog, a plugin's manifest) is over its size limit:
    /// it comes from someone else's repository, so it is refused before it is read.
    #[error(
        "{file} is {size} bytes, over berth's limit of {limit} bytes for this file; a plugin's metadata files and a marketplace's catalog are small, so this one is refused unread"
    )]
    FileTooLarge {
        /// The file, already quoted and placed (for example "`plugin.json` of `github:o/r`").
        file: String,
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
    },

    /// A marketplace's catalog, or the entry a plugin is asked for, cannot be used.
    #[error("{message}")]
    Marketplace {
        /// What is wrong, naming the marketplace and the entry.
        message: String,
    },

    /// A marketplace's catalog at its locked commit is not the one locked (an edited lock
    /// or a damaged git cache: a commit's content is fixed).
    #[error(
        "marketplace `{name}`: its catalog at the locked commit `{rev}` has sha256 `{actual}`, but the lock has `{expected}`; one commit cannot hold two catalogs, so the lock was edited or the git cache under the store's `git-v1/` is damaged (delete it to fetch again). Run `berth plugins lock --upgrade-plugin {name}` to read the marketplace afresh"
    )]
    MarketplaceChanged {
        /// The marketplace's name.
        name: String,
        /// The locked commit.
        rev: String,
        /// The locked catalog hash.
        expected: Sha256Hash,
        /// The catalog hash found.
        actual: Sha256Hash,
    },

    /// A plugin dependency cannot be resolved: missing, conflicting ranges, a cycle.
    #[error("{message}")]
    Dependency {
        /// What is wrong, with the chain of plugins that leads to it.
        message: String,
    },

    /// An npm registry's document cannot give the version asked for.
    #[error("npm package `{package}`: {message}")]
    Npm {
        /// The package.
        package: String,
        /// What is wrong.
        message: String,
    },

    /// A runner-started MCP server's package could not be locked or fetched.
    #[error("{what}: {message}")]
    Payload {
        /// The package or line.
        what: String,
        /// What went wrong.
        message: String,
    },

    /// An npm tarball is not what its registry's `dist.integrity` says.
    #[error(
        "npm package `{package}`: `{tarball}` does not match the registry's integrity: expected `{expected}`, got `{actual}`; nothing was written"
    )]
    NpmIntegrity {
        /// The package and version.
        package: String,
        /// The tarball's URL, credentials removed.
        tarball: String,
        /// `dist.integrity`.
        expected: String,
        /// The same hash of the download.
        actual: String,
    },

    /// An npm package's registry signature is refused.
    #[error(transparent)]
    RegistrySignature(Box<SignatureRefused>),
    /// A marketplace no longer has the commit the lock pins (its history was rewritten).
    #[error(transparent)]
    MarketplaceRewritten(Box<Rewritten>),
    /// The custom agent package could not be resolved, built or read.
    #[error(transparent)]
    Agent(#[from] AgentLockError),
    /// uv or Python could not be found or run for the agent package.
    #[error(transparent)]
    Uv(#[from] berth_uv::UvError),
    /// A wheel's bytes are not the ones the lock names.
    #[error("wheel `{file}` ({url}): sha256 mismatch: expected `{expected}`, got `{actual}`")]
    WheelMismatch {
        /// The wheel's file name.
        file: String,
        /// Where it came from, credentials removed.
        url: String,
        /// What the lock says (hex).
        expected: String,
        /// What the bytes hash to (hex).
        actual: String,
    },
    /// Hashing failed.
    #[error(transparent)]
    Nar(#[from] NarError),
    /// The store refused.
    #[error(transparent)]
    Store(StoreError),
    /// A filesystem error outside the store.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// npm's or uv's configuration, which names the registry, could not be read.
    #[error(transparent)]
    RegistryConfig(#[from] berth_transport::registries::ConfigError),
}

impl From<UrlError> for ResolveError {
    fn from(e: UrlError) -> Self {
        match e {
            UrlError::InvalidUrl { url, source } => Self::InvalidUrl { url, source },
            UrlError::PlainHttpCredentials { url } => Self::PlainHttpCredentials { url },
            UrlError::MissingEnv { name } => Self::MissingEnv { name },
        }
    }
}

impl From<StoreError> for ResolveError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::HashMismatch {
                name,
                expected,
                actual,
            } => ResolveError::HashMismatch {
                name,
                expected,
                actual,
            },
            other => ResolveError::Store(other),
        }
    }
}

/// A failure of one entry, with what identifies it to the user. Shown as `label: error`,
/// the source named once: an error that starts by naming the source the label ends with
/// (`` `URL`: … ``) is shown without that repetition.
#[derive(Debug, thiserror::Error)]
#[error("{label}: {}", without_repeated_source(label, &error.to_string()))]
pub struct EntryError {
    /// `plugins.toml:7: `github:o/r`` or `plugin `review``: where the entry is.
    pub label: String,
    /// What went wrong (boxed: errors carry hashes and paths, results should stay small).
    #[source]
    pub error: Box<ResolveError>,
}

/// `error` without a leading `` `SOURCE`: `` when `label` ends with that same `` `SOURCE` ``.
fn without_repeated_source(label: &str, error: &str) -> String {
    let named = label.rsplit_once(": ").map_or(label, |(_, last)| last);
    match error.strip_prefix(named) {
        Some(rest) if named.starts_with('`') && rest.starts_with(": ") => rest[2..].to_owned(),
        _ => error.to_owned(),
    }
}

fn nearest_hint(nearest: &[String]) -> String {
    if nearest.is_empty() {
        "; it has no semver tags (`v1.2.3` or `1.2.3`)".to_owned()
    } else {
        format!(
            "; its newest tags are {}",
            nearest
                .iter()
                .map(|t| format!("`{t}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}

/// A marketplace whose locked commit is gone, and what its `ref` names now.
#[derive(Debug, thiserror::Error)]
#[error(
    "marketplace `{name}` no longer has the locked commit `{rev}` (catalog `{expected}`): its history was rewritten. {} now points at `{now_rev}`, whose catalog is `{actual}`. Check the marketplace, then run `berth plugins lock --upgrade-plugin {name}` to accept it",
    git_ref.as_ref().map_or("Its default branch".to_owned(), |r| format!("Its `{r}`"))
)]
pub struct Rewritten {
    /// The marketplace's name.
    pub name: String,
    /// The locked commit.
    pub rev: String,
    /// The locked catalog hash.
    pub expected: Sha256Hash,
    /// The declared `ref`.
    pub git_ref: Option<String>,
    /// The commit the `ref` now names.
    pub now_rev: String,
    /// The catalog hash there.
    pub actual: Sha256Hash,
}

#[cfg(test)]
mod tests;
