//! The custom agent package's environment (docs/spec.md section 8): a Python environment built
//! offline from the locked wheels in the store, content-addressed and shared by every
//! conversation with the same lock, and the launcher that calls the locked entry point.
//!
//! uv does the work, at the version berth pins ([`UV_VERSION`]): `uv venv --relocatable`
//! in a staging folder, then `uv pip install --offline --no-index --no-deps
//! --require-hashes --only-binary :all:` from a folder of links to the stored wheels, then
//! a rename into `envs-v1/`. Nothing here touches the network.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use berth_lockfile_schema::{EntryPoint, LockedAgent, LockedWheel};
use berth_store::{Store, StoreError};
use sha2::{Digest, Sha256};

pub use berth_uv::{Python, UV_VERSION, Uv, UvError, uv_message};

/// Why an agent environment could not be found, built or run.
#[derive(Debug, thiserror::Error)]
pub enum AgentEnvError {
    /// Wheels of the lock are not in the store.
    #[error(
        "agent `{package}`: {count} locked wheel(s) are not in the store ({files}); run `berth plugins sync`",
        count = files.len(),
        files = files.join(", ")
    )]
    MissingWheels {
        /// The agent package.
        package: String,
        /// The missing wheel files.
        files: Vec<String>,
    },
    /// uv or an interpreter could not be found or run.
    #[error(transparent)]
    Uv(#[from] berth_uv::UvError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A file operation failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// A ready environment of the locked agent.
#[derive(Debug, Clone)]
pub struct AgentEnv {
    /// The environment's folder (`VIRTUAL_ENV`).
    pub path: PathBuf,
    /// The locked entry point.
    pub entry_point: EntryPoint,
    /// Whether this call built it (rather than finding it built).
    pub created: bool,
}

/// The file an environment carries to say what it was built from.
pub const ENV_MARKER: &str = "berth-env.json";

/// The content address of the environment for `agent`: its wheels, its entry point, the
/// Python version it was locked for and uv's version. Which interpreter of that version
/// built it is not part of the key (a venv is tied to its base interpreter; an environment
/// whose interpreter is gone is rebuilt).
pub fn env_key(agent: &LockedAgent) -> String {
    let mut lines = vec![
        "berth-agent-env-v1".to_owned(),
        format!("python {}", agent.python_version),
        format!("uv {UV_VERSION}"),
        format!("entry_point {}", agent.entry_point),
    ];
    let mut wheels: Vec<&str> = agent.wheels.iter().map(|w| w.sha256.as_str()).collect();
    wheels.sort_unstable();
    lines.extend(wheels.into_iter().map(|sha| format!("wheel {sha}")));
    digest_key(&lines)
}

/// An environment's key: the first 32 hex digits of the SHA-256 of `lines`, each ended
/// by a newline.
pub(crate) fn digest_key(lines: &[String]) -> String {
    let mut hasher = Sha256::new();
    for line in lines {
        hasher.update(line.as_bytes());
        hasher.update(b"\n");
    }
    let mut key = berth_lockfile_schema::Sha256Hash::from_bytes(hasher.finalize().into()).to_hex();
    key.truncate(32);
    key
}

/// Whether the environment at `path` is complete (its marker is written last) and its
/// base interpreter still there.
pub(crate) fn is_ready(path: &Path) -> bool {
    path.join(ENV_MARKER).is_file() && std::fs::canonicalize(path.join("bin/python")).is_ok()
}

/// Runs `build` for the environment at `path` under the store's lock `env-<key>`, unless
/// another process made it ready meanwhile; one whose interpreter is gone is moved aside
/// in one step first. Returns whether this call built it.
pub(crate) fn build_locked(
    store: &Store,
    key: &str,
    path: &Path,
    build: impl FnOnce() -> Result<(), AgentEnvError>,
) -> Result<bool, AgentEnvError> {
    let _guard = store.lock(&format!("env-{key}"), || {})?;
    if is_ready(path) {
        return Ok(false);
    }
    if path.exists() {
        let trash = store.stage()?;
        fs_err::rename(path, trash.path().join("old"))?;
    }
    build()?;
    Ok(true)
}

/// Finds or builds (offline, from the store alone) the environment of the locked agent.
///
/// A ready environment is used without running uv; building one needs the pinned uv and
/// an interpreter of the locked Python version.
pub fn ensure_env(store: &Store, agent: &LockedAgent) -> Result<AgentEnv, AgentEnvError> {
    let key = env_key(agent);
    let path = store.env_path(&key, &agent.package);
    let done = |created| AgentEnv {
        path: path.clone(),
        entry_point: agent.entry_point.clone(),
        created,
    };
    if is_ready(&path) {
        return Ok(done(false));
    }
    let missing = store.missing_wheels(agent);
    if !missing.is_empty() {
        return Err(AgentEnvError::MissingWheels {
            package: agent.package.clone(),
            files: missing,
        });
    }
    let marker = serde_json::json!({
        "package": agent.package,
        "version": agent.version,
        "entry_point": agent.entry_point.to_string(),
        "wheels": agent.wheels.iter().map(|w| &w.sha256).collect::<Vec<_>>(),
    });
    let created = build_locked(store, &key, &path, || {
        build_env(
            store,
            &path,
            &agent.package,
            &agent.python_version,
            &agent.wheels,
            &|wheel| store.wheel_path(&wheel.sha256, &wheel.file),
            marker,
        )
    })?;
    Ok(done(created))
}

/// Builds, offline, the environment at `path` (absent) from `wheels` (each found at
/// `stored(wheel)`, checked by uv against its sha256) with an interpreter of
/// `python_version`; `marker` (with the interpreter's version added) is written last.
pub(crate) fn build_env(
    store: &Store,
    path: &Path,
    package: &str,
    python_version: &str,
    wheels: &[LockedWheel],
    stored: &dyn Fn(&LockedWheel) -> PathBuf,
    mut marker: serde_json::Value,
) -> Result<(), AgentEnvError> {
    let uv = Uv::find()?;
    let python = uv.find_python(Some(python_version))?;
    let env = store.stage()?;
    let work = store.stage()?;
    let links = work.path().join("wheels");
    let requirements_file = link_wheels(wheels, stored, &links, work.path())?;
    uv.run(
        uv.command()
            .args([
                "venv",
                "--relocatable",
                "--quiet",
                "--offline",
                "--no-python-downloads",
            ])
            .arg("--python")
            .arg(&python.path)
            .arg(env.path()),
        &format!("creating the environment of `{package}`"),
    )?;
    uv.run(
        uv.command()
            .args([
                "pip",
                "install",
                "--quiet",
                "--offline",
                "--no-index",
                "--no-deps",
                "--require-hashes",
                "--only-binary",
                ":all:",
                "--link-mode",
                "copy",
                "--compile-bytecode",
            ])
            .arg("--python")
            .arg(env.path().join("bin/python"))
            .arg("--find-links")
            .arg(&links)
            .arg("-r")
            .arg(&requirements_file),
        &format!("installing the locked wheels of `{package}`"),
    )?;
    marker["python"] = serde_json::json!(python.version);
    fs_err::write(
        env.path().join(ENV_MARKER),
        format!(
            "{}\n",
            serde_json::to_string_pretty(&marker).unwrap_or_default()
        ),
    )?;
    env.persist_to(path)?;
    Ok(())
}

/// Links each of `wheels` (found at `stored(wheel)`) into the folder `links`, and writes
/// into `work` the requirements that pin them by hash; returns the requirements file.
fn link_wheels(
    wheels: &[LockedWheel],
    stored: &dyn Fn(&LockedWheel) -> PathBuf,
    links: &Path,
    work: &Path,
) -> Result<PathBuf, AgentEnvError> {
    fs_err::create_dir(links)?;
    let mut pins: BTreeMap<(&str, &str), Vec<&str>> = BTreeMap::new();
    for wheel in wheels {
        let link = links.join(&wheel.file);
        if !link.exists() {
            std::os::unix::fs::symlink(stored(wheel), &link)?;
        }
        pins.entry((&wheel.name, &wheel.version))
            .or_default()
            .push(&wheel.sha256);
    }
    let mut requirements = String::new();
    for ((name, version), hashes) in &pins {
        requirements.push_str(&format!("{name}=={version}"));
        for sha in hashes {
            requirements.push_str(&format!(" --hash=sha256:{sha}"));
        }
        requirements.push('\n');
    }
    let requirements_file = work.join("requirements.txt");
    fs_err::write(&requirements_file, requirements)?;
    Ok(requirements_file)
}

/// The launcher `berth agent exec` runs in the environment: it loads exactly the locked
/// entry point, calls it with `sys.argv` set to the entry-point name and the arguments,
/// exits with its result when that is an int or None, and prints any other result.
pub const LAUNCHER: &str = r#"import sys
from importlib.metadata import EntryPoint
name, value = sys.argv[1], sys.argv[2]
factory = EntryPoint(name=name, value=value, group="openhands.agents").load()
sys.argv = [name] + sys.argv[3:]
result = factory()
if result is None or isinstance(result, int):
    sys.exit(int(result or 0))
print(result)
"#;

impl AgentEnv {
    /// The environment's interpreter.
    pub fn python(&self) -> PathBuf {
        self.path.join("bin/python")
    }

    /// Sets `VIRTUAL_ENV`, puts the environment's `bin/` first on `PATH` and exports
    /// `BERTH_AGENT_ENTRY_POINT` (`name = module:attr`).
    pub fn activate(&self, cmd: &mut Command) {
        let bin = self.path.join("bin");
        let path = std::env::var_os("PATH").unwrap_or_default();
        let joined = std::env::join_paths(std::iter::once(bin).chain(std::env::split_paths(&path)))
            .unwrap_or(path);
        cmd.env("VIRTUAL_ENV", &self.path)
            .env("PATH", joined)
            .env("BERTH_AGENT_ENTRY_POINT", self.entry_point.to_string())
            .env_remove("PYTHONHOME");
    }

    /// The command that calls the locked entry point with `args`.
    pub fn launcher(&self, args: &[std::ffi::OsString]) -> Command {
        let mut cmd = Command::new(self.python());
        cmd.arg("-c")
            .arg(LAUNCHER)
            .arg(&self.entry_point.name)
            .arg(&self.entry_point.value)
            .args(args);
        self.activate(&mut cmd);
        cmd
    }
}
