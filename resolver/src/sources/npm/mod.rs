//! npm packages as plugin sources (a marketplace entry `{"source": "npm", "package",
//! "version", "registry"}`): the registry's document picks the version and gives the
//! tarball's URL and `dist.integrity`; the tarball is then an archive source whose
//! download must match that integrity before it is unpacked.

use berth_lockfile_schema::{ArchiveFormat, NpmSignature, NpmSource};

use berth_transport::integrity::Integrity;
use berth_transport::url::SourceUrl;

use crate::context::{ActiveCutoff, Env};
use crate::error::ResolveError;
use crate::sources::archive::{ArchiveUrl, download_limited};

mod age;

pub(crate) use age::described;

/// The public registry, used when an entry names none.
pub(crate) const DEFAULT_REGISTRY: &str = "https://registry.npmjs.org";

/// The largest registry document read (a package with thousands of versions is a few MB).
const MAX_DOCUMENT_BYTES: u64 = 64 << 20;

/// What a registry says one version of a package is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NpmPick {
    /// The version picked.
    pub(crate) version: String,
    /// `dist.tarball`.
    pub(crate) tarball: String,
    /// `dist.integrity`: the strongest hash it lists.
    pub(crate) integrity: Integrity,
    /// What a release-age cutoff passed over: `1.1.0 (published 2026-12-01)`.
    pub(crate) held_back: Option<String>,
    /// The package as the lock records it: `dist.integrity` as written (what the
    /// registry signed) and `time[version]`; its signature is chosen once checked.
    pub(crate) source: NpmSource,
    /// `dist.signatures`.
    pub(crate) signatures: Vec<NpmSignature>,
}

/// Which versions a request allows besides the one it picks, for a cutoff to fall back
/// on.
#[derive(Debug, Clone)]
pub(crate) enum Allowed {
    /// Only that version (an exact one).
    Exactly,
    /// A dist-tag's: releases up to the tagged version (pre-releases only if it is one), as
    /// npm's `--before` falls back.
    UpTo(String),
    /// A range's: every version it matches.
    Matching(semver::VersionReq),
}

/// The document URL of `package` in `registry` (a scoped name's `/` is `%2f`).
pub(crate) fn document_url(registry: &str, package: &str) -> String {
    format!(
        "{}/{}",
        registry.trim_end_matches('/'),
        package.replace('/', "%2f")
    )
}

/// Picks `wanted` (an exact version, a dist-tag, a semver range; `None`: `latest`) from a
/// registry document; under a release-age `cutoff`, a version published before it
/// ([`age::under_cutoff`]).
pub(crate) fn pick(
    package: &str,
    document: &serde_json::Value,
    wanted: Option<&str>,
    cutoff: Option<&ActiveCutoff>,
) -> Result<NpmPick, String> {
    let versions = document
        .get("versions")
        .and_then(serde_json::Value::as_object)
        .ok_or_else(|| format!("the registry's document for `{package}` has no `versions`"))?;
    let tag = |name: &str| {
        document
            .get("dist-tags")
            .and_then(|t| t.get(name))
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned)
    };
    let wanted = wanted.map(str::trim).filter(|w| !w.is_empty());
    let (best, rule) = match wanted {
        None => {
            let latest = tag("latest")
                .ok_or_else(|| format!("`{package}` has no `latest` dist-tag; give a `version`"))?;
            (latest.clone(), Allowed::UpTo(latest))
        }
        Some(w) if versions.contains_key(w) => (w.to_owned(), Allowed::Exactly),
        Some(w) if let Some(v) = tag(w) => (v.clone(), Allowed::UpTo(v)),
        Some(w) => best_in_range(package, versions, w)?,
    };
    let (version, held_back) = match cutoff {
        Some(cutoff) => age::under_cutoff(package, document, &best, &rule, cutoff)?,
        None => (best, None),
    };
    let entry = versions.get(&version).ok_or_else(|| {
        format!("`{package}`'s dist-tag names version `{version}`, which it does not list")
    })?;
    let dist = entry.get("dist");
    let text = |key: &str| {
        dist.and_then(|d| d.get(key))
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned)
    };
    let tarball =
        text("tarball").ok_or_else(|| format!("`{package}@{version}` has no `dist.tarball`"))?;
    // A registry's answer is someone else's input: its tarball is a remote URL, never a
    // file on this machine, and names no environment variable.
    let lower = tarball.to_ascii_lowercase();
    if !(lower.starts_with("https://") || lower.starts_with("http://")) || tarball.contains("${") {
        return Err(format!(
            "`{package}@{version}` has `dist.tarball` `{tarball}`, which is not a plain http(s) URL; berth fetches a registry's tarballs only from http(s) URLs without `${{`"
        ));
    }
    let written = text("integrity").unwrap_or_default();
    let integrity = Integrity::parse(&written)
        .ok_or_else(|| {
            format!(
                "`{package}@{version}` has no sha256/sha384/sha512 `dist.integrity`; berth does not fetch a tarball it cannot check"
            )
        })?;
    let (source, signatures) = recorded(package, document, &version, written);
    Ok(NpmPick {
        source,
        signatures,
        version,
        tarball,
        integrity,
        held_back,
    })
}

/// What the lock records of `package@version` (its `dist.integrity` as `written`, its
/// publish time), and its `dist.signatures`, from its registry's `document`.
fn recorded(
    package: &str,
    document: &serde_json::Value,
    version: &str,
    written: String,
) -> (NpmSource, Vec<NpmSignature>) {
    let signatures = document
        .get("versions")
        .and_then(|v| v.get(version))
        .and_then(|entry| entry.pointer("/dist/signatures"))
        .and_then(serde_json::Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| serde_json::from_value::<NpmSignature>(s.clone()).ok())
        .filter(|s| !s.keyid.is_empty() && !s.sig.is_empty())
        .collect();
    let published = document
        .get("time")
        .and_then(|t| t.get(version))
        .and_then(serde_json::Value::as_str)
        .filter(|at| at.parse::<jiff::Timestamp>().is_ok())
        .map(str::to_owned);
    let source = NpmSource {
        package: package.to_owned(),
        version: version.to_owned(),
        integrity: written,
        published,
        signature: None,
    };
    (source, signatures)
}

/// `package`'s registry document at `url`, fetched with `credential` (bounded in size).
pub(crate) fn registry_document(
    env: &Env<'_>,
    package: &str,
    url: &str,
    credential: Option<berth_transport::auth::Credential>,
) -> Result<serde_json::Value, ResolveError> {
    let source = ArchiveUrl {
        url: SourceUrl::new(url)?,
        format: ArchiveFormat::TarGz,
        credential,
    };
    let mut limits = env.settings.archive_limits;
    limits.max_bytes = limits.max_bytes.min(MAX_DOCUMENT_BYTES);
    let (staging, file, _) = download_limited(env, &source, limits)?;
    let bytes = fs_err::read(&file)?;
    drop(staging);
    serde_json::from_slice(&bytes).map_err(|e| ResolveError::Npm {
        package: package.to_owned(),
        message: format!("`{}` is not a registry document: {e}", source.url.shown),
    })
}

/// The highest of `versions` the npm range `w` matches (npm's space-separated comparators
/// read as Cargo's comma-separated ones), and the rule that it is.
fn best_in_range(
    package: &str,
    versions: &serde_json::Map<String, serde_json::Value>,
    w: &str,
) -> Result<(String, Allowed), String> {
    // npm's bare `1.2.3` is that version exactly.
    if semver::Version::parse(w.trim_start_matches(['v', '='])).is_ok() {
        return Err(format!("`{package}` has no version `{w}`"));
    }
    let cargo_form = w.split_whitespace().collect::<Vec<_>>().join(", ");
    let req = semver::VersionReq::parse(&cargo_form).map_err(|e| {
        format!("`version = \"{w}\"` of `{package}` is not a version, dist-tag or range berth reads ({e}; `||` is not supported)")
    })?;
    let best = versions
        .keys()
        .filter_map(|k| semver::Version::parse(k).ok().map(|v| (v, k)))
        .filter(|(v, _)| req.matches(v))
        .max_by(|a, b| a.0.cmp(&b.0))
        .map(|(_, k)| k.clone())
        .ok_or_else(|| format!("no version of `{package}` matches `{w}`"))?;
    Ok((best, Allowed::Matching(req)))
}

/// Reads `package`'s document from `registry` and picks `version` in it.
pub(crate) fn pick_from_registry(
    env: &Env<'_>,
    package: &str,
    version: Option<&str>,
    registry: Option<&str>,
) -> Result<NpmPick, ResolveError> {
    let version = version.filter(|_| !env.settings.npm_latest);
    let url = document_url(registry.unwrap_or(DEFAULT_REGISTRY), package);
    env.settings
        .require_network(|| format!("the npm registry's `{package}`"))?;
    let document = registry_document(env, package, &url, None)?;
    let picked = pick(package, &document, version, env.cutoff.as_ref()).map_err(|message| {
        ResolveError::Npm {
            package: package.to_owned(),
            message,
        }
    })?;
    if let (Some(held), Some(cutoff)) = (&picked.held_back, &env.cutoff) {
        env.reporter.status(
            "Held back",
            &format!(
                "`{package}` at {}: {held} is newer than the cutoff {}",
                picked.version,
                cutoff.describe()
            ),
        );
    }
    Ok(picked)
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;

    use super::*;
    use serde_json::json;

    fn doc() -> serde_json::Value {
        let dist = |v: &str| {
            json!({"tarball": format!("https://r/t/-/t-{v}.tgz"),
                   "integrity": format!("sha1-AAAA sha512-{}", base64::engine::general_purpose::STANDARD.encode([7u8; 64]))})
        };
        json!({
            "dist-tags": {"latest": "1.2.0", "next": "2.0.0-beta.1"},
            "versions": {
                "1.0.0": {"dist": dist("1.0.0")},
                "1.2.0": {"dist": dist("1.2.0")},
                "1.3.0": {"dist": dist("1.3.0")},
                "2.0.0-beta.1": {"dist": dist("2.0.0-beta.1")},
                "0.9.0": {"dist": {"tarball": "https://r/old.tgz", "shasum": "abc"}}
            }
        })
    }

    #[test]
    fn versions_tags_and_ranges_pick_as_npm_does() {
        let d = doc();
        let v = |w: Option<&str>| pick("t", &d, w, None).map(|p| p.version);
        assert_eq!(v(None).as_deref(), Ok("1.2.0"));
        assert_eq!(v(Some("next")).as_deref(), Ok("2.0.0-beta.1"));
        assert_eq!(v(Some("1.0.0")).as_deref(), Ok("1.0.0"));
        assert_eq!(v(Some("^1.0.0")).as_deref(), Ok("1.3.0"));
        assert_eq!(v(Some(">=1.0.0 <1.3.0")).as_deref(), Ok("1.2.0"));
        assert!(
            v(Some("1.1.0"))
                .expect_err("an error")
                .contains("no version `1.1.0`")
        );
        assert!(
            v(Some("^3"))
                .expect_err("an error")
                .contains("no version of `t` matches")
        );
        assert!(
            v(Some("0.9.0"))
                .expect_err("an error")
                .contains("no sha256/sha384/sha512")
        );
        let p = pick("t", &d, None, None).expect("pick");
        assert_eq!(p.tarball, "https://r/t/-/t-1.2.0.tgz");
        assert!(
            p.integrity.to_string().starts_with("sha512-"),
            "the strongest hash"
        );
    }

    #[test]
    fn scoped_names_are_escaped_in_the_document_url() {
        assert_eq!(
            document_url("https://r.example/", "@acme/tools"),
            "https://r.example/@acme%2ftools"
        );
    }

    #[test]
    fn a_registry_tarball_on_this_machine_or_with_a_variable_is_refused() {
        let integrity = format!(
            "sha512-{}",
            base64::engine::general_purpose::STANDARD.encode([7u8; 64])
        );
        for tarball in ["file:///etc/passwd", "/etc/x.tgz", "https://h/${HOME}.tgz"] {
            let d = json!({
                "dist-tags": {"latest": "1.0.0"},
                "versions": {"1.0.0": {"dist": {"tarball": tarball, "integrity": integrity}}}
            });
            let err = pick("t", &d, None, None)
                .map(|p| p.tarball)
                .expect_err(tarball);
            assert!(err.contains("not a plain http(s) URL"), "{tarball}: {err}");
        }
    }
}
