//! Unpacking a NAR stream from a binary cache: hostile input. Every name is checked (not
//! empty, `.`, `..`, no `/` or NUL, not git's own folder, strictly increasing within a
//! folder as NAR requires), every length is bounded before anything is allocated, padding
//! must be zero, nothing may follow the archive, symlinks are created as links and never
//! followed, and files are only ever created new inside folders the unpacker made itself.
//! The NAR's sha256 is computed over exactly the bytes read, so the caller compares it with
//! the lock.

use std::fs::OpenOptions;
use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use berth_lockfile_schema::Sha256Hash;
use sha2::{Digest, Sha256};

use crate::nar::is_git_name;

/// Bounds on what a NAR may make.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnpackLimits {
    /// Bytes of all file contents together.
    pub max_total_bytes: u64,
    /// Bytes of one file.
    pub max_file_bytes: u64,
    /// Files, folders and links.
    pub max_entries: u64,
    /// Folder depth.
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

/// Why a NAR was refused. The caller removes what was written so far.
#[derive(Debug, thiserror::Error)]
pub enum NarUnpackError {
    /// Reading the stream or writing the tree failed.
    #[error(transparent)]
    Io(#[from] io::Error),
    /// Not a well-formed NAR.
    #[error("not a valid NAR: {what} at byte {offset}")]
    Malformed {
        /// Where.
        offset: u64,
        /// What was wrong.
        what: String,
    },
    /// An entry name that could escape the folder or that berth refuses.
    #[error("the NAR has an entry `{path}` that is refused: {why}")]
    BadName {
        /// The entry's path so far.
        path: String,
        /// Why.
        why: &'static str,
    },
    /// Over a limit.
    #[error("the NAR is too large: {what} over the limit of {limit}")]
    TooLarge {
        /// What.
        what: &'static str,
        /// The limit.
        limit: u64,
    },
}

/// Unpacks the NAR read from `reader` at `dest` (which must not exist) and returns its
/// hash and size. On an error, `dest` may hold a partial tree: the caller removes it (its
/// staging folder does so when dropped).
pub fn unpack(
    reader: impl Read,
    dest: &Path,
    limits: &UnpackLimits,
) -> Result<Unpacked, NarUnpackError> {
    let mut nar = Reader {
        inner: reader,
        hasher: Sha256::new(),
        offset: 0,
        limits: *limits,
        total: 0,
        entries: 0,
    };
    nar.expect_str(b"nix-archive-1")?;
    nar.node(dest, "", 0)?;
    // Nothing may follow the archive.
    let mut extra = [0u8; 1];
    if nar.inner.read(&mut extra)? != 0 {
        return Err(nar.malformed("data after the end of the archive"));
    }
    Ok(Unpacked {
        nar_hash: Sha256Hash::from_bytes(nar.hasher.finalize().into()),
        nar_size: nar.offset,
    })
}

struct Reader<R> {
    inner: R,
    hasher: Sha256,
    offset: u64,
    limits: UnpackLimits,
    total: u64,
    entries: u64,
}

impl<R: Read> Reader<R> {
    fn malformed(&self, what: impl Into<String>) -> NarUnpackError {
        NarUnpackError::Malformed {
            offset: self.offset,
            what: what.into(),
        }
    }

    fn read_exact(&mut self, buf: &mut [u8]) -> Result<(), NarUnpackError> {
        match self.inner.read_exact(buf) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                return Err(self.malformed("unexpected end"));
            }
            Err(e) => return Err(e.into()),
        }
        self.hasher.update(&*buf);
        self.offset += buf.len() as u64;
        Ok(())
    }

    fn u64(&mut self) -> Result<u64, NarUnpackError> {
        let mut buf = [0u8; 8];
        self.read_exact(&mut buf)?;
        Ok(u64::from_le_bytes(buf))
    }

    fn padding(&mut self, len: u64) -> Result<(), NarUnpackError> {
        let pad = usize::try_from((8 - len % 8) % 8).expect("under 8");
        let mut buf = [0u8; 8];
        self.read_exact(&mut buf[..pad])?;
        if buf[..pad].iter().any(|&b| b != 0) {
            return Err(self.malformed("non-zero padding"));
        }
        Ok(())
    }

    /// A string of at most `max` bytes.
    fn bytes(&mut self, max: usize) -> Result<Vec<u8>, NarUnpackError> {
        let len = self.u64()?;
        if len > max as u64 {
            return Err(self.malformed(format!("a string of {len} bytes (at most {max} expected)")));
        }
        let mut buf = vec![0u8; usize::try_from(len).expect("bounded by max")];
        self.read_exact(&mut buf)?;
        self.padding(len)?;
        Ok(buf)
    }

    fn expect_str(&mut self, want: &[u8]) -> Result<(), NarUnpackError> {
        let got = self.bytes(want.len().max(16))?;
        if got != want {
            return Err(self.malformed(format!(
                "expected `{}`, found `{}`",
                String::from_utf8_lossy(want),
                String::from_utf8_lossy(&got)
            )));
        }
        Ok(())
    }

    fn count_entry(&mut self) -> Result<(), NarUnpackError> {
        self.entries += 1;
        if self.entries > self.limits.max_entries {
            return Err(NarUnpackError::TooLarge {
                what: "entries",
                limit: self.limits.max_entries,
            });
        }
        Ok(())
    }

    /// `( type … )` at `path` (`shown`: its path inside the archive, for messages).
    fn node(&mut self, path: &Path, shown: &str, depth: usize) -> Result<(), NarUnpackError> {
        if depth > self.limits.max_depth {
            return Err(NarUnpackError::TooLarge {
                what: "folder depth",
                limit: self.limits.max_depth as u64,
            });
        }
        self.count_entry()?;
        self.expect_str(b"(")?;
        self.expect_str(b"type")?;
        let kind = self.bytes(16)?;
        match kind.as_slice() {
            b"regular" => self.regular(path)?,
            b"symlink" => {
                self.expect_str(b"target")?;
                let target = self.bytes(self.limits.max_target_len)?;
                if target.is_empty() || target.contains(&0) {
                    return Err(NarUnpackError::BadName {
                        path: shown.to_owned(),
                        why: "a symlink target that is empty or holds NUL",
                    });
                }
                use std::os::unix::ffi::OsStrExt;
                std::os::unix::fs::symlink(std::ffi::OsStr::from_bytes(&target), path)
                    .map_err(|e| io_at(e, path))?;
                self.expect_str(b")")?;
            }
            b"directory" => {
                fs_err::create_dir(path)?;
                let mut previous: Option<Vec<u8>> = None;
                loop {
                    let tag = self.bytes(16)?;
                    match tag.as_slice() {
                        b")" => break,
                        b"entry" => {}
                        _ => return Err(self.malformed("expected `entry` or `)`")),
                    }
                    self.expect_str(b"(")?;
                    self.expect_str(b"name")?;
                    let name = self.bytes(self.limits.max_name_len)?;
                    let child_shown = format!("{shown}/{}", String::from_utf8_lossy(&name));
                    check_name(&name, &child_shown)?;
                    if previous.as_ref().is_some_and(|p| *p >= name) {
                        return Err(NarUnpackError::BadName {
                            path: child_shown,
                            why: "names in a folder must be sorted and unique",
                        });
                    }
                    self.expect_str(b"node")?;
                    use std::os::unix::ffi::OsStrExt;
                    let child = path.join(std::ffi::OsStr::from_bytes(&name));
                    self.node(&child, &child_shown, depth + 1)?;
                    self.expect_str(b")")?;
                    previous = Some(name);
                }
            }
            other => {
                return Err(self.malformed(format!(
                    "unknown node type `{}`",
                    String::from_utf8_lossy(other)
                )));
            }
        }
        Ok(())
    }

    /// The rest of a regular file: `[executable ""] contents <data> )`.
    fn regular(&mut self, path: &Path) -> Result<(), NarUnpackError> {
        let mut tag = self.bytes(16)?;
        let mut executable = false;
        if tag == b"executable" {
            executable = true;
            if !self.bytes(0)?.is_empty() {
                return Err(self.malformed("`executable` takes an empty string"));
            }
            tag = self.bytes(16)?;
        }
        if tag != b"contents" {
            return Err(self.malformed("expected `contents`"));
        }
        let len = self.u64()?;
        if len > self.limits.max_file_bytes {
            return Err(NarUnpackError::TooLarge {
                what: "file size",
                limit: self.limits.max_file_bytes,
            });
        }
        self.total = self.total.saturating_add(len);
        if self.total > self.limits.max_total_bytes {
            return Err(NarUnpackError::TooLarge {
                what: "total size",
                limit: self.limits.max_total_bytes,
            });
        }
        // A new file in a folder this unpacker made: never through a link, never over
        // anything.
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(if executable { 0o755 } else { 0o644 })
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
            .open(path)
            .map_err(|e| io_at(e, path))?;
        let mut left = len;
        let mut buf = vec![0u8; 64 * 1024];
        while left > 0 {
            let n = usize::try_from(left.min(buf.len() as u64)).expect("bounded by the buffer");
            self.read_exact(&mut buf[..n])?;
            file.write_all(&buf[..n]).map_err(|e| io_at(e, path))?;
            left -= n as u64;
        }
        self.padding(len)?;
        self.expect_str(b")")?;
        Ok(())
    }
}

fn check_name(name: &[u8], shown: &str) -> Result<(), NarUnpackError> {
    let why = if name.is_empty() {
        Some("an empty name")
    } else if name == b"." || name == b".." {
        Some("`.` and `..` are not names")
    } else if name.contains(&b'/') {
        Some("a name with `/`")
    } else if name.contains(&0) {
        Some("a name with NUL")
    } else if is_git_name(name) {
        Some("named like git's own folder `.git`, which berth never stores")
    } else {
        None
    };
    match why {
        Some(why) => Err(NarUnpackError::BadName {
            path: shown.to_owned(),
            why,
        }),
        None => Ok(()),
    }
}

fn io_at(e: io::Error, path: &Path) -> NarUnpackError {
    NarUnpackError::Io(io::Error::new(
        e.kind(),
        format!("{e} (writing `{}`)", path.display()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nar::{dump, hash_path};
    use std::os::unix::fs::PermissionsExt;

    fn round_trip(src: &Path) {
        let mut bytes = Vec::new();
        dump(src, &mut bytes).expect("dump");
        let out = tempfile::tempdir().expect("tmp");
        let dest = out.path().join("tree");
        let got = unpack(bytes.as_slice(), &dest, &UnpackLimits::default()).expect("unpack");
        assert_eq!(got.nar_size, bytes.len() as u64);
        assert_eq!(got.nar_hash, hash_path(src).expect("hash"));
        assert_eq!(hash_path(&dest).expect("hash"), got.nar_hash);
    }

    #[test]
    fn trees_files_and_links_round_trip() {
        let dir = tempfile::tempdir().expect("tmp");
        let root = dir.path().join("p");
        std::fs::create_dir_all(root.join("a/b/empty")).expect("mkdir");
        std::fs::write(root.join("a/b/f.txt"), "text").expect("write");
        std::fs::write(root.join("empty"), "").expect("write");
        std::fs::write(root.join("run.sh"), "#!/bin/sh\n").expect("write");
        std::fs::set_permissions(root.join("run.sh"), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
        std::os::unix::fs::symlink("a/b/f.txt", root.join("rel")).expect("link");
        std::os::unix::fs::symlink("/etc/passwd", root.join("abs")).expect("link");
        round_trip(&root);
        round_trip(&root.join("a/b/f.txt"));
        round_trip(&root.join("rel"));
    }
}
