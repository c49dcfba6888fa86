//! What every import reads its records with: a client's folder, a bounded read of a
//! regular file (JSON, or a git reference), and the lines of the manifest it writes.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};
use berth_lockfile_schema::toml_string;
use serde_json::Value;

/// The largest record read (a conversation's `meta.json` holds its start request).
const MAX_RECORD_BYTES: u64 = 16 << 20;
/// The largest git reference file read (`HEAD`, a loose ref, `packed-refs`).
const MAX_REF_BYTES: u64 = 1 << 20;

/// A client's configuration folder: as given, else `$VARIABLE`, else `~/HOME_FOLDER`.
pub(super) fn client_dir(given: Option<&Path>, variable: &str, home_folder: &str) -> PathBuf {
    given.map(Path::to_path_buf).unwrap_or_else(|| {
        std::env::var_os(variable)
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(home_folder)))
            .unwrap_or_else(|| PathBuf::from(home_folder))
    })
}

/// A JSON record, bounded.
pub(super) fn read_json(path: &Path) -> Result<Value> {
    let bytes = read_regular(path, MAX_RECORD_BYTES)?;
    serde_json::from_slice(&bytes).with_context(|| format!("`{}` is not JSON", path.display()))
}

/// The bytes of the regular file at `path`, at most `limit`. Anything else (a link, a
/// device such as `/dev/zero`, a FIFO that would block for ever) is refused without being
/// read: its length says nothing of what reading it gives. The file is opened without
/// following a link and without blocking, checked again once open, and read one byte past
/// the limit, so a file that grows is refused too.
pub(super) fn read_regular(path: &Path, limit: u64) -> Result<Vec<u8>> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let shown = path.display();
    let not_regular = |what: &str| {
        anyhow::anyhow!(
            "`{shown}` is {what}, not a regular file, and berth reads only regular files here: replace it with the file itself"
        )
    };
    let kind = |meta: &std::fs::Metadata| {
        let t = meta.file_type();
        if t.is_symlink() {
            "a symbolic link"
        } else if t.is_dir() {
            "a folder"
        } else {
            "a device, FIFO or socket"
        }
    };
    let meta =
        std::fs::symlink_metadata(path).with_context(|| format!("could not read `{shown}`"))?;
    if !meta.is_file() {
        return Err(not_regular(kind(&meta)));
    }
    let flags = rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits() as i32)
        .open(path)
        .with_context(|| format!("could not read `{shown}`"))?;
    let opened = file
        .metadata()
        .with_context(|| format!("could not read `{shown}`"))?;
    if !opened.is_file() {
        return Err(not_regular(kind(&opened)));
    }
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("could not read `{shown}`"))?;
    if bytes.len() as u64 > limit {
        bail!("`{shown}` is more than {limit} bytes, more than a record berth reads");
    }
    Ok(bytes)
}

/// A string field of `value`, if any.
pub(super) fn text<'v>(value: &'v Value, key: &str) -> Option<&'v str> {
    value
        .get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

pub(super) fn field(out: &mut String, key: &str, value: &str) {
    out.push_str(&format!("{key} = {}\n", toml_string(value)));
}

pub(super) fn optional(out: &mut String, key: &str, value: Option<&str>) {
    if let Some(value) = value {
        field(out, key, value);
    }
}

/// The commit checked out in the git working copy `dir` (`.git/HEAD`, through a loose or
/// packed reference), or `None` when it is not one.
pub(super) fn head_commit(dir: &Path) -> Result<Option<String>> {
    let git = dir.join(".git");
    if !git.join("HEAD").is_file() {
        return Ok(None);
    }
    let read = |rel: &str| -> Result<String> {
        Ok(String::from_utf8_lossy(&read_regular(&git.join(rel), MAX_REF_BYTES)?).into_owned())
    };
    let head = read("HEAD")?;
    let Some(reference) = head.trim().strip_prefix("ref: ") else {
        return Ok(is_commit(head.trim()).then(|| head.trim().to_owned()));
    };
    if reference.contains("..") || !reference.starts_with("refs/") {
        return Ok(None);
    }
    if git.join(reference).is_file() {
        let commit = read(reference)?;
        return Ok(is_commit(commit.trim()).then(|| commit.trim().to_owned()));
    }
    if !git.join("packed-refs").is_file() {
        return Ok(None);
    }
    Ok(read("packed-refs")?.lines().find_map(|line| {
        let (commit, name) = line.split_once(' ')?;
        (name == reference && is_commit(commit)).then(|| commit.to_owned())
    }))
}

pub(super) fn is_commit(text: &str) -> bool {
    (text.len() == 40 || text.len() == 64) && text.bytes().all(|b| b.is_ascii_hexdigit())
}
