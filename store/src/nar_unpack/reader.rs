//! The NAR reader: a state machine over the stream that checks every tag, name and bound
//! as it goes and writes the tree while it hashes exactly the bytes it read.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use berth_lockfile_schema::Sha256Hash;
use fs_err::os::unix::fs::OpenOptionsExt;
use sha2::{Digest, Sha256};

use super::{
    NarUnpackError, UnpackLimits, Unpacked, at_root, check_name, child_shown, malformed, shown_tag,
};

/// The longest tag the format has (`nix-archive-1`), with room to quote a wrong one.
const MAX_TAG: u64 = 32;

/// A folder being unpacked whose `)` has not been read yet.
struct OpenDir {
    path: PathBuf,
    /// The path inside the archive, for messages (empty for the root).
    shown: String,
    previous: Option<Vec<u8>>,
}

/// How a node began: a folder stays open for its entries, anything else is complete.
enum Begun {
    Dir(OpenDir),
    Done,
}

/// Reads one NAR and unpacks it, keeping the running hash, offset and totals.
pub(super) struct Reader<R> {
    inner: BufReader<R>,
    hasher: Sha256,
    /// Bytes read (and hashed) so far.
    offset: u64,
    limits: UnpackLimits,
    /// Bytes of file contents so far.
    total: u64,
    entries: u64,
    /// Whether the root was created, so that an error removes it.
    made_dest: bool,
}

impl<R: Read> Reader<R> {
    /// A reader of the NAR in `inner` that nothing was read from yet.
    pub(super) fn new(inner: R, limits: UnpackLimits) -> Self {
        Self {
            inner: BufReader::with_capacity(64 * 1024, inner),
            hasher: Sha256::new(),
            offset: 0,
            limits,
            total: 0,
            entries: 0,
            made_dest: false,
        }
    }

    /// Whether the root was created, so that an error must remove it.
    pub(super) fn made_dest(&self) -> bool {
        self.made_dest
    }

    /// The hash and size of what was read.
    pub(super) fn finish(self) -> Unpacked {
        Unpacked {
            nar_hash: Sha256Hash::from_bytes(self.hasher.finalize().into()),
            nar_size: self.offset,
        }
    }

    /// The whole archive, its root at `dest`. Folders are tracked on a stack rather than by
    /// recursion, so the depth limit, not the thread's stack, decides how deep a NAR goes.
    pub(super) fn archive(&mut self, dest: &Path) -> Result<(), NarUnpackError> {
        self.expect(b"nix-archive-1")?;
        let mut open = Vec::new();
        if let Begun::Dir(root) = self.begin_node(dest, String::new(), 0)? {
            open.push(root);
        }
        while let Some(dir) = open.last_mut() {
            let at = self.offset;
            match self.tag()?.as_slice() {
                b"entry" => {}
                b")" => {
                    open.pop();
                    if !open.is_empty() {
                        // The `)` of the entry holding the folder just closed.
                        self.expect(b")")?;
                    }
                    continue;
                }
                other => {
                    return Err(malformed(
                        at,
                        format!("expected `entry` or `)`, found `{}`", shown_tag(other)),
                    ));
                }
            }
            self.expect(b"(")?;
            self.expect(b"name")?;
            let name = self.name(&dir.shown)?;
            let shown = child_shown(&dir.shown, &name);
            check_name(&name, &shown)?;
            if dir.previous.as_ref().is_some_and(|p| *p >= name) {
                return Err(NarUnpackError::BadName {
                    path: shown,
                    why: "names in a folder must be sorted and unique",
                });
            }
            let path = dir.path.join(std::ffi::OsStr::from_bytes(&name));
            dir.previous = Some(name);
            self.expect(b"node")?;
            match self.begin_node(&path, shown, open.len())? {
                Begun::Dir(child) => open.push(child),
                Begun::Done => self.expect(b")")?,
            }
        }
        // Nothing may follow the archive.
        let at = self.offset;
        if !self.fill_buf()?.is_empty() {
            return Err(malformed(at, "data after the end of the archive"));
        }
        Ok(())
    }

    /// `( type …` at `path`, `depth` folders down: a file or symlink up to its `)`, or a
    /// folder up to its first entry.
    fn begin_node(
        &mut self,
        path: &Path,
        shown: String,
        depth: usize,
    ) -> Result<Begun, NarUnpackError> {
        if depth > self.limits.max_depth {
            return Err(NarUnpackError::TooLarge {
                what: format!("`{shown}` is {depth} folders deep"),
                limit: self.limits.max_depth as u64,
            });
        }
        self.entries += 1;
        if self.entries > self.limits.max_entries {
            return Err(NarUnpackError::TooLarge {
                what: format!(
                    "more than {} entries, by `{shown}`",
                    self.limits.max_entries
                ),
                limit: self.limits.max_entries,
            });
        }
        self.expect(b"(")?;
        self.expect(b"type")?;
        let at = self.offset;
        match self.tag()?.as_slice() {
            b"regular" => {
                self.regular(path, &shown, depth == 0)?;
                Ok(Begun::Done)
            }
            b"symlink" => {
                self.symlink(path, &shown, depth == 0)?;
                Ok(Begun::Done)
            }
            b"directory" => {
                fs_err::create_dir(path)?;
                self.made_dest |= depth == 0;
                Ok(Begun::Dir(OpenDir {
                    path: path.to_owned(),
                    shown,
                    previous: None,
                }))
            }
            other => Err(malformed(
                at,
                format!("unknown node type `{}`", shown_tag(other)),
            )),
        }
    }

    /// The rest of a regular file: `[executable ""] contents <data> )`.
    fn regular(&mut self, path: &Path, shown: &str, is_root: bool) -> Result<(), NarUnpackError> {
        let mut at = self.offset;
        let mut tag = self.tag()?;
        let executable = tag == b"executable";
        if executable {
            self.expect(b"")?;
            at = self.offset;
            tag = self.tag()?;
        }
        if tag != b"contents" {
            return Err(malformed(
                at,
                format!("expected `contents`, found `{}`", shown_tag(&tag)),
            ));
        }
        let len = self.u64()?;
        if len > self.limits.max_file_bytes {
            return Err(NarUnpackError::TooLarge {
                what: format!("file `{}` holds {len} bytes", at_root(shown)),
                limit: self.limits.max_file_bytes,
            });
        }
        self.total = self.total.saturating_add(len);
        if self.total > self.limits.max_total_bytes {
            return Err(NarUnpackError::TooLarge {
                what: format!(
                    "the files hold {} bytes together, by `{}`",
                    self.total,
                    at_root(shown)
                ),
                limit: self.limits.max_total_bytes,
            });
        }
        // Read-only from the start, as a store entry keeps it: the descriptor that creates
        // the file still writes it.
        let mode = if executable { 0o555 } else { 0o444 };
        // A new file in a folder this unpacker made: never through a link, never over
        // anything.
        let mut file = fs_err::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
            .open(path)?;
        self.made_dest |= is_root;
        if executable {
            // The umask must not take away the owner's execute bit: the hash counts it.
            file.set_permissions(std::fs::Permissions::from_mode(mode))?;
        }
        self.copy_contents(len, &mut file)?;
        self.padding(len)?;
        self.expect(b")")
    }

    /// The rest of a symlink: `target <target> )`.
    fn symlink(&mut self, path: &Path, shown: &str, is_root: bool) -> Result<(), NarUnpackError> {
        self.expect(b"target")?;
        let len = self.u64()?;
        if len > self.limits.max_target_len as u64 {
            return Err(NarUnpackError::TooLarge {
                what: format!(
                    "the target of symlink `{}` is {len} bytes long",
                    at_root(shown)
                ),
                limit: self.limits.max_target_len as u64,
            });
        }
        let target = self.string_body(len)?;
        // Any other target is kept as it is (absolute, or with `..`): it is never followed
        // here, and the runtime refuses to read through links that leave the plugin.
        if target.is_empty() || target.contains(&0) {
            return Err(NarUnpackError::BadName {
                path: at_root(shown).to_owned(),
                why: "a symlink target that is empty or holds NUL",
            });
        }
        fs_err::os::unix::fs::symlink(std::ffi::OsStr::from_bytes(&target), path)?;
        self.made_dest |= is_root;
        self.expect(b")")
    }

    /// An entry's name, bounded before it is read.
    fn name(&mut self, folder: &str) -> Result<Vec<u8>, NarUnpackError> {
        let len = self.u64()?;
        if len > self.limits.max_name_len as u64 {
            return Err(NarUnpackError::TooLarge {
                what: format!("a name in `{}` is {len} bytes long", at_root(folder)),
                limit: self.limits.max_name_len as u64,
            });
        }
        self.string_body(len)
    }

    /// A string of at most [`MAX_TAG`] bytes: the format's own words.
    fn tag(&mut self) -> Result<Vec<u8>, NarUnpackError> {
        let at = self.offset;
        let len = self.u64()?;
        if len > MAX_TAG {
            return Err(malformed(
                at,
                format!("a string of {len} bytes where a NAR has a short word"),
            ));
        }
        self.string_body(len)
    }

    /// The string `want`.
    fn expect(&mut self, want: &[u8]) -> Result<(), NarUnpackError> {
        let at = self.offset;
        let got = self.tag()?;
        if got != want {
            return Err(malformed(
                at,
                format!(
                    "expected `{}`, found `{}`",
                    String::from_utf8_lossy(want),
                    shown_tag(&got)
                ),
            ));
        }
        Ok(())
    }

    /// The `len` bytes of a string (already bounded by the caller) and their padding.
    fn string_body(&mut self, len: u64) -> Result<Vec<u8>, NarUnpackError> {
        let len_usize = usize::try_from(len).map_err(|_| {
            malformed(
                self.offset,
                format!("a string of {len} bytes, too long here"),
            )
        })?;
        let mut buf = vec![0u8; len_usize];
        self.read_exact(&mut buf)?;
        self.padding(len)?;
        Ok(buf)
    }

    fn u64(&mut self) -> Result<u64, NarUnpackError> {
        let mut buf = [0u8; 8];
        self.read_exact(&mut buf)?;
        Ok(u64::from_le_bytes(buf))
    }

    /// The zeros that pad a string of `len` bytes to a multiple of 8.
    fn padding(&mut self, len: u64) -> Result<(), NarUnpackError> {
        let at = self.offset;
        let pad = usize::try_from((8 - len % 8) % 8).expect("under 8");
        let mut buf = [0u8; 8];
        self.read_exact(&mut buf[..pad])?;
        if buf[..pad].iter().any(|&b| b != 0) {
            return Err(malformed(at, "non-zero padding"));
        }
        Ok(())
    }

    /// Fills `buf` from the stream, hashing what was read.
    fn read_exact(&mut self, buf: &mut [u8]) -> Result<(), NarUnpackError> {
        match self.inner.read_exact(buf) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                return Err(malformed(self.offset, "the archive ends early"));
            }
            Err(source) => {
                return Err(NarUnpackError::Read {
                    offset: self.offset,
                    source,
                });
            }
        }
        self.hasher.update(&*buf);
        self.offset += buf.len() as u64;
        Ok(())
    }

    /// `len` bytes of file contents from the stream into `file`, hashed on the way, through
    /// the reader's own buffer.
    fn copy_contents(&mut self, len: u64, file: &mut fs_err::File) -> Result<(), NarUnpackError> {
        let mut left = len;
        while left > 0 {
            let available = self.fill_buf()?.len();
            if available == 0 {
                return Err(malformed(self.offset, "the archive ends inside a file"));
            }
            let n = usize::try_from(left).map_or(available, |left| left.min(available));
            let chunk = &self.inner.buffer()[..n];
            self.hasher.update(chunk);
            file.write_all(chunk)?;
            self.inner.consume(n);
            self.offset += n as u64;
            left -= n as u64;
        }
        Ok(())
    }

    /// What the stream holds next, without consuming it.
    fn fill_buf(&mut self) -> Result<&[u8], NarUnpackError> {
        loop {
            match self.inner.fill_buf() {
                Ok(_) => return Ok(self.inner.buffer()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(source) => {
                    return Err(NarUnpackError::Read {
                        offset: self.offset,
                        source,
                    });
                }
            }
        }
    }
}
