//! The custom agent package (docs/spec.md section 8): lock it with uv, fill the store with its
//! wheels, verify them afresh.
//!
//! Resolution is uv's (`uv pip compile --format pylock.toml --only-binary :all:`); berth
//! only reads the result. A git or archive source is pinned like a plugin (its tree is a
//! store entry) and built once into a wheel with `uv build` and a fixed
//! `SOURCE_DATE_EPOCH`; a store that lacks that wheel rebuilds it from the locked tree and
//! checks it against the locked sha256.

mod wheels;

use crate::error::AgentLockError;

pub(crate) use wheels::{fetch_wheel, read_wheel_meta, sync_agent, verify_agent};
use wheels::{file_of_url, keep_wheel, make_writable, store_wheel, wheel_file_of_path};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use berth_lockfile_schema::{
    AgentOrigin, AgentRequest, EntryPoint, LockedAgent, LockedPlugin, LockedWheel, WheelFile,
    normalize_package_name, redact,
};
use berth_uv::{Python, Uv};
use serde::Deserialize;

use crate::context::Network;
use berth_transport::http::Upstream;

use crate::context::Env;
use crate::error::ResolveError;
use berth_transport::url::SourceUrl;

pub use berth_transport::registries::DEFAULT_INDEX_URL;

/// The time stamp every built wheel carries (1980-01-01, the earliest a zip can hold), so
/// that building the same tree again gives the same bytes.
pub const SOURCE_DATE_EPOCH: &str = "315532800";

/// The index, as uv is given it and as berth shows it.
pub(crate) struct Index {
    pub(crate) url: SourceUrl,
    /// Whether a credential is written in the URL where `${VAR}` belongs.
    written_credential: bool,
}

impl Index {
    /// What a lock records of it: its URL as configured (`${VAR}`s unexpanded), without
    /// credentials.
    pub(crate) fn recorded(&self) -> String {
        berth_transport::url::without_userinfo(&self.url.shown)
    }
}

/// What a wheel says about itself.
#[derive(Debug, Clone)]
pub(crate) struct WheelMeta {
    pub name: String,
    pub version: String,
    pub entry_points: Vec<EntryPoint>,
    /// Its `console_scripts`.
    pub scripts: Vec<EntryPoint>,
}

#[derive(Deserialize)]
pub(crate) struct Pylock {
    #[serde(default)]
    packages: Vec<PylockPackage>,
}

#[derive(Deserialize)]
pub(crate) struct PylockPackage {
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
    /// It could not be fetched or hashed (shared, as [`crate::VerifyStatus::Failed`]).
    Failed(std::sync::Arc<ResolveError>),
}

/// The index the settings name (berth's own, else uv's configuration's), its `${VAR}`s
/// expanded and the credentials configured for it added.
pub(crate) fn index(env: &Env<'_>) -> Result<Index, ResolveError> {
    let configured = env.settings.index.as_ref().map_err(|e| e.clone())?;
    let raw = configured.url.trim_end_matches('/');
    let mut url = SourceUrl::new(raw)?;
    if let Some((user, password)) = &configured.credentials {
        url = url.with_credentials(user, password);
    }
    // The same rule as plugin sources: a password goes over plain http only to this
    // machine.
    berth_transport::url::refuse_plain_http_password(&url)?;
    Ok(Index {
        url,
        written_credential: configured.has_written_credential(),
    })
}

/// The index a locked payload recorded, for fetching its wheels again: the configured one
/// (with its credentials) while it is the same URL, else the recorded URL alone (whose
/// host's `~/.netrc` entry still applies).
pub(crate) fn recorded_index(env: &Env<'_>, recorded: Option<&str>) -> Result<Index, ResolveError> {
    let configured = index(env);
    match (recorded, configured) {
        (None, configured) => configured,
        (Some(recorded), Ok(configured)) if configured.recorded() == recorded => Ok(configured),
        (Some(recorded), _) => Ok(Index {
            url: SourceUrl::new(recorded.trim_end_matches('/'))?,
            written_credential: false,
        }),
    }
}

/// Resolves `[agent]` into a locked package, entry point and wheel closure.
pub(crate) fn lock_agent(
    env: &Env<'_>,
    request: &AgentRequest,
) -> Result<LockedAgent, ResolveError> {
    env.settings
        .require_network(|| format!("the agent package `{}`", request.display_source()))?;
    let uv = Uv::find()?;
    let python = uv.find_python(request.python.as_deref())?;
    let index = index(env)?;
    if index.written_credential {
        env.reporter.warn(&format!(
            "the index URL `{}` has a credential written in it; it is left out of everything berth writes and prints. Put it in an environment variable and write `${{VAR}}` instead",
            index.url.shown
        ));
    }
    let work = env.store.stage()?;
    let shown_source = request.display_source();
    env.reporter.status(
        "Resolving",
        &format!("agent `{shown_source}` with uv (Python {})", python.version),
    );
    let (package, requirement, built) = match request.origin() {
        AgentOrigin::Index { package } => (package.clone(), request.source.trim().to_owned(), None),
        AgentOrigin::Tree(tree_request) => {
            let tools = (&uv, &python, &index);
            let built = build_tree(env, tools, tree_request, work.path())?;
            let package = normalize_package_name(&built.meta.name);
            let requirement = format!("{package} @ file://{}", built.wheel.display());
            (package, requirement, Some(built))
        }
    };
    let packages = compile(env, (&uv, &python, &index), &requirement, work.path())?;
    let version = packages
        .iter()
        .find(|p| normalize_package_name(&p.name) == package)
        .and_then(|p| p.version.clone());
    // berth's own build is added below.
    let skip = built.is_some().then_some(package.as_str());
    let mut wheels = wheels_of(packages, skip, &python)?;
    let (entry_point, tree, version) = match built {
        Some(built) => {
            let (entry_point, tree, built_version) =
                keep_built(env, &package, built, request, &mut wheels)?;
            (entry_point, Some(tree), built_version)
        }
        None => {
            let (entry_point, from_wheel) =
                own_from_index(env, (&package, &shown_source), &wheels, &index, request)?;
            (entry_point, None, version.unwrap_or(from_wheel))
        }
    };
    wheels.sort_by(|a, b| (&a.name, &a.file).cmp(&(&b.name, &b.file)));
    env.reporter.status(
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

/// The agent's source tree, pinned like a plugin and built into a wheel.
struct Built {
    tree: LockedPlugin,
    wheel: PathBuf,
    meta: WheelMeta,
}

/// Pins the agent's source tree, puts it into staging and builds it with `uv build`
/// into `work`.
fn build_tree(
    env: &Env<'_>,
    (uv, python, index): (&Uv, &Python, &Index),
    tree_request: &berth_lockfile_schema::PluginRequest,
    work: &Path,
) -> Result<Built, ResolveError> {
    let tree = crate::sources::lock_new(env, tree_request)?;
    let staging = crate::sources::stage_tree(env, &tree, Some(tree_request))?;
    let wheel = build_wheel(env, uv, python, index, staging.path(), work)?;
    let meta = read_wheel_meta(&wheel)?;
    Ok(Built { tree, wheel, meta })
}

/// Keeps berth's own build of the agent in the store and among `wheels`; returns its
/// entry point, its tree (named after the package) and its version.
fn keep_built(
    env: &Env<'_>,
    package: &str,
    built: Built,
    request: &AgentRequest,
    wheels: &mut Vec<LockedWheel>,
) -> Result<(EntryPoint, LockedPlugin, String), ResolveError> {
    let Built {
        mut tree,
        wheel,
        meta,
    } = built;
    let entry_point = choose_entry_point(package, &meta.entry_points, request)?;
    let own = LockedWheel {
        name: package.to_owned(),
        version: meta.version.clone(),
        file: wheel_file_of_path(&wheel)?,
        url: None,
        sha256: berth_store::sha256_file(&wheel)?,
    };
    keep_wheel(env, &wheel, &own)?;
    wheels.push(own);
    tree.name = package.to_owned();
    Ok((entry_point, tree, meta.version))
}

/// The agent package's own wheel among `wheels` (`package`, asked for as `shown_source`),
/// read for its entry point (and stored first when the store lacks it); returns the entry
/// point and the wheel's version.
fn own_from_index(
    env: &Env<'_>,
    (package, shown_source): (&str, &str),
    wheels: &[LockedWheel],
    index: &Index,
    request: &AgentRequest,
) -> Result<(EntryPoint, String), ResolveError> {
    let own = wheels
        .iter()
        .find(|w| w.name == package)
        .cloned()
        .ok_or_else(|| AgentLockError::NotInResolution {
            source_shown: shown_source.to_string(),
            package: package.to_owned(),
        })?;
    let meta = match env.store.wheel(&own.sha256, &own.file) {
        Some(stored) => read_wheel_meta(&stored)?,
        None => {
            // Read before it is stored: a package that is no agent leaves nothing behind.
            let (staging, path, _) = fetch_wheel(env, &own, index)?;
            let meta = read_wheel_meta(&path)?;
            choose_entry_point(package, &meta.entry_points, request)?;
            store_wheel(env, staging, &own, own.url.as_deref().unwrap_or_default())?;
            meta
        }
    };
    let entry_point = choose_entry_point(package, &meta.entry_points, request)?;
    Ok((entry_point, meta.version))
}

/// `uv build --wheel` of a source tree (copied first: builders write into it).
fn build_wheel(
    env: &Env<'_>,
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
    env.reporter
        .status("Building", "the agent package's wheel with `uv build`");
    let mut cmd = uv.command();
    cmd.args(["build", "--wheel", "--quiet", "--no-create-gitignore"])
        .arg("--python")
        .arg(&python.path)
        .arg("--index-url")
        .arg(&index.url.fetch)
        .arg("--out-dir")
        .arg(&out)
        .args(exclude_newer(env))
        .arg(&src)
        .env("SOURCE_DATE_EPOCH", SOURCE_DATE_EPOCH);
    if env.settings.network == Network::Offline {
        cmd.arg("--offline");
    }
    uv.run(&mut cmd, "building the agent package with `uv build`")
        .map_err(|e| AgentLockError::Uv(Upstream::new(&e.to_string(), &index.url)))?;
    let wheels: Vec<PathBuf> = fs_err::read_dir(&out)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "whl"))
        .collect();
    match wheels.as_slice() {
        [one] => Ok(one.clone()),
        _ => Err(AgentLockError::BuildCount {
            count: wheels.len(),
        }
        .into()),
    }
}

/// uv's own release-age option, `--exclude-newer RFC3339`, under the run's cutoff: uv
/// leaves out every file uploaded at or after it (the index's `upload-time`).
fn exclude_newer(env: &Env<'_>) -> Vec<String> {
    env.cutoff
        .as_ref()
        .map(|c| vec!["--exclude-newer".to_owned(), c.cutoff.to_rfc3339()])
        .unwrap_or_default()
}

/// `uv pip compile` of one requirement into pylock packages.
pub(crate) fn compile(
    env: &Env<'_>,
    (uv, python, index): (&Uv, &Python, &Index),
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
    .args(exclude_newer(env))
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
        let cause = Upstream::new(&e.to_string(), &index.url);
        // The index could not be reached (an upstream failure, 502 in the server), as
        // opposed to a resolution that has no answer (no such version: 422). uv runs as
        // a program, so its own words are all there is to tell them apart by.
        if e.is_unreachable_index() {
            ResolveError::Fetch {
                url: index.url.shown.clone(),
                cause,
            }
        } else {
            AgentLockError::Uv(cause).into()
        }
    })?;
    let text = fs_err::read_to_string(&output)?;
    let lock: Pylock = toml::from_str(&text).map_err(AgentLockError::Pylock)?;
    Ok(lock.packages)
}

/// The wheels of a pylock's packages (all but `skip`), each with its URL and sha256.
pub(crate) fn wheels_of(
    packages: Vec<PylockPackage>,
    skip: Option<&str>,
    python: &Python,
) -> Result<Vec<LockedWheel>, ResolveError> {
    let mut wheels = Vec::new();
    for p in packages {
        let name = normalize_package_name(&p.name);
        if skip == Some(name.as_str()) {
            continue;
        }
        let pkg_version = p.version.clone().unwrap_or_default();
        if p.wheels.is_empty() {
            return Err(AgentLockError::NoWheel {
                package: name.clone(),
                version: pkg_version,
                python: python.minor_version().to_string(),
            }
            .into());
        }
        for w in p.wheels {
            let url = w.url.ok_or_else(|| AgentLockError::NoWheelUrl {
                package: name.clone(),
            })?;
            let sha256 =
                w.hashes
                    .get("sha256")
                    .cloned()
                    .ok_or_else(|| AgentLockError::NoWheelHash {
                        url: redact(&url).text,
                    })?;
            let file = w.name.unwrap_or_else(|| file_of_url(&url));
            let file = WheelFile::parse(file.trim())
                .ok_or(AgentLockError::WheelName { file: file.clone() })?;
            wheels.push(LockedWheel {
                name: name.clone(),
                version: pkg_version.clone(),
                file,
                url: Some(redact(&url).text),
                sha256: sha256.to_ascii_lowercase(),
            });
        }
    }
    Ok(wheels)
}

fn choose_entry_point(
    package: &str,
    offered: &[EntryPoint],
    request: &AgentRequest,
) -> Result<EntryPoint, ResolveError> {
    let names = || offered.iter().map(|e| e.name.clone()).collect::<Vec<_>>();
    let package = package.to_owned();
    match (&request.entry_point, offered) {
        (_, []) => Err(AgentLockError::NoEntryPoint { package }.into()),
        (Some(wanted), _) => offered
            .iter()
            .find(|e| &e.name == wanted)
            .cloned()
            .ok_or_else(|| {
                AgentLockError::NoSuchEntryPoint {
                    package,
                    wanted: wanted.clone(),
                    offered: names(),
                }
                .into()
            }),
        (None, [one]) => Ok(one.clone()),
        (None, _) => Err(AgentLockError::SeveralEntryPoints {
            package,
            offered: names(),
        }
        .into()),
    }
}
