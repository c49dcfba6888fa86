//! The NAR encoder and the sha256 sink it is hashed through.

use std::io::{self, Read, Write};

use berth_lockfile_schema::Sha256Hash;
use sha2::{Digest, Sha256};

/// The low-level NAR encoder: callers describe a tree depth-first, with each folder's
/// entries in ascending byte order of their names. Used for files on disk here and for git
/// trees by the resolver, so both produce the same bytes for the same tree.
#[derive(Debug)]
pub struct NarWriter<W: Write> {
    pub(super) out: W,
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
    pub(super) fn begin_file(&mut self, executable: bool, len: u64) -> io::Result<()> {
        self.strs(&[b"(", b"type", b"regular"])?;
        if executable {
            self.strs(&[b"executable", b""])?;
        }
        write_str(&mut self.out, b"contents")?;
        self.out.write_all(&len.to_le_bytes())
    }

    pub(super) fn end_file(&mut self, len: u64) -> io::Result<()> {
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

pub(super) fn short_file() -> io::Error {
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
