//! Views: per-set folders of links named after the plugins, so a plugin sees itself at a
//! path that ends in its own name (`views-v1/<digest>/<name>`) while its files stay in the
//! content-addressed entry the link leads to.
//!
//! Real plugins find their own code by folder name (a hook puts the parent of
//! `CLAUDE_PLUGIN_ROOT` on `sys.path` and imports the plugin's package by name); under the
//! store that folder is `<nix32>-<name>`. A view is derived from entries alone, like an
//! agent environment: written once in `tmp/`, renamed into place, never changed after.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::store::{ENTRIES_DIR, Store, StoreError};

/// The views, under the store root.
pub const VIEWS_DIR: &str = "views-v1";

impl Store {
    /// The view of `plugins` (name and store entry, in set order): a folder holding one
    /// link per plugin, named after it, to its entry. The same plugins give the same
    /// folder; it is created when missing. A name met again gets `~2`, `~3`, ….
    pub fn plugin_view(&self, plugins: &[(&str, &Path)]) -> Result<PluginView, StoreError> {
        let mut links: Vec<(String, String)> = Vec::with_capacity(plugins.len());
        for (name, entry) in plugins {
            let entry = entry
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let mut link = (*name).to_owned();
            let mut n = 1;
            while links.iter().any(|(l, _)| *l == link) {
                n += 1;
                link = format!("{name}~{n}");
            }
            links.push((link, entry));
        }
        let mut digest = Sha256::new();
        for (link, entry) in &links {
            digest.update(link.as_bytes());
            digest.update([0]);
            digest.update(entry.as_bytes());
            digest.update([b'\n']);
        }
        let digest: String = digest.finalize()[..16]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let dir = self.root().join(VIEWS_DIR).join(digest);
        let view = PluginView {
            paths: links.iter().map(|(link, _)| dir.join(link)).collect(),
        };
        if std::fs::symlink_metadata(&dir).is_ok() {
            return Ok(view);
        }
        let staging = self.stage()?;
        for (link, entry) in &links {
            let target = Path::new("../..").join(ENTRIES_DIR).join(entry);
            fs_err::os::unix::fs::symlink(&target, staging.path().join(link))?;
        }
        match staging.persist_to(&dir) {
            Ok(()) => Ok(view),
            // Another process made the same view first: equal content, keep theirs.
            Err(_) if dir.is_dir() => Ok(view),
            Err(e) => Err(e.into()),
        }
    }

    /// The views whose links all lead to entries named in `live`; the rest are garbage.
    pub(crate) fn view_is_live(view: &Path, live: &std::collections::HashSet<String>) -> bool {
        let Ok(links) = std::fs::read_dir(view) else {
            return false;
        };
        links.filter_map(Result::ok).all(|link| {
            std::fs::read_link(link.path())
                .ok()
                .and_then(|t| t.file_name().map(|n| n.to_string_lossy().into_owned()))
                .is_some_and(|entry| live.contains(&entry))
        })
    }
}

/// Where each plugin of a view is seen, in the order given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginView {
    /// `<store>/views-v1/<digest>/<name>`, one per plugin.
    pub paths: Vec<PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_name_plugins_and_lead_to_their_entries() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::new(dir.path());
        let entries = dir.path().join(ENTRIES_DIR);
        for e in ["aaa-hookify", "bbb-other", "ccc-other"] {
            fs_err::create_dir_all(entries.join(e)).expect("mkdir");
            fs_err::write(entries.join(e).join("f"), e).expect("write");
        }
        let plugins = [
            ("hookify", entries.join("aaa-hookify")),
            ("other", entries.join("bbb-other")),
            ("other", entries.join("ccc-other")),
        ];
        let pairs: Vec<(&str, &Path)> = plugins.iter().map(|(n, p)| (*n, p.as_path())).collect();
        let view = store.plugin_view(&pairs).expect("view");
        let names: Vec<_> = view
            .paths
            .iter()
            .map(|p| p.file_name().expect("name").to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["hookify", "other", "other~2"]);
        assert_eq!(
            fs_err::read_to_string(view.paths[2].join("f")).expect("read through"),
            "ccc-other"
        );
        // The same set finds the same folder; another set gets its own.
        assert_eq!(store.plugin_view(&pairs).expect("again"), view);
        let other = store.plugin_view(&pairs[..1]).expect("other view");
        assert_ne!(other.paths[0].parent(), view.paths[0].parent());
        let live: std::collections::HashSet<String> =
            ["aaa-hookify".to_owned()].into_iter().collect();
        assert!(Store::view_is_live(
            other.paths[0].parent().expect("dir"),
            &live
        ));
        assert!(!Store::view_is_live(
            view.paths[0].parent().expect("dir"),
            &live
        ));
    }
}
