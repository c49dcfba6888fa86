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
    let mut steps = Vec::new();
    walk(path, &mut steps, exclude, 0)?;
    write_steps(&steps, out)
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
        self.begin_file(executable, len)?;
        let copied = io::copy(&mut contents.take(len), &mut self.out)?;
        if copied != len {
            return Err(short_file());
        }
        self.end_file(len)
    }

    /// A regular file's header; its `len` bytes of contents follow, then [`Self::end_file`].
    fn begin_file(&mut self, executable: bool, len: u64) -> io::Result<()> {
        self.strs(&[b"(", b"type", b"regular"])?;
        if executable {
            self.strs(&[b"executable", b""])?;
        }
        write_str(&mut self.out, b"contents")?;
        self.out.write_all(&len.to_le_bytes())
    }

    fn end_file(&mut self, len: u64) -> io::Result<()> {
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

/// One step of a tree's NAR, in order: what [`walk`] finds and [`dump_excluding`] writes.
enum Step {
    BeginDirectory,
    Entry(Vec<u8>),
    EndEntry,
    EndDirectory,
    Symlink(Vec<u8>),
    /// A regular file: its contents come from the reader thread, in step order.
    File {
        path: PathBuf,
        executable: bool,
        len: u64,
    },
}

/// The steps of the tree at `path`, names sorted by raw bytes; what NAR cannot hold (a
/// fifo, a `.git` entry) is refused before anything is written.
fn walk(
    path: &Path,
    steps: &mut Vec<Step>,
    exclude: Exclude<'_>,
    depth: usize,
) -> Result<(), NarError> {
    let meta = fs_err::symlink_metadata(path)?;
    let kind = meta.file_type();
    if kind.is_symlink() {
        let target = fs_err::read_link(path)?;
        steps.push(Step::Symlink(target.as_os_str().as_bytes().to_vec()));
    } else if kind.is_file() {
        steps.push(Step::File {
            path: path.to_owned(),
            executable: meta.permissions().mode() & 0o100 != 0,
            len: meta.len(),
        });
    } else if kind.is_dir() {
        steps.push(Step::BeginDirectory);
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
            steps.push(Step::Entry(name.as_bytes().to_vec()));
            walk(&path.join(&name), steps, exclude, depth + 1)?;
            steps.push(Step::EndEntry);
        }
        steps.push(Step::EndDirectory);
    } else {
        return Err(NarError::UnsupportedFileType(path.to_owned()));
    }
    Ok(())
}

/// How many chunks the reader thread may be ahead of the writer.
const READ_AHEAD_CHUNKS: usize = 3;

/// The size of one chunk of the files' contents, read back to back.
const CHUNK: usize = 1 << 20;

/// A chunk of the files' contents (the concatenation of every file, in order), or why a
/// file could not be read (its index among the files, for [`NarError::Changed`]).
type Chunk = Result<Vec<u8>, (usize, io::Error)>;

/// Reads every file of `files` in order, exactly its announced length, into chunks of
/// [`CHUNK`] bytes of their concatenated contents (small files share a chunk, so the
/// threads meet once a chunk, not once a file), sent to `out`; the buffers the writer
/// sends `back` are reused. Stops when the writer hangs up.
fn read_ahead(
    files: &[(&Path, u64)],
    out: &std::sync::mpsc::SyncSender<Chunk>,
    back: &std::sync::mpsc::Receiver<Vec<u8>>,
) {
    let fresh = || {
        let mut buffer = back.try_recv().unwrap_or_default();
        buffer.clear();
        buffer.reserve(CHUNK);
        buffer
    };
    let mut buffer = fresh();
    for (i, (path, len)) in files.iter().enumerate() {
        let fail = |e: io::Error| {
            let _ = out.send(Err((i, e)));
        };
        let mut file = match std::fs::File::open(path) {
            Ok(file) => file,
            Err(e) => return fail(e),
        };
        let mut left = *len;
        while left > 0 {
            let room = (CHUNK - buffer.len()) as u64;
            let want = room.min(left);
            match (&mut file).take(want).read_to_end(&mut buffer) {
                Ok(n) if n as u64 == want => {}
                Ok(_) => return fail(short_file()),
                Err(e) => return fail(e),
            }
            left -= want;
            if buffer.len() == CHUNK {
                if out.send(Ok(buffer)).is_err() {
                    return;
                }
                buffer = fresh();
            }
        }
    }
    if !buffer.is_empty() {
        let _ = out.send(Ok(buffer));
    }
}

/// The writer's end of the contents stream.
struct Contents {
    rx: std::sync::mpsc::Receiver<Chunk>,
    back: std::sync::mpsc::Sender<Vec<u8>>,
    chunk: Vec<u8>,
    at: usize,
}

impl Contents {
    /// Writes the next `len` bytes of the stream to `out`.
    fn copy(&mut self, mut len: u64, out: &mut impl Write) -> Result<(), (usize, io::Error)> {
        while len > 0 {
            if self.at == self.chunk.len() {
                let next = self.rx.recv().map_err(|_| (usize::MAX, short_file()))??;
                let used = std::mem::replace(&mut self.chunk, next);
                let _ = self.back.send(used);
                self.at = 0;
            }
            let take = (self.chunk.len() - self.at).min(usize::try_from(len).unwrap_or(usize::MAX));
            out.write_all(&self.chunk[self.at..self.at + take])
                .map_err(|e| (usize::MAX, e))?;
            self.at += take;
            len -= take as u64;
        }
        Ok(())
    }
}

/// Writes `steps` as a NAR to `out`, the files' contents read by a second thread while
/// the writer hashes (or writes) what it read before: reading and hashing overlap.
fn write_steps<W: Write>(steps: &[Step], out: &mut W) -> Result<(), NarError> {
    let files: Vec<(&Path, u64)> = steps
        .iter()
        .filter_map(|s| match s {
            Step::File { path, len, .. } => Some((path.as_path(), *len)),
            _ => None,
        })
        .collect();
    let failed = |(i, e): (usize, io::Error)| match files.get(i) {
        Some((path, _)) if e.kind() == io::ErrorKind::UnexpectedEof => {
            NarError::Changed((*path).to_owned())
        }
        Some((path, _)) => NarError::Io(io::Error::new(
            e.kind(),
            format!("failed to read `{}`: {e}", path.display()),
        )),
        None => NarError::Io(e),
    };
    let (tx, rx) = std::sync::mpsc::sync_channel::<Chunk>(READ_AHEAD_CHUNKS);
    let (back_tx, back_rx) = std::sync::mpsc::channel::<Vec<u8>>();
    std::thread::scope(|scope| {
        let reader_files = &files;
        if !files.is_empty() {
            scope.spawn(move || read_ahead(reader_files, &tx, &back_rx));
        }
        // Moved in, so that a failed write hangs up and the reader stops.
        let mut contents = Contents {
            rx,
            back: back_tx,
            chunk: Vec::new(),
            at: 0,
        };
        let mut nar = NarWriter::new(&mut *out)?;
        for step in steps {
            match step {
                Step::BeginDirectory => nar.begin_directory()?,
                Step::Entry(name) => nar.entry(name)?,
                Step::EndEntry => nar.end_entry()?,
                Step::EndDirectory => nar.end_directory()?,
                Step::Symlink(target) => nar.symlink(target)?,
                Step::File {
                    executable, len, ..
                } => {
                    nar.begin_file(*executable, *len)?;
                    contents.copy(*len, &mut nar.out).map_err(failed)?;
                    nar.end_file(*len)?;
                }
            }
        }
        nar.finish()?;
        Ok(())
    })
}

fn short_file() -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "file is shorter than its announced length",
    )
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
    fn files_read_ahead_on_a_second_thread_hash_as_files_read_in_turn() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("big");
        let bytes: Vec<u8> = (0..(9u32 << 20) + 3)
            .map(|i| (i * 31 % 251) as u8)
            .collect();
        fs_err::write(&path, &bytes).expect("write");
        let mut expected = Sha256Sink::default();
        let mut nar = NarWriter::new(&mut expected).expect("nar");
        nar.file(false, bytes.len() as u64, &mut bytes.as_slice())
            .expect("in memory");
        nar.finish().expect("finish");
        assert_eq!(hash_path(&path).expect("hash"), expected.finish());

        // A file shorter than its size said (it changed while read) is refused.
        let steps = [Step::File {
            path: path.clone(),
            executable: false,
            len: bytes.len() as u64 + (1 << 20),
        }];
        match write_steps(&steps, &mut io::sink()) {
            Err(NarError::Changed(p)) => assert_eq!(p, path),
            other => panic!("expected Changed, got {other:?}"),
        }
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
