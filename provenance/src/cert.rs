//! The signing certificate: its chain to a Fulcio CA of the trusted root (webpki, at the
//! time the log recorded the entry), signatures checked with its key or a log's, and the
//! build identity its Fulcio extensions name (read with x509-cert).

use rustls_pki_types::{
    CertificateDer, SignatureVerificationAlgorithm, SubjectPublicKeyInfoDer, UnixTime,
};
use webpki::{EndEntityCert, KeyUsage, RawPublicKeyEntity};
use x509_cert::Certificate;
use x509_cert::der::asn1::{ObjectIdentifier, Utf8StringRef};
use x509_cert::der::{Decode as _, Encode as _};
use x509_cert::ext::pkix::SubjectAltName;
use x509_cert::ext::pkix::name::GeneralName;

use super::BuildIdentity;
use super::trust::TrustedRoot;

/// The algorithms a Sigstore key signs with: Fulcio's CAs (P-384), leaf keys and Rekor's
/// log key (P-256), Rekor v2 logs (Ed25519).
const ALGORITHMS: &[&dyn SignatureVerificationAlgorithm] = &[
    webpki::aws_lc_rs::ECDSA_P256_SHA256,
    webpki::aws_lc_rs::ECDSA_P384_SHA384,
    webpki::aws_lc_rs::ECDSA_P256_SHA384,
    webpki::aws_lc_rs::ECDSA_P384_SHA256,
    webpki::aws_lc_rs::ED25519,
];

/// `1.3.6.1.5.5.7.3.3`, code signing: Fulcio's leaf and intermediate certificates say it.
const CODE_SIGNING: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x03];

/// Fulcio's extensions, under `1.3.6.1.4.1.57264.1`.
mod fulcio {
    use super::ObjectIdentifier;

    /// The OIDC issuer, raw bytes (deprecated by `ISSUER_V2`).
    pub(super) const ISSUER_V1: ObjectIdentifier =
        ObjectIdentifier::new_unwrap("1.3.6.1.4.1.57264.1.1");
    /// The workflow's commit, raw bytes (deprecated by `SOURCE_DIGEST`).
    pub(super) const WORKFLOW_SHA: ObjectIdentifier =
        ObjectIdentifier::new_unwrap("1.3.6.1.4.1.57264.1.3");
    pub(super) const ISSUER_V2: ObjectIdentifier =
        ObjectIdentifier::new_unwrap("1.3.6.1.4.1.57264.1.8");
    /// The workflow that ran the build, with its ref (`…/release.yml@refs/heads/main`).
    pub(super) const BUILD_SIGNER_URI: ObjectIdentifier =
        ObjectIdentifier::new_unwrap("1.3.6.1.4.1.57264.1.9");
    pub(super) const RUNNER_ENVIRONMENT: ObjectIdentifier =
        ObjectIdentifier::new_unwrap("1.3.6.1.4.1.57264.1.11");
    pub(super) const SOURCE_URI: ObjectIdentifier =
        ObjectIdentifier::new_unwrap("1.3.6.1.4.1.57264.1.12");
    pub(super) const SOURCE_DIGEST: ObjectIdentifier =
        ObjectIdentifier::new_unwrap("1.3.6.1.4.1.57264.1.13");
    pub(super) const SOURCE_REF: ObjectIdentifier =
        ObjectIdentifier::new_unwrap("1.3.6.1.4.1.57264.1.14");
    pub(super) const RUN_INVOCATION_URI: ObjectIdentifier =
        ObjectIdentifier::new_unwrap("1.3.6.1.4.1.57264.1.21");
}

/// Why a certificate, a key or a signature was refused.
#[derive(Debug)]
pub(crate) enum KeyError {
    /// Not a certificate or a key webpki reads.
    Malformed(String),
    /// Not a signature by this key.
    BadSignature,
}

/// Checks `signature` over `message` by the certificate's key.
pub(crate) fn verify_by_certificate(
    certificate: &[u8],
    message: &[u8],
    signature: &[u8],
) -> Result<(), KeyError> {
    let der = CertificateDer::from(certificate);
    let cert = EndEntityCert::try_from(&der).map_err(|e| KeyError::Malformed(e.to_string()))?;
    first_algorithm(|alg| cert.verify_signature(alg, message, signature))
}

/// Checks `signature` over `message` by a DER `SubjectPublicKeyInfo`.
pub(crate) fn verify_by_key(spki: &[u8], message: &[u8], signature: &[u8]) -> Result<(), KeyError> {
    verify_by_key_with(ALGORITHMS, spki, message, signature)
}

/// [`verify_by_key`] with the first of these algorithms that fits the key.
pub(crate) fn verify_by_key_with(
    algorithms: &[&dyn SignatureVerificationAlgorithm],
    spki: &[u8],
    message: &[u8],
    signature: &[u8],
) -> Result<(), KeyError> {
    let der = SubjectPublicKeyInfoDer::from(spki);
    let key = RawPublicKeyEntity::try_from(&der).map_err(|e| KeyError::Malformed(e.to_string()))?;
    first_algorithm_of(algorithms, |alg| {
        key.verify_signature(alg, message, signature)
    })
}

/// The result of the first algorithm that fits the key.
fn first_algorithm(
    verify: impl Fn(&dyn SignatureVerificationAlgorithm) -> Result<(), webpki::Error>,
) -> Result<(), KeyError> {
    first_algorithm_of(ALGORITHMS, verify)
}

/// The result of the first of `algorithms` that fits the key.
fn first_algorithm_of(
    algorithms: &[&dyn SignatureVerificationAlgorithm],
    verify: impl Fn(&dyn SignatureVerificationAlgorithm) -> Result<(), webpki::Error>,
) -> Result<(), KeyError> {
    for alg in algorithms {
        match verify(*alg) {
            Ok(()) => return Ok(()),
            Err(webpki::Error::UnsupportedSignatureAlgorithmForPublicKeyContext(_)) => continue,
            Err(webpki::Error::InvalidSignatureForPublicKey) => return Err(KeyError::BadSignature),
            Err(e) => return Err(KeyError::Malformed(e.to_string())),
        }
    }
    Err(KeyError::Malformed(
        "its key is not of the signature's algorithm (P-256, P-384 or Ed25519)".into(),
    ))
}

/// Checks that the certificate chains, for code signing, to a certificate authority of
/// the trusted root valid at `time` (Unix seconds), every certificate of the chain valid
/// then; returns the `SubjectPublicKeyInfo` (DER) of the certificate that issued it, an
/// intermediate or the root of that authority. The error says why the last authority tried
/// refused it.
pub(crate) fn verify_chain(
    certificate: &[u8],
    root: &TrustedRoot,
    time: i64,
) -> Result<Vec<u8>, String> {
    let der = CertificateDer::from(certificate);
    let cert = EndEntityCert::try_from(&der).map_err(|e| e.to_string())?;
    let at = UnixTime::since_unix_epoch(std::time::Duration::from_secs(
        u64::try_from(time).map_err(|_| format!("time {time} is before 1970"))?,
    ));
    let mut why = "no certificate authority of the trusted root is valid then".to_string();
    for authority in root
        .certificate_authorities
        .iter()
        .filter(|a| a.valid.covers(time))
    {
        let Some((anchor_der, intermediates)) = authority.chain.split_last() else {
            continue;
        };
        let anchor = CertificateDer::from(anchor_der.as_slice());
        let anchor = webpki::anchor_from_trusted_cert(&anchor).map_err(|e| e.to_string())?;
        let intermediates: Vec<CertificateDer<'_>> = intermediates
            .iter()
            .map(|c| CertificateDer::from(c.as_slice()))
            .collect();
        match cert.verify_for_usage(
            ALGORITHMS,
            &[anchor],
            &intermediates,
            at,
            KeyUsage::required(CODE_SIGNING),
            None,
            None,
        ) {
            Ok(path) => {
                return match path.intermediate_certificates().next() {
                    Some(issuer) => Ok(issuer.subject_public_key_info().as_ref().to_vec()),
                    None => spki_of(anchor_der),
                };
            }
            Err(e) => why = e.to_string(),
        }
    }
    Err(why)
}

/// The DER `SubjectPublicKeyInfo` of a certificate.
fn spki_of(certificate: &[u8]) -> Result<Vec<u8>, String> {
    Certificate::from_der(certificate)
        .and_then(|c| c.tbs_certificate.subject_public_key_info.to_der())
        .map_err(|e| e.to_string())
}

/// The identity the certificate names: its subject alternative name and Fulcio's
/// extensions.
pub(crate) fn identity(certificate: &[u8]) -> Result<BuildIdentity, String> {
    let cert = Certificate::from_der(certificate).map_err(|e| e.to_string())?;
    let extensions = cert.tbs_certificate.extensions.unwrap_or_default();
    let value = |oid: ObjectIdentifier| {
        extensions
            .iter()
            .find(|e| e.extn_id == oid)
            .map(|e| e.extn_value.as_bytes())
    };
    // Fulcio's first extensions hold raw bytes; those from `.8` on, a DER UTF8String.
    let raw = |oid| value(oid).map(|v| String::from_utf8_lossy(v).into_owned());
    let utf8 = |oid| {
        value(oid).and_then(|v| {
            Utf8StringRef::from_der(v)
                .ok()
                .map(|s| s.as_str().to_owned())
        })
    };
    let san = value(ObjectIdentifier::new_unwrap("2.5.29.17"))
        .and_then(|v| SubjectAltName::from_der(v).ok())
        .and_then(|san| san.0.into_iter().find_map(name));
    Ok(BuildIdentity {
        subject: san.unwrap_or_default(),
        issuer: utf8(fulcio::ISSUER_V2).or_else(|| raw(fulcio::ISSUER_V1)),
        source_repository: utf8(fulcio::SOURCE_URI),
        source_commit: utf8(fulcio::SOURCE_DIGEST).or_else(|| raw(fulcio::WORKFLOW_SHA)),
        source_ref: utf8(fulcio::SOURCE_REF),
        build_workflow: utf8(fulcio::BUILD_SIGNER_URI),
        runner_environment: utf8(fulcio::RUNNER_ENVIRONMENT),
        run_invocation: utf8(fulcio::RUN_INVOCATION_URI),
    })
}

/// A URI or an e-mail address of a subject alternative name.
fn name(general: GeneralName) -> Option<String> {
    match general {
        GeneralName::UniformResourceIdentifier(uri) => Some(uri.to_string()),
        GeneralName::Rfc822Name(mail) => Some(mail.to_string()),
        _ => None,
    }
}
