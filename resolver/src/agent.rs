//! The custom agent package (SPEC section 8): lock it with uv, fill the store with its
//! wheels, verify them afresh.
//!
//! Resolution is uv's (`uv pip compile --format pylock.toml --only-binary :all:`); berth
//! only reads the result. A git or archive source is pinned like a plugin (its tree is a
//! store entry) and built once into a wheel with `uv build` and a fixed
//! `SOURCE_DATE_EPOCH`; a store that lacks that wheel rebuilds it from the locked tree and
//! checks it against the locked sha256.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use berth_lockfile_schema::{
    AGENT_ENTRY_POINT_GROUP, AgentOrigin, AgentRequest, EntryPoint, LockedAgent, LockedPlugin,
    LockedWheel, PluginRequest, normalize_package_name, redact,
};
use berth_store::Staging;
use berth_uv::{Python, Uv};
use serde::Deserialize;

use crate::Network;
use crate::archive::ArchiveSource;
use crate::error::ResolveError;
use crate::extract::ArchiveFormat;
use crate::ops::{Ctx, LocalCheck};
use crate::url::SourceUrl;

/// The package index used when neither `--index-url` nor `BERTH_INDEX_URL` says otherwise.
pub const DEFAULT_INDEX_URL: &str = "https://pypi.org/simple";

/// The time stamp every built wheel carries (1980-01-01, the earliest a zip can hold), so
/// that building the same tree again gives the same bytes.
pub const SOURCE_DATE_EPOCH: &str = "315532800";

/// The index, as uv is given it and as berth shows it.
struct Index {
    url: SourceUrl,
}

/// What a wheel says about itself.
#[derive(Debug, Clone)]
pub(crate) struct WheelMeta {
    pub name: String,
    pub version: String,
    pub entry_points: Vec<EntryPoint>,
}

#[derive(Deserialize)]
struct Pylock {
    #[serde(default)]
    packages: Vec<PylockPackage>,
}

#[derive(Deserialize)]
struct PylockPackage {
    name: String,
    version: Option<String>,
    #[serde(default)]
    wheels: Vec<PylockWheel>,
}

#[derive(Deserialize)]
struct PylockWheel {
    url: Option<String>,
    name: Option<String>,
    #[serde(default)]
    hashes: BTreeMap<String, String>,
}

/// Which packages are being verified, and how each fared.
#[derive(Debug)]
pub struct AgentVerifyOutcome {
    /// `wheel agent_helper-0.3.0-py3-none-any.whl` or `source tree`.
    pub what: String,
    /// What the lock says (hex sha256 for wheels, SRI for the tree).
    pub expected: String,
    /// What was found.
    pub status: AgentVerifyStatus,
}

/// Whether one artifact of the agent matches the lock.
#[derive(Debug)]
pub enum AgentVerifyStatus {
    /// It hashes to the lock.
    Ok,
    /// It hashes to something else.
    Mismatch {
        /// What it hashes to.
        actual: String,
    },
    /// It could not be fetched or hashed.
    Failed(ResolveError),
}

fn agent_error(message: String) -> ResolveError {
    ResolveError::Agent(message)
}

impl Ctx<'_> {
    fn index(&self) -> Result<Index, ResolveError> {
        let raw = self.settings.index_url.trim_end_matches('/').to_owned();
        let url = SourceUrl::new(&raw)?;
        // The same rule as plugin sources: a password goes over plain http only to this
        // machine.
        crate::url::refuse_plain_http_password(&url)?;
        Ok(Index { url })
    }

    /// Resolves `[agent]` into a locked package, entry point and wheel closure.
    pub(crate) fn lock_agent(&self, request: &AgentRequest) -> Result<LockedAgent, ResolveError> {
        self.require_network(|| format!("the agent package `{}`", request.display_source()))?;
        let uv = Uv::find()?;
        let python = uv.find_python(request.python.as_deref())?;
        let index = self.index()?;
        if redact(&self.settings.index_url).removed_secret {
            self.reporter.warn(&format!(
                "the index URL `{}` has a credential written in it; it is left out of everything berth writes and prints. Put it in an environment variable and write `${{VAR}}` instead",
                index.url.shown
            ));
        }
        let work = self.store.stage()?;
        let shown_source = request.display_source();
        self.reporter.status(
            "Resolving",
            &format!("agent `{shown_source}` with uv (Python {})", python.version),
        );
        let mut built: Option<(LockedPlugin, PathBuf, WheelMeta)> = None;
        let (package, requirement) = match request.origin() {
            AgentOrigin::Index { package } => (package.clone(), request.source.trim().to_owned()),
            AgentOrigin::Tree(tree_request) => {
                let tree = self.lock_new(tree_request)?;
                let staging = self.stage_tree(&tree, Some(tree_request))?;
                let wheel = self.build_wheel(&uv, &python, &index, staging.path(), work.path())?;
                let meta = read_wheel_meta(&wheel)?;
                let package = normalize_package_name(&meta.name);
                let requirement = format!("{package} @ file://{}", wheel.display());
                built = Some((tree, wheel, meta));
                (package, requirement)
            }
        };
        let packages = self.compile(&uv, &python, &index, &requirement, work.path())?;
        let mut wheels = Vec::new();
        let mut version = None;
        for p in packages {
            let name = normalize_package_name(&p.name);
            if name == package {
                version = p.version.clone();
                if built.is_some() {
                    continue; // berth's own build, added below
                }
            }
            let pkg_version = p.version.clone().unwrap_or_default();
            if p.wheels.is_empty() {
                return Err(agent_error(format!(
                    "`{name}` {pkg_version} has no wheel for Python {} on this platform; berth installs wheels only",
                    python.minor_version()
                )));
            }
            for w in p.wheels {
                let url = w.url.ok_or_else(|| {
                    agent_error(format!("uv gave no URL for a wheel of `{name}`"))
                })?;
                let sha256 = w.hashes.get("sha256").cloned().ok_or_else(|| {
                    agent_error(format!(
                        "the index gave no sha256 for `{}`; berth locks wheels by their hash",
                        redact(&url).text
                    ))
                })?;
                let file = w
                    .name
                    .unwrap_or_else(|| file_of_url(&url))
                    .trim()
                    .to_owned();
                wheels.push(LockedWheel {
                    name: name.clone(),
                    version: pkg_version.clone(),
                    file,
                    url: Some(redact(&url).text),
                    sha256: sha256.to_ascii_lowercase(),
                });
            }
        }
        let (entry_point, tree, version) = match built {
            Some((mut tree, wheel, meta)) => {
                let entry_point = choose_entry_point(&package, &meta.entry_points, request)?;
                let own = LockedWheel {
                    name: package.clone(),
                    version: meta.version.clone(),
                    file: file_of_path(&wheel),
                    url: None,
                    sha256: berth_store::sha256_file(&wheel)?,
                };
                self.keep_wheel(&wheel, &own)?;
                wheels.push(own);
                tree.name = package.clone();
                (entry_point, Some(tree), meta.version)
            }
            None => {
                let own = wheels
                    .iter()
                    .find(|w| w.name == package)
                    .cloned()
                    .ok_or_else(|| {
                        agent_error(format!(
                            "uv's resolution of `{shown_source}` does not hold `{package}` itself"
                        ))
                    })?;
                let meta = match self.store.wheel(&own.sha256, &own.file) {
                    Some(stored) => read_wheel_meta(&stored)?,
                    None => {
                        // Read before it is stored: a package that is no agent leaves
                        // nothing behind.
                        let (staging, path, _) = self.fetch_wheel(&own, &index)?;
                        let meta = read_wheel_meta(&path)?;
                        choose_entry_point(&package, &meta.entry_points, request)?;
                        self.store_wheel(staging, &own, own.url.as_deref().unwrap_or_default())?;
                        meta
                    }
                };
                let entry_point = choose_entry_point(&package, &meta.entry_points, request)?;
                (entry_point, None, version.unwrap_or(meta.version))
            }
        };
        wheels.sort_by(|a, b| (&a.name, &a.file).cmp(&(&b.name, &b.file)));
        self.reporter.status(
            "Locked",
            &format!(
                "agent `{package}` {version} ({entry_point}), {} wheel(s)",
                wheels.len()
            ),
        );
        Ok(LockedAgent {
            source: shown_source,
            git_ref: request.git_ref.clone(),
            python: request.python.clone(),
            package,
            version,
            entry_point,
            python_version: python.minor_version(),
            tree,
            wheels,
        })
    }

    /// `uv build --wheel` of a source tree (copied first: builders write into it).
    fn build_wheel(
        &self,
        uv: &Uv,
        python: &Python,
        index: &Index,
        tree: &Path,
        work: &Path,
    ) -> Result<PathBuf, ResolveError> {
        let src = work.join("src");
        let out = work.join("dist");
        let _ = berth_store::remove_tree(&src);
        let _ = berth_store::remove_tree(&out);
        berth_store::copy_tree(tree, &src, berth_store::Exclude::NOTHING)?;
        make_writable(&src)?;
        self.reporter
            .status("Building", "the agent package's wheel with `uv build`");
        let mut cmd = uv.command();
        cmd.args(["build", "--wheel", "--quiet", "--no-create-gitignore"])
            .arg("--python")
            .arg(&python.path)
            .arg("--index-url")
            .arg(&index.url.fetch)
            .arg("--out-dir")
            .arg(&out)
            .arg(&src)
            .env("SOURCE_DATE_EPOCH", SOURCE_DATE_EPOCH);
        if self.settings.network == Network::Offline {
            cmd.arg("--offline");
        }
        uv.run(&mut cmd, "building the agent package with `uv build`")
            .map_err(|e| agent_error(index.url.scrub(&e.to_string())))?;
        let wheels: Vec<PathBuf> = fs_err::read_dir(&out)?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "whl"))
            .collect();
        match wheels.as_slice() {
            [one] => Ok(one.clone()),
            _ => Err(agent_error(format!(
                "`uv build --wheel` made {} wheels, expected one",
                wheels.len()
            ))),
        }
    }

    /// `uv pip compile` of one requirement into pylock packages.
    fn compile(
        &self,
        uv: &Uv,
        python: &Python,
        index: &Index,
        requirement: &str,
        work: &Path,
    ) -> Result<Vec<PylockPackage>, ResolveError> {
        let input = work.join("requirements.in");
        let output = work.join("pylock.toml");
        fs_err::write(&input, format!("{requirement}\n"))?;
        let mut cmd = uv.command();
        cmd.args([
            "pip",
            "compile",
            "--quiet",
            "--no-header",
            "--format",
            "pylock.toml",
        ])
        .args(["--only-binary", ":all:"])
        .arg("--python")
        .arg(&python.path)
        .arg("--index-url")
        .arg(&index.url.fetch)
        .arg("--output-file")
        .arg(&output)
        .arg(&input);
        let shown = redact(requirement).text;
        let shown = if shown.contains(" @ file://") {
            shown.split(" @ ").next().unwrap_or_default().to_owned()
        } else {
            shown
        };
        uv.run(
            &mut cmd,
            &format!("resolving `{shown}` against `{}` with uv", index.url.shown),
        )
        .map_err(|e| {
            let message = index.url.scrub(&e.to_string());
            // The index could not be reached (an upstream failure, 502 in the server), as
            // opposed to a resolution that has no answer (no such version: 422).
            if message.contains("Failed to fetch") || message.contains("Request failed after") {
                ResolveError::Fetch {
                    url: index.url.shown.clone(),
                    message,
                }
            } else {
                agent_error(message)
            }
        })?;
        let text = fs_err::read_to_string(&output)?;
        let lock: Pylock = toml::from_str(&text)
            .map_err(|e| agent_error(format!("uv wrote a pylock.toml berth cannot read: {e}")))?;
        Ok(lock.packages)
    }

    /// Downloads a locked wheel into the store, checking its sha256; returns its path.
    fn download_wheel(&self, wheel: &LockedWheel, index: &Index) -> Result<PathBuf, ResolveError> {
        let (staging, _, _) = self.fetch_wheel(wheel, index)?;
        self.store_wheel(staging, wheel, wheel.url.as_deref().unwrap_or_default())
    }

    /// Adds the wheel staged as `<staging>/<file>` if it hashes to the lock's sha256; a
    /// mismatch names where the bytes came `from`.
    fn store_wheel(
        &self,
        staging: Staging,
        wheel: &LockedWheel,
        from: &str,
    ) -> Result<PathBuf, ResolveError> {
        self.store
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
    fn fetch_wheel(
        &self,
        wheel: &LockedWheel,
        index: &Index,
    ) -> Result<(Staging, PathBuf, String), ResolveError> {
        let shown = wheel.url.clone().unwrap_or_default();
        self.require_network(|| format!("wheel `{}` (`{shown}`)", wheel.file))?;
        let source = ArchiveSource {
            url: index.url.for_file_on_index(&shown),
            format: ArchiveFormat::Zip,
        };
        let (staging, file, sha256) = self.download(&source)?;
        let path = staging.path().join(&wheel.file);
        fs_err::rename(&file, &path)?;
        Ok((staging, path, sha256.to_hex()))
    }

    /// Puts a wheel berth built at `path` into the store.
    fn keep_wheel(&self, path: &Path, wheel: &LockedWheel) -> Result<(), ResolveError> {
        let staging = self.store.stage()?;
        fs_err::copy(path, staging.path().join(&wheel.file))?;
        self.store_wheel(staging, wheel, "built by berth")?;
        Ok(())
    }

    /// Makes the locked agent's tree and wheels present in the store, verified.
    pub(crate) fn sync_agent(
        &self,
        agent: &LockedAgent,
        request: Option<&AgentRequest>,
        added: &AtomicUsize,
    ) -> Result<(), ResolveError> {
        let tree_request: Option<&PluginRequest> = request.and_then(|r| match r.origin() {
            AgentOrigin::Tree(p) => Some(&**p),
            AgentOrigin::Index { .. } => None,
        });
        let tree_entry = match &agent.tree {
            Some(tree) => Some(self.sync_one(tree, tree_request, LocalCheck::TrustStore, added)?),
            None => None,
        };
        let missing: Vec<&LockedWheel> = agent
            .wheels
            .iter()
            .filter(|w| self.store.wheel(&w.sha256, &w.file).is_none())
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        let index = self.index()?;
        for wheel in missing {
            // One process fetches a wheel; others wait and then find it present.
            let _guard = self.store.lock(&format!("wheel-{}", wheel.sha256), || {
                self.reporter.status(
                    "Waiting",
                    &format!("for another berth adding `{}`", wheel.file),
                );
            })?;
            if self.store.wheel(&wheel.sha256, &wheel.file).is_some() {
                continue;
            }
            match (&wheel.url, &tree_entry) {
                (Some(_), _) => {
                    self.download_wheel(wheel, &index)?;
                }
                (None, Some(entry)) => {
                    let uv = Uv::find()?;
                    let python = uv.find_python(Some(&agent.python_version))?;
                    let work = self.store.stage()?;
                    let built = self.build_wheel(&uv, &python, &index, &entry.path, work.path())?;
                    let sha256 = berth_store::sha256_file(&built)?;
                    if sha256 != wheel.sha256 || file_of_path(&built) != wheel.file {
                        return Err(ResolveError::WheelMismatch {
                            file: wheel.file.clone(),
                            url: format!(
                                "rebuilt from the locked source tree as `{}`; its build backend does not build reproducibly, so copy the store from the machine that locked it, or publish the wheel to an index",
                                file_of_path(&built)
                            ),
                            expected: wheel.sha256.clone(),
                            actual: sha256,
                        });
                    }
                    self.keep_wheel(&built, wheel)?;
                }
                (None, None) => unreachable!(
                    "a built wheel belongs to a tree source (checked by the lock parser)"
                ),
            }
            added.fetch_add(1, Ordering::Relaxed);
            self.reporter
                .status("Added", &format!("wheel {}", wheel.file));
        }
        Ok(())
    }

    /// Fetches the agent's source tree and every downloadable wheel afresh, bypassing the
    /// store, and compares each with the lock.
    pub(crate) fn verify_agent(
        &self,
        agent: &LockedAgent,
        request: Option<&AgentRequest>,
    ) -> Vec<AgentVerifyOutcome> {
        let mut out = Vec::new();
        if let Some(tree) = &agent.tree {
            let tree_request = request.and_then(|r| match r.origin() {
                AgentOrigin::Tree(p) => Some(&**p),
                AgentOrigin::Index { .. } => None,
            });
            let status = match self.fresh_hash(tree, tree_request) {
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
        let index = match self.index() {
            Ok(index) => index,
            Err(e) => {
                out.push(AgentVerifyOutcome {
                    what: "index".into(),
                    expected: String::new(),
                    status: AgentVerifyStatus::Failed(e),
                });
                return out;
            }
        };
        for wheel in agent.wheels.iter().filter(|w| w.url.is_some()) {
            let status = match self.fetch_wheel(wheel, &index) {
                Ok((_, _, actual)) if actual == wheel.sha256 => AgentVerifyStatus::Ok,
                Ok((_, _, actual)) => AgentVerifyStatus::Mismatch { actual },
                Err(e) => AgentVerifyStatus::Failed(e),
            };
            out.push(AgentVerifyOutcome {
                what: format!("wheel {}", wheel.file),
                expected: wheel.sha256.clone(),
                status,
            });
        }
        out
    }
}

fn choose_entry_point(
    package: &str,
    offered: &[EntryPoint],
    request: &AgentRequest,
) -> Result<EntryPoint, ResolveError> {
    let names = || {
        offered
            .iter()
            .map(|e| format!("`{}`", e.name))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match (&request.entry_point, offered) {
        (_, []) => Err(agent_error(format!(
            "package `{package}` has no `{AGENT_ENTRY_POINT_GROUP}` entry point, so it is not an agent package; it must declare one (`[project.entry-points.\"{AGENT_ENTRY_POINT_GROUP}\"]` in its pyproject.toml)"
        ))),
        (Some(wanted), _) => offered
            .iter()
            .find(|e| &e.name == wanted)
            .cloned()
            .ok_or_else(|| {
                agent_error(format!(
                    "package `{package}` has no `{AGENT_ENTRY_POINT_GROUP}` entry point named `{wanted}`; it offers {}",
                    names()
                ))
            }),
        (None, [one]) => Ok(one.clone()),
        (None, _) => Err(agent_error(format!(
            "package `{package}` offers several `{AGENT_ENTRY_POINT_GROUP}` entry points ({}); choose one with `entry_point` in `[agent]`",
            names()
        ))),
    }
}

/// Reads `Name`, `Version` and the `openhands.agents` entry points of a wheel.
pub(crate) fn read_wheel_meta(path: &Path) -> Result<WheelMeta, ResolveError> {
    let bad = |why: String| agent_error(format!("wheel `{}`: {why}", file_of_path(path)));
    let file = fs_err::File::open(path)?;
    let mut zip = zip::ZipArchive::new(file).map_err(|e| bad(format!("not a zip file ({e})")))?;
    let mut metadata = None;
    let mut entry_points = None;
    for i in 0..zip.len() {
        let mut entry = zip.by_index(i).map_err(|e| bad(e.to_string()))?;
        let name = entry.name().map_err(|e| bad(e.to_string()))?.into_owned();
        let Some((dir, file)) = name.split_once('/') else {
            continue;
        };
        if !dir.ends_with(".dist-info") || file.contains('/') {
            continue;
        }
        if file == "METADATA" || file == "entry_points.txt" {
            if entry.size() > 4 << 20 {
                return Err(bad(format!("`{name}` is too large")));
            }
            let mut text = String::new();
            entry
                .read_to_string(&mut text)
                .map_err(|e| bad(format!("`{name}`: {e}")))?;
            if file == "METADATA" {
                metadata = Some(text);
            } else {
                entry_points = Some(text);
            }
        }
    }
    let metadata = metadata.ok_or_else(|| bad("no `*.dist-info/METADATA`".into()))?;
    let header = |key: &str| {
        metadata
            .lines()
            .take_while(|l| !l.is_empty())
            .find_map(|l| l.strip_prefix(key).map(|v| v.trim().to_owned()))
    };
    let name = header("Name:").ok_or_else(|| bad("METADATA has no `Name`".into()))?;
    let version = header("Version:").ok_or_else(|| bad("METADATA has no `Version`".into()))?;
    let entry_points = entry_points
        .map(|text| entry_points_of(&text, AGENT_ENTRY_POINT_GROUP))
        .unwrap_or_default();
    Ok(WheelMeta {
        name,
        version,
        entry_points,
    })
}

/// The entry points of `group` in an `entry_points.txt`.
fn entry_points_of(text: &str, group: &str) -> Vec<EntryPoint> {
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
fn file_of_url(url: &str) -> String {
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

fn file_of_path(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn make_writable(root: &Path) -> std::io::Result<()> {
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
