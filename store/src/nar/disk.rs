//! A tree on disk as a NAR: walked first (names sorted, what NAR cannot hold refused
//! before anything is written), then written with every file's contents read ahead by a
//! second thread while the first frames and hashes, so reading and hashing overlap.

use std::io::{self, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::writer::{NarWriter, short_file};
use super::{Exclude, NarError, is_git_name};

/// Writes the NAR of the tree at `path` to `out`, leaving out `exclude`.
pub(super) fn dump(
    path: &Path,
    out: &mut impl Write,
    exclude: Exclude<'_>,
) -> Result<(), NarError> {
    let mut steps = Vec::new();
    walk(path, &mut steps, exclude, 0)?;
    write_steps(&steps, out)
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
