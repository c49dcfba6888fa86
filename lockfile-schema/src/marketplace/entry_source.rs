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
        Some(serde_json::Value::String(text)) => text_source(text, plugin_root),
        Some(serde_json::Value::Object(object)) => object_source(object),
        Some(other) => Err(format!("has `source` as {}", json_type(other))),
    }
}

/// A `source` string: a remote location, or a folder of the marketplace (relative to its
/// `metadata.pluginRoot`).
fn text_source(text: &str, plugin_root: &str) -> Result<EntrySource, String> {
    no_variables("source", text)?;
    no_variables("metadata.pluginRoot", plugin_root)?;
    if text.contains("://") {
        remote_location("source", text)?;
        return Ok(EntrySource::Plain(text.to_owned()));
    }
    if text.starts_with('/') || text.starts_with('~') || text.starts_with('\\') {
        return Err(format!(
            "has `source = \"{text}\"`, a path on this machine; a catalog may name only folders inside its marketplace"
        ));
    }
    let joined = match plugin_root.trim_end_matches('/') {
        "" => text.to_owned(),
        root => format!("{root}/{text}"),
    };
    if joined.split('/').all(|part| part.is_empty() || part == ".") {
        return Ok(EntrySource::Relative(None));
    }
    normalize_repo_path(&joined)
        .map(|path| EntrySource::Relative(Some(path)))
        .map_err(|why| format!("has `source = \"{text}\"`, which {why}"))
}

/// A `source` object, by its `source` kind.
fn object_source(
    object: &serde_json::Map<String, serde_json::Value>,
) -> Result<EntrySource, String> {
    for (key, value) in object {
        if let serde_json::Value::String(text) = value {
            no_variables(key, text)?;
        }
    }
    let fields = Fields(object);
    // `sha` pins the commit; it wins over `ref`.
    let git_ref = fields.get("sha").or_else(|| fields.get("ref"));
    match object.get("source").and_then(serde_json::Value::as_str) {
        Some("github") => Ok(EntrySource::GitHub {
            repo: fields.required("repo", "github")?,
            git_ref,
            path: fields.path("github")?,
        }),
        Some("url") => Ok(EntrySource::Git {
            url: remote_location("url", &fields.required("url", "url")?)?,
            git_ref,
            path: fields.path("url")?,
        }),
        Some("git-subdir") => {
            fields.required("path", "git-subdir")?;
            Ok(EntrySource::Git {
                url: remote_location("url", &fields.required("url", "git-subdir")?)?,
                git_ref,
                path: fields.path("git-subdir")?,
            })
        }
        Some("archive") => Ok(EntrySource::Archive {
            url: remote_location("url", &fields.required("url", "archive")?)?,
            sha256: match fields.get("sha256") {
                None => None,
                Some(hex) => Some(sha256_of(&hex).ok_or_else(|| {
                    format!("has an `archive` source whose `sha256` `{hex}` is not 64 hex digits")
                })?),
            },
        }),
        Some("npm") => npm_source(&fields),
        Some(other) => Err(format!(
            "has a source of unknown kind `{other}` (berth reads `github`, `url`, `git-subdir`, `archive`, `npm` and relative paths)"
        )),
        None => Err("has a `source` object without a `source` kind".into()),
    }
}

/// An `npm` source object: a package name npm accepts, and a registry over http(s).
fn npm_source(fields: &Fields<'_>) -> Result<EntrySource, String> {
    let package = fields.required("package", "npm")?;
    if !is_npm_package_name(&package) {
        return Err(format!(
            "has an `npm` source whose `package` `{package}` is not an npm package name"
        ));
    }
    let registry = fields.get("registry");
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
        version: fields.get("version"),
        registry,
    })
}

/// The string fields of a `source` object.
struct Fields<'a>(&'a serde_json::Map<String, serde_json::Value>);

impl Fields<'_> {
    /// A field's text, when it is a string that is not empty.
    fn get(&self, key: &str) -> Option<String> {
        self.0
            .get(key)
            .and_then(serde_json::Value::as_str)
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
    }

    /// A field a `kind` source must have.
    fn required(&self, key: &str, kind: &str) -> Result<String, String> {
        self.get(key)
            .ok_or_else(|| format!("has a `{kind}` source without `{key}`"))
    }

    /// The `path` of a `kind` source, normalised.
    fn path(&self, kind: &str) -> Result<Option<String>, String> {
        match self.get("path") {
            None => Ok(None),
            Some(p) => normalize_repo_path(&p)
                .map(Some)
                .map_err(|why| format!("has a `{kind}` source whose `path` {why}")),
        }
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
