//! The Python package index, as uv would pick its default index: berth's own setting
//! first, then uv's variables (`UV_INDEX_URL`, `UV_DEFAULT_INDEX`), then uv's
//! configuration files (the project's `uv.toml`, else its `pyproject.toml`'s `[tool.uv]`;
//! the user's `uv.toml`; the system's), each read for `[[index]]` with `default = true`,
//! else `index-url`. berth then hands the index to uv explicitly, and uv itself reads no
//! configuration (`UV_NO_CONFIG`), so what berth found is what uv uses.

use std::path::{Path, PathBuf};

use berth_lockfile_schema::redact;

use super::{ConfigError, ConfigInputs, expand_home};

/// The index used when nothing configures one.
pub const DEFAULT_INDEX_URL: &str = "https://pypi.org/simple";

/// Where an index URL was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IndexOrigin {
    /// berth's own `--index-url` / `$BERTH_INDEX_URL`.
    Berth,
    /// A variable of uv's (`UV_INDEX_URL`, `UV_DEFAULT_INDEX`).
    Env(&'static str),
    /// A uv configuration file.
    File(PathBuf),
    /// Nothing configured one.
    Default,
}

/// The index Python packages are resolved against. Its `Debug` shows the URL without
/// credentials.
#[derive(Clone, PartialEq, Eq)]
pub struct PackageIndex {
    /// The URL as configured: `${VAR}` not yet expanded, credentials as written.
    pub url: String,
    /// Where it was found.
    pub origin: IndexOrigin,
    /// The index's name (`[[index]] name`, `UV_DEFAULT_INDEX=NAME=URL`), if it has one.
    pub name: Option<String>,
    /// User name and password from `UV_INDEX_<NAME>_USERNAME` and `_PASSWORD`, for a
    /// named index whose URL carries none.
    pub credentials: Option<(String, String)>,
}

impl std::fmt::Debug for PackageIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PackageIndex")
            .field("url", &redact(&self.url).text)
            .field("origin", &self.origin)
            .field("name", &self.name)
            .field("credentials", &self.credentials.as_ref().map(|_| "***"))
            .finish()
    }
}

impl PackageIndex {
    /// The index berth's own setting names (or the server's `--index-url`).
    pub fn given(url: &str) -> Self {
        Self {
            url: url.trim().to_owned(),
            origin: IndexOrigin::Berth,
            name: None,
            credentials: None,
        }
    }

    /// The index: `berth` (`--index-url`, `$BERTH_INDEX_URL`) when given, else uv's
    /// configuration's default index, else PyPI. With `UV_NO_CONFIG` set, no file is read;
    /// with `UV_CONFIG_FILE`, only that one.
    pub fn resolve(berth: Option<&str>, inputs: &ConfigInputs<'_>) -> Result<Self, ConfigError> {
        if let Some(url) = berth.map(str::trim).filter(|u| !u.is_empty()) {
            return Ok(Self::given(url));
        }
        for var in ["UV_INDEX_URL", "UV_DEFAULT_INDEX"] {
            if let Some(value) = inputs.var(var) {
                return Ok(Self::named(value, IndexOrigin::Env(var), inputs));
            }
        }
        let no_config = inputs.var("UV_NO_CONFIG").is_some_and(|v| {
            !matches!(
                v.to_ascii_lowercase().as_str(),
                "0" | "false" | "no" | "off"
            )
        });
        if !no_config {
            for (path, pyproject) in config_files(inputs) {
                if let Some(found) = index_in_file(inputs, &path, pyproject)? {
                    return Ok(found);
                }
            }
        }
        Ok(Self {
            url: DEFAULT_INDEX_URL.to_owned(),
            origin: IndexOrigin::Default,
            name: None,
            credentials: None,
        })
    }

    /// `value` (`URL` or `NAME=URL`) found at `origin`, with its name's credentials.
    fn named(value: &str, origin: IndexOrigin, inputs: &ConfigInputs<'_>) -> Self {
        let (name, url) = match value.split_once('=') {
            Some((name, url)) if is_index_name(name) => (Some(name.to_owned()), url),
            _ => (None, value),
        };
        Self::with_name(url, name, origin, inputs)
    }

    fn with_name(
        url: &str,
        name: Option<String>,
        origin: IndexOrigin,
        inputs: &ConfigInputs<'_>,
    ) -> Self {
        let url = url.trim().to_owned();
        let credentials = name
            .as_deref()
            .filter(|_| crate::url::userinfo(&url).is_none())
            .and_then(|name| {
                let var = |what: &str| inputs.var(&format!("UV_INDEX_{}_{what}", env_name(name)));
                let (user, password) = (var("USERNAME"), var("PASSWORD"));
                (user.is_some() || password.is_some()).then(|| {
                    (
                        user.unwrap_or_default().to_owned(),
                        password.unwrap_or_default().to_owned(),
                    )
                })
            });
        Self {
            url,
            origin,
            name,
            credentials,
        }
    }

    /// Whether the URL has a credential written in it where berth should say to use
    /// `${VAR}` instead (berth's own setting, a file); uv's variables are where uv's own
    /// users put them.
    pub fn has_written_credential(&self) -> bool {
        matches!(self.origin, IndexOrigin::Berth | IndexOrigin::File(_))
            && redact(&self.url).removed_secret
    }

    /// Where the index was found, for messages.
    pub fn describe_origin(&self) -> String {
        match &self.origin {
            IndexOrigin::Berth => "`--index-url` (`BERTH_INDEX_URL`)".to_owned(),
            IndexOrigin::Env(var) => format!("`{var}`"),
            IndexOrigin::File(path) => format!("`{}`", path.display()),
            IndexOrigin::Default => "the default".to_owned(),
        }
    }
}

/// uv's name of an index: letters, digits, `-`, `_`, `.`.
fn is_index_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// An index name as its variables spell it: upper case, every other character `_`.
fn env_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect()
}

/// The files uv reads, nearest first, each with whether it is a `pyproject.toml`:
/// `UV_CONFIG_FILE` alone when set; else the project's `uv.toml` (its `pyproject.toml`
/// when it has none), the user's, the system's.
fn config_files(inputs: &ConfigInputs<'_>) -> Vec<(PathBuf, bool)> {
    if let Some(file) = inputs.var("UV_CONFIG_FILE") {
        return vec![(expand_home(file, inputs.home), false)];
    }
    let mut files = Vec::new();
    if let Some(dir) = inputs.project_dir {
        let uv_toml = dir.join("uv.toml");
        // A `uv.toml` that cannot be read is still the project's (its error is shown).
        let missing = matches!((inputs.read)(&uv_toml), Ok(None));
        files.push(if missing {
            (dir.join("pyproject.toml"), true)
        } else {
            (uv_toml, false)
        });
    }
    let user = match inputs.var("XDG_CONFIG_HOME") {
        Some(dir) => Some(PathBuf::from(dir)),
        None => inputs.home.map(|home| home.join(".config")),
    };
    files.extend(user.map(|dir| (dir.join("uv").join("uv.toml"), false)));
    let system = inputs
        .var("XDG_CONFIG_DIRS")
        .into_iter()
        .flat_map(|dirs| dirs.split(':'))
        .filter(|dir| !dir.is_empty())
        .map(|dir| Path::new(dir).join("uv").join("uv.toml"))
        .find(|file| matches!((inputs.read)(file), Ok(Some(_))))
        .unwrap_or_else(|| PathBuf::from("/etc/uv/uv.toml"));
    files.push((system, false));
    files
}

/// The default index one file names: its first `[[index]]` with `default = true`, else
/// its `index-url` (in a `pyproject.toml`, under `[tool.uv]`).
fn index_in_file(
    inputs: &ConfigInputs<'_>,
    path: &Path,
    pyproject: bool,
) -> Result<Option<PackageIndex>, ConfigError> {
    let Some(text) = inputs.read_file(path)? else {
        return Ok(None);
    };
    let document: toml::Table = toml::from_str(&text).map_err(|e| ConfigError::Toml {
        path: path.to_owned(),
        message: e.message().to_owned(),
    })?;
    let table = if pyproject {
        match document
            .get("tool")
            .and_then(|t| t.get("uv"))
            .and_then(toml::Value::as_table)
        {
            Some(table) => table,
            None => return Ok(None),
        }
    } else {
        &document
    };
    let default = table
        .get("index")
        .and_then(toml::Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(toml::Value::as_table)
        .find(|index| index.get("default").and_then(toml::Value::as_bool) == Some(true))
        .and_then(|index| {
            let url = index.get("url").and_then(toml::Value::as_str)?;
            let name = index.get("name").and_then(toml::Value::as_str);
            Some((url, name.map(str::to_owned)))
        });
    let found = default.or_else(|| {
        let url = table.get("index-url").and_then(toml::Value::as_str)?;
        Some((url, None))
    });
    Ok(found.map(|(url, name)| {
        PackageIndex::with_name(url, name, IndexOrigin::File(path.to_owned()), inputs)
    }))
}
