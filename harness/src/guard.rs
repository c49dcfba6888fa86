//! What of a harness folder berth may change: only what it wrote.
//!
//! Every name that becomes a path (a plugin, skill, command or agent name, a version) is one
//! plain path component before a target plans it ([`is_component`]); every planned path is
//! relative and plain, so nothing is written outside the folder. Before a plan is applied,
//! [`foreign`] finds what berth did not write in the places the plan changes: an owned
//! folder without the target's mark (a Gemini extension or an Agent Plugins folder of the
//! user's with a locked plugin's name), a symbolic link berth did not make on the way to
//! a planned path (`DIR/plugins -> /data/…`, a committed `.claude/settings.json -> ~/…`),
//! a folder where a file goes. berth refuses to change them, or with `--force` moves each
//! aside ([`move_aside`]) and says so; it never deletes them. The files berth merges its
//! keys into are read without following a link ([`read_unlinked`]).

use std::collections::HashSet;
use std::io::Read as _;
use std::path::{Component, Path, PathBuf};

use super::plan::{Plan, Planned};

/// Where a moved-aside path goes: `NAME.berth-backup-N` beside it.
const BACKUP: &str = "berth-backup";

/// Whether `name` can be one path component of what berth writes: not empty, not `.` or
/// `..`, no `/`, `\` or NUL, no control character, no leading `-`, at most 255 bytes.
pub fn is_component(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 255
        && name != "."
        && name != ".."
        && !name.starts_with('-')
        && !name.contains(['/', '\\', '\0'])
        && !name.chars().any(char::is_control)
}

/// Whether `rel` is a relative path of plain components only (no `..`, `.`, root).
fn is_plain(rel: &Path) -> bool {
    !rel.as_os_str().is_empty() && rel.components().all(|c| matches!(c, Component::Normal(_)))
}

/// A path of the folder that a plan would change although berth did not write it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Foreign {
    /// The path, relative to the folder.
    pub path: PathBuf,
    /// What it is (`a symbolic link berth did not make`).
    pub what: &'static str,
}

impl std::fmt::Display for Foreign {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.what)
    }
}

/// An error for a planned path that is not relative and plain: a target's bug, refused
/// before anything is written.
fn escapes(rel: &Path) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!(
            "refusing to write `{}`: not a plain path inside the folder",
            rel.display()
        ),
    )
}

/// The file type at `path`, links not followed; `None` when nothing is there.
fn lstat(path: &Path) -> std::io::Result<Option<std::fs::FileType>> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) => Ok(Some(meta.file_type())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// An error naming the first planned or owned path of `plan` that is not plain.
pub(super) fn all_plain(plan: &Plan) -> std::io::Result<()> {
    match plan
        .owned
        .iter()
        .chain(plan.files.keys())
        .find(|p| !is_plain(p))
    {
        Some(rel) => Err(escapes(rel)),
        None => Ok(()),
    }
}

/// What berth did not write in the places `plan` changes under `root`, sorted by path;
/// an error if a planned path is not plain.
pub fn foreign(root: &Path, plan: &Plan) -> std::io::Result<Vec<Foreign>> {
    all_plain(plan)?;
    let mut found: Vec<Foreign> = Vec::new();
    for owned in &plan.owned {
        let what = match lstat(&root.join(owned))? {
            None => continue,
            Some(t) if t.is_symlink() => "a symbolic link where berth keeps a folder",
            Some(t) if !t.is_dir() => "a file where berth keeps a folder",
            Some(_) if plan.vouched.contains(owned) => continue,
            Some(_) => match &plan.mark {
                Some(mark)
                    if !lstat(&root.join(owned).join(mark))?.is_some_and(|t| t.is_file()) =>
                {
                    "a folder berth did not write (it has no `.berth` mark)"
                }
                _ => continue,
            },
        };
        found.push(Foreign {
            path: owned.clone(),
            what,
        });
    }
    let owned: HashSet<&Path> = plan.owned.iter().map(PathBuf::as_path).collect();
    let mut folders = HashSet::new();
    for (rel, planned) in &plan.files {
        if let Some(f) = foreign_on_the_way(root, &owned, &mut folders, rel, planned)?
            && !found.iter().any(|seen| seen.path == f.path)
        {
            found.push(f);
        }
    }
    found.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(found)
}

/// What berth did not write on the way to the planned path `rel` or at it, outside the
/// `owned` folders (whose own state [`foreign`] checks; what is inside one is reached
/// through it). `folders` holds the paths already found to be real folders, not looked at
/// again.
fn foreign_on_the_way(
    root: &Path,
    owned: &HashSet<&Path>,
    folders: &mut HashSet<PathBuf>,
    rel: &Path,
    planned: &Planned,
) -> std::io::Result<Option<Foreign>> {
    let parts: Vec<Component<'_>> = rel.components().collect();
    let mut at = PathBuf::new();
    for (i, part) in parts.iter().enumerate() {
        at.push(part);
        if owned.contains(at.as_path()) {
            return Ok(None);
        }
        if i + 1 < parts.len() && folders.contains(&at) {
            continue;
        }
        let Some(kind) = lstat(&root.join(&at))? else {
            return Ok(None);
        };
        let last = i + 1 == parts.len();
        let what = if !last {
            if kind.is_symlink() {
                "a symbolic link berth did not make, on the way to what it writes"
            } else if !kind.is_dir() {
                "a file where berth writes a folder"
            } else {
                folders.insert(at.clone());
                continue;
            }
        } else if kind.is_symlink() {
            match planned {
                Planned::Link(target) if std::fs::read_link(root.join(&at))? == *target => {
                    return Ok(None);
                }
                _ => "a symbolic link berth did not make",
            }
        } else if kind.is_dir() {
            "a folder where berth writes a file"
        } else {
            return Ok(None);
        };
        return Ok(Some(Foreign { path: at, what }));
    }
    Ok(None)
}

/// Moves `rel` under `root` aside to `rel.berth-backup-N` (the first N free), returning
/// where it went.
pub fn move_aside(root: &Path, rel: &Path) -> std::io::Result<PathBuf> {
    let name = rel.file_name().unwrap_or_default().to_string_lossy();
    for n in 1.. {
        let aside = rel.with_file_name(format!("{name}.{BACKUP}-{n}"));
        if lstat(&root.join(&aside))?.is_none() {
            std::fs::rename(root.join(rel), root.join(&aside))?;
            return Ok(aside);
        }
    }
    unreachable!("some backup number is free")
}

/// The bytes of `root/rel` when it is a regular file reached without a symbolic link
/// below `root`; `None` when it is missing or is reached through a link (which
/// [`foreign`] then names), so a linked file's target is never read into what berth
/// writes.
pub fn read_unlinked(root: &Path, rel: &Path) -> std::io::Result<Option<Vec<u8>>> {
    let mut at = root.to_path_buf();
    let parts: Vec<Component<'_>> = rel.components().collect();
    for (i, part) in parts.iter().enumerate() {
        at.push(part);
        match lstat(&at)? {
            None => return Ok(None),
            Some(t) if t.is_symlink() => return Ok(None),
            Some(t) if i + 1 == parts.len() && !t.is_file() => return Ok(None),
            Some(_) => {}
        }
    }
    let mut file = match open_nofollow(&at) {
        Ok(file) => file,
        // Replaced by a link since it was looked at: read as missing, [`foreign`] names it.
        Err(e) if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) => {
            return Ok(None);
        }
        Err(e) => return Err(e),
    };
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(Some(bytes))
}

/// [`read_unlinked`] of the file `rel` of the store entry `entry`, remembered for the
/// process: an entry never changes once added (the set checked it against its stat record
/// before any target reads it), and the readings of a target ask for a plugin's manifest
/// several times. `None` when it is missing, reached through a link, or unreadable.
pub fn read_entry_file(entry: &Path, rel: &Path) -> Option<std::sync::Arc<[u8]>> {
    type Read = Option<std::sync::Arc<[u8]>>;
    static READ: std::sync::Mutex<Option<std::collections::HashMap<PathBuf, Read>>> =
        std::sync::Mutex::new(None);
    let key = entry.join(rel);
    let remembered = |held: &mut Option<std::collections::HashMap<PathBuf, Read>>| {
        held.get_or_insert_with(Default::default).get(&key).cloned()
    };
    let mut held = READ
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(read) = remembered(&mut held) {
        return read;
    }
    drop(held);
    let read: Read = read_unlinked(entry, rel).ok().flatten().map(Into::into);
    READ.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .get_or_insert_with(Default::default)
        .insert(key, read.clone());
    read
}

/// Opens `path` for reading without following a symbolic link at its last component.
fn open_nofollow(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)
}

#[cfg(test)]
mod tests {
    use super::{Foreign, Path, PathBuf, Plan, Planned, foreign, is_component, move_aside};

    #[test]
    fn a_component_is_one_plain_name() {
        for good in ["review", "my skill", "v1.2.0", ".hidden", "é"] {
            assert!(is_component(good), "{good}");
        }
        for bad in [
            "", ".", "..", "a/b", "../x", "/abs", "a\\b", "-rf", "a\0b", "a\nb",
        ] {
            assert!(!is_component(bad), "{bad:?}");
        }
        assert!(!is_component(&"x".repeat(256)));
    }

    #[test]
    fn foreign_names_what_berth_did_not_write_and_refuses_escapes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        std::fs::create_dir_all(root.join("ext/mine")).expect("mkdir");
        std::fs::create_dir_all(root.join("ext/ours")).expect("mkdir");
        std::fs::write(root.join("ext/ours/.berth"), "").expect("mark");
        std::os::unix::fs::symlink("/elsewhere", root.join("linked")).expect("link");
        let mut plan = Plan {
            owned: vec![PathBuf::from("ext/mine"), PathBuf::from("ext/ours")],
            mark: Some(".berth"),
            ..Plan::default()
        };
        for rel in ["ext/mine/a", "ext/ours/a", "linked/settings.json", "new/b"] {
            plan.files
                .insert(PathBuf::from(rel), Planned::File(b"x".to_vec()));
        }
        assert_eq!(
            foreign(root, &plan).expect("foreign"),
            vec![
                Foreign {
                    path: PathBuf::from("ext/mine"),
                    what: "a folder berth did not write (it has no `.berth` mark)",
                },
                Foreign {
                    path: PathBuf::from("linked"),
                    what: "a symbolic link berth did not make, on the way to what it writes",
                },
            ]
        );
        let aside = move_aside(root, Path::new("ext/mine")).expect("move");
        assert_eq!(aside, PathBuf::from("ext/mine.berth-backup-1"));
        assert!(root.join("ext/mine.berth-backup-1").is_dir());

        plan.files
            .insert(PathBuf::from("ext/ours/../../x"), Planned::File(Vec::new()));
        assert!(foreign(root, &plan).is_err(), "a path with `..` is refused");
    }
}
