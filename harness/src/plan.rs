//! What a target writes: a plan of paths under its folder, each a file, a link or a copy.

use std::collections::BTreeMap;
use std::path::PathBuf;

/// One path of a layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Planned {
    /// A file with these bytes.
    File(Vec<u8>),
    /// A symbolic link to this (absolute) path: a verified, read-only store entry.
    Link(PathBuf),
    /// A read-only copy of this file of a verified store entry (for harnesses that do not
    /// follow links), executable when it is; with the file's stat as the store's check
    /// found it while the set was built (`entry::copy_of`), so whether a copy is current is
    /// asked of the copy alone (`None`: asked of the disk).
    Copy(PathBuf, Option<SourceStat>),
    /// A JSON file the user's own keys are merged into (`settings.json`): current when it
    /// holds this value however it is formatted, so the user's edits of their own keys
    /// are never drift and a file already holding it is left as the user wrote it.
    Json(serde_json::Value),
}

/// The file that marks a folder as berth's (what [`Plan::own`] writes into each).
pub const MARK: &str = ".berth";

/// What a target writes under its folder.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// Every path it writes, relative to the folder.
    pub files: BTreeMap<PathBuf, Planned>,
    /// Folders (relative) that berth owns whole: anything else in them is drift, and is
    /// removed when the plan is applied.
    pub owned: Vec<PathBuf>,
    /// The file that marks an owned folder as berth's (the plan writes it into each): an
    /// existing owned folder without it is the user's, and is not touched.
    pub mark: Option<&'static str>,
    /// Owned folders without the mark that are berth's all the same: written by a berth
    /// from before the mark, as the harness's own configuration records (Claude Code's
    /// `berth` marketplace a `directory` source at that folder).
    pub vouched: Vec<PathBuf>,
    /// What of the set the harness cannot express, one line each.
    pub warnings: Vec<String>,
    /// The plugins the target refused to write (each said in a warning).
    pub refused: Vec<String>,
    /// How many plugins the plans write ([`super::materialize`] sets it on the first).
    pub plugins: usize,
}

/// What a copy of a store file takes of it, and is compared by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SourceStat {
    /// Whether any execute bit is set.
    pub executable: bool,
    /// Its size in bytes.
    pub size: u64,
    /// Its modification time (seconds, nanoseconds), which the copy gets.
    pub mtime: (i64, i64),
}

impl SourceStat {
    /// Of a file's metadata.
    pub fn of(meta: &std::fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt as _;
        Self {
            executable: meta.mode() & 0o111 != 0,
            size: meta.size(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
        }
    }
}

impl Plan {
    /// Makes `folder` (relative) one berth owns whole, marked as written by `berth
    /// materialize TARGET`; an owned folder already there without the mark is the user's.
    pub fn own(&mut self, folder: PathBuf, target: &str) {
        self.mark = Some(MARK);
        // Asked once per component a target writes in the folder: the mark planned says
        // it was asked before. (`owned` may already hold it without the mark: a plan starts
        // with the marked folders found, for those of plugins gone to be removed.)
        let mark = folder.join(MARK);
        if self.files.contains_key(&mark) {
            return;
        }
        self.files.insert(
            mark,
            Planned::File(
                format!("Written by `berth materialize {target}`; replaced by the next run.\n")
                    .into_bytes(),
            ),
        );
        // Compared as bytes: a `Path` compares unequal ones component by component, slow
        // over hundreds of folders.
        if !self
            .owned
            .iter()
            .any(|o| o.as_os_str() == folder.as_os_str())
        {
            self.owned.push(folder);
        }
    }

    /// Adds what `parts` plan (each planned on its own, a later path winning) to this plan.
    pub fn absorb(&mut self, mut parts: Vec<Plan>) {
        // Parts in the order of their first paths: when each writes in a folder of its own,
        // their paths come already sorted, and the map is built without searching it
        // (paths compare component by component, which is slow to do for every insert).
        parts.sort_by(|a, b| a.files.keys().next().cmp(&b.files.keys().next()));
        let mut files: Vec<(PathBuf, Planned)> =
            std::mem::take(&mut self.files).into_iter().collect();
        for part in parts {
            files.extend(part.files);
            for folder in part.owned {
                if !self
                    .owned
                    .iter()
                    .any(|o| o.as_os_str() == folder.as_os_str())
                {
                    self.owned.push(folder);
                }
            }
            self.vouched.extend(part.vouched);
            self.mark = self.mark.or(part.mark);
            self.warnings.extend(part.warnings);
            self.refused.extend(part.refused);
        }
        self.files = files.into_iter().collect();
    }
}

#[cfg(test)]
mod tests {
    use super::{MARK, PathBuf, Plan, Planned};

    #[test]
    fn an_owned_folder_is_marked_once_even_when_the_plan_starts_with_it() {
        // A target's plan starts with the marked folders found (to remove those of plugins
        // gone); owning one of them again must still plan its mark.
        let mut plan = Plan {
            owned: vec![PathBuf::from("skills/a")],
            ..Plan::default()
        };
        for folder in ["skills/a", "skills/b", "skills/a", "skills/b"] {
            plan.own(PathBuf::from(folder), "test");
        }
        assert_eq!(
            plan.owned,
            vec![PathBuf::from("skills/a"), PathBuf::from("skills/b")]
        );
        for folder in ["skills/a", "skills/b"] {
            assert!(matches!(
                plan.files.get(&PathBuf::from(folder).join(MARK)),
                Some(Planned::File(_))
            ));
        }
        assert_eq!(plan.files.len(), 2);
    }
}
