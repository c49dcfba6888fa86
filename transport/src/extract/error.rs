//! Why an archive was refused.

use std::path::PathBuf;

/// Why an archive was refused.
#[derive(Debug, thiserror::Error)]
pub enum ExtractError {
    /// An entry that would land outside the folder, or a link that points out of it.
    #[error("entry `{entry}` {why}; refusing to unpack the archive")]
    Unsafe {
        /// The entry's path as the archive gives it.
        entry: String,
        /// What is wrong with it.
        why: UnsafeEntry,
    },
    /// The archive's own index lists more entries than the limit.
    #[error(
        "the archive has {count} entries, more than the limit of {limit}; raise it with `BERTH_ARCHIVE_MAX_ENTRIES`"
    )]
    TooManyEntries {
        /// Entries the archive lists.
        count: u64,
        /// `BERTH_ARCHIVE_MAX_ENTRIES`.
        limit: u64,
    },
    /// Unpacking passed the entry limit at `at`.
    #[error(
        "the archive has more than {limit} entries (at `{at}`); raise the limit with `BERTH_ARCHIVE_MAX_ENTRIES`"
    )]
    EntryLimit {
        /// `BERTH_ARCHIVE_MAX_ENTRIES`.
        limit: u64,
        /// The first entry past it.
        at: String,
    },
    /// Unpacking passed the size limit at `at`.
    #[error(
        "the archive unpacks to more than {} (at `{at}`{}); raise the limit with `BERTH_ARCHIVE_MAX_BYTES`",
        berth_store::format_size(*.limit),
        .link_to.as_ref().map(|t| format!(", a hard link to `{}`", t.display())).unwrap_or_default()
    )]
    SizeLimit {
        /// `BERTH_ARCHIVE_MAX_BYTES`.
        limit: u64,
        /// The entry that passed it.
        at: String,
        /// What the entry is a hard link to, when it is one.
        link_to: Option<PathBuf>,
    },
    /// Not a valid archive of its format (truncated, corrupt).
    #[error("the archive is damaged or truncated: {}{source}", .entry.as_ref().map(|e| format!("`{e}`: ")).unwrap_or_default())]
    Damaged {
        /// The entry being read, when known.
        entry: Option<String>,
        /// What the tar, gzip or zip reader said.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// Writing the files failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// What makes an archive entry unsafe to unpack.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnsafeEntry {
    /// A symlink entry with no target.
    #[error("is a symlink without a target")]
    SymlinkWithoutTarget,
    /// A hard link entry with no target.
    #[error("is a hard link without a target")]
    HardLinkWithoutTarget,
    /// A hard link whose target path leaves the archive.
    #[error("is a hard link to a file outside the archive")]
    HardLinkOutside,
    /// A hard link to something not unpacked before it as a file.
    #[error("is a hard link to `{}`, which is not a file unpacked before it", .0.display())]
    HardLinkNotBefore(PathBuf),
    /// A path with a component named like `.git` (any spelling git refuses).
    #[error("{}", berth_store::nar::GIT_NAME_REFUSED)]
    GitName,
    /// A device, fifo or socket.
    #[error("is a device, fifo or other special file")]
    Special,
    /// NUL or `\\` in the path.
    #[error("has a NUL or backslash in its path")]
    NulOrBackslash,
    /// An absolute path.
    #[error("has an absolute path")]
    Absolute,
    /// `..` in the path.
    #[error("has `..` in its path")]
    DotDot,
    /// Nothing left of the path.
    #[error("has an empty path")]
    Empty,
    /// A parent of the entry is a symlink.
    #[error("would be written through a symlink")]
    ThroughSymlink,
    /// A parent of the entry is a file.
    #[error("is inside a path that is a file")]
    InsideFile,
    /// The entry would replace a folder unpacked before it.
    #[error("would replace a folder")]
    ReplacesFolder,
    /// A folder entry where a file or link already is.
    #[error("is a folder where a file or link already is")]
    FolderOverFile,
    /// A symlink to an absolute path.
    #[error("is a symlink to the absolute path `{}`", .0.display())]
    AbsoluteSymlink(PathBuf),
    /// A symlink whose target leaves the archive.
    #[error("is a symlink to `{}`, which leaves the archive", .0.display())]
    SymlinkLeaves(PathBuf),
}
