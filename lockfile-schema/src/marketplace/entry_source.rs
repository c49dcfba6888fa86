//! One catalog entry's `source`, read with Claude Code's semantics, and refused when it
//! reaches past the marketplace: a catalog is someone else's input, so no field may
//! name an environment variable (`${VAR}` is the user's own manifest's feature) or a
//! path on this machine (`/…`, `~…`, `file://…`).

use crate::hash::Sha256Hash;
use crate::source::normalize_repo_path;

/// Where a catalog entry's plugin comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntrySource {
    /// A folder of the marketplace itself (`"./plugins/x"`), `metadata.pluginRoot`
    /// already prepended, normalised; `None` for the marketplace's own folder.
    Relative(Option<String>),
    /// A source string berth reads as it is (an absolute path or a URL).
    Plain(String),
    /// `{"source": "github", "repo", "ref", "sha", "path"}`.
    GitHub {
        /// `OWNER/REPO`.
        repo: String,
        /// `sha` if given, else `ref`.
        git_ref: Option<String>,
        /// The plugin's folder in the repository.
        path: Option<String>,
    },
    /// `{"source": "url", "url", "ref", "sha"}` and `{"source": "git-subdir", "url",
    /// "path", "ref", "sha"}`: a git URL.
    Git {
        /// The repository's URL.
        url: String,
        /// `sha` if given, else `ref`.
        git_ref: Option<String>,
        /// The plugin's folder in the repository (`git-subdir`).
        path: Option<String>,
    },
    /// `{"source": "archive", "url", "sha256"}`.
    Archive {
        /// The archive's URL.
        url: String,
        /// The sha256 it must have, when given.
        sha256: Option<Sha256Hash>,
    },
    /// `{"source": "npm", "package", "version", "registry"}`.
    Npm {
        /// The package name (`name` or `@scope/name`).
        package: String,
        /// An exact version, a dist-tag or a semver range (`None`: the `latest` tag).
        version: Option<String>,
        /// The registry's base URL (`None`: `https://registry.npmjs.org`).
        registry: Option<String>,
    },
}

pub(super) fn json_type(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "a list",
        serde_json::Value::Object(_) => "an object",
    }
}

/// An entry's `source`, read with Claude Code's semantics.
pub(super) fn entry_source(
    source: Option<&serde_json::Value>,
    plugin_root: &str,
) -> Result<EntrySource, String> {
    match source {
        None => Err("has no `source`".into()),
        Some(serde_json::Value::String(text)) => {
            no_variables("source", text)?;
            no_variables("metadata.pluginRoot", plugin_root)?;
            if text.contains("://") {
                remote_location("source", text)?;
                return Ok(EntrySource::Plain(text.clone()));
            }
            if text.starts_with('/') || text.starts_with('~') || text.starts_with('\\') {
                return Err(format!(
                    "has `source = \"{text}\"`, a path on this machine; a catalog may name only folders inside its marketplace"
                ));
            }
            let joined = match plugin_root.trim_end_matches('/') {
                "" => text.clone(),
                root => format!("{root}/{text}"),
            };
            if joined.split('/').all(|part| part.is_empty() || part == ".") {
                return Ok(EntrySource::Relative(None));
            }
            normalize_repo_path(&joined)
                .map(|path| EntrySource::Relative(Some(path)))
                .map_err(|why| format!("has `source = \"{text}\"`, which {why}"))
        }
        Some(serde_json::Value::Object(object)) => {
            for (key, value) in object {
                if let serde_json::Value::String(text) = value {
                    no_variables(key, text)?;
                }
            }
            let field = |key: &str| {
                object
                    .get(key)
                    .and_then(serde_json::Value::as_str)
                    .filter(|v| !v.is_empty())
                    .map(str::to_owned)
            };
            let required = |key: &str, kind: &str| {
                field(key).ok_or_else(|| format!("has a `{kind}` source without `{key}`"))
            };
            // `sha` pins the commit; it wins over `ref`.
            let git_ref = field("sha").or_else(|| field("ref"));
            let path = |kind: &str| -> Result<Option<String>, String> {
                match field("path") {
                    None => Ok(None),
                    Some(p) => normalize_repo_path(&p)
                        .map(Some)
                        .map_err(|why| format!("has a `{kind}` source whose `path` {why}")),
                }
            };
            match object.get("source").and_then(serde_json::Value::as_str) {
                Some("github") => Ok(EntrySource::GitHub {
                    repo: required("repo", "github")?,
                    git_ref,
                    path: path("github")?,
                }),
                Some("url") => Ok(EntrySource::Git {
                    url: remote_location("url", &required("url", "url")?)?,
                    git_ref,
                    path: path("url")?,
                }),
                Some("git-subdir") => {
                    required("path", "git-subdir")?;
                    Ok(EntrySource::Git {
                        url: remote_location("url", &required("url", "git-subdir")?)?,
                        git_ref,
                        path: path("git-subdir")?,
                    })
                }
                Some("archive") => Ok(EntrySource::Archive {
                    url: remote_location("url", &required("url", "archive")?)?,
                    sha256: match field("sha256") {
                        None => None,
                        Some(hex) => Some(sha256_of(&hex).ok_or_else(|| {
                            format!("has an `archive` source whose `sha256` `{hex}` is not 64 hex digits")
                        })?),
                    },
                }),
                Some("npm") => {
                    let package = required("package", "npm")?;
                    if !is_npm_package_name(&package) {
                        return Err(format!(
                            "has an `npm` source whose `package` `{package}` is not an npm package name"
                        ));
                    }
                    let registry = field("registry");
                    if let Some(registry) = &registry {
                        let lower = registry.to_ascii_lowercase();
                        if !lower.starts_with("https://") && !lower.starts_with("http://") {
                            return Err(format!(
                                "has an `npm` source whose `registry` `{registry}` is not an http(s) URL"
                            ));
                        }
                    }
                    Ok(EntrySource::Npm {
                        package,
                        version: field("version"),
                        registry,
                    })
                }
                Some(other) => Err(format!(
                    "has a source of unknown kind `{other}` (berth reads `github`, `url`, `git-subdir`, `archive`, `npm` and relative paths)"
                )),
                None => Err("has a `source` object without a `source` kind".into()),
            }
        }
        Some(other) => Err(format!("has `source` as {}", json_type(other))),
    }
}

/// Refuses a catalog value holding `${`: only the user's own manifest may name
/// environment variables, or a catalog could send `${AWS_SECRET_ACCESS_KEY}` to its host.
fn no_variables(key: &str, text: &str) -> Result<(), String> {
    if text.contains("${") {
        return Err(format!(
            "has `{key}` holding `${{`: a catalog cannot read environment variables (only your own plugins.toml can); credentials for a catalog's hosts come from ~/.netrc or git credential helpers"
        ));
    }
    Ok(())
}

/// A URL a catalog names: anything but a path or `file:` URL on this machine.
fn remote_location(key: &str, text: &str) -> Result<String, String> {
    let lower = text.trim_start().to_ascii_lowercase();
    if lower.starts_with("file:") || lower.starts_with("git+file:") {
        return Err(format!(
            "has `{key}` `{text}`, a `file://` URL on this machine; a catalog may name only folders inside its marketplace or remote URLs"
        ));
    }
    if lower.starts_with('/')
        || lower.starts_with('~')
        || lower.starts_with('.')
        || lower.starts_with('\\')
    {
        return Err(format!(
            "has `{key}` `{text}`, a path on this machine; a catalog may name only folders inside its marketplace or remote URLs"
        ));
    }
    Ok(text.to_owned())
}

/// An npm package name: `name` or `@scope/name`, lower-case URL-safe characters.
fn is_npm_package_name(name: &str) -> bool {
    let plain = |part: &str| {
        !part.is_empty()
            && !part.starts_with('.')
            && part
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "-._~".contains(c))
    };
    match name.strip_prefix('@') {
        Some(scoped) => scoped
            .split_once('/')
            .is_some_and(|(scope, rest)| plain(scope) && plain(rest)),
        None => name.len() <= 214 && plain(name),
    }
}

/// A sha256 written as 64 hex digits (or already in SRI form).
fn sha256_of(text: &str) -> Option<Sha256Hash> {
    if let Ok(hash) = Sha256Hash::from_sri(text) {
        return Some(hash);
    }
    let bytes = text.as_bytes();
    if bytes.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, pair) in bytes.chunks(2).enumerate() {
        let hex = std::str::from_utf8(pair).ok()?;
        out[i] = u8::from_str_radix(hex, 16).ok()?;
    }
    Some(Sha256Hash::from_bytes(out))
}
