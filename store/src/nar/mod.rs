//! A streaming serialiser of Nix archives (NAR) and the sha256 of that serialisation: the
//! content hash `nix hash path` prints.
//!
//! The NAR of a tree depends only on names (sorted by raw bytes), file contents, the owner's
//! execute bit, symlink targets and the tree's shape: never on mtimes, owners or other mode
//! bits. That is what makes a git export, an unpacked archive and a local folder hash alike.

mod disk;
mod writer;

pub(crate) use disk::Sealing;
pub use writer::{NarWriter, Sha256Sink};

use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use berth_lockfile_schema::Sha256Hash;

/// Why a tree could not be serialised.
#[derive(Debug, thiserror::Error)]
pub enum NarError {
    /// Reading the tree failed (the message carries the path).
    #[error(transparent)]
    Io(#[from] io::Error),
    /// A fifo, socket or device: NAR has no representation for it.
    #[error("`{}` is not a regular file, folder or symlink; remove it from the plugin", .0.display())]
    UnsupportedFileType(PathBuf),
    /// A file changed size while it was read.
    #[error("`{}` changed while it was being hashed; try again", .0.display())]
    Changed(PathBuf),
    /// An entry named like git's own folder (see [`is_git_name`]).
    #[error("`{}` {GIT_NAME_REFUSED}", .0.display())]
    GitName(PathBuf),
}

/// Why an entry named like `.git` is refused, after its path.
pub const GIT_NAME_REFUSED: &str = "is named like git's own folder `.git`, which berth never puts in the store (a git command run in the plugin would obey its config); remove it from the plugin";

/// Whether `name` is one a git checkout would take for its own `.git` folder, in any of
/// the spellings git itself refuses in a tree (`verify_path` in git's `read-cache.c`):
/// any case (`.GIT`), NTFS's trailing dots and spaces (`.git.`, `.git `) and alternate
/// data streams (`.git::$INDEX_ALLOCATION`), the 8.3 short name `git~1`, and HFS+'s
/// ignored code points inside the name (`.g\u{200c}it`). A plugin never needs such an
/// entry: a `.git/config` in the store would run its `core.fsmonitor` command on the next
/// `git status` there.
pub fn is_git_name(name: &[u8]) -> bool {
    let text = String::from_utf8_lossy(name);
    // HFS+ ignores these when it compares names.
    let ignorable = |c: char| matches!(c, '\u{200c}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{206a}'..='\u{206f}' | '\u{feff}');
    let folded: String = text.chars().filter(|c| !ignorable(*c)).collect();
    // NTFS: a stream suffix, then trailing dots and spaces, do not change the name.
    let base = folded.split(':').next().unwrap_or_default();
    let base = base.trim_end_matches(['.', ' ']).to_ascii_lowercase();
    base == ".git" || base == "git~1"
}

/// Which top-level entries of a folder to leave out of its NAR.
#[derive(Debug, Clone, Copy, Default)]
pub struct Exclude<'a> {
    top_level: &'a [&'a str],
}

impl<'a> Exclude<'a> {
    /// Leave nothing out.
    pub const NOTHING: Exclude<'static> = Exclude { top_level: &[] };

    /// Leave out these names directly under the root (`.git` for local folders).
    pub const fn top_level(names: &'a [&'a str]) -> Self {
        Self { top_level: names }
    }

    fn skips(&self, depth: usize, name: &[u8]) -> bool {
        depth == 0 && self.top_level.iter().any(|n| n.as_bytes() == name)
    }

    pub(crate) fn skips_name(&self, depth: usize, name: &std::ffi::OsStr) -> bool {
        self.skips(depth, name.as_bytes())
    }
}

/// The NAR sha256 of the tree at `path` (a folder, file or symlink).
pub fn hash_path(path: &Path) -> Result<Sha256Hash, NarError> {
    hash_path_excluding(path, Exclude::NOTHING)
}

/// The NAR sha256 of the tree at `path`, leaving out `exclude`.
pub fn hash_path_excluding(path: &Path, exclude: Exclude<'_>) -> Result<Sha256Hash, NarError> {
    let mut sink = Sha256Sink::default();
    dump_excluding(
        path,
        &mut io::BufWriter::with_capacity(64 * 1024, &mut sink),
        exclude,
    )?;
    Ok(sink.finish())
}

/// The NAR sha256 of a staged tree about to be committed, sealed by the same walk: every
/// path under `path` made read-only and its stat record line taken (into `seal`) before
/// its contents are read, so one walk serves the record and the hash.
pub(crate) fn hash_path_sealing(path: &Path, seal: &mut Sealing) -> Result<Sha256Hash, NarError> {
    let mut sink = Sha256Sink::default();
    disk::dump_sealing(
        path,
        &mut io::BufWriter::with_capacity(64 * 1024, &mut sink),
        seal,
    )?;
    Ok(sink.finish())
}

/// Writes the NAR of the tree at `path` to `out`.
pub fn dump(path: &Path, out: &mut impl Write) -> Result<(), NarError> {
    dump_excluding(path, out, Exclude::NOTHING)
}

/// Writes the NAR of the tree at `path` to `out`, leaving out `exclude`.
pub fn dump_excluding(
    path: &Path,
    out: &mut impl Write,
    exclude: Exclude<'_>,
) -> Result<(), NarError> {
    disk::dump(path, out, exclude)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{PermissionsExt, symlink};

    fn sri(path: &Path) -> String {
        hash_path(path).expect("hashable").to_sri()
    }

    #[test]
    fn spec_vectors() {
        let dir = tempfile::tempdir().expect("tempdir");
        let empty = dir.path().join("empty");
        fs_err::create_dir(&empty).expect("mkdir");
        assert_eq!(
            sri(&empty),
            "sha256-pQpattmS9VmO3ZIQUFn66az8GSmB4IvYhTTCFn6SUmo="
        );

        let file = dir.path().join("hello");
        fs_err::write(&file, "hello\n").expect("write");
        assert_eq!(
            sri(&file),
            "sha256-HDfQGvQL4ugGkd48w99EN3ppmvuxfGjwgJZLL9Bx/BM="
        );

        let tree = dir.path().join("tree");
        fs_err::create_dir_all(tree.join("sub")).expect("mkdir");
        fs_err::write(tree.join("a.txt"), "hello\n").expect("write");
        fs_err::write(tree.join("run.sh"), "#!/bin/sh\necho hi\n").expect("write");
        fs_err::set_permissions(tree.join("run.sh"), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
        symlink("a.txt", tree.join("link")).expect("symlink");
        fs_err::write(tree.join("sub/b"), "x").expect("write");
        fs_err::write(tree.join("sub/empty"), "").expect("write");
        let hash = hash_path(&tree).expect("hashable");
        assert_eq!(
            hash.to_sri(),
            "sha256-YTabh+pYy+1YFX8++ODYhifhcgXuF8i+vwqJMFLypkE="
        );
        assert_eq!(
            hash.to_nix32(),
            "0hd6y993128apyzch5zf0mrf29w6v3hghgkz2mcfvjsqxa3rndk1"
        );
    }

    #[test]
    fn only_the_owner_execute_bit_counts() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("f");
        fs_err::write(&file, "x").expect("write");
        fs_err::set_permissions(&file, std::fs::Permissions::from_mode(0o604)).expect("chmod");
        let plain = sri(&file);
        fs_err::set_permissions(&file, std::fs::Permissions::from_mode(0o677)).expect("chmod");
        assert_eq!(sri(&file), plain, "group and other bits do not count");
        fs_err::set_permissions(&file, std::fs::Permissions::from_mode(0o700)).expect("chmod");
        assert_ne!(sri(&file), plain, "the owner execute bit counts");
    }

    #[test]
    fn excluded_top_level_entries_do_not_count() {
        let dir = tempfile::tempdir().expect("tempdir");
        fs_err::write(dir.path().join("a"), "x").expect("write");
        let before = hash_path(dir.path()).expect("hash");
        fs_err::create_dir_all(dir.path().join(".git/objects")).expect("mkdir");
        let excluded =
            hash_path_excluding(dir.path(), Exclude::top_level(&[".git"])).expect("hash");
        assert_eq!(excluded, before, "the top-level .git is left out");
        // A nested one is refused, excluded or not (`git_name_tests`).
        fs_err::create_dir_all(dir.path().join("sub/.git")).expect("mkdir");
        assert!(matches!(
            hash_path_excluding(dir.path(), Exclude::top_level(&[".git"])),
            Err(NarError::GitName(_))
        ));
    }
}

#[cfg(test)]
mod git_name_tests {
    use super::*;

    #[test]
    fn every_spelling_git_refuses_is_a_git_name() {
        for name in [
            ".git",
            ".GIT",
            ".Git",
            ".git.",
            ".git ",
            ".git. . ",
            "git~1",
            "GIT~1",
            ".git::$INDEX_ALLOCATION",
            ".g\u{200c}it",
            "\u{feff}.git",
        ] {
            assert!(is_git_name(name.as_bytes()), "{name:?}");
        }
        for name in [
            ".github",
            ".gitignore",
            "git",
            ".git2",
            "x.git",
            ".gitmodules",
            "git~2",
        ] {
            assert!(!is_git_name(name.as_bytes()), "{name:?}");
        }
    }

    #[test]
    fn a_git_folder_at_any_depth_is_refused_but_an_excluded_top_level_one_is_not() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("p");
        fs_err::create_dir_all(root.join("skills/s/.GIT")).expect("mkdir");
        fs_err::write(root.join("skills/s/.GIT/config"), "[core]\n").expect("write");
        match hash_path(&root) {
            Err(NarError::GitName(path)) => assert!(path.ends_with("skills/s/.GIT"), "{path:?}"),
            other => panic!("expected a refusal, got {other:?}"),
        }
        fs_err::remove_dir_all(root.join("skills")).expect("rm");
        fs_err::create_dir_all(root.join(".git")).expect("mkdir");
        assert!(hash_path(&root).is_err());
        assert!(hash_path_excluding(&root, Exclude::top_level(&[".git"])).is_ok());
    }
}
