//! The signing certificate's signed certificate timestamps (SCTs, RFC 6962 section 3.3):
//! a certificate-transparency log's signed promise to publish the precertificate Fulcio
//! submitted before issuing the certificate, embedded in it (extension
//! `1.3.6.1.4.1.11129.2.4.2`, a TLS-encoded `SignedCertificateTimestampList`). As
//! sigstore-js (`ctlogThreshold: 1`) and sigstore-go require, one SCT must verify: of a CT
//! log of the trusted root valid at the SCT's time, signed over the precertificate entry
//! (the issuer's key hash and the certificate's TBS without the SCT list).

use rustls_pki_types::SignatureVerificationAlgorithm;
use sha2::{Digest as _, Sha256};
use x509_cert::Certificate;
use x509_cert::der::asn1::{ObjectIdentifier, OctetString};
use x509_cert::der::{Decode as _, Encode as _};

use super::ProvenanceProblem as Problem;
use super::cert::{KeyError, verify_by_key_with};
use super::trust::Log;

/// The extension holding the SCT list.
pub(crate) const SCT_LIST: ObjectIdentifier =
    ObjectIdentifier::new_unwrap("1.3.6.1.4.1.11129.2.4.2");

/// One SCT, version 1.
struct Sct<'a> {
    log_id: &'a [u8],
    /// Milliseconds since the Unix epoch.
    timestamp: u64,
    extensions: &'a [u8],
    /// TLS's `SignatureAndHashAlgorithm`: the hash's and the signature's codes.
    algorithm: (u8, u8),
    signature: &'a [u8],
}

/// Checks that one SCT of `leaf` verifies: by a CT log of `ctlogs` valid at its time, over
/// the precertificate entry of the certificate whose issuer has this `SubjectPublicKeyInfo`
/// (DER).
pub(crate) fn check(leaf: &[u8], issuer_spki: &[u8], ctlogs: &[Log]) -> Result<(), Problem> {
    let malformed = |e: String| Problem::CertificateTimestamp(format!("malformed: {e}"));
    let cert = Certificate::from_der(leaf).map_err(|e| malformed(e.to_string()))?;
    let list = cert
        .tbs_certificate
        .extensions
        .iter()
        .flatten()
        .find(|e| e.extn_id == SCT_LIST)
        .map(|e| OctetString::from_der(e.extn_value.as_bytes()))
        .transpose()
        .map_err(|e| malformed(e.to_string()))?
        .ok_or_else(|| Problem::NoCertificateTimestamp("it has no SCT list".into()))?;
    let scts = parse_list(list.as_bytes()).map_err(malformed)?;
    let mut tbs = cert.tbs_certificate;
    if let Some(extensions) = tbs.extensions.as_mut() {
        extensions.retain(|e| e.extn_id != SCT_LIST);
    }
    let tbs = tbs.to_der().map_err(|e| malformed(e.to_string()))?;
    let issuer_key_hash = Sha256::digest(issuer_spki);
    let mut why = None;
    for sct in &scts {
        let seconds = i64::try_from(sct.timestamp / 1000).unwrap_or(i64::MAX);
        let Some(log) = ctlogs
            .iter()
            .find(|log| Sha256::digest(&log.key)[..] == *sct.log_id && log.valid.covers(seconds))
        else {
            continue;
        };
        let message = signed_data(sct, &issuer_key_hash, &tbs);
        match verify(sct, &log.key, &message) {
            Ok(()) => return Ok(()),
            Err(e) => why = Some(format!("{}: {e}", log.base_url)),
        }
    }
    Err(match why {
        Some(why) => Problem::CertificateTimestamp(why),
        None => Problem::NoCertificateTimestamp(format!(
            "its {} SCTs are of other logs, or of logs not valid at their time",
            scts.len()
        )),
    })
}

/// The `digitally-signed` struct of RFC 6962 section 3.2 for a precertificate entry.
fn signed_data(sct: &Sct<'_>, issuer_key_hash: &[u8], tbs: &[u8]) -> Vec<u8> {
    // Version v1, signature type certificate_timestamp.
    let mut message = vec![0, 0];
    message.extend_from_slice(&sct.timestamp.to_be_bytes());
    // Entry type precert_entry.
    message.extend_from_slice(&[0, 1]);
    message.extend_from_slice(issuer_key_hash);
    message.extend_from_slice(&(tbs.len() as u32).to_be_bytes()[1..]);
    message.extend_from_slice(tbs);
    message.extend_from_slice(&(sct.extensions.len() as u16).to_be_bytes());
    message.extend_from_slice(sct.extensions);
    message
}

/// Checks the SCT's signature by the log's key: ECDSA with SHA-256 (TLS codes 4, 3), what
/// Sigstore's CT logs sign with, or Ed25519 (8, 7).
fn verify(sct: &Sct<'_>, key: &[u8], message: &[u8]) -> Result<(), String> {
    let algorithms: &[&dyn SignatureVerificationAlgorithm] = match sct.algorithm {
        (4, 3) => &[
            webpki::aws_lc_rs::ECDSA_P256_SHA256,
            webpki::aws_lc_rs::ECDSA_P384_SHA256,
        ],
        (8, 7) => &[webpki::aws_lc_rs::ED25519],
        (hash, signature) => {
            return Err(format!(
                "its algorithm (hash {hash}, signature {signature}) is not ECDSA with SHA-256 or Ed25519"
            ));
        }
    };
    verify_by_key_with(algorithms, key, message, sct.signature).map_err(|e| match e {
        KeyError::BadSignature => "its signature does not verify with the log's key".into(),
        KeyError::Malformed(why) => why,
    })
}

/// The SCTs of version 1 of a `SignedCertificateTimestampList` (others are skipped, as RFC
/// 6962 says).
fn parse_list(bytes: &[u8]) -> Result<Vec<Sct<'_>>, String> {
    let mut outer = Reader(bytes);
    let mut list = Reader(outer.vec16()?);
    outer.end()?;
    let mut scts = Vec::new();
    while !list.0.is_empty() {
        let mut sct = Reader(list.vec16()?);
        if sct.u8()? != 0 {
            continue;
        }
        scts.push(Sct {
            log_id: sct.take(32)?,
            timestamp: u64::from_be_bytes(sct.take(8)?.try_into().expect("8 bytes")),
            extensions: sct.vec16()?,
            algorithm: (sct.u8()?, sct.u8()?),
            signature: sct.vec16()?,
        });
        sct.end()?;
    }
    Ok(scts)
}

/// A TLS presentation-language reader.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.0.len() < n {
            return Err("the SCT list is cut short".into());
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }

    /// A `opaque <0..2^16-1>`: its length in two bytes, then its bytes.
    fn vec16(&mut self) -> Result<&'a [u8], String> {
        let len = self.take(2)?;
        self.take(usize::from(u16::from_be_bytes([len[0], len[1]])))
    }

    fn end(&self) -> Result<(), String> {
        match self.0.is_empty() {
            true => Ok(()),
            false => Err("the SCT list has bytes past its end".into()),
        }
    }
}
