//! The uv berth pins (version [`UV_VERSION`]): finding it (`$BERTH_UV`, else next to
//! berth, else `PATH`),
//! running it without the user's configuration and never downloading an interpreter, and
//! finding an interpreter. The resolver uses it to resolve the agent package, the runtime
//! to build its environment offline; neither depends on the other for it.
//!
//! # Where things are
//!
//! The pinned uv: finding it, running it without user configuration or downloads.
//!
//! It uses nothing of berth; it must do nothing but run uv.

use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The uv version berth resolves and installs with.
pub const UV_VERSION: &str = "0.13.9";

/// Why uv or an interpreter could not be found or run.
#[derive(Debug, thiserror::Error)]
pub enum UvError {
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
    /// A uv command failed.
    #[error("{what} failed: {detail}")]
    Failed {
        /// What berth was doing.
        what: String,
        /// uv's own message.
        detail: String,
    },
}

impl UvError {
    /// Whether uv failed because it could not reach the package index (as opposed to a
    /// resolution without an answer). uv runs as a program and has no exit code for this,
    /// so its own words in [`UvError::Failed`] are read here, in this one place.
    pub fn is_unreachable_index(&self) -> bool {
        matches!(self, Self::Failed { detail, .. }
            if detail.contains("Failed to fetch") || detail.contains("Request failed after"))
    }
}

/// A uv binary of the pinned version.
#[derive(Debug, Clone)]
pub struct Uv {
    /// The executable.
    pub path: PathBuf,
}

impl Uv {
    /// Finds uv: `$BERTH_UV`, else the `uv` next to this executable (where a Python
    /// install of berth put the uv it depends on), else `uv` on `PATH`; it must be
    /// [`UV_VERSION`].
    pub fn find() -> Result<Self, UvError> {
        let beside = std::env::current_exe()
            .ok()
            .and_then(|exe| exe.parent().map(|dir| dir.join("uv")))
            .filter(|uv| uv.is_file());
        let path = match std::env::var_os("BERTH_UV") {
            Some(path) if !path.is_empty() => PathBuf::from(path),
            _ => beside
                .or_else(|| search_path("uv"))
                .ok_or_else(|| UvError::UvMissing {
                    detail: "BERTH_UV is not set, there is no `uv` next to berth and none on PATH"
                        .into(),
                })?,
        };
        let output = Command::new(&path)
            .arg("--version")
            .stdin(Stdio::null())
            .output()
            .map_err(|e| UvError::UvMissing {
                detail: format!("`{}`: {e}", path.display()),
            })?;
        let text = String::from_utf8_lossy(&output.stdout);
        let found = text.split_whitespace().nth(1).unwrap_or("").to_owned();
        if found != UV_VERSION {
            return Err(UvError::UvVersion {
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
    pub fn run(&self, cmd: &mut Command, what: &str) -> Result<String, UvError> {
        let output = cmd.output().map_err(|e| UvError::Failed {
            what: what.to_owned(),
            detail: e.to_string(),
        })?;
        if !output.status.success() {
            return Err(UvError::Failed {
                what: what.to_owned(),
                detail: uv_message(&String::from_utf8_lossy(&output.stderr)),
            });
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }

    /// Finds an interpreter for `request` (`3.11`, `>=3.10`, or `None` for the default),
    /// among the system's, never downloading one.
    pub fn find_python(&self, request: Option<&str>) -> Result<Python, UvError> {
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
        let output = cmd.output().map_err(|e| UvError::PythonMissing {
            request: shown.clone(),
            detail: e.to_string(),
        })?;
        if !output.status.success() {
            return Err(UvError::PythonMissing {
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
            .ok_or_else(|| UvError::PythonMissing {
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
