//! Reading a plugin's files without ever leaving its store path.

use std::path::{Path, PathBuf};

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
    exposed: PathBuf,
    skipped: std::sync::Mutex<Vec<(String, String)>>,
}

/// What a path inside the plugin turns out to be.
enum Resolved {
    /// It exists, at this real path inside the plugin.
    Inside(PathBuf),
    /// Nothing is there (or a link inside the plugin dangles).
    Absent,
    /// A symlink on the way leads out of the plugin.
    Escapes,
}

impl PluginRoot {
    /// `path` is the store entry of plugin `plugin`; hooks and MCP servers see it at
    /// `path` too (see [`PluginRoot::exposed_at`]).
    pub fn new(plugin: &str, path: &Path) -> Result<Self, RuntimeError> {
        let root = fs_err::canonicalize(path)?;
        Ok(Self {
            plugin: plugin.to_owned(),
            exposed: root.clone(),
            root,
            skipped: std::sync::Mutex::new(Vec::new()),
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
        let mut skipped = self
            .skipped
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        std::mem::take(&mut *skipped)
            .into_iter()
            .map(|(file, why)| format!("plugin `{}`: skipped `{file}`: {why}", self.plugin))
            .collect()
    }

    fn skip(&self, file: &str, why: String) {
        let mut skipped = self
            .skipped
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !skipped.iter().any(|(f, _)| f == file) {
            skipped.push((file.to_owned(), why));
        }
    }

    /// `resolve`, with a link that leaves the plugin noted as skipped and taken as absent.
    fn resolve_or_skip(&self, rel: &str) -> Result<Option<PathBuf>, RuntimeError> {
        match self.resolve(rel)? {
            Resolved::Inside(path) => Ok(Some(path)),
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

    /// Where `rel` really is. Walks the components with `lstat`; only a path with a
    /// symlink in it pays for a full `canonicalize`.
    fn resolve(&self, rel: &str) -> Result<Resolved, RuntimeError> {
        let mut current = self.root.clone();
        for part in Path::new(rel).components() {
            match part {
                std::path::Component::CurDir => {}
                std::path::Component::Normal(name) => {
                    current.push(name);
                    match std::fs::symlink_metadata(&current) {
                        Ok(meta) if meta.file_type().is_symlink() => {
                            return self.resolve_through_links(rel);
                        }
                        Ok(_) => {}
                        Err(e)
                            if matches!(
                                e.kind(),
                                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                            ) =>
                        {
                            return Ok(Resolved::Absent);
                        }
                        Err(e) => {
                            return Err(fs_err::symlink_metadata(&current)
                                .map_or_else(Into::into, |_| e.into()));
                        }
                    }
                }
                _ => return self.resolve_through_links(rel),
            }
        }
        Ok(Resolved::Inside(current))
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
            Ok(Resolved::Inside(real))
        } else {
            Ok(Resolved::Escapes)
        }
    }

    /// The text of the file at `rel`, or `None` if there is none or it is skipped (a
    /// symlink leaving the plugin, a file over [`MAX_FILE_BYTES`]; see
    /// [`PluginRoot::take_skipped`]).
    pub fn read_text(&self, rel: &str) -> Result<Option<String>, RuntimeError> {
        let Some(real) = self.resolve_or_skip(rel)? else {
            return Ok(None);
        };
        let meta = fs_err::metadata(&real)?;
        if !meta.is_file() {
            return Ok(None);
        }
        if meta.len() > MAX_FILE_BYTES {
            self.skip(
                rel,
                format!(
                    "it is {} bytes, more than the {} MiB a plugin file may have",
                    meta.len(),
                    MAX_FILE_BYTES / (1024 * 1024)
                ),
            );
            return Ok(None);
        }
        let bytes = fs_err::read(&real)?;
        String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| RuntimeError::NotUtf8 {
                plugin: self.plugin.clone(),
                file: rel.to_owned(),
            })
    }

    /// Whether anything (even a dangling link) is at `rel`, without following links.
    pub fn exists(&self, rel: &str) -> Result<bool, RuntimeError> {
        Ok(std::fs::symlink_metadata(self.root.join(rel)).is_ok())
    }

    /// Whether `rel` is a folder inside the plugin (a link leaving it is skipped).
    pub fn is_dir(&self, rel: &str) -> Result<bool, RuntimeError> {
        Ok(self.resolve_or_skip(rel)?.is_some_and(|p| p.is_dir()))
    }

    /// Whether `rel` is a file inside the plugin (a link leaving it is skipped).
    pub fn is_file(&self, rel: &str) -> Result<bool, RuntimeError> {
        Ok(self.resolve_or_skip(rel)?.is_some_and(|p| p.is_file()))
    }

    /// The names in folder `rel`, sorted; empty if it does not exist or leaves the plugin.
    pub fn list(&self, rel: &str) -> Result<Vec<String>, RuntimeError> {
        let Some(real) = self.resolve_or_skip(rel)? else {
            return Ok(Vec::new());
        };
        if !real.is_dir() {
            return Ok(Vec::new());
        }
        let mut names: Vec<String> = fs_err::read_dir(&real)?
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        names.sort();
        Ok(names)
    }
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
