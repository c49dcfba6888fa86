//! npm provenance at `lock`: a package version whose registry document names
//! `dist.attestations.url` has its attestations document fetched once and its SLSA
//! provenance verified offline ([`super::provenance`]) against the Sigstore trusted root,
//! the public-good instance's unless `$BERTH_SIGSTORE_TRUSTED_ROOT` names another
//! `trusted_root.json` (a private Sigstore). A provenance that does not verify refuses the
//! package; one that does is recorded on its `[[payload.npm]]` entry. `sync` trusts that
//! record: nothing here runs again offline.

use berth_lockfile_schema::{LockedNpmPackage, NpmProvenance};
use berth_transport::integrity::Integrity;
use berth_transport::registries::NpmConfig;

use super::NotLocked;
use super::provenance::{TrustedRoot, verify_npm_provenance};
use crate::context::{Env, run_parallel};
use crate::error::ResolveError;
use crate::sources::npm_registry_document;

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

/// Verifies the provenance of every package of `packages` whose registry document names
/// an attestations document (`attestations[i]`, fetched from `registries[i]`) and records
/// what it names; the first package whose provenance does not verify is refused, the
/// refusal saying whose closure (`of`) it is in.
pub(super) fn verify_closure(
    env: &Env<'_>,
    (config, of): (&NpmConfig, &str),
    registries: &[String],
    packages: &mut [LockedNpmPackage],
    attestations: &[Option<String>],
) -> Result<(), NotLocked> {
    if attestations.iter().all(Option::is_none) {
        return Ok(());
    }
    let root = trusted_root()?;
    let checked = run_parallel(packages, env.settings.jobs, |i, package| {
        let Some(url) = &attestations[i] else {
            return Ok(None);
        };
        verified(env, (config, of), &registries[i], package, (url, &root)).map(Some)
    });
    for (package, provenance) in packages.iter_mut().zip(checked) {
        package.provenance = provenance?;
    }
    Ok(())
}

/// The provenance of `package`, from the attestations document at `url`, verified against
/// `root`.
fn verified(
    env: &Env<'_>,
    (config, of): (&NpmConfig, &str),
    registry: &str,
    package: &LockedNpmPackage,
    (url, root): (&str, &TrustedRoot),
) -> Result<NpmProvenance, ResolveError> {
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
    // The certificate's fields (vouched for by the certificate authority), and the log's.
    let identity = provenance.certificate;
    Ok(NpmProvenance {
        repository: identity.source_repository,
        commit: identity.source_commit,
        workflow: identity.build_workflow,
        issuer: identity.issuer,
        log_index: provenance.log_index,
    })
}
