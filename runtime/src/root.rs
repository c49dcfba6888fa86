//! Reading a plugin's files without ever leaving its store path.

use std::path::{Path, PathBuf};

use crate::error::RuntimeError;

/// Files larger than this are refused: plugin files are text an agent reads, and a
/// hostile plugin must not make the runtime read gigabytes.
pub const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;

/// A plugin's folder in the store. Every read resolves symlinks and checks the result is
/// still inside the folder; a link that leaves it is an error naming the file.
#[derive(Debug, Clone)]
pub struct PluginRoot {
    plugin: String,
    root: PathBuf,
}

impl PluginRoot {
    /// `path` is the store entry of plugin `plugin`.
    pub fn new(plugin: &str, path: &Path) -> Result<Self, RuntimeError> {
        let root = fs_err::canonicalize(path)?;
        Ok(Self {
            plugin: plugin.to_owned(),
            root,
        })
    }

    /// The plugin's folder (canonical).
    pub fn path(&self) -> &Path {
        &self.root
    }

    /// The plugin's name, for messages.
    pub fn plugin(&self) -> &str {
        &self.plugin
    }

    /// Where `rel` really is, if it exists; an error if it resolves outside the plugin.
    /// Walks the components with `lstat`; only a path with a symlink in it pays for a full
    /// `canonicalize`.
    fn resolve(&self, rel: &str) -> Result<Option<PathBuf>, RuntimeError> {
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
                            return Ok(None);
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
        Ok(Some(current))
    }

    fn resolve_through_links(&self, rel: &str) -> Result<Option<PathBuf>, RuntimeError> {
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
                        return Err(self.escape(rel));
                    }
                }
                return Ok(None);
            }
            Err(e) => {
                return Err(fs_err::canonicalize(&joined).map_or_else(Into::into, |_| e.into()));
            }
        };
        if real.starts_with(&self.root) {
            Ok(Some(real))
        } else {
            Err(self.escape(rel))
        }
    }

    fn escape(&self, rel: &str) -> RuntimeError {
        RuntimeError::SymlinkEscape {
            plugin: self.plugin.clone(),
            file: rel.to_owned(),
        }
    }

    /// The text of the file at `rel`, or `None` if there is none.
    pub fn read_text(&self, rel: &str) -> Result<Option<String>, RuntimeError> {
        let Some(real) = self.resolve(rel)? else {
            return Ok(None);
        };
        let meta = fs_err::metadata(&real)?;
        if !meta.is_file() {
            return Ok(None);
        }
        if meta.len() > MAX_FILE_BYTES {
            return Err(RuntimeError::FileTooLarge {
                plugin: self.plugin.clone(),
                file: rel.to_owned(),
                bytes: meta.len(),
            });
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

    /// Whether `rel` is a folder inside the plugin.
    pub fn is_dir(&self, rel: &str) -> Result<bool, RuntimeError> {
        Ok(self.resolve(rel)?.is_some_and(|p| p.is_dir()))
    }

    /// Whether `rel` is a file inside the plugin.
    pub fn is_file(&self, rel: &str) -> Result<bool, RuntimeError> {
        Ok(self.resolve(rel)?.is_some_and(|p| p.is_file()))
    }

    /// The names in folder `rel`, sorted; empty if it does not exist.
    pub fn list(&self, rel: &str) -> Result<Vec<String>, RuntimeError> {
        let Some(real) = self.resolve(rel)? else {
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
        let err = root.read_text("escape.md").expect_err("escape");
        assert!(err.to_string().contains("`escape.md`"), "{err}");
        assert!(root.read_text("dangling-out.md").is_err());
        assert_eq!(root.read_text("dangling-in.md").expect("absent"), None);
        assert_eq!(root.read_text("missing.md").expect("absent"), None);
        assert_eq!(root.list("skills").expect("list"), ["a", "link.md"]);
    }
}
