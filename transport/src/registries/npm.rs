//! npm's registries and their credentials, as `npm config get registry` and
//! npm-registry-fetch find them: layers read highest first (berth's own override, the
//! `npm_config_*` environment, the project's `.npmrc`, the user's, the global one), each
//! key taken from the highest layer that sets it, `${VAR}` expanded as npm expands it.
//! A scoped package (`@acme/x`) uses `@acme:registry` when set, else `registry`; a URL's
//! credential is the one whose "nerf dart" key (`//host/path/:_authToken`) is the longest
//! prefix of it.

use std::collections::BTreeMap;
use std::path::PathBuf;

use base64::Engine as _;

use super::{ConfigError, ConfigInputs, expand_home};
use crate::auth::Credential;

/// The registry npm uses when nothing configures one.
pub const DEFAULT_NPM_REGISTRY: &str = "https://registry.npmjs.org/";

/// The suffixes of the credential keys berth reads (`certfile`/`keyfile`, client
/// certificates, are not supported).
const AUTH_KEYS: [&str; 4] = [":_authToken", ":_auth", ":username", ":_password"];

/// The keys and values of one place npm reads settings from.
type Layer = BTreeMap<String, String>;

/// The registries npm would use and the credentials it would send. Its `Debug` names the
/// credential keys, never their values.
#[derive(Clone, PartialEq, Eq)]
pub struct NpmConfig {
    /// `registry`, ending in `/`.
    registry: String,
    /// `@scope` -> its `@scope:registry`, ending in `/`.
    scopes: BTreeMap<String, String>,
    /// `//host/path/:_authToken` (and `:_auth`, `:username`, `:_password`) -> value.
    auth: BTreeMap<String, String>,
}

impl Default for NpmConfig {
    /// The public registry and no credentials (what a server that reads no user
    /// configuration uses).
    fn default() -> Self {
        Self {
            registry: DEFAULT_NPM_REGISTRY.to_owned(),
            scopes: BTreeMap::new(),
            auth: BTreeMap::new(),
        }
    }
}

impl std::fmt::Debug for NpmConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NpmConfig")
            .field("registry", &self.registry)
            .field("scopes", &self.scopes)
            .field("auth", &self.auth.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl NpmConfig {
    /// Reads npm's configuration; `berth_registry` (`$BERTH_NPM_REGISTRY`) is `registry`
    /// above every layer. The project's `.npmrc` is the one in `inputs.project_dir` (npm
    /// reads the one of the nearest folder up from its working folder that has a
    /// `package.json` or `node_modules`); the user's is `userconfig`, else `~/.npmrc`; the
    /// global one is `globalconfig`, else `etc/npmrc` under `prefix` (`$PREFIX`, else the
    /// folder above the folder of the `node` on `PATH`).
    pub fn load(
        inputs: &ConfigInputs<'_>,
        berth_registry: Option<&str>,
    ) -> Result<Self, ConfigError> {
        let mut layers: Vec<Layer> = Vec::new();
        if let Some(registry) = berth_registry.map(str::trim).filter(|r| !r.is_empty()) {
            layers.push(Layer::from([("registry".to_owned(), registry.to_owned())]));
        }
        layers.push(env_layer(inputs.env));
        if let Some(dir) = inputs.project_dir {
            layers.push(file_layer(inputs, dir.join(".npmrc"))?);
        }
        let user = match lookup(&layers, "userconfig") {
            Some(path) => Some(expand_home(path, inputs.home)),
            None => inputs.home.map(|home| home.join(".npmrc")),
        };
        if let Some(path) = user {
            layers.push(file_layer(inputs, path)?);
        }
        if let Some(path) = global_config(inputs, &layers) {
            layers.push(file_layer(inputs, path)?);
        }
        Ok(Self::from_layers(&layers))
    }

    /// The settings the layers (highest first) give.
    fn from_layers(layers: &[Layer]) -> Self {
        let mut merged = Layer::new();
        for layer in layers.iter().rev() {
            merged.extend(layer.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        let mut config = Self::default();
        for (key, value) in merged {
            if key == "registry" {
                config.registry = with_slash(&value);
            } else if let Some(scope) = key.strip_suffix(":registry")
                && scope.starts_with('@')
                && !scope.contains('/')
            {
                config.scopes.insert(scope.to_owned(), with_slash(&value));
            } else if key.starts_with("//") && AUTH_KEYS.iter().any(|s| key.ends_with(s)) {
                config.auth.insert(key, value);
            }
        }
        config
    }

    /// `registry`: where unscoped packages come from.
    pub fn registry(&self) -> &str {
        &self.registry
    }

    /// The registry `package` comes from: its scope's when one is configured.
    pub fn registry_for(&self, package: &str) -> &str {
        package
            .split_once('/')
            .filter(|(scope, _)| scope.starts_with('@'))
            .and_then(|(scope, _)| self.scopes.get(scope))
            .unwrap_or(&self.registry)
    }

    /// The credential npm would send with a request for `url`: the one under the longest
    /// `//host[:port]/path` prefix of `url` that has one (walking up a path component, or
    /// its trailing `/`, at a time); else, for another URL on `registry`'s host,
    /// `registry`'s own.
    pub fn credential_for(&self, url: &str, registry: &str) -> Option<Credential> {
        self.credential_at(url).or_else(|| {
            (url != registry && same_host(url, registry))
                .then(|| self.credential_at(registry))
                .flatten()
        })
    }

    fn credential_at(&self, url: &str) -> Option<Credential> {
        let parsed = url::Url::parse(url).ok()?;
        let host = match parsed.port() {
            Some(port) => format!("{}:{port}", parsed.host_str()?),
            None => parsed.host_str()?.to_owned(),
        };
        let mut key = format!("//{host}{}", parsed.path());
        while key.len() > 2 {
            if let Some(credential) = self.credential_of_key(&key) {
                return Some(credential);
            }
            match key.strip_suffix('/') {
                Some(shorter) => key.truncate(shorter.len()),
                None => key.truncate(key.rfind('/').map_or(0, |i| i + 1)),
            }
        }
        None
    }

    /// The credential configured exactly for `key` (`//host/path/`), in npm's order:
    /// `_authToken`, `_auth`, then `username` with `_password` (base64, as npm stores it).
    fn credential_of_key(&self, key: &str) -> Option<Credential> {
        let get = |suffix: &str| {
            self.auth
                .get(&format!("{key}{suffix}"))
                .filter(|v| !v.is_empty())
        };
        if let Some(token) = get(":_authToken") {
            return Some(Credential::Bearer(token.clone()));
        }
        if let Some(auth) = get(":_auth") {
            return Some(Credential::Basic(auth.clone()));
        }
        let (user, password) = (get(":username")?, get(":_password")?);
        let password = decode_password(password);
        let pair = format!("{user}:{password}");
        Some(Credential::Basic(
            base64::engine::general_purpose::STANDARD.encode(pair),
        ))
    }

    /// The variables that hand this configuration's scoped registries and credentials to
    /// an `npm` process (as `npm_config_@acme:registry`, `npm_config_//host/:_authToken`:
    /// npm keeps a nerf dart key as written); `registry` itself goes on its command line.
    pub fn npm_env(&self) -> Vec<(String, String)> {
        self.scopes
            .iter()
            .map(|(scope, url)| (format!("{scope}:registry"), url))
            .chain(self.auth.iter().map(|(k, v)| (k.clone(), v)))
            .map(|(key, value)| (format!("npm_config_{key}"), value.clone()))
            .collect()
    }

    /// Every credential value (and each decoded `_password`), to remove from anything
    /// npm says before it is shown.
    pub fn secrets(&self) -> Vec<String> {
        let mut secrets: Vec<String> = self
            .auth
            .values()
            .filter(|v| !v.is_empty())
            .cloned()
            .collect();
        for (key, value) in &self.auth {
            if key.ends_with(":_password") {
                secrets.push(decode_password(value));
            }
        }
        secrets.retain(|s| !s.is_empty());
        secrets
    }
}

/// `_password` as npm decodes it (base64); a value that is not base64 is taken as written.
fn decode_password(value: &str) -> String {
    let engine = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
    );
    engine
        .decode(value.trim())
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .unwrap_or_else(|| value.to_owned())
}

fn with_slash(url: &str) -> String {
    let url = url.trim();
    if url.ends_with('/') {
        url.to_owned()
    } else {
        format!("{url}/")
    }
}

fn same_host(a: &str, b: &str) -> bool {
    match (url::Url::parse(a), url::Url::parse(b)) {
        (Ok(a), Ok(b)) => a.host_str() == b.host_str() && a.port() == b.port(),
        _ => false,
    }
}

/// `key`'s value in the highest layer that sets it.
fn lookup<'a>(layers: &'a [Layer], key: &str) -> Option<&'a str> {
    layers
        .iter()
        .find_map(|layer| layer.get(key))
        .map(String::as_str)
        .filter(|v| !v.is_empty())
}

/// The global `npmrc`: `globalconfig`, else `etc/npmrc` under the prefix.
fn global_config(inputs: &ConfigInputs<'_>, layers: &[Layer]) -> Option<PathBuf> {
    if let Some(path) = lookup(layers, "globalconfig") {
        return Some(expand_home(path, inputs.home));
    }
    let prefix = match lookup(layers, "prefix").or_else(|| inputs.var("PREFIX")) {
        Some(prefix) => expand_home(prefix, inputs.home),
        // npm's default prefix: `/usr/local/bin/node` -> `/usr/local`.
        None => {
            let path = inputs.var("PATH")?;
            let node = std::env::split_paths(path)
                .map(|dir| dir.join("node"))
                .find(|node| node.is_file())?;
            let node = std::fs::canonicalize(node).ok()?;
            node.parent()?.parent()?.to_owned()
        }
    };
    Some(prefix.join("etc").join("npmrc"))
}

/// The `npm_config_*` variables as npm reads them: the prefix in any case, then the key
/// with `_` as `-` (but a leading one) and in lower case, except a nerf dart key
/// (`//host/:_authToken`), kept as written.
fn env_layer(env: &BTreeMap<String, String>) -> Layer {
    let mut layer = Layer::new();
    for (name, value) in env {
        let Some(key) = name
            .get(..11)
            .filter(|p| p.eq_ignore_ascii_case("npm_config_"))
            .map(|_| &name[11..])
        else {
            continue;
        };
        if value.is_empty() || key.is_empty() {
            continue;
        }
        let key = if key.starts_with("//") {
            key.to_owned()
        } else {
            key.char_indices()
                .map(|(i, c)| if i > 0 && c == '_' { '-' } else { c })
                .collect::<String>()
                .to_lowercase()
        };
        layer.insert(env_replace(&key, env), env_replace(value, env));
    }
    layer
}

/// The top-level settings of the ini file at `path` (none when it does not exist).
fn file_layer(inputs: &ConfigInputs<'_>, path: PathBuf) -> Result<Layer, ConfigError> {
    let Some(text) = inputs.read_file(&path)? else {
        return Ok(Layer::new());
    };
    Ok(parse_ini(&text)
        .into_iter()
        .map(|(k, v)| (env_replace(&k, inputs.env), env_replace(&v, inputs.env)))
        .collect())
}

/// The `key = value` lines of an ini text before its first `[section]`, as npm's `ini`
/// reads them: `;` and `#` start a comment (a value's too, unless escaped with `\`), a
/// quoted value is taken whole, a `key[]` (a list) is left out.
pub(super) fn parse_ini(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for line in text.split(['\r', '\n']) {
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with([';', '#']) {
            continue;
        }
        if trimmed.starts_with('[') && trimmed.trim_end().ends_with(']') {
            break;
        }
        let (key, value) = match line.split_once('=') {
            Some((key, value)) => (unquote(key), unquote(value)),
            None => (unquote(line), "true".to_owned()),
        };
        if key.is_empty() || key.ends_with("[]") {
            continue;
        }
        out.push((key, value));
    }
    out
}

/// npm's `ini` reading of a key or value: trimmed; quoted, the text between the quotes
/// (JSON for double quotes); else up to the first unescaped `;` or `#`.
fn unquote(raw: &str) -> String {
    let text = raw.trim();
    let quoted = |q: char| text.len() >= 2 && text.starts_with(q) && text.ends_with(q);
    if quoted('"') {
        return serde_json_like_unescape(&text[1..text.len() - 1]);
    }
    if quoted('\'') {
        return text[1..text.len() - 1].to_owned();
    }
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            ';' | '#' => break,
            '\\' => match chars.next() {
                Some(next @ ('\\' | ';' | '#')) => out.push(next),
                Some(next) => {
                    out.push('\\');
                    out.push(next);
                }
                None => out.push('\\'),
            },
            c => out.push(c),
        }
    }
    out.trim().to_owned()
}

/// The common JSON string escapes (`\"`, `\\`, `\/`, `\n`, `\t`); others kept as written.
fn serde_json_like_unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some(c @ ('"' | '\\' | '/')) => out.push(c),
            Some(c) => {
                out.push('\\');
                out.push(c);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// npm's `${VAR}` expansion: an unset variable stays as written, `${VAR?}` becomes empty
/// when unset, and backslashes before `$` escape it (half of them are kept).
pub(super) fn env_replace(text: &str, env: &BTreeMap<String, String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let Some(len) = rest[start + 2..].find('}') else {
            break;
        };
        let inner = &rest[start + 2..start + 2 + len];
        let (name, optional) = match inner.strip_suffix('?') {
            Some(name) => (name, true),
            None => (inner, false),
        };
        if name.is_empty() || name.contains(['$', '{', '?']) {
            out.push_str(&rest[..start + 2]);
            rest = &rest[start + 2..];
            continue;
        }
        let before = &rest[..start];
        let escapes = before.len() - before.trim_end_matches('\\').len();
        let end = start + 3 + len;
        out.push_str(&before[..before.len() - escapes]);
        out.push_str(&"\\".repeat(escapes / 2));
        if escapes % 2 == 1 {
            out.push_str(&rest[start..end]);
        } else {
            match env.get(name) {
                Some(value) => out.push_str(value),
                None if optional => {}
                None => out.push_str(&rest[start..end]),
            }
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}
