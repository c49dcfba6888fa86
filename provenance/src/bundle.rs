//! npm's attestations document (`GET /-/npm/v1/attestations/NAME@VERSION`) and the
//! Sigstore bundle of its SLSA provenance (media types v0.1 to v0.3, the protobuf-specs'
//! JSON mapping), decoded into bytes. Nothing here is trusted yet: `lib.rs` checks it.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;

use super::Problem;
use super::trust::RawBytes;

/// The predicate types of SLSA provenance, the newest first.
pub(crate) const SLSA_PROVENANCE: [&str; 2] = [
    "https://slsa.dev/provenance/v1",
    "https://slsa.dev/provenance/v0.2",
];

/// A bundle, decoded.
#[derive(Debug)]
pub(crate) struct Bundle {
    /// `0.1`, `0.2` or `0.3`.
    pub(crate) version: BundleVersion,
    /// The signing (leaf) certificate, DER.
    pub(crate) certificate: Vec<u8>,
    pub(crate) payload_type: String,
    pub(crate) payload: Vec<u8>,
    pub(crate) signature: Vec<u8>,
    pub(crate) entry: LogEntry,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BundleVersion {
    V01,
    V02OrLater,
}

/// A Rekor entry as a bundle carries it.
#[derive(Debug)]
pub(crate) struct LogEntry {
    pub(crate) log_index: i64,
    pub(crate) log_id: Vec<u8>,
    pub(crate) kind: String,
    pub(crate) kind_version: String,
    pub(crate) integrated_time: i64,
    pub(crate) body: Vec<u8>,
    pub(crate) signed_entry_timestamp: Option<Vec<u8>>,
    pub(crate) proof: Option<InclusionProof>,
}

#[derive(Debug)]
pub(crate) struct InclusionProof {
    pub(crate) log_index: i64,
    pub(crate) tree_size: i64,
    pub(crate) root_hash: Vec<u8>,
    pub(crate) hashes: Vec<Vec<u8>>,
    pub(crate) checkpoint: Option<String>,
}

/// The predicate type and the bundle of the document's SLSA provenance.
pub(crate) fn slsa_bundle(document: &[u8]) -> Result<(String, Bundle), Problem> {
    let document: wire::Document =
        serde_json::from_slice(document).map_err(|e| Problem::Document(e.to_string()))?;
    let attestation = SLSA_PROVENANCE
        .iter()
        .find_map(|t| {
            document
                .attestations
                .iter()
                .find(|a| a.predicate_type == *t)
        })
        .ok_or(Problem::NoProvenance)?;
    let bundle = serde_json::from_value(attestation.bundle.clone())
        .map_err(|e| Problem::Bundle(format!("not a Sigstore bundle: {e}")))?;
    Ok((attestation.predicate_type.clone(), decode(bundle)?))
}

fn decode(wire: wire::Bundle) -> Result<Bundle, Problem> {
    let version = match wire.media_type.as_str() {
        "application/vnd.dev.sigstore.bundle+json;version=0.1" => BundleVersion::V01,
        "application/vnd.dev.sigstore.bundle+json;version=0.2"
        | "application/vnd.dev.sigstore.bundle.v0.3+json" => BundleVersion::V02OrLater,
        other => return Err(Problem::Bundle(format!("media type `{other}` is unknown"))),
    };
    let material = wire.verification_material;
    let certificate = match (material.certificate, material.x509_certificate_chain) {
        (Some(c), _) => bytes("certificate", &c.raw_bytes)?,
        (None, Some(chain)) => match chain.certificates.first() {
            Some(c) => bytes("certificate", &c.raw_bytes)?,
            None => return Err(Problem::Bundle("its certificate chain is empty".into())),
        },
        (None, None) => {
            return Err(Problem::Bundle(
                "it has no signing certificate (a key-signed bundle is not SLSA provenance)".into(),
            ));
        }
    };
    let envelope = wire
        .dsse_envelope
        .ok_or_else(|| Problem::Bundle("it has no DSSE envelope".into()))?;
    let [signature] = envelope.signatures.as_slice() else {
        return Err(Problem::Bundle(format!(
            "its envelope has {} signatures, not one",
            envelope.signatures.len()
        )));
    };
    let [entry] = material.tlog_entries.as_slice() else {
        return Err(Problem::Bundle(format!(
            "it has {} transparency log entries, not one",
            material.tlog_entries.len()
        )));
    };
    Ok(Bundle {
        version,
        certificate,
        payload_type: envelope.payload_type,
        payload: bytes("payload", &envelope.payload)?,
        signature: bytes("signature", &signature.sig)?,
        entry: log_entry(entry)?,
    })
}

fn log_entry(wire: &wire::LogEntry) -> Result<LogEntry, Problem> {
    let proof = match &wire.inclusion_proof {
        Some(p) => Some(InclusionProof {
            log_index: p.log_index.get("inclusion proof's logIndex")?,
            tree_size: p.tree_size.get("inclusion proof's treeSize")?,
            root_hash: bytes("root hash", &p.root_hash)?,
            hashes: p
                .hashes
                .iter()
                .map(|h| bytes("inclusion proof hash", h))
                .collect::<Result<_, _>>()?,
            checkpoint: p.checkpoint.as_ref().map(|c| c.envelope.clone()),
        }),
        None => None,
    };
    Ok(LogEntry {
        log_index: wire.log_index.get("logIndex")?,
        log_id: bytes("log id", &wire.log_id.key_id)?,
        kind: wire.kind_version.kind.clone(),
        kind_version: wire.kind_version.version.clone(),
        integrated_time: wire.integrated_time.get("integratedTime")?,
        body: bytes("canonicalized body", &wire.canonicalized_body)?,
        signed_entry_timestamp: match &wire.inclusion_promise {
            Some(p) => Some(bytes("signed entry timestamp", &p.signed_entry_timestamp)?),
            None => None,
        },
        proof,
    })
}

fn bytes(what: &str, text: &str) -> Result<Vec<u8>, Problem> {
    STANDARD
        .decode(text)
        .map_err(|e| Problem::Bundle(format!("its {what} is not base64: {e}")))
}

/// The JSON of the document and the bundle.
mod wire {
    use super::{Deserialize, Problem, RawBytes};

    #[derive(Deserialize)]
    pub(super) struct Document {
        pub(super) attestations: Vec<Attestation>,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct Attestation {
        pub(super) predicate_type: String,
        pub(super) bundle: serde_json::Value,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct Bundle {
        pub(super) media_type: String,
        pub(super) verification_material: Material,
        pub(super) dsse_envelope: Option<Envelope>,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct Material {
        pub(super) certificate: Option<RawBytes>,
        pub(super) x509_certificate_chain: Option<Chain>,
        #[serde(default)]
        pub(super) tlog_entries: Vec<LogEntry>,
    }

    #[derive(Deserialize)]
    pub(super) struct Chain {
        pub(super) certificates: Vec<RawBytes>,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct Envelope {
        pub(super) payload: String,
        pub(super) payload_type: String,
        pub(super) signatures: Vec<Signature>,
    }

    #[derive(Deserialize)]
    pub(super) struct Signature {
        pub(super) sig: String,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct LogEntry {
        pub(super) log_index: Int,
        pub(super) log_id: LogId,
        pub(super) kind_version: KindVersion,
        pub(super) integrated_time: Int,
        pub(super) inclusion_promise: Option<Promise>,
        pub(super) inclusion_proof: Option<Proof>,
        pub(super) canonicalized_body: String,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct LogId {
        pub(super) key_id: String,
    }

    #[derive(Deserialize)]
    pub(super) struct KindVersion {
        pub(super) kind: String,
        pub(super) version: String,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct Promise {
        pub(super) signed_entry_timestamp: String,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct Proof {
        pub(super) log_index: Int,
        pub(super) root_hash: String,
        pub(super) tree_size: Int,
        pub(super) hashes: Vec<String>,
        pub(super) checkpoint: Option<Checkpoint>,
    }

    #[derive(Deserialize)]
    pub(super) struct Checkpoint {
        pub(super) envelope: String,
    }

    /// A protobuf int64: a string in the JSON mapping, a number from some writers.
    #[derive(Deserialize)]
    #[serde(untagged)]
    pub(super) enum Int {
        Number(i64),
        Text(String),
    }

    impl Int {
        pub(super) fn get(&self, what: &str) -> Result<i64, Problem> {
            match self {
                Int::Number(n) => Ok(*n),
                Int::Text(t) => t
                    .parse()
                    .map_err(|_| Problem::Bundle(format!("its {what} `{t}` is not an integer"))),
            }
        }
    }
}
