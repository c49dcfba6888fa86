//! The byte streams pushing and fetching pass NARs through: bounded, teed, counted.

use std::io::{self, Read, Write};

use sha2::{Digest, Sha256};

use berth_lockfile_schema::Sha256Hash;

/// A writer that refuses more than `left` bytes (a decompression bomb stops there).
pub(super) struct Bounded<W> {
    pub(super) inner: W,
    pub(super) left: u64,
}

impl<W: Write> Write for Bounded<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if buf.len() as u64 > self.left {
            return Err(io::Error::other(
                "the NAR is larger than the narinfo's `NarSize`",
            ));
        }
        let n = self.inner.write(buf)?;
        self.left -= n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Writes everything to both.
pub(super) struct Tee<'a, A, B>(pub(super) &'a mut A, pub(super) &'a mut B);

impl<A: Write, B: Write> Write for Tee<'_, A, B> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write_all(buf)?;
        self.1.write_all(buf)?;
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()?;
        self.1.flush()
    }
}

/// Counts and hashes the bytes that pass through, read or written.
pub(super) struct Counting<T> {
    pub(super) inner: T,
    pub(super) count: u64,
    hasher: Sha256,
}

impl<T> Counting<T> {
    pub(super) fn new(inner: T) -> Self {
        Self {
            inner,
            count: 0,
            hasher: Sha256::new(),
        }
    }

    pub(super) fn digest(&self) -> Sha256Hash {
        Sha256Hash::from_bytes(self.hasher.clone().finalize().into())
    }
}

impl<T: Write> Write for Counting<T> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.count += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl<T: Read> Read for Counting<T> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        self.count += n as u64;
        Ok(n)
    }
}
