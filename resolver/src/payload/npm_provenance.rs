//! npm provenance: a package version whose registry document names
//! `dist.attestations.url` has its attestations document fetched once at `lock` and its
//! SLSA provenance verified offline ([`super::provenance`]) against the Sigstore trusted
//! root, the public-good instance's unless `$BERTH_SIGSTORE_TRUSTED_ROOT` names another
//! `trusted_root.json` (a private Sigstore). A provenance that does not verify refuses the
//! package; one that does is recorded on its `[[payload.npm]]` entry, and its document
//! is kept in the closure's store entry (`attestations/NAME@VERSION.json`, covered by the
//! payload's NAR hash). `sync` and `verify` fetch it again with the tarballs when the
//! entry is not in the store, and verify every recorded provenance again, offline, from
//! the entry: a record the lock holds counts only with the bundle that proves it.

use std::path::Path;

use berth_lockfile_schema::{LockedNpmPackage, LockedPayload, NpmProvenance};
use berth_transport::integrity::Integrity;
use berth_transport::registries::NpmConfig;
use berth_transport::url::without_userinfo;

use super::NotLocked;
use super::closure_of;
use super::provenance::{ProvenanceProblem as Problem, TrustedRoot, verify_npm_provenance};
use crate::context::{Env, run_parallel};
use crate::error::{ResolveError, SignatureRefused};
use crate::sources::npm_registry_document;

/// The folder of a closure's store entry holding its packages' attestations documents.
pub(super) const ATTESTATIONS_DIR: &str = "attestations";

/// The variable naming a `trusted_root.json` that replaces the public-good instance's.
const TRUSTED_ROOT_VAR: &str = "BERTH_SIGSTORE_TRUSTED_ROOT";

/// The trusted root provenance is verified against: `$BERTH_SIGSTORE_TRUSTED_ROOT`'s
/// file, else the pinned public-good root.
fn trusted_root() -> Result<TrustedRoot, ResolveError> {
    let Some(path) = std::env::var_os(TRUSTED_ROOT_VAR).filter(|p| !p.is_empty()) else {
        return Ok(TrustedRoot::public_good());
    };
    let what = format!(
        "the Sigstore trusted root `{}` (${TRUSTED_ROOT_VAR})",
        std::path::Path::new(&path).display()
    );
    let text = fs_err::read(&path)?;
    TrustedRoot::from_json(&text).map_err(|e| ResolveError::Payload {
        what,
        message: format!("{e}; give a Sigstore `trusted_root.json`, or unset the variable"),
    })
}

/// Which trusted root provenance is verified against, for a message.
fn trusted_root_described() -> String {
    match std::env::var_os(TRUSTED_ROOT_VAR).filter(|p| !p.is_empty()) {
        Some(path) => format!("the trusted root `{}`", Path::new(&path).display()),
        None => "the public-good trusted root pinned in this berth".to_owned(),
    }
}

/// The text of the trusted root provenance is verified against (what [`trusted_root`]
/// reads), for a verdict to name: a verdict reached under another root does not count.
pub(super) fn trusted_root_text() -> Vec<u8> {
    match std::env::var_os(TRUSTED_ROOT_VAR).filter(|p| !p.is_empty()) {
        Some(path) => fs_err::read(path).unwrap_or_default(),
        None => TrustedRoot::public_good_json().as_bytes().to_vec(),
    }
}

/// Verifies the provenance of every package of `packages` whose registry document names
/// an attestations document (`attestations[i]`, fetched from `registries[i]`) and records
/// what it names; the first package whose provenance does not verify is refused, the
/// refusal saying whose closure (`of`) it is in. Returns each package's attestations
/// document, to keep in the closure ([`write_attestations`]).
pub(super) fn verify_closure(
    env: &Env<'_>,
    (config, of): (&NpmConfig, &str),
    registries: &[String],
    packages: &mut [LockedNpmPackage],
    attestations: &[Option<String>],
) -> Result<Vec<Option<Vec<u8>>>, NotLocked> {
    if attestations.iter().all(Option::is_none) {
        return Ok(vec![None; packages.len()]);
    }
    let root = trusted_root()?;
    let checked = run_parallel(packages, env.settings.jobs, |i, package| {
        let Some(url) = &attestations[i] else {
            return Ok(None);
        };
        verified(env, (config, of), &registries[i], package, (url, &root)).map(Some)
    });
    let mut documents = Vec::with_capacity(packages.len());
    for (package, checked) in packages.iter_mut().zip(checked) {
        let (provenance, document) = checked?.unzip();
        package.provenance = provenance;
        documents.push(document);
    }
    Ok(documents)
}

/// Where a closure keeps the attestations document of `name@version`: npm's own spelling
/// of a scoped name in its URL (`@scope%2fname`), which no package name can contain.
fn document_path(name: &str, version: &str) -> String {
    format!(
        "{ATTESTATIONS_DIR}/{}@{version}.json",
        name.replace('/', "%2f")
    )
}

/// Writes each package's attestations document (`documents[i]`, `None` for a package
/// without provenance) into the closure at `root`.
pub(super) fn write_attestations(
    root: &Path,
    packages: &[LockedNpmPackage],
    documents: &[Option<Vec<u8>>],
) -> std::io::Result<()> {
    for (package, document) in packages.iter().zip(documents) {
        if let Some(document) = document {
            let path = root.join(document_path(package.name(), &package.version));
            fs_err::create_dir_all(path.parent().expect("a file in a folder"))?;
            fs_err::write(path, document)?;
        }
    }
    Ok(())
}

/// Fetches again the attestations document of every package of `packages` that records a
/// provenance, from the place the lock recorded (with this machine's credential for it),
/// into the closure at `root`, as `lock` kept it.
pub(super) fn fetch_attestations(
    env: &Env<'_>,
    (config, registry): (&NpmConfig, &str),
    packages: &[LockedNpmPackage],
    root: &Path,
) -> Result<(), ResolveError> {
    let fetched = run_parallel(packages, env.settings.jobs, |_, package| {
        let Some(provenance) = &package.provenance else {
            return Ok(None);
        };
        let credential = config.credential_for(&provenance.url, registry);
        let document = npm_registry_document(env, package.name(), &provenance.url, credential)?;
        Ok::<_, ResolveError>(Some(
            serde_json::to_vec(&document).expect("a JSON value serializes"),
        ))
    });
    let documents = fetched.into_iter().collect::<Result<Vec<_>, _>>()?;
    write_attestations(root, packages, &documents)?;
    Ok(())
}

/// Verifies again, offline, every provenance `payload`'s lock entry records, from the
/// attestations documents its closure at `root` keeps; the first that does not verify, or
/// names another build than the lock records, is refused.
pub(crate) fn refused_provenance(payload: &LockedPayload, root: &Path) -> Option<SignatureRefused> {
    let recorded: Vec<&LockedNpmPackage> = payload
        .npm
        .iter()
        .filter(|p| p.provenance.is_some())
        .collect();
    let first = recorded.first()?;
    let refused = |package: &LockedNpmPackage, why: String| SignatureRefused {
        package: format!("{}@{}", package.name(), package.version),
        of: closure_of(&payload.package, &payload.version),
        why,
        next: format!(
            "run `berth plugins lock --upgrade-plugin {}` to lock it again from its registry",
            payload.plugin
        ),
        policy: None,
    };
    let root_of_trust = match trusted_root() {
        Ok(found) => found,
        Err(e) => {
            return Some(refused(
                first,
                format!("its provenance cannot be checked: {e}"),
            ));
        }
    };
    recorded.into_iter().find_map(|package| {
        let why = again(package, root, &root_of_trust).err()?;
        Some(refused(package, why))
    })
}

/// Checks one package's recorded provenance against the document its closure keeps.
fn again(package: &LockedNpmPackage, root: &Path, trusted: &TrustedRoot) -> Result<(), String> {
    let recorded = package.provenance.as_ref().expect("a recorded provenance");
    let path = document_path(package.name(), &package.version);
    let document = fs_err::read(root.join(&path)).map_err(|_| {
        format!("the lock records a provenance, but its closure holds no `{path}` to prove it: the lock was changed after it was made, or written by an older berth")
    })?;
    let sha512 = Integrity::parse(&package.integrity)
        .and_then(|i| i.sha512())
        .ok_or_else(|| format!("its integrity `{}` has no SHA-512", package.integrity))?;
    let verified = verify_npm_provenance(
        &document,
        package.name(),
        &package.version,
        &sha512,
        trusted,
    )
    .map_err(|e| {
        let hint = match e.problem {
            Problem::UnknownLog(_) | Problem::Certificate(_) => format!(
                " (against {}; a lock made against another Sigstore's root needs ${TRUSTED_ROOT_VAR} to name that root here too)",
                trusted_root_described()
            ),
            _ => String::new(),
        };
        format!("its provenance does not verify: {}{hint}", e.problem)
    })?;
    let found = recorded_form(&verified, recorded.url.clone());
    if &found != recorded {
        return Err(format!(
            "its provenance names another build than the lock records (repository {}, workflow {}, log index {}): the lock was changed after it was made",
            found.repository.as_deref().unwrap_or("none"),
            found.workflow.as_deref().unwrap_or("none"),
            found.log_index
        ));
    }
    Ok(())
}

/// What the lock records of a verified provenance read from `url`.
fn recorded_form(provenance: &super::provenance::Provenance, url: String) -> NpmProvenance {
    // The certificate's fields (vouched for by the certificate authority), and the log's.
    let identity = &provenance.certificate;
    NpmProvenance {
        repository: identity.source_repository.clone(),
        commit: identity.source_commit.clone(),
        workflow: identity.build_workflow.clone(),
        issuer: identity.issuer.clone(),
        log_index: provenance.log_index,
        url,
    }
}

/// The provenance of `package`, from the attestations document at `url`, verified against
/// `root`, and that document.
fn verified(
    env: &Env<'_>,
    (config, of): (&NpmConfig, &str),
    registry: &str,
    package: &LockedNpmPackage,
    (url, root): (&str, &TrustedRoot),
) -> Result<(NpmProvenance, Vec<u8>), ResolveError> {
    let (name, version) = (package.name(), package.version.as_str());
    let refused = |message: String| ResolveError::Npm {
        package: format!("{name}@{version}"),
        message: format!("{of}, {message}; nothing was locked"),
    };
    let sha512 = Integrity::parse(&package.integrity).and_then(|i| i.sha512());
    let sha512 = sha512.ok_or_else(|| {
        refused(format!(
            "its integrity `{}` has no SHA-512 its provenance could name",
            package.integrity
        ))
    })?;
    let credential = config.credential_for(url, registry);
    let document = npm_registry_document(env, name, url, credential)?;
    let bytes = serde_json::to_vec(&document).expect("a JSON value serializes");
    let provenance = verify_npm_provenance(&bytes, name, version, &sha512, root)
        .map_err(|e| refused(format!("its provenance is refused: {}", e.problem)))?;
    Ok((recorded_form(&provenance, without_userinfo(url)), bytes))
}
