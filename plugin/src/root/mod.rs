//! Reading a plugin's files without ever leaving its store path.

use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

use crate::error::PluginError;
use berth_store::unpoisoned;
use known::{Kind, Seen};

pub use berth_lockfile_schema::plugin_manifest::MAX_FILE_BYTES;

mod known;

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
    /// What is already known of paths inside the plugin (its entry in the store does not
    /// change while it is read): a set's loaders read many files under the same few
    /// folders and ask for names in folders they just listed.
    seen: Mutex<Seen>,
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
    pub fn new(plugin: &str, path: &Path) -> Result<Self, PluginError> {
        Self::canonical(plugin, fs_err::canonicalize(path)?)
    }

    /// As [`PluginRoot::new`] for a `path` the caller already knows is canonical (absolute,
    /// no link in it), which saves resolving every component again.
    pub fn canonical(plugin: &str, root: PathBuf) -> Result<Self, PluginError> {
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
            seen: Mutex::new(Seen::default()),
        })
    }

    /// The same plugin, with what its entry's stat record lists (`tree`, just checked
    /// against the disk by the store) taken as known: every path's type and size and every
    /// folder's names, so reading the plugin asks the disk only to open its files.
    pub fn with_tree(self, tree: &berth_store::EntryTree) -> Self {
        *unpoisoned(self.seen.lock()) = Seen::from_tree(tree);
        self
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
        let mut skipped = unpoisoned(self.skipped.lock());
        std::mem::take(&mut *skipped)
            .into_iter()
            .map(|(file, why)| format!("plugin `{}`: skipped `{file}`: {why}", self.plugin))
            .collect()
    }

    fn skip(&self, file: &str, why: String) {
        let mut skipped = unpoisoned(self.skipped.lock());
        if !skipped.iter().any(|(f, _)| f == file) {
            skipped.push((file.to_owned(), why));
        }
    }

    /// `resolve`, with a link that leaves the plugin noted as skipped and taken as absent.
    fn resolve_or_skip(&self, rel: &str) -> Result<Option<(PathBuf, Kind)>, PluginError> {
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

    /// Where `rel` really is. Walks the components with `lstat`, relative to the plugin's
    /// folder (a component already seen, or absent from a folder already listed, is not
    /// asked again); only a path with a symlink in it pays for a full `canonicalize`.
    fn resolve(&self, rel: &str) -> Result<Resolved, PluginError> {
        let mut current = PathBuf::from(".");
        let mut kind = Some(Kind::Dir);
        let mut seen = unpoisoned(self.seen.lock());
        for part in Path::new(rel).components() {
            let name = match part {
                std::path::Component::CurDir => continue,
                std::path::Component::Normal(name) => name,
                _ => {
                    drop(seen);
                    return self.resolve_through_links(rel);
                }
            };
            // A file (or anything but a folder) before the last component: nothing is there.
            if !matches!(kind, Some(Kind::Dir)) {
                return Ok(Resolved::Absent);
            }
            let listed = seen.listed.contains(&current);
            current.push(name);
            let (file_type, len) = match seen.types.get(&current) {
                Some(known) => *known,
                None if listed => return Ok(Resolved::Absent),
                None => match rustix::fs::statat(&self.dir, &current, AtFlags::SYMLINK_NOFOLLOW) {
                    Ok(st) => {
                        let file_type = FileType::from_raw_mode(st.st_mode);
                        let kind = Kind::of_stat(&st);
                        let len = match kind {
                            Kind::File { len } => len,
                            _ => None,
                        };
                        seen.types.insert(current.clone(), (file_type, len));
                        (file_type, len)
                    }
                    Err(rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR) => {
                        return Ok(Resolved::Absent);
                    }
                    Err(e) => return Err(io_error(&self.root.join(&current), e)),
                },
            };
            if file_type == FileType::Symlink {
                drop(seen);
                return self.resolve_through_links(rel);
            }
            kind = Some(Kind::of_type(file_type, len));
        }
        Ok(Resolved::Inside(current, kind))
    }

    /// Where `rel` leads with every link followed: opened (`O_PATH`, following links as
    /// `canonicalize` does) relative to the plugin's folder, and named by the kernel
    /// (`/proc/self/fd`), instead of `canonicalize` asking `readlink` of every component
    /// from `/`. Fails as `canonicalize` would (a dangling link is `NotFound`); `None`
    /// without `/proc`, for the caller to `canonicalize`.
    fn real_path(&self, rel: &str) -> std::io::Result<Option<PathBuf>> {
        let rel = if rel.is_empty() { "." } else { rel };
        let fd = rustix::fs::openat(
            &self.dir,
            rel,
            OFlags::PATH | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        let Ok(named) = rustix::fs::readlinkat(
            rustix::fs::CWD,
            format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&fd)),
            Vec::new(),
        ) else {
            return Ok(None);
        };
        use std::os::unix::ffi::OsStringExt as _;
        let path = PathBuf::from(std::ffi::OsString::from_vec(named.into_bytes()));
        Ok(path.is_absolute().then_some(path))
    }

    fn resolve_through_links(&self, rel: &str) -> Result<Resolved, PluginError> {
        let joined = self.root.join(rel);
        let real = match self
            .real_path(rel)
            .and_then(|named| named.map_or_else(|| std::fs::canonicalize(&joined), Ok))
        {
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
    pub fn read_text(&self, rel: &str) -> Result<Option<String>, PluginError> {
        let Some(bytes) = self.read_bytes(rel)? else {
            return Ok(None);
        };
        String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| PluginError::NotUtf8 {
                plugin: self.plugin.clone(),
                file: rel.to_owned(),
            })
    }

    /// The bytes of the file at `rel`, or `None` as [`PluginRoot::read_text`] has none.
    pub fn read_bytes(&self, rel: &str) -> Result<Option<Vec<u8>>, PluginError> {
        let Some((real, Kind::File { len })) = self.resolve_or_skip(rel)? else {
            return Ok(None);
        };
        let error = |e| io_error(&self.root.join(&real), e);
        let fd = rustix::fs::openat(
            &self.dir,
            &real,
            OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(error)?;
        let len = match len {
            Some(len) => len,
            None => u64::try_from(rustix::fs::fstat(&fd).map_err(error)?.st_size).unwrap_or(0),
        };
        if len > MAX_FILE_BYTES {
            self.skip_large(rel, len);
            return Ok(None);
        }
        // Exactly the size the entry has (it does not change in the store): no second
        // `stat`, no `lseek`, no read to find the end as `fs::read` makes.
        let mut file = std::fs::File::from(fd);
        let mut bytes = vec![0; usize::try_from(len).unwrap_or(0)];
        let mut filled = 0;
        while filled < bytes.len() {
            match file.read(&mut bytes[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(io_error(&self.root.join(&real), e)),
            }
        }
        bytes.truncate(filled);
        Ok(Some(bytes))
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
    pub fn exists(&self, rel: &str) -> Result<bool, PluginError> {
        let rel = if rel.is_empty() { "." } else { rel };
        Ok(rustix::fs::statat(&self.dir, rel, AtFlags::SYMLINK_NOFOLLOW).is_ok())
    }

    /// Whether `rel` is a folder inside the plugin (a link leaving it is skipped).
    pub fn is_dir(&self, rel: &str) -> Result<bool, PluginError> {
        Ok(matches!(self.resolve_or_skip(rel)?, Some((_, Kind::Dir))))
    }

    /// Whether `rel` is a file inside the plugin (a link leaving it is skipped).
    pub fn is_file(&self, rel: &str) -> Result<bool, PluginError> {
        Ok(matches!(
            self.resolve_or_skip(rel)?,
            Some((_, Kind::File { .. }))
        ))
    }

    /// The names in folder `rel`, sorted; empty if it does not exist or leaves the plugin.
    pub fn list(&self, rel: &str) -> Result<Vec<String>, PluginError> {
        let Some((real, Kind::Dir)) = self.resolve_or_skip(rel)? else {
            return Ok(Vec::new());
        };
        if let Some(names) = unpoisoned(self.seen.lock()).children.get(&real) {
            return Ok(names.clone());
        }
        let error = |e: rustix::io::Errno| io_error(&self.root.join(&real), e);
        let fd = rustix::fs::openat(
            &self.dir,
            &real,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(error)?;
        let mut names = Vec::new();
        let mut types = Vec::new();
        let mut complete = true;
        for entry in rustix::fs::Dir::new(fd).map_err(error)? {
            let entry = entry.map_err(error)?;
            let name = entry.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            let Ok(name) = std::str::from_utf8(name) else {
                // Not a name berth reads; looked up by `lstat` if ever asked for.
                complete = false;
                continue;
            };
            match entry.file_type() {
                FileType::Unknown => complete = false,
                known => types.push((real.join(name), (known, None))),
            }
            names.push(name.to_owned());
        }
        // A folder reached through a link is not remembered (its path is not relative).
        if real.is_relative() {
            let mut seen = unpoisoned(self.seen.lock());
            seen.types.extend(types);
            if complete {
                seen.listed.insert(real);
            }
        }
        names.sort();
        Ok(names)
    }
}

/// A failed system call on `path`, as the error `fs_err` would give (naming the path).
fn io_error(path: &Path, e: impl Into<std::io::Error>) -> PluginError {
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
    use super::{MAX_FILE_BYTES, PluginRoot};
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
