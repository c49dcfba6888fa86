//! A streaming serialiser of Nix archives (NAR) and the sha256 of that serialisation: the
//! content hash `nix hash path` prints.
//!
//! The NAR of a tree depends only on names (sorted by raw bytes), file contents, the owner's
//! execute bit, symlink targets and the tree's shape: never on mtimes, owners or other mode
//! bits. That is what makes a git export, an unpacked archive and a local folder hash alike.

use std::io::{self, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use berth_lockfile_schema::Sha256Hash;
use sha2::{Digest, Sha256};

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
    let mut nar = NarWriter::new(out)?;
    dump_node(path, &mut nar, exclude, 0)?;
    nar.finish()?;
    Ok(())
}

/// The low-level NAR encoder: callers describe a tree depth-first, with each folder's
/// entries in ascending byte order of their names. Used for files on disk here and for git
/// trees by the resolver, so both produce the same bytes for the same tree.
#[derive(Debug)]
pub struct NarWriter<W: Write> {
    out: W,
}

impl<W: Write> NarWriter<W> {
    /// Starts an archive (writes the magic).
    pub fn new(mut out: W) -> io::Result<Self> {
        write_str(&mut out, b"nix-archive-1")?;
        Ok(Self { out })
    }

    /// A regular file whose `len` bytes of content come from `contents`.
    pub fn file(&mut self, executable: bool, len: u64, contents: &mut impl Read) -> io::Result<()> {
        self.strs(&[b"(", b"type", b"regular"])?;
        if executable {
            self.strs(&[b"executable", b""])?;
        }
        write_str(&mut self.out, b"contents")?;
        self.out.write_all(&len.to_le_bytes())?;
        let copied = io::copy(&mut contents.take(len), &mut self.out)?;
        if copied != len {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "file is shorter than its announced length",
            ));
        }
        write_padding(&mut self.out, len)?;
        write_str(&mut self.out, b")")
    }

    /// A symlink with this target.
    pub fn symlink(&mut self, target: &[u8]) -> io::Result<()> {
        self.strs(&[b"(", b"type", b"symlink", b"target", target, b")"])
    }

    /// Opens a folder; follow with [`NarWriter::entry`] calls and [`NarWriter::end_directory`].
    pub fn begin_directory(&mut self) -> io::Result<()> {
        self.strs(&[b"(", b"type", b"directory"])
    }

    /// Opens a folder entry named `name`; follow with its node and [`NarWriter::end_entry`].
    pub fn entry(&mut self, name: &[u8]) -> io::Result<()> {
        self.strs(&[b"entry", b"(", b"name", name, b"node"])
    }

    /// Closes a folder entry.
    pub fn end_entry(&mut self) -> io::Result<()> {
        write_str(&mut self.out, b")")
    }

    /// Closes a folder.
    pub fn end_directory(&mut self) -> io::Result<()> {
        write_str(&mut self.out, b")")
    }

    /// Flushes and returns the output.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }

    fn strs(&mut self, parts: &[&[u8]]) -> io::Result<()> {
        for part in parts {
            write_str(&mut self.out, part)?;
        }
        Ok(())
    }
}

/// A `Write` sink that feeds sha256; wrap it in a `BufWriter` for small writes.
#[derive(Debug, Default)]
pub struct Sha256Sink(Sha256);

impl Sha256Sink {
    /// The digest of everything written.
    pub fn finish(self) -> Sha256Hash {
        Sha256Hash::from_bytes(self.0.finalize().into())
    }
}

impl Write for Sha256Sink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn dump_node<W: Write>(
    path: &Path,
    nar: &mut NarWriter<W>,
    exclude: Exclude<'_>,
    depth: usize,
) -> Result<(), NarError> {
    let meta = fs_err::symlink_metadata(path)?;
    let kind = meta.file_type();
    if kind.is_symlink() {
        let target = fs_err::read_link(path)?;
        nar.symlink(target.as_os_str().as_bytes())?;
    } else if kind.is_file() {
        let mut file = fs_err::File::open(path)?;
        let executable = meta.permissions().mode() & 0o100 != 0;
        nar.file(executable, meta.len(), &mut file).map_err(|e| {
            if e.kind() == io::ErrorKind::UnexpectedEof {
                NarError::Changed(path.to_owned())
            } else {
                NarError::Io(e)
            }
        })?;
    } else if kind.is_dir() {
        nar.begin_directory()?;
        let mut names: Vec<_> = fs_err::read_dir(path)?
            .map(|entry| entry.map(|e| e.file_name()))
            .collect::<Result<_, _>>()?;
        names.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
        for name in names {
            if exclude.skips(depth, name.as_bytes()) {
                continue;
            }
            if is_git_name(name.as_bytes()) {
                return Err(NarError::GitName(path.join(&name)));
            }
            nar.entry(name.as_bytes())?;
            dump_node(&path.join(&name), nar, exclude, depth + 1)?;
            nar.end_entry()?;
        }
        nar.end_directory()?;
    } else {
        return Err(NarError::UnsupportedFileType(path.to_owned()));
    }
    Ok(())
}

fn write_str(out: &mut impl Write, bytes: &[u8]) -> io::Result<()> {
    let len = bytes.len() as u64;
    out.write_all(&len.to_le_bytes())?;
    out.write_all(bytes)?;
    write_padding(out, len)
}

fn write_padding(out: &mut impl Write, len: u64) -> io::Result<()> {
    let pad = (8 - len % 8) % 8;
    out.write_all(&[0u8; 8][..pad as usize])
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

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
