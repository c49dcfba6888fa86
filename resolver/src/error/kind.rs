//! What kind of failure a [`ResolveError`] is, for callers that answer by kind (the
//! server's HTTP statuses, the CLI's exit codes) rather than by message.

use berth_transport::extract::ExtractError;

use super::{ArchiveProblem, DownloadError, ResolveError};

/// What kind of failure an error is, for callers that answer differently by kind (the
/// server's HTTP statuses) without reading messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The request itself is wrong (an unset `${VAR}`, a source berth cannot fetch).
    InvalidInput,
    /// The source policy refused a URL.
    Refused,
    /// The policy's `[sources]` refused a source (before it was contacted).
    PolicyDenied,
    /// The upstream failed or is out of reach (offline).
    Upstream,
    /// The upstream did not answer in time, or the caller's deadline passed.
    Timeout,
    /// The plugin is invalid or not what the lock says (hashes, names, paths, archives).
    Integrity,
    /// berth's own files (store, caches) failed.
    Internal,
    /// A limit of this machine's refused the source (an archive over
    /// `BERTH_ARCHIVE_MAX_BYTES` or `BERTH_ARCHIVE_MAX_ENTRIES`): the upstream did
    /// nothing wrong.
    OverLimit,
}

impl ResolveError {
    /// What kind of failure this is.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::MissingEnv { .. }
            | Self::InvalidUrl { .. }
            | Self::PlainHttpCredentials { .. }
            | Self::LockedSource { .. }
            | Self::VersionRange { .. }
            | Self::Marketplace { .. }
            | Self::FileTooLarge { .. }
            | Self::Dependency { .. }
            | Self::TooNew(_)
            | Self::RegistryConfig(_) => ErrorKind::InvalidInput,
            Self::Refused { .. } => ErrorKind::Refused,
            Self::PolicyDenied(_) => ErrorKind::PolicyDenied,
            Self::RegistrySignature(refused) if refused.policy.is_some() => ErrorKind::PolicyDenied,
            Self::Download {
                cause: DownloadError::TooLarge { .. } | DownloadError::GrewTooLarge { .. },
                ..
            }
            | Self::Archive {
                problem:
                    ArchiveProblem::Extract(
                        ExtractError::TooManyEntries { .. }
                        | ExtractError::EntryLimit { .. }
                        | ExtractError::SizeLimit { .. },
                    ),
                ..
            } => ErrorKind::OverLimit,
            Self::Fetch { .. }
            | Self::Unreachable { .. }
            | Self::Download { .. }
            | Self::Offline { .. }
            | Self::BinaryCache(_) => ErrorKind::Upstream,
            Self::Timeout { .. } | Self::Cancelled => ErrorKind::Timeout,
            Self::Io(_) | Self::Store(_) | Self::Cache { .. } => ErrorKind::Internal,
            Self::RefNotFound { .. }
            | Self::EmptyRepository { .. }
            | Self::CommitNotFound { .. }
            | Self::RepoPath { .. }
            | Self::UnsafeTree { .. }
            | Self::GitName { .. }
            | Self::LocalPath { .. }
            | Self::LocalChanged { .. }
            | Self::HashMismatch { .. }
            | Self::Pin(_)
            | Self::NameMismatch { .. }
            | Self::PluginManifest(_)
            | Self::InvalidPluginName { .. }
            | Self::Archive { .. }
            | Self::ArchiveHashMismatch { .. }
            | Self::NoMatchingVersion { .. }
            | Self::MarketplaceChanged { .. }
            | Self::Npm { .. }
            | Self::Payload { .. }
            | Self::NpmIntegrity { .. }
            | Self::RegistrySignature(_)
            | Self::MarketplaceRewritten(_)
            | Self::UnknownPlugin { .. }
            | Self::Agent(_)
            | Self::Uv(_)
            | Self::WheelMismatch { .. }
            | Self::Nar(_) => ErrorKind::Integrity,
        }
    }
}
