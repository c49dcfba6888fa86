//! A Sigstore trusted root (`trusted_root.json`, media type
//! `application/vnd.dev.sigstore.trustedroot+json;version=0.1`, what Sigstore's TUF
//! repository serves): the Fulcio certificate authorities, the Rekor logs' keys, the
//! certificate-transparency logs' keys and the timestamp authorities, each with the time
//! range it is valid for. Read as data; which of them a bundle is checked against is the
//! verifier's to say (`lib.rs`).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;

/// The public-good instance's trusted root, pinned (`provenance/sigstore/README.md` says
/// when and how to update it).
const PUBLIC_GOOD: &str = include_str!("../sigstore/public-good-trusted-root.json");

/// Why a trusted root was not read.
#[derive(Debug, thiserror::Error)]
#[error("the Sigstore trusted root is not usable: {0}")]
pub struct TrustedRootError(String);

/// A time range in Unix seconds; `end` absent is open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Validity {
    pub(crate) start: i64,
    pub(crate) end: Option<i64>,
}

impl Validity {
    pub(crate) fn covers(&self, time: i64) -> bool {
        self.start <= time && self.end.is_none_or(|end| time <= end)
    }
}

/// A certificate authority: its chain, leaf-most first and its root last (DER).
#[derive(Debug, Clone)]
pub(crate) struct Authority {
    pub(crate) chain: Vec<Vec<u8>>,
    pub(crate) valid: Validity,
}

/// A log (Rekor or a CT log): its key (a DER `SubjectPublicKeyInfo`), its id (the SHA-256
/// of that key, as Rekor names itself) and the host it is served from, which a checkpoint
/// names.
#[derive(Debug, Clone)]
pub(crate) struct Log {
    pub(crate) base_url: String,
    pub(crate) key: Vec<u8>,
    pub(crate) log_id: Vec<u8>,
    pub(crate) valid: Validity,
}

/// The keys and certificates a Sigstore bundle is verified against, offline.
#[derive(Debug, Clone)]
pub struct TrustedRoot {
    pub(crate) certificate_authorities: Vec<Authority>,
    pub(crate) tlogs: Vec<Log>,
    /// The CT logs, one of whose signed certificate timestamps the signing certificate
    /// must carry (`sct.rs`).
    pub(crate) ctlogs: Vec<Log>,
    /// Read, not yet used: berth takes a bundle's time from its log entry's signed entry
    /// timestamp, not from an RFC 3161 timestamp.
    pub(crate) timestamp_authorities: Vec<Authority>,
}

impl TrustedRoot {
    /// Reads a `trusted_root.json`.
    pub fn from_json(text: &[u8]) -> Result<Self, TrustedRootError> {
        let wire: wire::TrustedRoot = serde_json::from_slice(text)
            .map_err(|e| TrustedRootError(format!("not a trusted_root.json: {e}")))?;
        if !wire
            .media_type
            .starts_with("application/vnd.dev.sigstore.trustedroot")
        {
            return Err(TrustedRootError(format!(
                "media type `{}` is not a Sigstore trusted root",
                wire.media_type
            )));
        }
        let root = TrustedRoot {
            certificate_authorities: authorities(wire.certificate_authorities)?,
            tlogs: logs(wire.tlogs)?,
            ctlogs: logs(wire.ctlogs)?,
            timestamp_authorities: authorities(wire.timestamp_authorities)?,
        };
        if root.certificate_authorities.is_empty() || root.tlogs.is_empty() {
            return Err(TrustedRootError(
                "it names no certificate authority or no transparency log".into(),
            ));
        }
        Ok(root)
    }

    /// The text of the public-good instance's root pinned in this build of berth.
    pub fn public_good_json() -> &'static str {
        PUBLIC_GOOD
    }

    /// The Sigstore public-good instance's root, as pinned in this build of berth.
    pub fn public_good() -> Self {
        Self::from_json(PUBLIC_GOOD.as_bytes()).expect("the pinned trusted root is read by a test")
    }

    /// How many certificate authorities, Rekor logs, CT logs and timestamp authorities it
    /// names.
    pub fn counts(&self) -> [usize; 4] {
        [
            self.certificate_authorities.len(),
            self.tlogs.len(),
            self.ctlogs.len(),
            self.timestamp_authorities.len(),
        ]
    }
}

fn authorities(wire: Vec<wire::Authority>) -> Result<Vec<Authority>, TrustedRootError> {
    wire.into_iter()
        .map(|a| {
            let chain = a
                .cert_chain
                .certificates
                .iter()
                .map(|c| bytes(&c.raw_bytes))
                .collect::<Result<Vec<_>, _>>()?;
            if chain.is_empty() {
                return Err(TrustedRootError("an authority has no certificate".into()));
            }
            Ok(Authority {
                chain,
                valid: validity(&a.valid_for)?,
            })
        })
        .collect()
}

fn logs(wire: Vec<wire::Log>) -> Result<Vec<Log>, TrustedRootError> {
    wire.into_iter()
        .map(|l| {
            Ok(Log {
                base_url: l.base_url,
                key: bytes(&l.public_key.raw_bytes)?,
                log_id: bytes(&l.log_id.key_id)?,
                valid: validity(&l.public_key.valid_for)?,
            })
        })
        .collect()
}

fn bytes(text: &str) -> Result<Vec<u8>, TrustedRootError> {
    STANDARD
        .decode(text)
        .map_err(|e| TrustedRootError(format!("`{text}` is not base64: {e}")))
}

fn validity(wire: &wire::ValidFor) -> Result<Validity, TrustedRootError> {
    Ok(Validity {
        start: seconds(&wire.start)?,
        end: wire.end.as_deref().map(seconds).transpose()?,
    })
}

fn seconds(text: &str) -> Result<i64, TrustedRootError> {
    text.parse::<jiff::Timestamp>()
        .map(|t| t.as_second())
        .map_err(|e| TrustedRootError(format!("`{text}` is not an RFC 3339 time: {e}")))
}

/// The JSON of `trusted_root.json` (the protobuf-specs' JSON mapping).
mod wire {
    use serde::Deserialize;

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct TrustedRoot {
        pub(super) media_type: String,
        #[serde(default)]
        pub(super) tlogs: Vec<Log>,
        #[serde(default)]
        pub(super) certificate_authorities: Vec<Authority>,
        #[serde(default)]
        pub(super) ctlogs: Vec<Log>,
        #[serde(default)]
        pub(super) timestamp_authorities: Vec<Authority>,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct Log {
        #[serde(default)]
        pub(super) base_url: String,
        pub(super) public_key: PublicKey,
        pub(super) log_id: LogId,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct PublicKey {
        pub(super) raw_bytes: String,
        pub(super) valid_for: ValidFor,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct LogId {
        pub(super) key_id: String,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct Authority {
        pub(super) cert_chain: CertChain,
        pub(super) valid_for: ValidFor,
    }

    #[derive(Deserialize)]
    pub(super) struct CertChain {
        pub(super) certificates: Vec<super::RawBytes>,
    }

    #[derive(Deserialize)]
    pub(super) struct ValidFor {
        pub(super) start: String,
        pub(super) end: Option<String>,
    }
}

/// `{"rawBytes": "<base64>"}`, as the bundle's certificates are written too.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RawBytes {
    pub(crate) raw_bytes: String,
}
