//! The custom agent package's environment (SPEC section 8): a Python environment built
//! offline from the locked wheels in the store, content-addressed and shared by every
//! conversation with the same lock, and the launcher that calls the locked entry point.
//!
//! uv does the work, at the version berth pins ([`UV_VERSION`]): `uv venv --relocatable`
//! in a staging folder, then `uv pip install --offline --no-index --no-deps
//! --require-hashes --only-binary :all:` from a folder of links to the stored wheels, then
//! a rename into `envs-v1/`. Nothing here touches the network.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use berth_lockfile_schema::{EntryPoint, LockedAgent};
use berth_store::{Store, StoreError};
use sha2::{Digest, Sha256};

/// The uv version berth resolves and installs with.
pub const UV_VERSION: &str = "0.13.9";

/// Why an agent environment could not be found, built or run.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// No uv.
    #[error(
        "berth needs uv {UV_VERSION} for the `[agent]` package, and none was found ({detail}); install it with `python3 -m pip install uv=={UV_VERSION}` and put it on PATH, or point BERTH_UV at it"
    )]
    UvMissing {
        /// Where berth looked.
        detail: String,
    },
    /// A uv of another version.
    #[error(
        "berth needs uv {UV_VERSION}, but `{path}` is uv {found}; install the pinned one with `python3 -m pip install uv=={UV_VERSION}` and point BERTH_UV at it"
    )]
    UvVersion {
        /// The uv found.
        path: String,
        /// Its version.
        found: String,
    },
    /// No interpreter satisfies the requirement.
    #[error(
        "no Python interpreter matching `{request}` was found ({detail}); install one, or change `python` in `[agent]` and run `berth plugins lock`"
    )]
    PythonMissing {
        /// The requirement.
        request: String,
        /// What uv said.
        detail: String,
    },
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
    /// A uv command failed.
    #[error("{what} failed: {detail}")]
    Uv {
        /// What berth was doing.
        what: String,
        /// uv's own message.
        detail: String,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A file operation failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// A uv binary of the pinned version.
#[derive(Debug, Clone)]
pub struct Uv {
    /// The executable.
    pub path: PathBuf,
}

impl Uv {
    /// Finds uv: `$BERTH_UV`, else `uv` on `PATH`; it must be [`UV_VERSION`].
    pub fn find() -> Result<Self, AgentError> {
        let path = match std::env::var_os("BERTH_UV") {
            Some(path) if !path.is_empty() => PathBuf::from(path),
            _ => search_path("uv").ok_or_else(|| AgentError::UvMissing {
                detail: "BERTH_UV is not set and there is no `uv` on PATH".into(),
            })?,
        };
        let output = Command::new(&path)
            .arg("--version")
            .stdin(Stdio::null())
            .output()
            .map_err(|e| AgentError::UvMissing {
                detail: format!("`{}`: {e}", path.display()),
            })?;
        let text = String::from_utf8_lossy(&output.stdout);
        let found = text.split_whitespace().nth(1).unwrap_or("").to_owned();
        if found != UV_VERSION {
            return Err(AgentError::UvVersion {
                path: path.display().to_string(),
                found: if found.is_empty() {
                    "of an unknown version".into()
                } else {
                    found
                },
            });
        }
        Ok(Self { path })
    }

    /// A uv command that reads no configuration file and never downloads an interpreter.
    pub fn command(&self) -> Command {
        let mut cmd = Command::new(&self.path);
        cmd.env("UV_NO_CONFIG", "1")
            .env("UV_PYTHON_DOWNLOADS", "never")
            .env_remove("UV_INDEX_URL")
            .env_remove("UV_EXTRA_INDEX_URL")
            .env_remove("UV_INDEX")
            .env_remove("UV_DEFAULT_INDEX")
            .env_remove("UV_FIND_LINKS")
            .env_remove("VIRTUAL_ENV")
            .env_remove("UV_PROJECT_ENVIRONMENT")
            .stdin(Stdio::null());
        cmd
    }

    /// Runs `cmd`, returning its stdout, or an error with uv's stderr.
    pub fn run(&self, cmd: &mut Command, what: &str) -> Result<String, AgentError> {
        let output = cmd.output().map_err(|e| AgentError::Uv {
            what: what.to_owned(),
            detail: e.to_string(),
        })?;
        if !output.status.success() {
            return Err(AgentError::Uv {
                what: what.to_owned(),
                detail: uv_message(&String::from_utf8_lossy(&output.stderr)),
            });
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }

    /// Finds an interpreter for `request` (`3.11`, `>=3.10`, or `None` for the default),
    /// among the system's, never downloading one.
    pub fn find_python(&self, request: Option<&str>) -> Result<Python, AgentError> {
        let mut cmd = self.command();
        cmd.args([
            "python",
            "find",
            "--system",
            "--no-python-downloads",
            "--offline",
        ]);
        if let Some(request) = request {
            cmd.arg(request);
        }
        let shown = request.unwrap_or("the default Python").to_owned();
        let output = cmd.output().map_err(|e| AgentError::PythonMissing {
            request: shown.clone(),
            detail: e.to_string(),
        })?;
        if !output.status.success() {
            return Err(AgentError::PythonMissing {
                request: shown,
                detail: uv_message(&String::from_utf8_lossy(&output.stderr)),
            });
        }
        let path = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
        let version = Command::new(&path)
            .args([
                "-I",
                "-c",
                "import sys; print('.'.join(map(str, sys.version_info[:3])))",
            ])
            .stdin(Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .ok_or_else(|| AgentError::PythonMissing {
                request: shown,
                detail: format!("`{}` did not say its version", path.display()),
            })?;
        Ok(Python { path, version })
    }
}

/// uv's error text, without its `error: ` prefix and with its lines joined.
pub fn uv_message(stderr: &str) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let text = lines.join(" ");
    text.strip_prefix("error: ")
        .or_else(|| text.strip_prefix("× "))
        .unwrap_or(&text)
        .to_owned()
}

fn search_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

/// A Python interpreter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Python {
    /// Its executable.
    pub path: PathBuf,
    /// Its full version (`3.11.7`).
    pub version: String,
}

impl Python {
    /// `major.minor`.
    pub fn minor_version(&self) -> String {
        self.version
            .splitn(3, '.')
            .take(2)
            .collect::<Vec<_>>()
            .join(".")
    }
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
    let mut hasher = Sha256::new();
    hasher.update(b"berth-agent-env-v1\n");
    hasher.update(format!("python {}\n", agent.python_version));
    hasher.update(format!("uv {UV_VERSION}\n"));
    hasher.update(format!("entry_point {}\n", agent.entry_point));
    let mut wheels: Vec<&str> = agent.wheels.iter().map(|w| w.sha256.as_str()).collect();
    wheels.sort_unstable();
    for sha in wheels {
        hasher.update(format!("wheel {sha}\n"));
    }
    let mut key = berth_lockfile_schema::Sha256Hash::from_bytes(hasher.finalize().into()).to_hex();
    key.truncate(32);
    key
}

/// The locked wheels missing from the store.
pub fn missing_wheels(store: &Store, agent: &LockedAgent) -> Vec<String> {
    agent
        .wheels
        .iter()
        .filter(|w| store.wheel(&w.sha256, &w.file).is_none())
        .map(|w| w.file.clone())
        .collect()
}

/// Whether the store holds everything the locked agent needs: its source tree (git and
/// archive sources) and every wheel.
pub fn agent_in_store(store: &Store, agent: &LockedAgent) -> bool {
    agent
        .tree
        .as_ref()
        .is_none_or(|t| store.lookup(&t.hash, &t.name).is_some())
        && missing_wheels(store, agent).is_empty()
}

/// Finds or builds (offline, from the store alone) the environment of the locked agent.
///
/// A ready environment is used without running uv; building one needs the pinned uv and
/// an interpreter of the locked Python version.
pub fn ensure_env(store: &Store, agent: &LockedAgent) -> Result<AgentEnv, AgentError> {
    let key = env_key(agent);
    let path = store.env_path(&key, &agent.package);
    // Complete (the marker is written last) and its base interpreter still there.
    let ready = |path: &Path| {
        path.join(ENV_MARKER).is_file() && std::fs::canonicalize(path.join("bin/python")).is_ok()
    };
    let done = |created| AgentEnv {
        path: path.clone(),
        entry_point: agent.entry_point.clone(),
        created,
    };
    if ready(&path) {
        return Ok(done(false));
    }
    let missing = missing_wheels(store, agent);
    if !missing.is_empty() {
        return Err(AgentError::MissingWheels {
            package: agent.package.clone(),
            files: missing,
        });
    }
    let _guard = store.lock(&format!("env-{key}"), || {})?;
    if ready(&path) {
        return Ok(done(false));
    }
    if path.exists() {
        // Its interpreter is gone: move it aside in one step, then build afresh.
        let trash = store.stage()?;
        fs_err::rename(&path, trash.path().join("old"))?;
    }
    let uv = Uv::find()?;
    let python = uv.find_python(Some(&agent.python_version))?;
    let env = store.stage()?;
    let work = store.stage()?;
    let links = work.path().join("wheels");
    fs_err::create_dir(&links)?;
    let mut pins: BTreeMap<(&str, &str), Vec<&str>> = BTreeMap::new();
    for wheel in &agent.wheels {
        let stored = store.wheel_path(&wheel.sha256, &wheel.file);
        let link = links.join(&wheel.file);
        if !link.exists() {
            std::os::unix::fs::symlink(&stored, &link)?;
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
    let requirements_file = work.path().join("requirements.txt");
    fs_err::write(&requirements_file, requirements)?;
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
        &format!("creating the environment of agent `{}`", agent.package),
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
        &format!("installing the locked wheels of agent `{}`", agent.package),
    )?;
    let marker = serde_json::json!({
        "package": agent.package,
        "version": agent.version,
        "entry_point": agent.entry_point.to_string(),
        "python": python.version,
        "wheels": agent.wheels.iter().map(|w| &w.sha256).collect::<Vec<_>>(),
    });
    fs_err::write(
        env.path().join(ENV_MARKER),
        format!(
            "{}\n",
            serde_json::to_string_pretty(&marker).unwrap_or_default()
        ),
    )?;
    env.persist_to(&path)?;
    Ok(done(true))
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
