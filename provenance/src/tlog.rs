//! The Rekor entry of a bundle: its body agrees with the envelope, its signed entry
//! timestamp (SET) and its checkpoint are signed by a log of the trusted root, and its
//! inclusion proof leads from the body to the checkpoint's root (RFC 6962, by ct-merkle).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use ct_merkle::{InclusionProof as MerkleProof, RootHash};
use serde_json::Value;
use sha2::digest::generic_array::GenericArray;
use sha2::{Digest as _, Sha256};

use super::Problem;
use super::bundle::{Bundle, InclusionProof, LogEntry};
use super::cert::{KeyError, verify_by_key};
use super::trust::{Log, TrustedRoot};

/// The log of the trusted root that wrote the entry, valid when it says it did.
pub(crate) fn log_of<'r>(root: &'r TrustedRoot, entry: &LogEntry) -> Result<&'r Log, Problem> {
    root.tlogs
        .iter()
        .find(|log| log.log_id == entry.log_id && log.valid.covers(entry.integrated_time))
        .ok_or_else(|| {
            Problem::UnknownLog(format!(
                "log id `{}` at {}",
                STANDARD.encode(&entry.log_id),
                entry.integrated_time
            ))
        })
}

/// Checks that the body is a `dsse` 0.0.1 or `intoto` 0.0.2 entry of this envelope: its
/// one signature the envelope's, its payload hash the SHA-256 of the envelope's payload.
pub(crate) fn check_body(bundle: &Bundle) -> Result<(), Problem> {
    let entry = &bundle.entry;
    let body: Value = serde_json::from_slice(&entry.body)
        .map_err(|e| Problem::LogEntry(format!("its body is not JSON: {e}")))?;
    let kind = body["kind"].as_str().unwrap_or_default();
    let version = body["apiVersion"].as_str().unwrap_or_default();
    if kind != entry.kind || version != entry.kind_version {
        return Err(Problem::LogEntry(format!(
            "its body is `{kind}` {version}, the bundle says `{}` {}",
            entry.kind, entry.kind_version
        )));
    }
    let spec = &body["spec"];
    let (signatures, payload_hash, unwrap) = match (kind, version) {
        ("dsse", "0.0.1") => (&spec["signatures"], &spec["payloadHash"], "signature"),
        ("intoto", "0.0.2") => (
            &spec["content"]["envelope"]["signatures"],
            &spec["content"]["payloadHash"],
            "sig",
        ),
        _ => {
            return Err(Problem::LogEntry(format!(
                "`{kind}` {version} entries are not read by berth"
            )));
        }
    };
    let [signature] = signatures.as_array().map(Vec::as_slice).unwrap_or_default() else {
        return Err(Problem::LogEntry("its body has not one signature".into()));
    };
    let mut recorded = STANDARD
        .decode(signature[unwrap].as_str().unwrap_or_default())
        .unwrap_or_default();
    // An intoto entry holds the signature base64-encoded twice.
    if kind == "intoto" {
        recorded = STANDARD.decode(&recorded).unwrap_or_default();
    }
    if recorded != bundle.signature {
        return Err(Problem::LogEntry(
            "its body records another signature than the envelope's".into(),
        ));
    }
    let hash = hex(&Sha256::digest(&bundle.payload));
    if payload_hash["algorithm"] != "sha256" || payload_hash["value"] != hash.as_str() {
        return Err(Problem::LogEntry(
            "its body records another payload than the envelope's".into(),
        ));
    }
    Ok(())
}

/// Checks the signed entry timestamp: the log's signature over the canonical JSON of the
/// entry's body, time, log id and index, which makes its integrated time a verified one.
pub(crate) fn check_set(entry: &LogEntry, log: &Log) -> Result<(), Problem> {
    let Some(set) = &entry.signed_entry_timestamp else {
        return Err(Problem::NoVerifiedTime);
    };
    // RFC 8785 of this shape: the keys in this order, no spaces, integers as they are.
    let canonical = format!(
        r#"{{"body":{},"integratedTime":{},"logID":"{}","logIndex":{}}}"#,
        Value::from(STANDARD.encode(&entry.body)),
        entry.integrated_time,
        hex(&entry.log_id),
        entry.log_index
    );
    verify_by_key(&log.key, canonical.as_bytes(), set).map_err(|e| match e {
        KeyError::BadSignature => Problem::SignedEntryTimestamp("it does not verify".into()),
        KeyError::Malformed(why) => Problem::SignedEntryTimestamp(why),
    })
}

/// Checks the inclusion proof: the checkpoint is signed by the log, names the proof's tree
/// size and root, and the proof leads from the entry's body to that root.
pub(crate) fn check_inclusion(
    entry: &LogEntry,
    proof: &InclusionProof,
    log: &Log,
) -> Result<(), Problem> {
    let Some(checkpoint) = &proof.checkpoint else {
        return Err(Problem::Checkpoint("the inclusion proof has none".into()));
    };
    let (size, root) = check_checkpoint(checkpoint, log)?;
    if size != proof.tree_size || root != proof.root_hash {
        return Err(Problem::Checkpoint(
            "it names another tree than the inclusion proof".into(),
        ));
    }
    let broken = |why: &str| Problem::InclusionProof(why.to_string());
    if root.len() != 32 || proof.hashes.iter().any(|h| h.len() != 32) {
        return Err(broken("a hash is not SHA-256"));
    }
    let (Ok(index), Ok(size)) = (u64::try_from(proof.log_index), u64::try_from(size)) else {
        return Err(broken("a negative index or size"));
    };
    let root = RootHash::<Sha256>::new(GenericArray::clone_from_slice(&root), size);
    let hashes = MerkleProof::<Sha256>::try_from_bytes(proof.hashes.concat())
        .map_err(|e| broken(&e.to_string()))?;
    root.verify_inclusion(&entry.body, index, &hashes)
        .map_err(|e| broken(&format!("it does not lead to the checkpoint's root ({e})")))
}

/// The tree size and root hash of a checkpoint (a C2SP signed note) signed by the log: a
/// signature line `— NAME BASE64` whose name is the log's host and whose key hint is the
/// first 4 bytes of its log id, over the note's text up to its blank line.
fn check_checkpoint(envelope: &str, log: &Log) -> Result<(i64, Vec<u8>), Problem> {
    let bad = |why: &str| Problem::Checkpoint(why.to_string());
    let split = envelope
        .find("\n\n")
        .ok_or_else(|| bad("it has no blank line"))?;
    let (note, signatures) = (&envelope[..=split], &envelope[split + 2..]);
    let signed = signatures.lines().any(|line| {
        let Some((name, signature)) = line
            .strip_prefix("\u{2014} ")
            .and_then(|rest| rest.split_once(' '))
        else {
            return false;
        };
        let signature = STANDARD.decode(signature).unwrap_or_default();
        signature.len() > 4
            && log.base_url.contains(name)
            && log.log_id.get(..4) == Some(&signature[..4])
            && verify_by_key(&log.key, note.as_bytes(), &signature[4..]).is_ok()
    });
    if !signed {
        return Err(bad("it is not signed by the log that recorded the entry"));
    }
    let mut lines = note.lines().skip(1);
    let size = lines.next().and_then(|l| l.parse().ok());
    let root = lines.next().and_then(|l| STANDARD.decode(l).ok());
    match (size, root) {
        (Some(size), Some(root)) => Ok((size, root)),
        _ => Err(bad("it has no tree size and root hash")),
    }
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
