//! A harness layout as a plan of files, applied idempotently and checked for drift.

use std::collections::HashSet;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use berth_store::unpoisoned;

use super::plan::{Plan, Planned, SourceStat};

/// How many neighbouring paths one thread takes at a time: paths of one folder stay
/// together, and the threads still even out over a plan of one large folder.
const PATHS_PER_BLOCK: usize = 64;

/// `each` of every item on a few threads, [`PATHS_PER_BLOCK`] at a time, in order.
fn try_map<T: Sync, R: Send, E: Send>(
    items: &[T],
    each: impl Fn(&T) -> Result<R, E> + Sync,
) -> Result<Vec<R>, E> {
    berth_runtime::parallel::try_map(items, PATHS_PER_BLOCK, each)
}

/// What applying a plan did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Applied {
    /// Paths written or re-linked.
    pub written: Vec<PathBuf>,
    /// Paths already as planned.
    pub unchanged: usize,
    /// Files and links removed from owned folders (with the folders that held them).
    pub removed: Vec<PathBuf>,
}

/// The mode of a read-only copy of `source`: `0o555` when it is executable, else `0o444`.
fn copy_mode(source: &SourceStat) -> u32 {
    if source.executable { 0o555 } else { 0o444 }
}

/// Whether the file `found` is berth's copy of the store file `source`: its mode, size and
/// modification time (a copy gets its store file's), as rsync and make compare files. A
/// store file never changes (it is verified before the set is built); an edit of the copy
/// changes its time, or its mode first (a copy is read-only), unless the time is put back.
fn is_copy_of(found: &std::fs::Metadata, source: &SourceStat) -> bool {
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
    found.is_file()
        && found.permissions().mode() & 0o7777 == copy_mode(source)
        && found.len() == source.size
        && (found.mtime(), found.mtime_nsec()) == source.mtime
}

/// Copies the store file `source` to the new file `tmp`, read-only, with its time (the
/// kernel's `copy_file_range`: a reflink where the filesystem makes one; never a hard
/// link, which a `chmod` in the folder would reach back into the store through).
fn copy_read_only(source: &Path, tmp: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
    let nofollow = rustix::fs::OFlags::NOFOLLOW.bits() as i32;
    let mut from = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nofollow)
        .open(source)?;
    let meta = from.metadata()?;
    let mut to = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(tmp)?;
    std::io::copy(&mut from, &mut to)?;
    to.set_times(std::fs::FileTimes::new().set_modified(meta.modified()?))?;
    to.set_permissions(std::fs::Permissions::from_mode(copy_mode(&SourceStat::of(
        &meta,
    ))))
}

/// How a folder differs from its plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Drift {
    /// A planned path holds something else.
    Edited(PathBuf),
    /// A planned path is missing.
    Removed(PathBuf),
    /// A path in an owned folder is not in the plan.
    Added(PathBuf),
}

impl Drift {
    /// The same drift with its path under `dir`.
    #[must_use]
    pub fn under(&self, dir: &Path) -> Drift {
        match self {
            Drift::Edited(p) => Drift::Edited(dir.join(p)),
            Drift::Removed(p) => Drift::Removed(dir.join(p)),
            Drift::Added(p) => Drift::Added(dir.join(p)),
        }
    }
}

impl std::fmt::Display for Drift {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Drift::Edited(p) => write!(f, "edited: {}", p.display()),
            Drift::Removed(p) => write!(f, "removed: {}", p.display()),
            Drift::Added(p) => write!(f, "added: {}", p.display()),
        }
    }
}

/// `value` as pretty JSON with a final newline, as every target writes its JSON files.
pub(super) fn pretty(value: &serde_json::Value) -> Vec<u8> {
    let mut text = serde_json::to_vec_pretty(value).expect("JSON is always serialisable");
    text.push(b'\n');
    text
}

/// A stdio MCP server's fields as harness configurations spell them: `command`, then
/// `args`, `env` and `cwd` when it has them.
pub(super) fn stdio_fields(
    server: &berth_plugin::mcp::McpServer,
    out: &mut serde_json::Map<String, serde_json::Value>,
) {
    use serde_json::{Value, json};
    if let Some(command) = &server.command {
        out.insert("command".into(), json!(command));
    }
    if !server.args.is_empty() {
        out.insert("args".into(), json!(server.args));
    }
    if !server.env.is_empty() {
        out.insert("env".into(), Value::Object(server.env.clone()));
    }
    if let Some(cwd) = &server.cwd {
        out.insert("cwd".into(), json!(cwd));
    }
}

/// The strings of a manifest field that holds one path or a list of them (`"commands":
/// "./cmds"` or `["./a.md", "./b.md"]`); nothing for any other value.
pub(super) fn string_or_list(value: &serde_json::Value) -> Vec<String> {
    match value {
        serde_json::Value::String(one) => vec![one.clone()],
        serde_json::Value::Array(items) => items
            .iter()
            .filter_map(serde_json::Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    }
}

/// Every regular file under `dir` (relative to it), links skipped, never followed.
pub(super) fn regular_files(dir: &Path, rel: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir.join(rel))?.collect::<Result<_, _>>()?;
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        let kind = entry.file_type()?;
        let path = rel.join(entry.file_name());
        if kind.is_dir() {
            regular_files(dir, &path, out)?;
        } else if kind.is_file() {
            out.push(path);
        }
    }
    Ok(())
}

/// The folders under `root/parent` that a target wrote before: real folders holding its
/// `marker` file (links not followed), as paths relative to `root`, sorted.
pub(super) fn marked(root: &Path, parent: &Path, marker: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(root.join(parent)) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter(|e| std::fs::symlink_metadata(e.path().join(marker)).is_ok_and(|m| m.is_file()))
        .map(|e| parent.join(e.file_name()))
        .collect();
    out.sort();
    out
}

/// The set's plugins, one per name: the later of two with one name wins, as in the set's
/// merge, with a warning naming `harness`; a marketplace's standalone skill (an OpenHands
/// SDK registration's) is left out with a warning.
pub(super) fn one_per_name<'a>(
    set: &'a berth_runtime::set::PluginSet,
    harness: &str,
    warnings: &mut Vec<String>,
) -> Vec<&'a berth_runtime::set::PluginInfo> {
    let mut chosen: Vec<&berth_runtime::set::PluginInfo> = Vec::new();
    for info in &set.plugins {
        if info.locked.standalone_skill {
            warnings.push(format!(
                "standalone skill `{}` of marketplace `{}` is not written: it is the OpenHands SDK's (a registered marketplace's `auto_load`), and {harness} has no standalone skills",
                info.locked.name,
                info.locked.auto_load.as_deref().unwrap_or_default()
            ));
            continue;
        }
        if let Some(i) = chosen
            .iter()
            .position(|c| c.locked.name == info.locked.name)
        {
            warnings.push(format!(
                "plugin `{}` is locked twice; {harness} sees only the later one",
                info.locked.name
            ));
            chosen.remove(i);
        }
        chosen.push(info);
    }
    chosen
}

/// Whether `path` already is what `planned` says: a link's target, a file's bytes, a
/// copy's mode, size and time ([`is_copy_of`]) (a file berth writes keeps the mode it
/// has: `settings.json` may be the user's `0600`).
fn is_current(path: &Path, planned: &Planned) -> std::io::Result<Option<bool>> {
    if let Planned::Link(target) = planned {
        // One call: `readlink` of what is not a link fails with EINVAL.
        return match std::fs::read_link(path) {
            Ok(found) => Ok(Some(found == *target)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => Ok(Some(false)),
            Err(e) => Err(e),
        };
    }
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    Ok(Some(match planned {
        Planned::Link(_) => unreachable!("asked above"),
        Planned::File(bytes) => meta.file_type().is_file() && std::fs::read(path)? == *bytes,
        Planned::Json(value) => {
            meta.file_type().is_file()
                && serde_json::from_slice::<serde_json::Value>(&std::fs::read(path)?)
                    .is_ok_and(|found| found == *value)
        }
        Planned::Copy(source, known) => match known {
            Some(known) => is_copy_of(&meta, known),
            None => is_copy_of(&meta, &SourceStat::of(&std::fs::metadata(source)?)),
        },
    }))
}

/// Every path under `dir` (relative to `root`), folders included, deepest first.
fn walk(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let entries = match std::fs::read_dir(root.join(dir)) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let entry = entry?;
        let rel = dir.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            walk(root, &rel, out)?;
        }
        out.push(rel);
    }
    Ok(())
}

/// Every path in each of the plan's owned folders (relative to `root`), deepest first.
fn in_owned(root: &Path, plan: &Plan) -> std::io::Result<Vec<Vec<PathBuf>>> {
    try_map(&plan.owned, |owned| {
        let mut found = Vec::new();
        walk(root, owned, &mut found)?;
        Ok(found)
    })
}

/// Every planned path and every folder on the way to one.
fn planned_or_on_the_way(plan: &Plan) -> HashSet<&Path> {
    let mut out = HashSet::new();
    for path in plan.files.keys() {
        let mut at = Some(path.as_path());
        // Once a folder is in, so are the folders above it.
        while let Some(path) = at.filter(|p| !p.as_os_str().is_empty() && out.insert(*p)) {
            at = path.parent();
        }
    }
    out
}

/// How `root` differs from `plan`: planned paths edited or missing, and paths in owned
/// folders that the plan does not name.
pub fn check(root: &Path, plan: &Plan) -> std::io::Result<Vec<Drift>> {
    // A planned path that is not plain is refused here too: nothing outside is read.
    super::guard::all_plain(plan)?;
    let mut drift = Vec::new();
    let planned: Vec<_> = plan.files.iter().collect();
    let current = try_map(&planned, |(rel, planned)| {
        is_current(&root.join(rel), planned)
    })?;
    for ((rel, _), current) in planned.into_iter().zip(current) {
        match current {
            None => drift.push(Drift::Removed(rel.clone())),
            Some(false) => drift.push(Drift::Edited(rel.clone())),
            Some(true) => {}
        }
    }
    let wanted = planned_or_on_the_way(plan);
    for mut found in in_owned(root, plan)? {
        found.sort();
        for rel in found {
            if !wanted.contains(rel.as_path()) {
                drift.push(Drift::Added(rel));
            }
        }
    }
    Ok(drift)
}

/// Writes `bytes` to the new file `tmp` with the mode of the file `replaced` it will be
/// renamed over, when there is one (a `0600` settings file stays private).
fn write_keeping_mode(tmp: &Path, bytes: &[u8], replaced: &Path) -> std::io::Result<()> {
    let mut file = std::fs::File::create(tmp)?;
    file.write_all(bytes)?;
    if let Ok(meta) = std::fs::symlink_metadata(replaced)
        && meta.is_file()
    {
        file.set_permissions(meta.permissions())?;
    }
    file.sync_all()
}

/// Removes a link where a folder of `rel` now belongs (a plugin that was a link to its
/// store entry and is now a folder of links), so nothing is written through it into the
/// store.
fn unlink_ancestors(root: &Path, rel: &Path) -> std::io::Result<()> {
    let mut at = root.to_path_buf();
    let parts: Vec<_> = rel.components().collect();
    for part in parts.iter().take(parts.len().saturating_sub(1)) {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(meta) if meta.file_type().is_symlink() => match std::fs::remove_file(&at) {
                // Another thread of this run removed it.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                removed => removed?,
            },
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Writes the planned path `rel` (where something is, when `found`) beside its place and
/// renames it over. `ready` holds the folders this run already made ready (no link on the
/// way, created), which are not looked at again; two threads making one ready at once
/// is harmless.
fn write_one(
    root: &Path,
    rel: &Path,
    planned: &Planned,
    found: bool,
    ready: &Mutex<HashSet<PathBuf>>,
) -> std::io::Result<()> {
    let path = root.join(rel);
    let parent = path.parent().unwrap_or(root);
    if !unpoisoned(ready.lock()).contains(parent) {
        unlink_ancestors(root, rel)?;
        std::fs::create_dir_all(parent)?;
        unpoisoned(ready.lock()).insert(parent.to_path_buf());
    }
    let tmp = parent.join(format!(
        ".{}.berth-tmp",
        path.file_name().unwrap_or_default().to_string_lossy()
    ));
    let _ = std::fs::remove_file(&tmp);
    match planned {
        Planned::File(bytes) => write_keeping_mode(&tmp, bytes, &path)?,
        Planned::Json(value) => write_keeping_mode(&tmp, &pretty(value), &path)?,
        Planned::Link(target) => std::os::unix::fs::symlink(target, &tmp)?,
        Planned::Copy(source, _) => copy_read_only(source, &tmp)?,
    }
    // A folder where a file or link belongs is replaced (a link over a folder would
    // otherwise fail).
    if found && std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
        std::fs::remove_dir_all(&path)?;
    }
    std::fs::rename(&tmp, &path)
}

/// Makes `root` what `plan` says, touching only what differs: files are written beside
/// their place and renamed over it (keeping the mode of the file they replace), links
/// made beside and renamed, and what owned folders hold beyond the plan removed. Refuses,
/// writing nothing, while anything berth did not write is where the plan writes
/// ([`super::guard::foreign`]; the caller moves it aside or stops).
pub fn apply(root: &Path, plan: &Plan) -> std::io::Result<Applied> {
    let foreign = super::guard::foreign(root, plan)?;
    if let Some(first) = foreign.first() {
        return Err(std::io::Error::other(format!(
            "refusing to change what berth did not write: {first}"
        )));
    }
    let mut applied = Applied::default();
    let planned: Vec<_> = plan.files.iter().collect();
    let ready = Mutex::new(HashSet::new());
    let written = try_map(&planned, |(rel, planned)| {
        let found = is_current(&root.join(rel), planned)?;
        if found == Some(true) {
            return Ok(false);
        }
        write_one(root, rel, planned, found.is_some(), &ready)?;
        Ok::<_, std::io::Error>(true)
    })?;
    for ((rel, _), written) in planned.into_iter().zip(written) {
        if written {
            applied.written.push(rel.clone());
        } else {
            applied.unchanged += 1;
        }
    }
    let wanted = planned_or_on_the_way(plan);
    for (owned, found) in plan.owned.iter().zip(in_owned(root, plan)?) {
        for rel in found {
            if wanted.contains(rel.as_path()) {
                continue;
            }
            let path = root.join(&rel);
            match std::fs::symlink_metadata(&path) {
                // Its contents came first (the walk is deepest first) and were counted.
                Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(&path)?,
                Ok(_) => {
                    std::fs::remove_file(&path)?;
                    applied.removed.push(rel);
                }
                Err(_) => continue,
            }
        }
        // An owned folder the plan no longer writes into goes too (a plugin that left).
        let path = root.join(owned);
        if !wanted.contains(owned.as_path())
            && std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir())
        {
            std::fs::remove_dir_all(&path)?;
        }
    }
    Ok(applied)
}

#[cfg(test)]
mod tests {
    use super::{Drift, PathBuf, Plan, Planned, apply, check};

    fn plan() -> Plan {
        let mut plan = Plan::default();
        plan.files
            .insert(PathBuf::from("a/x.json"), Planned::File(b"{}\n".to_vec()));
        plan.files.insert(
            PathBuf::from("a/owned/link"),
            Planned::Link(PathBuf::from("/nonexistent/target")),
        );
        plan.owned.push(PathBuf::from("a/owned"));
        plan
    }

    #[test]
    fn applying_twice_writes_once_and_check_finds_each_kind_of_drift() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        let plan = plan();
        assert_eq!(check(root, &plan).expect("check").len(), 2);
        let first = apply(root, &plan).expect("apply");
        assert_eq!(first.written.len(), 2);
        let second = apply(root, &plan).expect("apply");
        assert_eq!((second.written.len(), second.unchanged), (0, 2));
        assert!(check(root, &plan).expect("check").is_empty());

        std::fs::write(root.join("a/x.json"), "{\"edited\": 1}\n").expect("edit");
        std::fs::write(root.join("a/owned/extra"), "x").expect("add");
        std::fs::remove_file(root.join("a/owned/link")).expect("remove");
        let drift = check(root, &plan).expect("check");
        assert_eq!(
            drift,
            vec![
                Drift::Removed(PathBuf::from("a/owned/link")),
                Drift::Edited(PathBuf::from("a/x.json")),
                Drift::Added(PathBuf::from("a/owned/extra")),
            ]
        );
        let repaired = apply(root, &plan).expect("apply");
        assert_eq!(repaired.removed, vec![PathBuf::from("a/owned/extra")]);
        assert!(check(root, &plan).expect("check").is_empty());
    }
}
