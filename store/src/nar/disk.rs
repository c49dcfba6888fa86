//! A tree on disk as a NAR: walked first (names sorted, what NAR cannot hold refused
//! before anything is written), then written with every file's contents read ahead by a
//! second thread while the first frames and hashes, so reading and hashing overlap.

use std::ffi::{OsStr, OsString};
use std::fs::Metadata;
use std::io::{self, Read, Write};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::record::Stat;

use super::writer::{NarWriter, short_file};
use super::{Exclude, NarError, is_git_name};

/// Writes the NAR of the tree at `path` to `out`, leaving out `exclude`.
pub(super) fn dump(
    path: &Path,
    out: &mut impl Write,
    exclude: Exclude<'_>,
) -> Result<(), NarError> {
    let mut steps = Vec::new();
    let meta = fs_err::symlink_metadata(path)?;
    walk(path, meta, &mut steps, (exclude, 0), &mut None)?;
    write_steps(&steps, out)
}

/// [`dump`] of a staged tree about to be committed, which the same walk seals: every path
/// under the root made read-only (files `0444`, `0555` if the owner could execute, folders
/// `0555`) and its stat record line taken after that, before its contents are read.
pub(super) fn dump_sealing(
    path: &Path,
    out: &mut impl Write,
    seal: &mut Sealing,
) -> Result<(), NarError> {
    let mut steps = Vec::new();
    let meta = fs_err::symlink_metadata(path)?;
    walk(
        path,
        meta,
        &mut steps,
        (Exclude::NOTHING, 0),
        &mut Some(seal),
    )?;
    write_steps(&steps, out)
}

/// What a sealing walk ([`dump_sealing`]) collects: the stat record lines of every path
/// under the root, in NAR order (see `record/format.rs`), and the names directly under it.
#[derive(Debug, Default)]
pub(crate) struct Sealing {
    /// The record's lines, without its header or the root's own line.
    pub(crate) lines: Vec<u8>,
    /// The names directly under the root, sorted bytewise.
    pub(crate) top: Vec<OsString>,
    /// The path being walked, relative to the root.
    rel: Vec<u8>,
}

impl Sealing {
    /// Makes the child `name` at `path` (whose `lstat` is `meta`) read-only and records
    /// its line; returns its `lstat` as recorded.
    fn seal(&mut self, path: &Path, name: &OsStr, meta: Metadata) -> io::Result<Metadata> {
        if self.rel.is_empty() {
            self.top.push(name.to_owned());
        } else {
            self.rel.push(b'/');
        }
        self.rel.extend_from_slice(name.as_bytes());
        let mode = meta.permissions().mode() & 0o7777;
        let wanted = if meta.is_dir() || (meta.is_file() && mode & 0o100 != 0) {
            Some(0o555)
        } else {
            meta.is_file().then_some(0o444)
        };
        let meta = match wanted {
            // A file written read-only already (a git export, an unpacked NAR) is left.
            Some(wanted) if wanted != mode => {
                fs_err::set_permissions(path, std::fs::Permissions::from_mode(wanted))?;
                fs_err::symlink_metadata(path)?
            }
            _ => meta,
        };
        Stat::of_metadata(&meta).write_line(&self.rel, &mut self.lines);
        Ok(meta)
    }

    /// Back out of the child [`Sealing::seal`] entered.
    fn leave(&mut self) {
        let cut = self.rel.iter().rposition(|&b| b == b'/').unwrap_or(0);
        self.rel.truncate(cut);
    }
}

/// One step of a tree's NAR, in order: what [`walk`] finds and [`write_steps`] writes.
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

/// The steps of the tree at `path` (whose `lstat` is `meta`), names sorted by raw bytes;
/// what NAR cannot hold (a fifo, a `.git` entry) is refused before anything is written.
/// With `seal`, every path under `path` is sealed as it is met ([`Sealing::seal`]).
fn walk(
    path: &Path,
    meta: Metadata,
    steps: &mut Vec<Step>,
    (exclude, depth): (Exclude<'_>, usize),
    seal: &mut Option<&mut Sealing>,
) -> Result<(), NarError> {
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
        // Each child's `lstat` relative to the open folder, not by its whole path.
        let mut children = Vec::new();
        for child in fs_err::read_dir(path)? {
            let child = child?;
            let name = child.file_name();
            if exclude.skips(depth, name.as_bytes()) {
                continue;
            }
            children.push((name, child.metadata()?));
        }
        children.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        for (name, meta) in children {
            let child = path.join(&name);
            if is_git_name(name.as_bytes()) {
                return Err(NarError::GitName(child));
            }
            let meta = match seal {
                Some(seal) => seal.seal(&child, &name, meta)?,
                None => meta,
            };
            steps.push(Step::Entry(name.into_vec()));
            walk(&child, meta, steps, (exclude, depth + 1), seal)?;
            steps.push(Step::EndEntry);
            if let Some(seal) = seal {
                seal.leave();
            }
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
        let total: u64 = files.iter().map(|(_, len)| len).sum();
        if total <= CHUNK as u64 {
            // One chunk at most, which the channel holds: read here, no thread to start
            // and meet for a small tree (most plugins).
            read_ahead(reader_files, &tx, &back_rx);
            drop(tx);
        } else {
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

#[cfg(test)]
mod tests {
    use super::super::{Sha256Sink, hash_path};
    use super::*;

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
}
