//! Reading a plugin's files without ever leaving its store path.

use std::collections::HashSet;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

use crate::error::RuntimeError;

pub use berth_lockfile_schema::plugin_manifest::MAX_FILE_BYTES;

/// A plugin's folder in the store. Every read resolves symlinks and checks the result is
/// still inside the folder. What cannot be read safely (a symlink that leaves the folder,
/// a file over [`MAX_FILE_BYTES`]) is skipped, as the SDK skips it, and noted once per path
/// in [`PluginRoot::take_skipped`] so the set's `warnings` name plugin and file.
#[derive(Debug)]
pub struct PluginRoot {
    plugin: String,
    root: PathBuf,
    /// The folder, opened once: every `lstat` and `open` inside it is relative to it, so
    /// the kernel walks only the path inside the plugin, never the store's path again.
    dir: OwnedFd,
    exposed: PathBuf,
    skipped: Mutex<Vec<(String, String)>>,
    /// Folders inside the plugin already seen by `lstat` to be real folders (no link):
    /// a set's loaders read many files under the same few folders, and each folder is
    /// checked once per build instead of once per file under it.
    real_dirs: Mutex<HashSet<PathBuf>>,
}

/// What a resolved path is, from the `lstat` that resolved it.
#[derive(Clone, Copy)]
enum Kind {
    Dir,
    File { len: u64 },
    Other,
}

impl Kind {
    fn of(meta: &std::fs::Metadata) -> Self {
        if meta.is_dir() {
            Kind::Dir
        } else if meta.is_file() {
            Kind::File { len: meta.len() }
        } else {
            Kind::Other
        }
    }

    fn of_stat(st: &rustix::fs::Stat) -> Self {
        match FileType::from_raw_mode(st.st_mode) {
            FileType::Directory => Kind::Dir,
            FileType::RegularFile => Kind::File {
                len: u64::try_from(st.st_size).unwrap_or(0),
            },
            _ => Kind::Other,
        }
    }
}

/// What a path inside the plugin turns out to be.
enum Resolved {
    /// It exists, at this real path (relative to the plugin's folder, or absolute when a
    /// link was followed); with what it is when that is known without another `stat` (the
    /// last component was not a link).
    Inside(PathBuf, Option<Kind>),
    /// Nothing is there (or a link inside the plugin dangles).
    Absent,
    /// A symlink on the way leads out of the plugin.
    Escapes,
}

impl PluginRoot {
    /// `path` is the store entry of plugin `plugin`; hooks and MCP servers see it at
    /// `path` too (see [`PluginRoot::exposed_at`]).
    pub fn new(plugin: &str, path: &Path) -> Result<Self, RuntimeError> {
        Self::canonical(plugin, fs_err::canonicalize(path)?)
    }

    /// As [`PluginRoot::new`] for a `path` the caller already knows is canonical (absolute,
    /// no link in it), which saves resolving every component again.
    pub fn canonical(plugin: &str, root: PathBuf) -> Result<Self, RuntimeError> {
        let dir = rustix::fs::open(
            &root,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| io_error(&root, e))?;
        Ok(Self {
            plugin: plugin.to_owned(),
            exposed: root.clone(),
            root,
            dir,
            skipped: Mutex::new(Vec::new()),
            real_dirs: Mutex::new(HashSet::new()),
        })
    }

    /// The same plugin, shown to hooks and MCP servers at `exposed` (a link named after
    /// the plugin that leads to this folder) instead of its store path.
    pub fn exposed_at(mut self, exposed: PathBuf) -> Self {
        self.exposed = exposed;
        self
    }

    /// The plugin's folder (canonical): where berth reads it.
    pub fn path(&self) -> &Path {
        &self.root
    }

    /// Where hooks, MCP servers and commands see the plugin (`${CLAUDE_PLUGIN_ROOT}`).
    pub fn exposed(&self) -> &Path {
        &self.exposed
    }

    /// The paths skipped so far, each with why, in the order met; clears the list.
    pub fn take_skipped(&self) -> Vec<String> {
        let mut skipped = self.skipped.lock().unwrap_or_else(PoisonError::into_inner);
        std::mem::take(&mut *skipped)
            .into_iter()
            .map(|(file, why)| format!("plugin `{}`: skipped `{file}`: {why}", self.plugin))
            .collect()
    }

    fn skip(&self, file: &str, why: String) {
        let mut skipped = self.skipped.lock().unwrap_or_else(PoisonError::into_inner);
        if !skipped.iter().any(|(f, _)| f == file) {
            skipped.push((file.to_owned(), why));
        }
    }

    /// `resolve`, with a link that leaves the plugin noted as skipped and taken as absent.
    fn resolve_or_skip(&self, rel: &str) -> Result<Option<(PathBuf, Kind)>, RuntimeError> {
        match self.resolve(rel)? {
            Resolved::Inside(path, Some(kind)) => Ok(Some((path, kind))),
            Resolved::Inside(path, None) => match std::fs::metadata(&path) {
                Ok(meta) => Ok(Some((path, Kind::of(&meta)))),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(fs_err::metadata(&path).map_or_else(Into::into, |_| e.into())),
            },
            Resolved::Absent => Ok(None),
            Resolved::Escapes => {
                self.skip(
                    rel,
                    "it is a symlink that leaves the plugin's folder; berth never reads through it"
                        .to_owned(),
                );
                Ok(None)
            }
        }
    }

    /// The plugin's name, for messages.
    pub fn plugin(&self) -> &str {
        &self.plugin
    }

    /// Where `rel` really is. Walks the components with `lstat` (a folder already seen to
    /// be real is not asked again); only a path with a symlink in it pays for a full
    /// `canonicalize`.
    fn resolve(&self, rel: &str) -> Result<Resolved, RuntimeError> {
        let mut current = PathBuf::from(".");
        let mut kind = Some(Kind::Dir);
        let mut real_dirs = self
            .real_dirs
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for part in Path::new(rel).components() {
            match part {
                std::path::Component::CurDir => {}
                std::path::Component::Normal(name) => {
                    current.push(name);
                    if real_dirs.contains(&current) {
                        kind = Some(Kind::Dir);
                        continue;
                    }
                    match rustix::fs::statat(&self.dir, &current, AtFlags::SYMLINK_NOFOLLOW) {
                        Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::Symlink => {
                            drop(real_dirs);
                            return self.resolve_through_links(rel);
                        }
                        Ok(st) => {
                            let found = Kind::of_stat(&st);
                            if matches!(found, Kind::Dir) {
                                real_dirs.insert(current.clone());
                            }
                            kind = Some(found);
                        }
                        Err(rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR) => {
                            return Ok(Resolved::Absent);
                        }
                        Err(e) => return Err(io_error(&self.root.join(&current), e)),
                    }
                }
                _ => {
                    drop(real_dirs);
                    return self.resolve_through_links(rel);
                }
            }
        }
        Ok(Resolved::Inside(current, kind))
    }

    fn resolve_through_links(&self, rel: &str) -> Result<Resolved, RuntimeError> {
        let joined = self.root.join(rel);
        let real = match std::fs::canonicalize(&joined) {
            Ok(real) => real,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                ) =>
            {
                // A dangling symlink is absent unless it points outside, which is refused.
                if let Ok(target) = std::fs::read_link(&joined) {
                    let target = joined.parent().map_or(target.clone(), |p| p.join(&target));
                    if !normalized(&target).starts_with(&self.root) {
                        return Ok(Resolved::Escapes);
                    }
                }
                return Ok(Resolved::Absent);
            }
            Err(e) => {
                return Err(fs_err::canonicalize(&joined).map_or_else(Into::into, |_| e.into()));
            }
        };
        if real.starts_with(&self.root) {
            Ok(Resolved::Inside(real, None))
        } else {
            Ok(Resolved::Escapes)
        }
    }

    /// The text of the file at `rel`, or `None` if there is none or it is skipped (a
    /// symlink leaving the plugin, a file over [`MAX_FILE_BYTES`]; see
    /// [`PluginRoot::take_skipped`]).
    pub fn read_text(&self, rel: &str) -> Result<Option<String>, RuntimeError> {
        let Some((real, Kind::File { len })) = self.resolve_or_skip(rel)? else {
            return Ok(None);
        };
        if len > MAX_FILE_BYTES {
            self.skip_large(rel, len);
            return Ok(None);
        }
        // Read with the size `lstat` gave (no second `stat` and `lseek` as `fs::read` does),
        // never past the limit even if the file grew since.
        let mut file = std::fs::File::from(
            rustix::fs::openat(
                &self.dir,
                &real,
                OFlags::RDONLY | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(|e| io_error(&self.root.join(&real), e))?,
        );
        let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0) + 1);
        (&mut file)
            .take(MAX_FILE_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| io_error(&self.root.join(&real), e))?;
        if bytes.len() as u64 > MAX_FILE_BYTES {
            self.skip_large(rel, bytes.len() as u64);
            return Ok(None);
        }
        String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| RuntimeError::NotUtf8 {
                plugin: self.plugin.clone(),
                file: rel.to_owned(),
            })
    }

    fn skip_large(&self, rel: &str, len: u64) {
        self.skip(
            rel,
            format!(
                "it is {len} bytes, more than the {} MiB a plugin file may have",
                MAX_FILE_BYTES / (1024 * 1024)
            ),
        );
    }

    /// Whether anything (even a dangling link) is at `rel`, without following links.
    pub fn exists(&self, rel: &str) -> Result<bool, RuntimeError> {
        let rel = if rel.is_empty() { "." } else { rel };
        Ok(rustix::fs::statat(&self.dir, rel, AtFlags::SYMLINK_NOFOLLOW).is_ok())
    }

    /// Whether `rel` is a folder inside the plugin (a link leaving it is skipped).
    pub fn is_dir(&self, rel: &str) -> Result<bool, RuntimeError> {
        Ok(matches!(self.resolve_or_skip(rel)?, Some((_, Kind::Dir))))
    }

    /// Whether `rel` is a file inside the plugin (a link leaving it is skipped).
    pub fn is_file(&self, rel: &str) -> Result<bool, RuntimeError> {
        Ok(matches!(
            self.resolve_or_skip(rel)?,
            Some((_, Kind::File { .. }))
        ))
    }

    /// The names in folder `rel`, sorted; empty if it does not exist or leaves the plugin.
    pub fn list(&self, rel: &str) -> Result<Vec<String>, RuntimeError> {
        let Some((real, Kind::Dir)) = self.resolve_or_skip(rel)? else {
            return Ok(Vec::new());
        };
        let error = |e: rustix::io::Errno| io_error(&self.root.join(&real), e);
        let fd = rustix::fs::openat(
            &self.dir,
            &real,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(error)?;
        let mut names = Vec::new();
        for entry in rustix::fs::Dir::read_from(&fd).map_err(error)? {
            let entry = entry.map_err(error)?;
            let name = entry.file_name().to_bytes();
            if name != b"."
                && name != b".."
                && let Ok(name) = std::str::from_utf8(name)
            {
                names.push(name.to_owned());
            }
        }
        names.sort();
        Ok(names)
    }
}

/// A failed system call on `path`, as the error `fs_err` would give (naming the path).
fn io_error(path: &Path, e: impl Into<std::io::Error>) -> RuntimeError {
    let e: std::io::Error = e.into();
    std::io::Error::new(
        e.kind(),
        format!("failed to read `{}`: {e}", path.display()),
    )
    .into()
}

/// `..` and `.` removed lexically (for a symlink target that does not exist).
fn normalized(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn links_inside_are_followed_and_links_outside_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let plugin = dir.path().join("plugin");
        fs_err::create_dir_all(plugin.join("skills/a")).expect("mkdir");
        fs_err::write(plugin.join("skills/a/SKILL.md"), "inside").expect("write");
        fs_err::write(dir.path().join("secret"), "outside").expect("write");
        symlink("a/SKILL.md", plugin.join("skills/link.md")).expect("symlink");
        symlink("../secret", plugin.join("escape.md")).expect("symlink");
        symlink("/nonexistent/x", plugin.join("dangling-out.md")).expect("symlink");
        symlink("nope", plugin.join("dangling-in.md")).expect("symlink");
        let root = PluginRoot::new("p", &plugin).expect("root");
        assert_eq!(
            root.read_text("skills/link.md").expect("read").as_deref(),
            Some("inside")
        );
        assert_eq!(root.read_text("escape.md").expect("skipped"), None);
        assert_eq!(root.read_text("dangling-out.md").expect("skipped"), None);
        assert_eq!(root.read_text("dangling-in.md").expect("absent"), None);
        assert_eq!(root.read_text("missing.md").expect("absent"), None);
        assert_eq!(root.list("skills").expect("list"), ["a", "link.md"]);
        // Read twice, noted once; the message calls it a symlink, never a file.
        assert_eq!(root.read_text("escape.md").expect("skipped"), None);
        let skipped = root.take_skipped();
        assert_eq!(skipped.len(), 2, "{skipped:?}");
        assert!(
            skipped[0].contains("plugin `p`: skipped `escape.md`: it is a symlink that leaves"),
            "{skipped:?}"
        );
        assert!(skipped[1].contains("`dangling-out.md`"), "{skipped:?}");
        assert!(root.take_skipped().is_empty());
    }

    #[test]
    fn files_over_the_limit_are_skipped() {
        let dir = tempfile::tempdir().expect("tempdir");
        let big = std::fs::File::create(dir.path().join("big.md")).expect("create");
        big.set_len(MAX_FILE_BYTES + 1).expect("grow");
        let root = PluginRoot::new("p", dir.path()).expect("root");
        assert_eq!(root.read_text("big.md").expect("skipped"), None);
        let skipped = root.take_skipped();
        assert!(
            skipped[0].contains("`big.md`: it is 16777217 bytes"),
            "{skipped:?}"
        );
    }
}
