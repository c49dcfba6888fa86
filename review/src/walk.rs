//! The files, symlinks and names of a store entry, and their SHA-256 digests.
//!
//! Symlinks are listed with their target, never followed: a review reads only what the
//! entry itself holds.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// One regular file of an entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileEntry {
    /// Its path relative to the entry, with forward slashes.
    pub(crate) rel: String,
    /// Its path on disk.
    pub(crate) path: PathBuf,
    /// Whether any execute bit is set.
    pub(crate) executable: bool,
    /// A symlink's target, as written (`None`: a regular file).
    pub(crate) link: Option<String>,
    /// Its size when it was listed (`0` for a symlink).
    pub(crate) size: u64,
}

impl FileEntry {
    /// The file's bytes: one `open`, its `read`s into a buffer of the size it was listed
    /// with, one `close` (no `fstat`s for a size hint).
    pub(crate) fn read(&self) -> std::io::Result<Vec<u8>> {
        use std::io::Read;
        let mut bytes = Vec::with_capacity(usize::try_from(self.size).unwrap_or(0) + 1);
        let mut file = fs_err::File::open(&self.path)?;
        (&mut file).take(u64::MAX).read_to_end(&mut bytes)?;
        Ok(bytes)
    }
}

/// A path below an entry, of any kind (folder, file, symlink), by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NamedPath {
    /// Its path relative to the entry, with forward slashes (U+FFFD for bytes that are
    /// not UTF-8).
    pub(crate) rel: String,
    /// Whether its name's bytes are UTF-8.
    pub(crate) utf8: bool,
}

/// What [`walk_entry`] finds.
#[derive(Debug, Clone, Default)]
pub(crate) struct Walked {
    /// Every regular file, sorted by relative path.
    pub(crate) files: Vec<FileEntry>,
    /// Every symlink, with its target, sorted by relative path.
    pub(crate) links: Vec<FileEntry>,
    /// Every path of any kind, sorted by relative path.
    pub(crate) names: Vec<NamedPath>,
}

/// Every regular file and every symlink below `entry` (links not followed), sorted by
/// relative path.
pub(crate) fn files_and_links(entry: &Path) -> std::io::Result<Vec<FileEntry>> {
    let Walked {
        mut files, links, ..
    } = walk_entry(entry)?;
    files.extend(links);
    files.sort_by(|a, b| a.rel.cmp(&b.rel));
    Ok(files)
}

/// Every path below `entry` by name, and its regular files; symlinks are listed, never
/// followed.
pub(crate) fn walk_entry(entry: &Path) -> std::io::Result<Walked> {
    let mut out = Walked::default();
    let mut pending = vec![(entry.to_path_buf(), String::new())];
    while let Some((dir, prefix)) = pending.pop() {
        for item in fs_err::read_dir(&dir)? {
            let item = item?;
            let file_name = item.file_name();
            let name = file_name.to_string_lossy().into_owned();
            let rel = if prefix.is_empty() {
                name
            } else {
                format!("{prefix}/{name}")
            };
            out.names.push(NamedPath {
                rel: rel.clone(),
                utf8: file_name.to_str().is_some(),
            });
            // `DirEntry::file_type` does not follow links, so a symlink is seen as one.
            let kind = item.file_type()?;
            if kind.is_dir() {
                pending.push((item.path(), rel));
            } else if kind.is_file() {
                // An `lstat` relative to the open folder.
                let meta = item.metadata()?;
                out.files.push(FileEntry {
                    rel,
                    path: item.path(),
                    executable: is_executable(&meta),
                    link: None,
                    size: meta.len(),
                });
            } else if kind.is_symlink() {
                let target = fs_err::read_link(item.path())?;
                out.links.push(FileEntry {
                    rel,
                    path: item.path(),
                    executable: false,
                    link: Some(target.to_string_lossy().into_owned()),
                    size: 0,
                });
            }
        }
    }
    out.files.sort_by(|a, b| a.rel.cmp(&b.rel));
    out.links.sort_by(|a, b| a.rel.cmp(&b.rel));
    out.names.sort_by(|a, b| a.rel.cmp(&b.rel));
    Ok(out)
}

#[cfg(unix)]
fn is_executable(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn is_executable(_meta: &std::fs::Metadata) -> bool {
    false
}

/// The lowercase hex SHA-256 of `bytes`.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// The digest of the regular files of a folder (`""`: the whole plugin), added in path
/// order: SHA-256 over each file's path relative to the folder, a NUL, its length in
/// decimal, a NUL and its bytes.
#[derive(Debug)]
pub(crate) struct FolderDigest {
    base: String,
    hasher: Sha256,
}

impl FolderDigest {
    pub(crate) fn new(base: &str) -> Self {
        Self {
            base: base.to_owned(),
            hasher: Sha256::new(),
        }
    }

    /// Adds the file `rel` (relative to the plugin, inside the folder) with `content`.
    pub(crate) fn add(&mut self, rel: &str, content: &[u8]) {
        let rel = rel
            .strip_prefix(&self.base)
            .map_or(rel, |r| r.trim_start_matches('/'));
        self.hasher.update(rel.as_bytes());
        self.hasher.update([0]);
        self.hasher.update(content.len().to_string().as_bytes());
        self.hasher.update([0]);
        self.hasher.update(content);
    }

    /// The lowercase hex digest.
    pub(crate) fn finish(self) -> String {
        hex(&self.hasher.finalize())
    }
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::with_capacity(64), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}
