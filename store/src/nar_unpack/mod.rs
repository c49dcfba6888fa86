//! Unpacking a NAR stream, such as one a binary cache serves: hostile input. Every name is
//! checked (not empty, `.` or `..`, no `/` or NUL, not git's own folder, bounded, strictly
//! increasing within a folder as NAR requires), every length read is bounded before
//! anything is allocated for it, padding must be zero and nothing may follow the archive.
//! Symlinks are created as links and never followed, and files and folders are only ever
//! created new, inside folders this unpacker made itself, so nothing is written outside
//! the destination.
//!
//! The NAR's sha256 is computed over exactly the bytes read, in one pass: for an accepted
//! archive it equals [`crate::hash_path`] of the tree written, so a caller compares it with
//! the lock.

use std::io::{self, Read};
use std::path::Path;

use berth_lockfile_schema::Sha256Hash;

use crate::nar::is_git_name;

mod reader;

use reader::Reader;

/// Bounds on what a NAR may make. The defaults are generous for a plugin yet stop an
/// archive bomb long before the disk fills.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnpackLimits {
    /// Bytes of all file contents together.
    pub max_total_bytes: u64,
    /// Bytes of one file.
    pub max_file_bytes: u64,
    /// Files, folders and links, the root included.
    pub max_entries: u64,
    /// Folders above a node (the root is at depth 0).
    pub max_depth: usize,
    /// Bytes of one name.
    pub max_name_len: usize,
    /// Bytes of one symlink target.
    pub max_target_len: usize,
}

impl Default for UnpackLimits {
    fn default() -> Self {
        Self {
            max_total_bytes: 4 << 30,
            max_file_bytes: 1 << 30,
            max_entries: 1_000_000,
            max_depth: 256,
            max_name_len: 255,
            max_target_len: 4095,
        }
    }
}

/// What was unpacked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unpacked {
    /// sha256 of the NAR (the plugin's hash in a lock).
    pub nar_hash: Sha256Hash,
    /// Bytes of the NAR.
    pub nar_size: u64,
}

/// Why a NAR was refused.
#[derive(Debug, thiserror::Error)]
pub enum NarUnpackError {
    /// Creating or writing the tree failed (the message carries the path).
    #[error(transparent)]
    Io(#[from] io::Error),
    /// Reading the stream failed.
    #[error("reading the NAR failed at byte {offset}")]
    Read {
        /// Bytes read before the failure.
        offset: u64,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// Not a well-formed NAR.
    #[error("not a NAR: {what} at byte {offset}")]
    Malformed {
        /// Where the offending item starts.
        offset: u64,
        /// What was wrong.
        what: String,
    },
    /// An entry whose name (or symlink target) could escape the folder, or that berth
    /// refuses.
    #[error("the NAR holds an entry `{path}` that berth refuses: {why}")]
    BadName {
        /// The entry's path inside the archive (`.` for the root).
        path: String,
        /// Why.
        why: &'static str,
    },
    /// Over one of the [`UnpackLimits`].
    #[error("the NAR is too large: {what} (the limit is `{limit}`)")]
    TooLarge {
        /// What is over the limit, with its value and where.
        what: String,
        /// The limit.
        limit: u64,
    },
}

/// Unpacks the NAR read from `reader` at `dest` and returns its hash and size.
///
/// `dest` must not exist: `unpack` creates it as a folder, file or symlink, whatever the
/// archive's root is, and refuses (`NarUnpackError::Io`, already exists) to unpack over
/// anything, leaving it alone. Files are created read-only, `0o555` when executable and
/// `0o444` otherwise (the modes a store entry gives them, so committing one has nothing to
/// change on its files: written through the descriptor that created them), and folders
/// `0o755` (less the umask); making the folders read-only is the store's job.
///
/// On any error after `dest` was created, `unpack` removes it itself, best effort: should
/// that removal fail too (logged at debug level), a partial tree may remain at `dest`, so a
/// caller should unpack into a staging folder it removes on failure anyway.
pub fn unpack(
    reader: impl Read,
    dest: &Path,
    limits: &UnpackLimits,
) -> Result<Unpacked, NarUnpackError> {
    let mut nar = Reader::new(reader, *limits);
    let result = nar.archive(dest);
    if result.is_err()
        && nar.made_dest()
        && let Err(e) = crate::remove_tree(dest)
    {
        tracing::debug!(
            "could not remove the partly unpacked `{}`: {e}",
            dest.display()
        );
    }
    result?;
    Ok(nar.finish())
}

fn malformed(offset: u64, what: impl Into<String>) -> NarUnpackError {
    NarUnpackError::Malformed {
        offset,
        what: what.into(),
    }
}

/// A tag as found, for a message (tags are at most `MAX_TAG` bytes).
fn shown_tag(tag: &[u8]) -> String {
    String::from_utf8_lossy(tag).escape_debug().to_string()
}

/// The path of `name` in the folder shown as `folder`, for messages.
fn child_shown(folder: &str, name: &[u8]) -> String {
    let name = String::from_utf8_lossy(name).escape_debug().to_string();
    if folder.is_empty() {
        name
    } else {
        format!("{folder}/{name}")
    }
}

/// A path for messages, with the root shown as `.`.
fn at_root(shown: &str) -> &str {
    if shown.is_empty() { "." } else { shown }
}

fn check_name(name: &[u8], shown: &str) -> Result<(), NarUnpackError> {
    let why = if name.is_empty() {
        "an empty name"
    } else if name == b"." || name == b".." {
        "`.` and `..` are not names"
    } else if name.contains(&b'/') {
        "a name with `/`"
    } else if name.contains(&0) {
        "a name with NUL"
    } else if is_git_name(name) {
        "named like git's own folder `.git`, which berth never stores"
    } else {
        return Ok(());
    };
    Err(NarUnpackError::BadName {
        path: shown.to_owned(),
        why,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nar::{dump, hash_path};
    use std::os::unix::fs::{PermissionsExt, symlink};
    use std::path::PathBuf;

    /// `dump`s `src`, unpacks the bytes and checks the hashes and size; returns the copy's
    /// folder (and its path) for further checks.
    fn round_trip(src: &Path) -> (tempfile::TempDir, PathBuf) {
        let mut bytes = Vec::new();
        dump(src, &mut bytes).expect("dump");
        let out = tempfile::tempdir().expect("tmp");
        let dest = out.path().join("copy");
        let got = unpack(bytes.as_slice(), &dest, &UnpackLimits::default()).expect("unpack");
        assert_eq!(got.nar_size, bytes.len() as u64);
        assert_eq!(got.nar_hash, hash_path(src).expect("hash"));
        assert_eq!(hash_path(&dest).expect("hash"), got.nar_hash);
        let mut again = Vec::new();
        dump(&dest, &mut again).expect("dump");
        assert!(again == bytes, "the copy serialises to the same bytes");
        (out, dest)
    }

    fn mode(path: &Path) -> u32 {
        fs_err::symlink_metadata(path)
            .expect("stat")
            .permissions()
            .mode()
            & 0o777
    }

    fn sample_tree(root: &Path) {
        fs_err::create_dir_all(root.join("a/b/empty")).expect("mkdir");
        fs_err::write(root.join("a/b/f.txt"), "text").expect("write");
        fs_err::write(root.join("empty"), "").expect("write");
        fs_err::write(root.join("run.sh"), "#!/bin/sh\n").expect("write");
        fs_err::set_permissions(root.join("run.sh"), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
        symlink("a/b/f.txt", root.join("rel")).expect("link");
        symlink("../../outside", root.join("up")).expect("link");
        symlink("/etc/passwd", root.join("abs")).expect("link");
    }

    #[test]
    fn a_tree_round_trips_with_its_modes_and_links_kept_as_links() {
        let dir = tempfile::tempdir().expect("tmp");
        let root = dir.path().join("p");
        sample_tree(&root);
        let (_out, copy) = round_trip(&root);
        assert!(copy.join("a/b/empty").is_dir());
        assert_eq!(fs_err::read(copy.join("empty")).expect("read"), b"");
        assert_eq!(fs_err::read(copy.join("a/b/f.txt")).expect("read"), b"text");
        assert_eq!(mode(&copy.join("run.sh")) & 0o100, 0o100, "executable");
        assert_eq!(mode(&copy.join("empty")) & 0o100, 0, "not executable");
        for (link, target) in [
            ("rel", "a/b/f.txt"),
            ("up", "../../outside"),
            ("abs", "/etc/passwd"),
        ] {
            assert_eq!(
                fs_err::read_link(copy.join(link)).expect("a symlink"),
                Path::new(target)
            );
        }
    }

    #[test]
    fn a_file_or_a_symlink_can_be_the_root() {
        let dir = tempfile::tempdir().expect("tmp");
        let root = dir.path().join("p");
        sample_tree(&root);
        let (_out, copy) = round_trip(&root.join("run.sh"));
        assert!(copy.is_file());
        assert_eq!(mode(&copy) & 0o100, 0o100);
        let (_out, copy) = round_trip(&root.join("a/b/f.txt"));
        assert_eq!(fs_err::read(&copy).expect("read"), b"text");
        let (_out, copy) = round_trip(&root.join("empty"));
        assert_eq!(fs_err::metadata(&copy).expect("stat").len(), 0);
        let (_out, copy) = round_trip(&root.join("rel"));
        assert_eq!(
            fs_err::read_link(&copy).expect("a symlink"),
            Path::new("a/b/f.txt")
        );
        let (_out, copy) = round_trip(&root.join("abs"));
        assert_eq!(
            fs_err::read_link(&copy).expect("a symlink"),
            Path::new("/etc/passwd")
        );
        let (_out, copy) = round_trip(&root.join("a/b/empty"));
        assert_eq!(fs_err::read_dir(&copy).expect("a folder").count(), 0);
    }

    #[test]
    fn an_existing_destination_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().expect("tmp");
        let file = dir.path().join("f");
        fs_err::write(&file, "x").expect("write");
        let mut bytes = Vec::new();
        dump(&file, &mut bytes).expect("dump");
        let dest = dir.path().join("taken");
        fs_err::create_dir(&dest).expect("mkdir");
        fs_err::write(dest.join("keep"), "mine").expect("write");
        let err = unpack(bytes.as_slice(), &dest, &UnpackLimits::default()).expect_err("refused");
        assert!(
            matches!(&err, NarUnpackError::Io(e) if e.kind() == io::ErrorKind::AlreadyExists),
            "{err:?}"
        );
        assert_eq!(fs_err::read(dest.join("keep")).expect("kept"), b"mine");
    }

    #[test]
    fn a_refused_archive_leaves_nothing_behind() {
        let dir = tempfile::tempdir().expect("tmp");
        let root = dir.path().join("p");
        sample_tree(&root);
        let mut bytes = Vec::new();
        dump(&root, &mut bytes).expect("dump");
        // Cut inside the last entry: the folders and files before it were already made.
        bytes.truncate(bytes.len() - 20);
        let dest = dir.path().join("copy");
        let err = unpack(bytes.as_slice(), &dest, &UnpackLimits::default()).expect_err("cut");
        assert!(matches!(err, NarUnpackError::Malformed { .. }), "{err:?}");
        assert!(
            fs_err::symlink_metadata(&dest).is_err(),
            "the partial tree is removed"
        );
    }

    #[test]
    fn messages_say_what_and_where() {
        let tmp = tempfile::tempdir().expect("tmp");
        let err = unpack(
            &b"\x01\0\0\0\0\0\0\0x"[..],
            &tmp.path().join("d"),
            &UnpackLimits::default(),
        )
        .expect_err("not a NAR");
        assert_eq!(
            err.to_string(),
            "not a NAR: the archive ends early at byte 9"
        );
        let mut bytes = Vec::new();
        crate::NarWriter::new(&mut bytes).expect("magic");
        bytes.extend_from_slice(&[1, 0, 0, 0, 0, 0, 0, 0, b'[', 0, 0, 0, 0, 0, 0, 0]);
        let err = unpack(
            bytes.as_slice(),
            &tmp.path().join("d"),
            &UnpackLimits::default(),
        )
        .expect_err("not a NAR");
        assert_eq!(
            err.to_string(),
            "not a NAR: expected `(`, found `[` at byte 24"
        );
    }
}
