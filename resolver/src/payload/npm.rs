//! npm payloads: npm itself resolves the closure (`npm install --package-lock-only
//! --ignore-scripts` against the registry), berth reads its `package-lock.json`, fetches
//! every tarball, checks it against the lock's `integrity` and lays the closure out as
//! `node_modules/` in a staging folder that becomes a store entry.
//!
//! Which registry and which credentials are npm's configuration's, read by berth
//! ([`berth_transport::registries::NpmConfig`]) and handed to npm explicitly: the
//! registry on its command line, scoped registries and credentials in its environment
//! (never a file). Tarballs are fetched with the credential configured for their URL.

use std::path::Path;
use std::process::Command;

use berth_lockfile_schema::runner::PayloadWant;
use berth_lockfile_schema::{LockedNpmPackage, LockedPayload};
use berth_store::Staging;
use berth_transport::extract::ArchiveFormat;
use berth_transport::integrity::Integrity;
use berth_transport::registries::NpmConfig;
use berth_transport::url::{SourceUrl, scrub, without_userinfo};
use serde_json::Value;

use super::closure_of;
use super::npm_provenance::{fetch_attestations, write_attestations};
use super::npm_signed::signed_closure;
use super::{NotLocked, Staged};
use crate::context::Env;
use crate::context::RunKeys;
use crate::error::ResolveError;
use crate::sources::{
    ArchiveUrl, download, npm_document_url, npm_pick, npm_registry_document, npm_version_described,
    unpack,
};

/// The largest `package.json` of a payload berth reads.
const MAX_PACKAGE_JSON: u64 = 1 << 20;

/// Resolves an npm runner line with npm and stages its closure, every package's registry
/// signature verified (with `keys`, the registry keys this run read).
pub(super) fn lock_npm(
    env: &Env<'_>,
    want: &PayloadWant,
    keys: &RunKeys,
) -> Result<Staged, NotLocked> {
    let call = &want.call;
    let work = env.store.stage()?;
    let manifest = serde_json::json!({
        "name": "berth-payload",
        "version": "0.0.0",
        "private": true,
        "dependencies": {(call.package.clone()): call.requirement},
    });
    fs_err::write(work.path().join("package.json"), manifest.to_string())?;
    let config = npm_config(env)?;
    let registry = without_userinfo(config.registry_for(&call.package));
    let mut cmd = Command::new(std::env::var_os("BERTH_NPM").unwrap_or_else(|| "npm".into()));
    cmd.current_dir(work.path())
        .args([
            "install",
            "--package-lock-only",
            "--ignore-scripts",
            "--no-audit",
            "--no-fund",
            "--no-update-notifier",
            "--loglevel=error",
        ])
        .arg(format!("--registry={}", config.registry()))
        .envs(config.npm_env())
        .args(before(env))
        .env("npm_config_yes", "true");
    // Without npm the line could not run either: it is left as written.
    let out = cmd.output().map_err(|e| {
        NotLocked::Left(format!(
            "npm could not be run ({e}); berth resolves npm packages with npm: install Node.js, or set $BERTH_NPM"
        ))
    })?;
    if !out.status.success() {
        return Err(npm_failed(env, &out.stderr, config, &call.spec, &registry));
    }
    let text = fs_err::read_to_string(work.path().join("package-lock.json"))?;
    let lockfile: Value = serde_json::from_str(&text).map_err(|e| ResolveError::Payload {
        what: format!("`{}`", call.spec),
        message: format!("npm wrote a `package-lock.json` berth cannot read: {e}"),
    })?;
    let packages =
        closure(&lockfile, |name| config.registry_for(name).to_owned()).map_err(NotLocked::Left)?;
    let own = format!("node_modules/{}", call.package);
    let version = packages
        .iter()
        .find(|p| p.path == own)
        .map(|p| p.version.clone())
        .ok_or_else(|| NotLocked::Left(format!("npm's lock has no `{own}`")))?;
    report_held_back(env, want, &version, config, &registry);
    let of = closure_of(&call.package, &version);
    let signed = signed_closure(env, config, keys, packages, (&of, &want.plugin))?;
    let (packages, registry_keys) = (signed.packages, signed.keys);
    let staging = assemble_npm(env, &packages, config, &registry)?;
    write_attestations(staging.path(), &packages, &signed.attestations)?;
    let entry = bin_of(staging.path(), &own, &call.package, call.program.as_deref())
        .map_err(NotLocked::Left)?;
    Ok(Staged {
        version,
        registry,
        entry,
        python_version: None,
        npm: packages,
        wheels: Vec::new(),
        registry_keys,
        staging,
    })
}

/// Why npm could not resolve `spec` from `registry`, from its `stderr` (credentials
/// scrubbed, its first lines).
fn npm_failed(
    env: &Env<'_>,
    stderr: &[u8],
    config: &NpmConfig,
    spec: &str,
    registry: &str,
) -> NotLocked {
    let stderr = scrub(&String::from_utf8_lossy(stderr), &config.secrets());
    let message = stderr
        .lines()
        .filter(|l| !l.trim().is_empty())
        .take(6)
        .collect::<Vec<_>>()
        .join("; ");
    let cutoff = cutoff_hint(env, &message);
    ResolveError::Payload {
        what: format!("`{spec}` from `{registry}`"),
        message: format!("npm could not resolve it: {message}{cutoff}"),
    }
    .into()
}

/// npm's own release-age rule under the run's cutoff: `--before=CUTOFF`, only versions
/// published before it, for the package and its whole closure.
fn before(env: &Env<'_>) -> Option<String> {
    env.cutoff
        .as_ref()
        .map(|c| format!("--before={}", c.cutoff.to_rfc3339()))
}

/// Under a release-age cutoff, says which newer version of the line's package npm's
/// `--before` passed over: the registry's document is read once more (best effort:
/// nothing is said when it cannot be read, or the spec is one berth does not read).
fn report_held_back(
    env: &Env<'_>,
    want: &PayloadWant,
    version: &str,
    config: &NpmConfig,
    registry: &str,
) {
    let (Some(cutoff), call) = (&env.cutoff, &want.call) else {
        return;
    };
    let url = npm_document_url(config.registry_for(&call.package), &call.package);
    let credential = config.credential_for(&url, registry);
    let newest = npm_registry_document(env, &call.package, &url, credential).map(|document| {
        npm_pick(&call.package, &document, Some(&call.requirement), None)
            .ok()
            .filter(|p| p.version != version)
            .map(|p| npm_version_described(&document, &p.version))
    });
    match newest {
        Ok(Some(newer)) => env.reporter.status(
            "Held back",
            &format!(
                "`{}` at {version} for plugin `{}`: {newer} is newer than the cutoff {}",
                call.package,
                want.plugin,
                cutoff.describe()
            ),
        ),
        Ok(None) => {}
        Err(e) => tracing::debug!("the registry document of `{}`: {e}", call.package),
    }
}

/// What to add to npm's failure when the release-age cutoff left nothing (npm says `No
/// matching version … with a date before …`): which cutoff, and what to do.
fn cutoff_hint(env: &Env<'_>, message: &str) -> String {
    env.cutoff
        .as_ref()
        .filter(|_| message.contains("date before"))
        .map(|c| {
            format!(
                "; nothing it allows was published before the cutoff {}: ask for an older version, or move the cutoff",
                c.describe()
            )
        })
        .unwrap_or_default()
}

/// npm's configuration, or why it could not be read.
fn npm_config<'a>(env: &Env<'a>) -> Result<&'a NpmConfig, ResolveError> {
    env.settings
        .npm
        .as_ref()
        .map_err(|e| ResolveError::from(e.clone()))
}

/// A locked payload's closure fetched again, with the credentials this machine's
/// configuration has for its recorded registry (for a lock without one, the registry
/// its package would come from now), with the attestations documents of the packages
/// whose provenance the lock records.
pub(super) fn fetch_npm(env: &Env<'_>, payload: &LockedPayload) -> Result<Staging, NotLocked> {
    let config = npm_config(env)?;
    let registry = match &payload.registry {
        Some(recorded) => recorded.clone(),
        None => config.registry_for(&payload.package).to_owned(),
    };
    let closure = assemble_npm(env, &payload.npm, config, &registry)?;
    fetch_attestations(env, (config, &registry), &payload.npm, closure.path())?;
    Ok(closure)
}

/// Fetches every package of a closure (with the credential `config` has for each
/// tarball, or for `registry` on its host), checks its tarball against its integrity and
/// unpacks it at its `node_modules` path of a new staging folder.
fn assemble_npm(
    env: &Env<'_>,
    packages: &[LockedNpmPackage],
    config: &NpmConfig,
    registry: &str,
) -> Result<Staging, NotLocked> {
    let closure = env.store.stage()?;
    let limits = env.settings.archive_limits;
    for package in packages {
        let source = ArchiveUrl {
            url: SourceUrl::new(&package.url).map_err(ResolveError::from)?,
            format: ArchiveFormat::TarGz,
            credential: config.credential_for(&package.url, registry),
        };
        let expected = Integrity::parse(&package.integrity).ok_or_else(|| {
            NotLocked::Left(format!(
                "`{}` has no sha256/sha384/sha512 integrity",
                package.path
            ))
        })?;
        let (download, file, _) = download(env, &source)?;
        let actual = expected.of_file(&file)?;
        if actual != expected {
            return Err(ResolveError::NpmIntegrity {
                package: format!("{}@{}", package.path, package.version),
                tarball: source.url.shown.clone(),
                expected: expected.to_string(),
                actual: actual.to_string(),
            }
            .into());
        }
        let unpacked = unpack(env.store, &source, &file, None, limits)?;
        drop(download);
        let place = closure.path().join(&package.path);
        fs_err::create_dir_all(place.parent().expect("a node_modules path has a parent"))?;
        fs_err::rename(unpacked.staging.path(), &place)?;
    }
    Ok(closure)
}

/// The packages of npm's `package-lock.json` (version 2 or 3) to install, by path; a
/// package berth cannot lay out faithfully is the reason the line stays as written. A
/// package without `resolved` (npm leaves it out with `omit-lockfile-registry-resolved`)
/// is at its registry's standard place, `REGISTRY/NAME/-/BASENAME-VERSION.tgz`
/// (`registry_for` a name gives its registry, ending in `/`).
fn closure(
    lockfile: &Value,
    registry_for: impl Fn(&str) -> String,
) -> Result<Vec<LockedNpmPackage>, String> {
    let Some(packages) = lockfile.get("packages").and_then(Value::as_object) else {
        return Err("npm's lock has no `packages` (npm 7 or newer writes them)".to_owned());
    };
    let mut out = Vec::new();
    for (path, p) in packages {
        if path.is_empty() {
            continue;
        }
        let flag = |key: &str| p.get(key).and_then(Value::as_bool).unwrap_or(false);
        let name = path.rsplit("node_modules/").next().unwrap_or(path);
        if flag("link") {
            return Err(format!("`{name}` is a link, not a registry package"));
        }
        if flag("hasInstallScript") {
            return Err(format!(
                "`{name}` runs install scripts, which berth does not run"
            ));
        }
        if flag("optional") && (p.get("os").is_some() || p.get("cpu").is_some()) {
            return Err(format!(
                "`{name}` is an optional dependency for some platforms only, so one closure cannot serve every machine"
            ));
        }
        let text = |key: &str| p.get(key).and_then(Value::as_str).map(str::to_owned);
        let standard = |version: &String| {
            let bare = name.rsplit('/').next().unwrap_or(name);
            format!("{}{name}/-/{bare}-{version}.tgz", registry_for(name))
        };
        let resolved = text("resolved").or_else(|| text("version").as_ref().map(standard));
        let (Some(version), Some(url), Some(integrity)) =
            (text("version"), resolved, text("integrity"))
        else {
            return Err(format!(
                "npm's lock gives `{path}` no version, `resolved` URL or `integrity`"
            ));
        };
        if !(url.starts_with("https://") || url.starts_with("http://")) {
            return Err(format!("`{name}` comes from `{url}`, not a registry"));
        }
        out.push(LockedNpmPackage {
            path: path.clone(),
            // An alias (`"b": "npm:c@1"`) is at `node_modules/b`, and its registry knows it
            // as `c`.
            name: text("name").filter(|real| real != name),
            version,
            url,
            integrity,
            published: None,
            signature: None,
            provenance: None,
        });
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

/// The script the runner would run, as a path in the closure: the `bin` named `program`,
/// else the package's only `bin`, else the one named after the package (as `npx` picks).
fn bin_of(root: &Path, own: &str, package: &str, program: Option<&str>) -> Result<String, String> {
    let file = root.join(own).join("package.json");
    if fs_err::metadata(&file).map_err(|e| e.to_string())?.len() > MAX_PACKAGE_JSON {
        return Err(format!("`{own}/package.json` is too large"));
    }
    let text = fs_err::read_to_string(&file).map_err(|e| e.to_string())?;
    let manifest: Value =
        serde_json::from_str(&text).map_err(|e| format!("`{own}/package.json`: {e}"))?;
    let bare = package.rsplit('/').next().unwrap_or(package);
    let bins: Vec<(String, String)> = match manifest.get("bin") {
        Some(Value::String(path)) => vec![(bare.to_owned(), path.clone())],
        Some(Value::Object(map)) => map
            .iter()
            .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
            .collect(),
        _ => Vec::new(),
    };
    let chosen = match program {
        Some(wanted) => bins.iter().find(|(name, _)| name == wanted),
        None if bins.len() == 1 => bins.first(),
        None => bins.iter().find(|(name, _)| name == bare),
    };
    let Some((_, path)) = chosen else {
        let names: Vec<&str> = bins.iter().map(|(n, _)| n.as_str()).collect();
        return Err(format!(
            "`{package}` has no program `{}` to run (its `bin`: {})",
            program.unwrap_or(bare),
            if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(", ")
            }
        ));
    };
    let clean: Vec<&str> = path
        .split('/')
        .filter(|part| !part.is_empty() && *part != ".")
        .collect();
    if clean.is_empty() || clean.contains(&"..") {
        return Err(format!("`{package}`'s `bin` `{path}` leaves the package"));
    }
    let entry = format!("{own}/{}", clean.join("/"));
    if !root.join(&entry).is_file() {
        return Err(format!(
            "`{package}`'s `bin` `{path}` is not a file of the package"
        ));
    }
    Ok(entry)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npm_locks_become_closures_and_what_cannot_be_laid_out_is_named() {
        let lock = serde_json::json!({"lockfileVersion": 3, "packages": {
            "": {"dependencies": {"a": "^1"}},
            "node_modules/b": {"version": "2.0.0", "resolved": "http://127.0.0.1:1/b-2.0.0.tgz", "integrity": "sha512-x"},
            "node_modules/a": {"version": "1.1.0", "resolved": "http://127.0.0.1:1/a-1.1.0.tgz", "integrity": "sha512-y"},
            "node_modules/@s/c": {"version": "3.0.0", "integrity": "sha512-z"},
        }});
        let registry = |name: &str| {
            if name.starts_with("@s/") {
                "http://127.0.0.1:2/scoped/".to_owned()
            } else {
                "http://127.0.0.1:1/".to_owned()
            }
        };
        let got = closure(&lock, registry).expect("a closure");
        assert_eq!(
            got.iter().map(|p| p.path.as_str()).collect::<Vec<_>>(),
            ["node_modules/@s/c", "node_modules/a", "node_modules/b"]
        );
        assert_eq!(
            got[0].url, "http://127.0.0.1:2/scoped/@s/c/-/c-3.0.0.tgz",
            "its scope's registry's own place"
        );
        for (extra, why) in [
            (
                serde_json::json!({"hasInstallScript": true}),
                "install scripts",
            ),
            (
                serde_json::json!({"optional": true, "os": ["darwin"]}),
                "some platforms",
            ),
            (serde_json::json!({"link": true}), "a link"),
        ] {
            let mut lock = lock.clone();
            let entry = lock["packages"]["node_modules/b"]
                .as_object_mut()
                .expect("object");
            entry.extend(extra.as_object().expect("object").clone());
            let err = closure(&lock, registry).expect_err(why);
            assert!(err.contains(why), "{err}");
        }
    }
}
