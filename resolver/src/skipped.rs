//! Files of a plugin that the runtime will skip (a symlink that leaves the plugin's folder,
//! a file over [`berth_lockfile_schema::plugin_manifest::MAX_FILE_BYTES`]), found when `lock` resolves the plugin so
//! the user hears of them then, not first at `plugins show`.

use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use berth_lockfile_schema::plugin_manifest::MAX_FILE_BYTES;

use crate::error::ResolveError;
use berth_transport::tree_path::{DiskTree, Tree, link_leaves};

/// A file the runtime will not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Skipped {
    /// A symlink whose target leaves the plugin's folder.
    LeavingLink { path: String },
    /// A regular file over [`MAX_FILE_BYTES`].
    TooLarge { path: String, bytes: u64 },
}

impl Skipped {
    /// The warning `lock` gives, naming plugin and file.
    pub(crate) fn message(&self, plugin: &str) -> String {
        match self {
            Self::LeavingLink { path } => format!(
                "plugin `{plugin}`: `{path}` is a symlink that leaves the plugin's folder; berth never reads through it, so it is skipped"
            ),
            Self::TooLarge { path, bytes } => format!(
                "plugin `{plugin}`: `{path}` is {bytes} bytes, over the {} MiB a plugin file may have; it is skipped",
                MAX_FILE_BYTES / (1024 * 1024)
            ),
        }
    }
}

/// What a walk over a plugin's files met: every symlink (path and target) and every
/// regular file over the limit. [`Found::judge`] turns it into the skipped files.
#[derive(Debug, Default)]
pub(crate) struct Found {
    links: Vec<(String, Vec<u8>)>,
    large: Vec<(String, u64)>,
}

impl Found {
    pub(crate) fn link(&mut self, path: String, target: &[u8]) {
        self.links.push((path, target.to_vec()));
    }

    pub(crate) fn file(&mut self, path: &str, bytes: u64) {
        if bytes > MAX_FILE_BYTES {
            self.large.push((path.to_owned(), bytes));
        }
    }

    /// The links that lead out of `tree` (the plugin's folder) and the large files, in
    /// path order.
    pub(crate) fn judge<T: Tree>(self, tree: &T) -> Result<Vec<Skipped>, ResolveError>
    where
        ResolveError: From<T::Error>,
    {
        let mut skipped = Vec::new();
        for (path, target) in self.links {
            if link_leaves(tree, &path, &target)? {
                skipped.push(Skipped::LeavingLink { path });
            }
        }
        skipped.extend(
            self.large
                .into_iter()
                .map(|(path, bytes)| Skipped::TooLarge { path, bytes }),
        );
        skipped.sort_by(|a, b| a.path().cmp(b.path()));
        Ok(skipped)
    }
}

impl Skipped {
    fn path(&self) -> &str {
        match self {
            Self::LeavingLink { path } | Self::TooLarge { path, .. } => path,
        }
    }
}

/// The files the runtime will skip in the plugin folder `dir` (a local folder, an unpacked
/// archive), leaving out the top-level names in `excluded` as the hash does.
pub(crate) fn scan_dir(dir: &Path, excluded: &[&str]) -> Result<Vec<Skipped>, ResolveError> {
    fn walk(dir: &Path, rel: &str, excluded: &[&str], found: &mut Found) -> std::io::Result<()> {
        for entry in fs_err::read_dir(dir)? {
            let entry = entry?;
            let name = entry.file_name();
            if rel.is_empty() && excluded.iter().any(|e| e.as_bytes() == name.as_bytes()) {
                continue;
            }
            let path = if rel.is_empty() {
                name.to_string_lossy().into_owned()
            } else {
                format!("{rel}/{}", name.to_string_lossy())
            };
            let meta = fs_err::symlink_metadata(entry.path())?;
            if meta.file_type().is_symlink() {
                let target = fs_err::read_link(entry.path())?;
                found.link(path, target.as_os_str().as_bytes());
            } else if meta.is_dir() {
                walk(&entry.path(), &path, excluded, found)?;
            } else if meta.is_file() {
                found.file(&path, meta.len());
            }
        }
        Ok(())
    }
    let mut found = Found::default();
    walk(dir, "", excluded, &mut found)?;
    found.judge(&DiskTree {
        root: dir.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_out_and_large_files_are_found_on_disk() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        fs_err::create_dir_all(root.join("skills/x")).expect("mkdir");
        fs_err::create_dir_all(root.join(".git")).expect("mkdir");
        std::os::unix::fs::symlink("../../../secret", root.join("skills/x/SKILL.md"))
            .expect("link");
        std::os::unix::fs::symlink("x", root.join("skills/y")).expect("link");
        std::os::unix::fs::symlink("/etc/passwd", root.join(".git/ignored")).expect("link");
        let big = fs_err::File::create(root.join("big.bin")).expect("create");
        big.set_len(MAX_FILE_BYTES + 1).expect("grow");
        fs_err::write(root.join("small.md"), "hi").expect("write");
        let skipped = scan_dir(root, &[".git"]).expect("scan");
        assert_eq!(
            skipped,
            vec![
                Skipped::TooLarge {
                    path: "big.bin".into(),
                    bytes: MAX_FILE_BYTES + 1
                },
                Skipped::LeavingLink {
                    path: "skills/x/SKILL.md".into()
                },
            ]
        );
        assert_eq!(
            skipped[1].message("p"),
            "plugin `p`: `skills/x/SKILL.md` is a symlink that leaves the plugin's folder; berth never reads through it, so it is skipped"
        );
        assert_eq!(
            skipped[0].message("p"),
            format!(
                "plugin `p`: `big.bin` is {} bytes, over the {} MiB a plugin file may have; it is skipped",
                MAX_FILE_BYTES + 1,
                MAX_FILE_BYTES >> 20
            )
        );
    }
}
