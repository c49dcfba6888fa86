//! The causes a `ResolveError` carries: what an upstream said, why a download, an
//! archive or a local folder failed.

use std::path::PathBuf;

use berth_transport::http::Upstream;

use berth_transport::extract::ExtractError;
use berth_transport::tree_path::NoFolder;

/// Why a local source folder cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum LocalPathProblem {
    /// Nothing is there.
    #[error("does not exist")]
    Missing,
    /// A file or something else that is not a folder.
    #[error("is not a folder")]
    NotAFolder,
    /// It could not be looked at.
    #[error("{0}")]
    Unreadable(#[source] std::io::Error),
    /// It holds neither a manifest nor a component a harness reads.
    #[error(
        "holds no plugin: neither a manifest ({}) nor a component a harness reads ({}); point `source` at a plugin's folder",
        one_of(manifests),
        one_of(components)
    )]
    NotAPlugin {
        /// The manifests looked for.
        manifests: &'static [&'static str],
        /// The components looked for (folders end in `/`).
        components: &'static [&'static str],
    },
    /// It holds files (or folders, ending in `/`) without the read bit for others.
    #[error(
        "holds {} others may not read: {}{}; the store is readable by every user of this machine, so berth does not copy them there: let others read them (`chmod o+r FILE`, `chmod o+rx FOLDER`) if nothing in them is secret, or move them out of the plugin's folder",
        if paths.len() + more == 1 { "a file" } else { "files" },
        paths.iter().map(|p| format!("`{p}`")).collect::<Vec<_>>().join(", "),
        if *more > 0 { format!(" and {more} more") } else { String::new() }
    )]
    Private {
        /// The first few, relative to the folder (`.` the folder itself).
        paths: Vec<String>,
        /// How many more there are.
        more: usize,
    },
}

/// `` `a`, `b` or `c` ``.
fn one_of(items: &[&str]) -> String {
    let quoted: Vec<String> = items.iter().map(|i| format!("`{i}`")).collect();
    match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => quoted.join(""),
    }
}

/// Why an archive download failed.
#[derive(Debug, thiserror::Error)]
pub enum DownloadError {
    /// Neither http(s) nor `file://`.
    #[error("not an http(s) URL")]
    NotHttp,
    /// A `file://` archive could not be read.
    #[error("{0}")]
    File(#[source] std::io::Error),
    /// The HTTP client failed (connecting, TLS, a protocol error).
    #[error("{0}")]
    Client(#[source] Upstream),
    /// 401 or 403.
    #[error(
        "the server answered {status}; give credentials as `${{VAR}}` in the URL or in `~/.netrc`"
    )]
    Unauthorized {
        /// The HTTP status.
        status: reqwest::StatusCode,
    },
    /// 401 or 403 to the credential a registry's configuration gives for the URL.
    #[error(
        "the server answered {status} to the credential this machine's configuration gives for it; check that registry's `_authToken` (or `_auth`, `username` and `_password`) in `.npmrc`"
    )]
    CredentialRefused {
        /// The HTTP status.
        status: reqwest::StatusCode,
    },
    /// Any other status that is not a success.
    #[error("the server answered {status}")]
    Status {
        /// The HTTP status.
        status: reqwest::StatusCode,
    },
    /// The server announced more than the limit.
    #[error(
        "the archive is {}, more than the limit of {}; raise it with `BERTH_ARCHIVE_MAX_BYTES`",
        berth_store::format_size(*.size),
        berth_store::format_size(*.limit)
    )]
    TooLarge {
        /// The announced length.
        size: u64,
        /// `BERTH_ARCHIVE_MAX_BYTES`.
        limit: u64,
    },
    /// The body grew past the limit.
    #[error(
        "the archive is larger than the limit of {}; stopped downloading (raise it with `BERTH_ARCHIVE_MAX_BYTES`)",
        berth_store::format_size(*.limit)
    )]
    GrewTooLarge {
        /// `BERTH_ARCHIVE_MAX_BYTES`.
        limit: u64,
    },
    /// Fewer bytes than announced.
    #[error("the download is truncated: got {got} of {expected} bytes{}", .cause.as_ref().map(|e| format!(" ({e})")).unwrap_or_default())]
    Truncated {
        /// Bytes received.
        got: u64,
        /// Bytes announced.
        expected: u64,
        /// The read error that ended it, if one did.
        #[source]
        cause: Option<std::io::Error>,
    },
    /// Reading the body failed.
    #[error("the download broke off: {0}")]
    BrokeOff(#[source] std::io::Error),
}

/// Why an archive's content was refused.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveProblem {
    /// Unpacking refused it.
    #[error(transparent)]
    Extract(#[from] ExtractError),
    /// `repo_path` is not a folder of the archive.
    #[error("`repo_path` `{repo_path}` {}{}", problem.describe(repo_path, "archive"), if matches!(**problem, NoFolder::Link { .. }) { "" } else { " in the archive" })]
    RepoPath {
        /// The normalised repo_path.
        repo_path: String,
        /// What is there instead of a folder.
        problem: Box<NoFolder>,
    },
    /// A symlink in the plugin folder leads out of it.
    #[error("`{}` is a symlink that leaves the plugin folder; refusing the archive", .0.display())]
    EscapingLink(PathBuf),
}
