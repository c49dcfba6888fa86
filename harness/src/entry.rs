//! A plugin's store entry as the targets list and copy it: from the paths the store's
//! check found on disk while the set was built ([`PluginInfo::tree`], in NAR order), so
//! planning asks the disk nothing more of the entry; from the disk itself when the store
//! had no stat record to check the entry by.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};

use berth_store::{EntryTree, TreePath};

use super::plan::{Planned, SourceStat};
use berth_runtime::set::PluginInfo;

const TYPE: u32 = 0o170_000;
const FOLDER: u32 = 0o040_000;
const FILE: u32 = 0o100_000;
const LINK: u32 = 0o120_000;

/// What a path of an entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    File,
    Folder,
    Link,
    /// Anything else (the store holds none).
    Other,
}

impl Kind {
    fn of_mode(mode: u32) -> Self {
        match mode & TYPE {
            FILE => Self::File,
            FOLDER => Self::Folder,
            LINK => Self::Link,
            _ => Self::Other,
        }
    }

    fn of_type(kind: std::fs::FileType) -> Self {
        if kind.is_file() {
            Self::File
        } else if kind.is_dir() {
            Self::Folder
        } else if kind.is_symlink() {
            Self::Link
        } else {
            Self::Other
        }
    }
}

/// The index of `rel` (`""`: the entry itself) in `tree`. NAR order compares paths
/// component by component, each as bytes, the entry itself first.
fn index<'a>(tree: &'a EntryTree, rel: &'a [u8]) -> Option<usize> {
    if rel.is_empty() {
        return tree.paths.first().map(|_| 0);
    }
    let paths = tree.paths.get(1..)?;
    let components = |p: &'a [u8]| p.split(|&b| b == b'/');
    paths
        .binary_search_by(|p| components(&p.path).cmp(components(rel)))
        .ok()
        .map(|at| at + 1)
}

/// The paths below the folder `rel` of an entry (relative to the entry, in NAR order),
/// with the length of `rel/` to take off them, when its `tree` lists `rel` as a folder.
fn below<'a>(tree: Option<&'a EntryTree>, rel: &Path) -> Option<(&'a [TreePath], usize)> {
    let tree = tree?;
    let rel = rel.as_os_str().as_bytes();
    let at = index(tree, rel)?;
    if tree.paths[at].mode & TYPE != FOLDER {
        return None;
    }
    // A folder's contents follow it, all of them before anything else.
    let inside = |p: &TreePath| {
        rel.is_empty() || (p.path.starts_with(rel) && p.path.get(rel.len()) == Some(&b'/'))
    };
    let end = tree.paths[at + 1..]
        .iter()
        .position(|p| !inside(p))
        .map_or(tree.paths.len(), |n| at + 1 + n);
    let skip = if rel.is_empty() { 0 } else { rel.len() + 1 };
    Some((&tree.paths[at + 1..end], skip))
}

/// What the folder `rel` of `info`'s entry holds: each path (relative to the entry) with
/// its kind, sorted by name; links are not followed.
pub(super) fn children(info: &PluginInfo, rel: &Path) -> std::io::Result<Vec<(PathBuf, Kind)>> {
    children_of(&info.path, info.tree.as_deref(), rel)
}

fn children_of(
    entry: &Path,
    tree: Option<&EntryTree>,
    rel: &Path,
) -> std::io::Result<Vec<(PathBuf, Kind)>> {
    if let Some((paths, skip)) = below(tree, rel) {
        return Ok(paths
            .iter()
            .filter(|p| !p.path[skip..].contains(&b'/'))
            .map(|p| {
                (
                    rel.join(OsStr::from_bytes(&p.path[skip..])),
                    Kind::of_mode(p.mode),
                )
            })
            .collect());
    }
    let mut out = std::fs::read_dir(entry.join(rel))?
        .map(|e| e.and_then(|e| Ok((rel.join(e.file_name()), Kind::of_type(e.file_type()?)))))
        .collect::<std::io::Result<Vec<_>>>()?;
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// Every regular file under the folder `folder` of `info`'s entry (relative to the
/// folder), links skipped, never followed.
pub(super) fn files_in(info: &PluginInfo, folder: &Path) -> std::io::Result<Vec<PathBuf>> {
    files_of(&info.path, info.tree.as_deref(), folder)
}

fn files_of(
    entry: &Path,
    tree: Option<&EntryTree>,
    folder: &Path,
) -> std::io::Result<Vec<PathBuf>> {
    if let Some((paths, skip)) = below(tree, folder) {
        return Ok(paths
            .iter()
            .filter(|p| p.mode & TYPE == FILE)
            .map(|p| PathBuf::from(OsStr::from_bytes(&p.path[skip..])))
            .collect());
    }
    let mut out = Vec::new();
    super::files::regular_files(&entry.join(folder), Path::new(""), &mut out)?;
    Ok(out)
}

/// Whether `rel` of `info`'s entry is a regular file, links followed (as
/// `Path::is_file`): from the entry's listing when it has one and no link is on the way.
pub(super) fn is_file(info: &PluginInfo, rel: &Path) -> bool {
    is_file_in(&info.path, info.tree.as_deref(), rel)
}

fn is_file_in(entry: &Path, tree: Option<&EntryTree>, rel: &Path) -> bool {
    let Some(tree) = tree.filter(|t| !t.paths.is_empty()) else {
        return entry.join(rel).is_file();
    };
    let mut at = PathBuf::new();
    for part in rel.components() {
        at.push(part);
        match index(tree, at.as_os_str().as_bytes()).map(|i| Kind::of_mode(tree.paths[i].mode)) {
            None => return false,
            Some(Kind::Link) => return entry.join(rel).is_file(),
            Some(kind) if at.as_os_str().len() == rel.as_os_str().len() => {
                return kind == Kind::File;
            }
            Some(_) => {}
        }
    }
    false
}

/// A read-only copy of the file `rel` of `info`'s entry, with its stat as the store's
/// check found it (so whether a copy is current is asked of the copy alone).
pub(super) fn copy_of(info: &PluginInfo, rel: &Path) -> Planned {
    copy_in(&info.path, info.tree.as_deref(), rel)
}

fn copy_in(entry: &Path, tree: Option<&EntryTree>, rel: &Path) -> Planned {
    let known = tree.and_then(|tree| {
        let found = &tree.paths[index(tree, rel.as_os_str().as_bytes())?];
        (found.mode & TYPE == FILE).then_some(SourceStat {
            executable: found.mode & 0o111 != 0,
            size: found.size,
            mtime: found.mtime,
        })
    });
    Planned::Copy(entry.join(rel), known)
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use berth_store::{EntryTree, Exclude, Store};

    use super::super::plan::{Planned, SourceStat};
    use super::{children_of, copy_in, files_of, is_file_in};

    /// A plugin folder in a store, with its tree as the store's check finds it.
    fn entry() -> (tempfile::TempDir, PathBuf, EntryTree) {
        let tmp = tempfile::tempdir().expect("a temporary folder");
        let src = tmp.path().join("src");
        for (rel, text) in [
            ("a.md", "a"),
            ("b/c.sh", "#!/bin/sh\n"),
            ("b/d/e.txt", "e"),
            ("b.txt", "names sort after the folder `b`'s contents"),
            ("b-c/f.md", "f"),
            ("skills/x/SKILL.md", "---\nname: x\n---\n"),
        ] {
            std::fs::create_dir_all(src.join(rel).parent().expect("a parent")).expect("made");
            std::fs::write(src.join(rel), text).expect("written");
        }
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(src.join("b/c.sh"), std::fs::Permissions::from_mode(0o755))
            .expect("made executable");
        std::os::unix::fs::symlink("a.md", src.join("link")).expect("linked");
        std::os::unix::fs::symlink("b", src.join("b-link")).expect("linked");
        let store = Store::new(tmp.path().join("store"));
        let added = store
            .add_dir(&src, "p", None, Exclude::NOTHING)
            .expect("added");
        let found = store.checked_lookup_all_with_trees(&[(&added.hash, "p")]);
        let (entry, tree) = found
            .into_iter()
            .next()
            .expect("one")
            .expect("checked")
            .expect("found");
        (
            tmp,
            entry.path,
            tree.expect("the store keeps a stat record"),
        )
    }

    #[test]
    fn the_tree_lists_and_copies_as_the_disk_does() {
        let (_tmp, path, tree) = entry();
        for rel in ["", "b", "b/d", "skills", "skills/x", "b-c", "b-link"] {
            let rel = Path::new(rel);
            assert_eq!(
                children_of(&path, Some(&tree), rel).expect("listed"),
                children_of(&path, None, rel).expect("listed"),
                "children of `{}`",
                rel.display()
            );
            assert_eq!(
                files_of(&path, Some(&tree), rel).expect("listed"),
                {
                    let mut on_disk = files_of(&path, None, rel).expect("listed");
                    // The disk's walk goes name by name, the tree in NAR order: the same set.
                    on_disk.sort_by(|a, b| a.components().cmp(b.components()));
                    on_disk
                },
                "files under `{}`",
                rel.display()
            );
        }
        for rel in [
            "a.md",
            "b",
            "b/c.sh",
            "b/d/e.txt",
            "link",
            "b-link",
            "b-link/c.sh",
            "b-link/d",
            "missing",
            "b/missing",
            "a.md/x",
            "skills/x/SKILL.md",
        ] {
            let rel = Path::new(rel);
            assert_eq!(
                is_file_in(&path, Some(&tree), rel),
                path.join(rel).is_file(),
                "whether `{}` is a file",
                rel.display()
            );
        }
        let Planned::Copy(_, Some(known)) = copy_in(&path, Some(&tree), Path::new("b/c.sh")) else {
            panic!("a file of the tree is known");
        };
        let on_disk = SourceStat::of(&std::fs::metadata(path.join("b/c.sh")).expect("there"));
        assert_eq!(known, on_disk);
        assert!(known.executable);
        for not_a_file in ["b", "link", "missing", "b/d/e.txt/x"] {
            assert!(
                matches!(
                    copy_in(&path, Some(&tree), Path::new(not_a_file)),
                    Planned::Copy(_, None)
                ),
                "{not_a_file}"
            );
        }
    }
}
