//! Which package registry a package manager would use, and with which credentials, read
//! from its own configuration the way it reads it: npm's `.npmrc` files and `npm_config_*`
//! variables (`npm.rs`), uv's `UV_*` variables and `uv.toml` files (`uv.rs`).
//!
//! Everything here is a pure function of [`ConfigInputs`] (an environment map, the project
//! and home folders, and a way to read a file), so it is tested without the real home; the
//! one look at the real filesystem is npm's default prefix, found from the `node` on the
//! map's `PATH` when nothing names a global `npmrc`. It knows registries, URLs and
//! credentials, never what asks for them.

mod npm;
#[cfg(test)]
mod tests;
mod uv;

pub use npm::{DEFAULT_NPM_REGISTRY, NpmConfig};
pub use uv::{DEFAULT_INDEX_URL, IndexOrigin, PackageIndex};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The largest configuration file read (an `.npmrc` or `uv.toml` is a few lines).
const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Reads a configuration file: `Ok(None)` when it does not exist.
pub type ReadConfig<'a> = &'a dyn Fn(&Path) -> std::io::Result<Option<String>>;

/// What the package managers' configuration is read from.
#[derive(Clone, Copy)]
pub struct ConfigInputs<'a> {
    /// The environment (`npm_config_*`, `UV_*`, `XDG_CONFIG_HOME`, `PATH`).
    pub env: &'a BTreeMap<String, String>,
    /// The project's folder (the manifest's): its `.npmrc`, `uv.toml`, `pyproject.toml`.
    pub project_dir: Option<&'a Path>,
    /// The user's home: `~/.npmrc`, `~/.config/uv/uv.toml`.
    pub home: Option<&'a Path>,
    /// How a file is read ([`read_config_file`] for the real filesystem).
    pub read: ReadConfig<'a>,
}

impl std::fmt::Debug for ConfigInputs<'_> {
    /// The folders only: the environment holds secrets.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConfigInputs")
            .field("project_dir", &self.project_dir)
            .field("home", &self.home)
            .finish_non_exhaustive()
    }
}

impl ConfigInputs<'_> {
    /// A variable of the environment, when set and not empty.
    fn var(&self, name: &str) -> Option<&str> {
        self.env
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// Reads `path` through [`ConfigInputs::read`], naming it in the error.
    fn read_file(&self, path: &Path) -> Result<Option<String>, ConfigError> {
        (self.read)(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source: Arc::new(source),
        })
    }
}

/// Why a package manager's configuration could not be read. It is kept until something
/// needs the registry, so a broken `uv.toml` fails `lock`, never `show`.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ConfigError {
    /// A configuration file exists but could not be read.
    #[error("could not read `{}`: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: Arc<std::io::Error>,
    },
    /// A `uv.toml` or `pyproject.toml` is not TOML uv would read.
    #[error(
        "`{}` is not valid TOML ({message}); fix it, or set `UV_NO_CONFIG=1` so that neither uv nor berth reads it",
        path.display()
    )]
    Toml {
        /// The file.
        path: PathBuf,
        /// What the parser said.
        message: String,
    },
}

/// A file of the real filesystem, when it exists, refusing one over 1 MiB.
pub fn read_config_file(path: &Path) -> std::io::Result<Option<String>> {
    let file = match fs_err::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    if file.metadata()?.len() > MAX_CONFIG_BYTES {
        return Err(std::io::Error::other(format!(
            "`{}` is larger than {MAX_CONFIG_BYTES} bytes",
            path.display()
        )));
    }
    let mut text = String::new();
    std::io::Read::read_to_string(&mut { file }, &mut text)?;
    Ok(Some(text))
}

/// The process's environment as a map (variables that are not UTF-8 are left out: no
/// registry setting is).
pub fn process_env() -> BTreeMap<String, String> {
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect()
}

/// `~/rest` as a path under `home`; any other path as written.
fn expand_home(path: &str, home: Option<&Path>) -> PathBuf {
    match (path.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => PathBuf::from(path),
    }
}
