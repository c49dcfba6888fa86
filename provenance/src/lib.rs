//! npm provenance, verified offline: the SLSA provenance an npm package version carries
//! (`dist.attestations.url`, `GET /-/npm/v1/attestations/NAME@VERSION`) is a Sigstore
//! bundle, checked here against a Sigstore trusted root and the tarball's SHA-512 (its
//! `dist.integrity`) without contacting anything.
//!
//! Checked, in this order: the bundle's envelope is signed by its certificate's key
//! (`cert.rs`); the statement it signs names `pkg:npm/NAME@VERSION` with the tarball's
//! SHA-512 (`statement.rs`); its Rekor entry records this envelope, is signed by a log of
//! the trusted root (the signed entry timestamp, which makes its time a verified one) and
//! is included in the tree a checkpoint of that log signs (`tlog.rs`); the certificate
//! chains, for code signing, to a Fulcio CA of the trusted root, every certificate valid
//! at that time (`cert.rs`); one of the signed certificate timestamps embedded in the
//! certificate (a CT log's promise to publish its precertificate) is by a CT log of the
//! trusted root valid at the SCT's time and verifies over the precertificate the CA that
//! issued it submitted, as npm's verifier requires one (`sct.rs`). Not checked: RFC 3161
//! timestamps, which the trusted root lists (`trust.rs`), and whether the CT log did
//! publish the precertificate (no CT log is contacted).
//!
//! Why not the `sigstore` crate: its bundle verifier (0.15) checks neither the inclusion
//! proof nor the signed entry timestamp (`TODO … sigstore-rs#285` in its
//! `bundle/verify/verifier.rs`) and never reads the trusted root's log keys, reads a
//! `trusted_root.json` only with its TUF client (`sigstore-trust-root`), and its `verify`
//! feature brings an OIDC client, reqwest and a second RustCrypto generation: 97 crates
//! more for the workspace. The primitives here are maintained crates' (webpki's aws-lc-rs
//! algorithms and chain building, x509-cert, ct-merkle); berth's own code is the order of
//! the checks, the two text formats Rekor signs (the SET's JSON, the checkpoint note) and
//! the TLS encoding of RFC 6962's SCT and of what it signs.

mod bundle;
mod cert;
mod sct;
mod statement;
mod tlog;
mod trust;

#[cfg(test)]
mod tests;

pub use trust::{TrustedRoot, TrustedRootError};

use bundle::{Bundle, BundleVersion};
use cert::KeyError;

/// What a verified provenance names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provenance {
    /// The SLSA predicate type (`https://slsa.dev/provenance/v1`).
    pub predicate_type: String,
    /// What the Fulcio certificate names: vouched for by the CA, from the CI's OIDC token.
    pub certificate: BuildIdentity,
    /// What the statement's predicate says: signed by that identity, written by the build.
    pub statement: BuildClaims,
    /// The Rekor entry's index and the time the log recorded it (Unix seconds, verified).
    pub log_index: i64,
    pub integrated_time: i64,
}

/// The identity a Fulcio certificate names (its subject alternative name and Fulcio's
/// extensions `1.3.6.1.4.1.57264.1.*`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BuildIdentity {
    /// The subject alternative name: for GitHub Actions, the workflow with its ref.
    pub subject: String,
    /// The OIDC issuer (`https://token.actions.githubusercontent.com`).
    pub issuer: Option<String>,
    pub source_repository: Option<String>,
    /// The commit built.
    pub source_commit: Option<String>,
    pub source_ref: Option<String>,
    /// The workflow that signed (Build Signer URI, `…/release.yml@refs/heads/main`).
    pub build_workflow: Option<String>,
    pub runner_environment: Option<String>,
    pub run_invocation: Option<String>,
}

/// What the SLSA predicate says of the build.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BuildClaims {
    pub repository: Option<String>,
    pub workflow_path: Option<String>,
    pub workflow_ref: Option<String>,
    pub commit: Option<String>,
    pub builder: Option<String>,
    pub invocation: Option<String>,
}

/// An npm package version's provenance refused.
#[derive(Debug, thiserror::Error)]
#[error("the provenance of `{package}` is refused: {problem}")]
pub struct ProvenanceError {
    /// `NAME@VERSION`.
    pub package: String,
    pub problem: ProvenanceProblem,
}

/// What failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProvenanceProblem {
    #[error("the attestations document is not npm's: {0}")]
    Document(String),
    #[error("the registry lists no SLSA provenance for it")]
    NoProvenance,
    #[error("its Sigstore bundle is not read: {0}")]
    Bundle(String),
    #[error("the envelope's signature does not verify with the signing certificate's key{0}")]
    EnvelopeSignature(String),
    #[error("its in-toto statement is not usable: {0}")]
    Statement(String),
    #[error("the statement is about {0}, not this package")]
    OtherPackage(String),
    #[error("the statement names another tarball ({0}) than its `dist.integrity`")]
    OtherDigest(String),
    #[error("its transparency log entry does not match the bundle: {0}")]
    LogEntry(String),
    #[error("its transparency log is not one of the trusted root ({0})")]
    UnknownLog(String),
    #[error("the log entry has no signed entry timestamp, so no verified time")]
    NoVerifiedTime,
    #[error("the log's signed entry timestamp is refused: {0}")]
    SignedEntryTimestamp(String),
    #[error("the log's checkpoint is refused: {0}")]
    Checkpoint(String),
    #[error("the inclusion proof is broken: {0}")]
    InclusionProof(String),
    #[error(
        "the signing certificate is not from a certificate authority of the trusted root at the time the log recorded it: {0}"
    )]
    Certificate(String),
    #[error(
        "the signing certificate carries no signed certificate timestamp of a CT log of the trusted root ({0})"
    )]
    NoCertificateTimestamp(String),
    #[error(
        "the signing certificate's signed certificate timestamp of a CT log of the trusted root does not verify ({0})"
    )]
    CertificateTimestamp(String),
}

use ProvenanceProblem as Problem;

/// Verifies the SLSA provenance of npm's attestations document for `name@version`, whose
/// tarball has this SHA-512, against `root`, offline; returns what it names.
pub fn verify_npm_provenance(
    attestations: &[u8],
    name: &str,
    version: &str,
    sha512: &[u8; 64],
    root: &TrustedRoot,
) -> Result<Provenance, ProvenanceError> {
    verify(attestations, name, version, sha512, root).map_err(|problem| ProvenanceError {
        package: format!("{name}@{version}"),
        problem,
    })
}

fn verify(
    attestations: &[u8],
    name: &str,
    version: &str,
    sha512: &[u8; 64],
    root: &TrustedRoot,
) -> Result<Provenance, Problem> {
    let (predicate_type, bundle) = bundle::slsa_bundle(attestations)?;
    check_envelope(&bundle)?;
    let purl = statement::purl(name, version);
    let claims = statement::check(&bundle.payload, &predicate_type, &purl, sha512)?;
    let entry = &bundle.entry;
    tlog::check_body(&bundle)?;
    let log = tlog::log_of(root, entry)?;
    tlog::check_set(entry, log)?;
    match &entry.proof {
        Some(proof) => tlog::check_inclusion(entry, proof, log)?,
        // A v0.1 bundle may carry only the signed entry timestamp; from v0.2 on the proof
        // is required, as sigstore-go and sigstore-js require it.
        None if bundle.version == BundleVersion::V01 => {}
        None => return Err(Problem::InclusionProof("the bundle has none".into())),
    }
    let issuer = cert::verify_chain(&bundle.certificate, root, entry.integrated_time)
        .map_err(Problem::Certificate)?;
    sct::check(&bundle.certificate, &issuer, &root.ctlogs)?;
    Ok(Provenance {
        predicate_type,
        certificate: cert::identity(&bundle.certificate).map_err(Problem::Certificate)?,
        statement: claims,
        log_index: entry.log_index,
        integrated_time: entry.integrated_time,
    })
}

/// Checks the envelope holds an in-toto statement signed by the certificate's key, over
/// DSSE's pre-authentication encoding.
fn check_envelope(bundle: &Bundle) -> Result<(), Problem> {
    if bundle.payload_type != statement::IN_TOTO {
        return Err(Problem::Bundle(format!(
            "its envelope holds `{}`, not an in-toto statement",
            bundle.payload_type
        )));
    }
    let mut pae = format!(
        "DSSEv1 {} {} {} ",
        bundle.payload_type.len(),
        bundle.payload_type,
        bundle.payload.len()
    )
    .into_bytes();
    pae.extend_from_slice(&bundle.payload);
    cert::verify_by_certificate(&bundle.certificate, &pae, &bundle.signature).map_err(|e| {
        Problem::EnvelopeSignature(match e {
            KeyError::BadSignature => String::new(),
            KeyError::Malformed(why) => format!(" ({why})"),
        })
    })
}
