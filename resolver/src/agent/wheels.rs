//! The agent package's wheels: downloaded and checked against the lock, kept in the
//! store, synced and verified; what a wheel says about itself.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use berth_lockfile_schema::{
    AGENT_ENTRY_POINT_GROUP, AgentOrigin, AgentRequest, EntryPoint, LockedAgent, LockedWheel,
    PluginRequest, WheelFile,
};
use berth_store::Staging;
use berth_uv::Uv;

use crate::context::{Env, Event, LocalCheck};
use crate::error::{AgentLockError, ResolveError, WheelProblem};
use crate::sources::{ArchiveUrl, download, sync_entry};
use berth_transport::extract::ArchiveFormat;

use super::{AgentVerifyOutcome, AgentVerifyStatus, Index, WheelMeta, build_wheel, index};

/// Downloads a locked wheel into the store, checking its sha256; returns its path.
pub(crate) fn download_wheel(
    env: &Env<'_>,
    wheel: &LockedWheel,
    index: &Index,
) -> Result<PathBuf, ResolveError> {
    let (staging, _, _) = fetch_wheel(env, wheel, index)?;
    store_wheel(
        env,
        staging,
        wheel,
        wheel.url.as_deref().unwrap_or_default(),
    )
}

/// Adds the wheel staged as `<staging>/<file>` if it hashes to the lock's sha256; a
/// mismatch names where the bytes came `from`.
pub(crate) fn store_wheel(
    env: &Env<'_>,
    staging: Staging,
    wheel: &LockedWheel,
    from: &str,
) -> Result<PathBuf, ResolveError> {
    env.store
        .add_wheel(staging, &wheel.file, &wheel.sha256)?
        .map_err(|m| ResolveError::WheelMismatch {
            file: m.file,
            url: from.to_owned(),
            expected: m.expected,
            actual: m.actual,
        })
}

/// Downloads a wheel into a new staging folder as `<staging>/<file>`, with the sha256
/// (hex) of its bytes.
pub(crate) fn fetch_wheel(
    env: &Env<'_>,
    wheel: &LockedWheel,
    index: &Index,
) -> Result<(Staging, PathBuf, String), ResolveError> {
    let shown = wheel.url.clone().unwrap_or_default();
    env.settings
        .require_network(|| format!("wheel `{}` (`{shown}`)", wheel.file))?;
    let source = ArchiveUrl {
        url: index.url.for_file_on_index(&shown),
        format: ArchiveFormat::Zip,
        credential: None,
    };
    let (staging, file, sha256) = download(env, &source)?;
    let path = staging.path().join(&wheel.file);
    fs_err::rename(&file, &path)?;
    Ok((staging, path, sha256.to_hex()))
}

/// Puts a wheel berth built at `path` into the store.
pub(crate) fn keep_wheel(
    env: &Env<'_>,
    path: &Path,
    wheel: &LockedWheel,
) -> Result<(), ResolveError> {
    let staging = env.store.stage()?;
    fs_err::copy(path, staging.path().join(&wheel.file))?;
    store_wheel(env, staging, wheel, "built by berth")?;
    Ok(())
}

/// Makes the locked agent's tree and wheels present in the store, verified.
pub(crate) fn sync_agent(
    env: &Env<'_>,
    agent: &LockedAgent,
    request: Option<&AgentRequest>,
    added: &AtomicUsize,
) -> Result<(), ResolveError> {
    let tree_request: Option<&PluginRequest> = request.and_then(|r| match r.origin() {
        AgentOrigin::Tree(p) => Some(&**p),
        AgentOrigin::Index { .. } => None,
    });
    let tree_entry = match &agent.tree {
        Some(tree) => Some(sync_entry(
            env,
            tree,
            tree_request,
            LocalCheck::TrustStore,
            added,
        )?),
        None => None,
    };
    let missing: Vec<&LockedWheel> = agent
        .wheels
        .iter()
        .filter(|w| env.store.wheel(&w.sha256, &w.file).is_none())
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let index = index(env)?;
    for wheel in missing {
        // One process fetches a wheel; others wait and then find it present.
        let _guard = env.store.lock(&format!("wheel-{}", wheel.sha256), || {
            env.reporter.status(
                "Waiting",
                &format!("for another berth adding `{}`", wheel.file),
            );
        })?;
        if env.store.wheel(&wheel.sha256, &wheel.file).is_some() {
            continue;
        }
        match (&wheel.url, &tree_entry) {
            (Some(_), _) => {
                download_wheel(env, wheel, &index)?;
            }
            (None, Some(entry)) => {
                let uv = Uv::find()?;
                let python = uv.find_python(Some(&agent.python_version))?;
                let work = env.store.stage()?;
                let built = build_wheel(env, &uv, &python, &index, &entry.path, work.path())?;
                let sha256 = berth_store::sha256_file(&built)?;
                if sha256 != wheel.sha256 || file_of_path(&built) != wheel.file.as_str() {
                    return Err(ResolveError::WheelMismatch {
                        file: wheel.file.to_string(),
                        url: format!(
                            "rebuilt from the locked source tree as `{}`; its build backend does not build reproducibly, so copy the store from the machine that locked it, or publish the wheel to an index",
                            file_of_path(&built)
                        ),
                        expected: wheel.sha256.clone(),
                        actual: sha256,
                    });
                }
                keep_wheel(env, &built, wheel)?;
            }
            (None, None) => {
                unreachable!("a built wheel belongs to a tree source (checked by the lock parser)")
            }
        }
        added.fetch_add(1, Ordering::Relaxed);
        env.reporter
            .status("Added", &format!("wheel {}", wheel.file));
        env.reporter.event(Event::WheelAdded);
    }
    Ok(())
}

/// Fetches the agent's source tree and every downloadable wheel afresh, bypassing the
/// store, and compares each with the lock.
pub(crate) fn verify_agent(
    env: &Env<'_>,
    agent: &LockedAgent,
    request: Option<&AgentRequest>,
) -> Vec<AgentVerifyOutcome> {
    let mut out = Vec::new();
    if let Some(tree) = &agent.tree {
        let tree_request = request.and_then(|r| match r.origin() {
            AgentOrigin::Tree(p) => Some(&**p),
            AgentOrigin::Index { .. } => None,
        });
        let fresh = crate::sources::kind_of(&tree.pin).load(env, tree, tree_request);
        let status = match fresh.fresh_hash() {
            Ok(h) if h == tree.hash => AgentVerifyStatus::Ok,
            Ok(h) => AgentVerifyStatus::Mismatch { actual: h.to_sri() },
            Err(e) => AgentVerifyStatus::Failed(e),
        };
        out.push(AgentVerifyOutcome {
            what: "source tree".into(),
            expected: tree.hash.to_sri(),
            status,
        });
    }
    let index = match index(env) {
        Ok(index) => index,
        Err(e) => {
            out.push(AgentVerifyOutcome {
                what: "index".into(),
                expected: String::new(),
                status: AgentVerifyStatus::Failed(std::sync::Arc::new(e)),
            });
            return out;
        }
    };
    for wheel in agent.wheels.iter().filter(|w| w.url.is_some()) {
        let status = match fetch_wheel(env, wheel, &index) {
            Ok((_, _, actual)) if actual == wheel.sha256 => AgentVerifyStatus::Ok,
            Ok((_, _, actual)) => AgentVerifyStatus::Mismatch { actual },
            Err(e) => AgentVerifyStatus::Failed(std::sync::Arc::new(e)),
        };
        out.push(AgentVerifyOutcome {
            what: format!("wheel {}", wheel.file),
            expected: wheel.sha256.clone(),
            status,
        });
    }
    out
}

/// Reads `Name`, `Version`, the `openhands.agents` entry points and the console scripts of
/// a wheel.
pub(crate) fn read_wheel_meta(path: &Path) -> Result<WheelMeta, ResolveError> {
    let bad = |problem: WheelProblem| {
        ResolveError::from(AgentLockError::Wheel {
            file: file_of_path(path),
            problem,
        })
    };
    let file = fs_err::File::open(path)?;
    let mut zip = zip::ZipArchive::new(file).map_err(|e| bad(WheelProblem::NotZip(e)))?;
    let mut metadata = None;
    let mut entry_points = None;
    for i in 0..zip.len() {
        let mut entry = zip.by_index(i).map_err(|e| bad(WheelProblem::Zip(e)))?;
        let name = entry
            .name()
            .map_err(|e| bad(WheelProblem::Zip(e)))?
            .into_owned();
        let Some((dir, file)) = name.split_once('/') else {
            continue;
        };
        if !dir.ends_with(".dist-info") || file.contains('/') {
            continue;
        }
        if file == "METADATA" || file == "entry_points.txt" {
            if entry.size() > 4 << 20 {
                return Err(bad(WheelProblem::TooLarge(name)));
            }
            let mut text = String::new();
            entry.read_to_string(&mut text).map_err(|source| {
                bad(WheelProblem::Read {
                    entry: name.clone(),
                    source,
                })
            })?;
            if file == "METADATA" {
                metadata = Some(text);
            } else {
                entry_points = Some(text);
            }
        }
    }
    let metadata = metadata.ok_or_else(|| bad(WheelProblem::NoMetadata))?;
    let header = |key: &str| {
        metadata
            .lines()
            .take_while(|l| !l.is_empty())
            .find_map(|l| l.strip_prefix(key).map(|v| v.trim().to_owned()))
    };
    let name = header("Name:").ok_or_else(|| bad(WheelProblem::NoHeader("Name")))?;
    let version = header("Version:").ok_or_else(|| bad(WheelProblem::NoHeader("Version")))?;
    let text = entry_points.unwrap_or_default();
    Ok(WheelMeta {
        name,
        version,
        entry_points: entry_points_of(&text, AGENT_ENTRY_POINT_GROUP),
        scripts: entry_points_of(&text, "console_scripts"),
    })
}

/// The entry points of `group` in an `entry_points.txt`.
pub(crate) fn entry_points_of(text: &str, group: &str) -> Vec<EntryPoint> {
    let mut in_group = false;
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with(['#', ';']) {
            continue;
        }
        if let Some(section) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            in_group = section.trim() == group;
            continue;
        }
        if in_group && let Some(ep) = EntryPoint::parse(line) {
            out.push(ep);
        }
    }
    out
}

/// The wheel's file name: the URL's last path segment, percent-decoded (`1.0%2Blocal`).
pub(crate) fn file_of_url(url: &str) -> String {
    let path = url.split(['#', '?']).next().unwrap_or(url);
    let segment = path.rsplit('/').next().unwrap_or(path).as_bytes();
    let mut out = Vec::with_capacity(segment.len());
    let mut i = 0;
    while i < segment.len() {
        let hex = segment
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (segment[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

pub(crate) fn file_of_path(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The file name of a wheel berth built, checked.
pub(crate) fn wheel_file_of_path(path: &Path) -> Result<WheelFile, ResolveError> {
    let file = file_of_path(path);
    WheelFile::parse(&file).ok_or_else(|| AgentLockError::WheelName { file }.into())
}

pub(crate) fn make_writable(root: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    for entry in fs_err::read_dir(root)? {
        let entry = entry?;
        let meta = fs_err::symlink_metadata(entry.path())?;
        if meta.is_dir() {
            fs_err::set_permissions(entry.path(), std::fs::Permissions::from_mode(0o755))?;
            make_writable(&entry.path())?;
        } else if meta.is_file() {
            let mode = meta.permissions().mode() | 0o200;
            fs_err::set_permissions(entry.path(), std::fs::Permissions::from_mode(mode))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_points_are_read_from_their_group_only() {
        let text = "[console_scripts]\nx = a:b\n\n[openhands.agents]\nmy-agent = my_agent.agent:create\n# note\nother = my_agent:other\n";
        let eps = entry_points_of(text, AGENT_ENTRY_POINT_GROUP);
        assert_eq!(
            eps.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["my-agent = my_agent.agent:create", "other = my_agent:other"]
        );
    }

    #[test]
    fn wheel_files_from_urls() {
        assert_eq!(
            file_of_url("http://h/files/a-1-py3-none-any.whl#sha256=00"),
            "a-1-py3-none-any.whl"
        );
        assert_eq!(
            file_of_url("https://h/a-1.0%2Blocal-py3-none-any.whl"),
            "a-1.0+local-py3-none-any.whl"
        );
    }
}
