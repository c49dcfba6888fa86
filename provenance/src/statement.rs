//! The in-toto statement the envelope signs: its subject must be the package's purl with
//! the tarball's SHA-512, and its SLSA predicate says how the build ran (as the build
//! wrote it: signed, but not vouched for by anyone else).

use serde_json::Value;

use super::tlog::hex;
use super::{BuildClaims, Problem};

/// The payload type of an in-toto statement in a DSSE envelope.
pub(crate) const IN_TOTO: &str = "application/vnd.in-toto+json";

/// The purl npm names a package version with (`npm-package-arg`'s `toPurl`: a scope's `@`
/// written `%40`).
pub(crate) fn purl(name: &str, version: &str) -> String {
    let name = match name.strip_prefix('@') {
        Some(rest) => format!("%40{rest}"),
        None => name.to_string(),
    };
    format!("pkg:npm/{name}@{version}")
}

/// Checks the statement is of `predicate_type` about `purl` with this SHA-512, and reads
/// its claims.
pub(crate) fn check(
    payload: &[u8],
    predicate_type: &str,
    purl: &str,
    sha512: &[u8; 64],
) -> Result<BuildClaims, Problem> {
    let statement: Value = serde_json::from_slice(payload)
        .map_err(|e| Problem::Statement(format!("not JSON: {e}")))?;
    let kind = statement["_type"].as_str().unwrap_or_default();
    if !kind.starts_with("https://in-toto.io/Statement/") {
        return Err(Problem::Statement(format!("`_type` `{kind}` is unknown")));
    }
    if statement["predicateType"] != predicate_type {
        return Err(Problem::Statement(format!(
            "its predicate type is not `{predicate_type}`, as the registry listed it"
        )));
    }
    let subjects = statement["subject"].as_array().cloned().unwrap_or_default();
    let Some(subject) = subjects.iter().find(|s| s["name"] == purl) else {
        let names = subjects
            .iter()
            .map(|s| format!("`{}`", s["name"].as_str().unwrap_or_default()))
            .collect::<Vec<_>>()
            .join(", ");
        return Err(Problem::OtherPackage(names));
    };
    let recorded = subject["digest"]["sha512"].as_str().unwrap_or_default();
    if recorded != hex(sha512) {
        return Err(Problem::OtherDigest(format!("sha512 `{recorded}`")));
    }
    Ok(claims(predicate_type, &statement["predicate"]))
}

/// What the SLSA predicate says of the build: v1's `buildDefinition` and `runDetails`,
/// or v0.2's `invocation` and `builder`.
fn claims(predicate_type: &str, predicate: &Value) -> BuildClaims {
    let text = |v: &Value| v.as_str().map(str::to_owned);
    if predicate_type.ends_with("/v0.2") {
        let source = &predicate["invocation"]["configSource"];
        return BuildClaims {
            repository: text(&source["uri"]).map(|u| without_ref(&u)),
            workflow_path: text(&source["entryPoint"]),
            workflow_ref: text(&source["uri"]).and_then(|u| u.split_once('@').map(|p| p.1.into())),
            commit: text(&source["digest"]["sha1"]),
            builder: text(&predicate["builder"]["id"]),
            invocation: None,
        };
    }
    let definition = &predicate["buildDefinition"];
    let workflow = &definition["externalParameters"]["workflow"];
    let commit = definition["resolvedDependencies"]
        .as_array()
        .and_then(|deps| deps.iter().find_map(|d| text(&d["digest"]["gitCommit"])));
    BuildClaims {
        repository: text(&workflow["repository"]),
        workflow_path: text(&workflow["path"]),
        workflow_ref: text(&workflow["ref"]),
        commit,
        builder: text(&predicate["runDetails"]["builder"]["id"]),
        invocation: text(&predicate["runDetails"]["metadata"]["invocationId"]),
    }
}

/// `git+https://github.com/o/r@refs/heads/main` -> `https://github.com/o/r`.
fn without_ref(uri: &str) -> String {
    let uri = uri.strip_prefix("git+").unwrap_or(uri);
    uri.split_once('@').map_or(uri, |p| p.0).to_string()
}
