//! What a [`super::PluginRoot`] already knows of the paths inside its plugin: from the
//! `lstat`s and listings it made, or, for a store entry, from the paths its stat record
//! lists ([`Seen::from_tree`]).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use rustix::fs::FileType;

/// Paths (relative, from `.`) already seen by `lstat` or in a listing of their folder.
#[derive(Debug, Default)]
pub(super) struct Seen {
    /// What each path is, with a regular file's size when known.
    pub(super) types: HashMap<PathBuf, (FileType, Option<u64>)>,
    /// Folders listed whole: a name not in `types` under them is absent.
    pub(super) listed: HashSet<PathBuf>,
    /// The names in folders whose contents came from the entry's record, sorted.
    pub(super) children: HashMap<PathBuf, Vec<String>>,
}

/// What a resolved path is, from the `lstat` or listing that resolved it.
#[derive(Clone, Copy)]
pub(super) enum Kind {
    Dir,
    /// A regular file, with its size when an `lstat` gave it.
    File {
        len: Option<u64>,
    },
    Other,
}

impl Kind {
    pub(super) fn of(meta: &std::fs::Metadata) -> Self {
        if meta.is_dir() {
            Kind::Dir
        } else if meta.is_file() {
            Kind::File {
                len: Some(meta.len()),
            }
        } else {
            Kind::Other
        }
    }

    pub(super) fn of_stat(st: &rustix::fs::Stat) -> Self {
        match FileType::from_raw_mode(st.st_mode) {
            FileType::Directory => Kind::Dir,
            FileType::RegularFile => Kind::File {
                len: Some(u64::try_from(st.st_size).unwrap_or(0)),
            },
            _ => Kind::Other,
        }
    }

    /// From a listing's type (never a link or unknown: those are asked with `lstat`).
    pub(super) fn of_type(file_type: FileType, len: Option<u64>) -> Self {
        match file_type {
            FileType::Directory => Kind::Dir,
            FileType::RegularFile => Kind::File { len },
            _ => Kind::Other,
        }
    }
}

impl Seen {
    /// Everything `tree` lists (the entry's stat record, just checked against the disk):
    /// every path's type and size and every folder's names, sorted.
    pub(super) fn from_tree(tree: &berth_store::EntryTree) -> Self {
        use std::os::unix::ffi::OsStrExt as _;
        let mut seen = Seen::default();
        for entry in &tree.paths {
            let file_type = FileType::from_raw_mode(entry.mode as rustix::fs::RawMode);
            let len = (file_type == FileType::RegularFile).then_some(entry.size);
            let path = if entry.path == b"." {
                PathBuf::from(".")
            } else {
                Path::new(".").join(std::ffi::OsStr::from_bytes(&entry.path))
            };
            if entry.path != b"."
                && let (Some(parent), Some(name)) =
                    (path.parent(), path.file_name().and_then(|n| n.to_str()))
            {
                seen.children
                    .entry(parent.to_path_buf())
                    .or_default()
                    .push(name.to_owned());
            }
            if file_type == FileType::Directory {
                seen.listed.insert(path.clone());
                seen.children.entry(path.clone()).or_default();
            }
            seen.types.insert(path, (file_type, len));
        }
        for names in seen.children.values_mut() {
            names.sort();
        }
        seen
    }
}
