//! Who signed a locked git plugin, as the lock records it ([`SourceSignature`]): the
//! annotated tag's signature when the plugin's ref names a tag of the locked commit that
//! carries one, else the commit's, else none. An SSH signature is verified over its object
//! with the key it names (as `git verify-commit` does before it asks which principal holds
//! the key), and the principal an allowed-signers file of the policy lists for that key is
//! added; an OpenPGP signature's issuer and an X.509 signature's certificate are read from
//! the signature and recorded as claimed, not verified.

mod openpgp;
mod x509;

use berth_lockfile_schema::governance::{GIT_NAMESPACE, Signers};
use berth_lockfile_schema::{SignatureKind, SignedObject, SourceSignature};
use ssh_key::{HashAlg, PublicKey};

use super::SignedObjects;
use super::signed::{is_key, read_signature, verifiable};
use super::signed_source::{SSH_BEGIN, Signed, split_commit, split_tag};

/// Who signed `objects` (the tag first, then the commit); `signers` are the policy's
/// allowed-signers files, read for the principal of an SSH key.
pub fn source_signature(objects: &SignedObjects<'_>, signers: &[&Signers]) -> SourceSignature {
    let mut candidates = Vec::with_capacity(2);
    if let Some((name, tag)) = objects.tag {
        candidates.push((SignedObject::Tag, split_tag(name, objects.rev, tag)));
    }
    candidates.push((
        SignedObject::Commit,
        split_commit(objects.rev, objects.commit),
    ));
    for (object, signed) in candidates {
        if signed.problem.is_some() {
            continue;
        }
        if let Some(armored) = &signed.signature {
            return read(object, &signed, armored, signers);
        }
    }
    SourceSignature::none()
}

/// The signature `armored` on `signed`, by its first line.
fn read(
    object: SignedObject,
    signed: &Signed,
    armored: &str,
    signers: &[&Signers],
) -> SourceSignature {
    let mut out = SourceSignature {
        object: Some(object),
        ..SourceSignature::none()
    };
    if armored.starts_with(SSH_BEGIN) {
        out.kind = SignatureKind::Ssh;
        let Ok(sig) = read_signature(armored) else {
            return out;
        };
        let key = sig.public_key();
        out.key = Some(
            PublicKey::from(key.clone())
                .fingerprint(HashAlg::Sha256)
                .to_string(),
        );
        out.verified = sig.namespace() == GIT_NAMESPACE
            && verifiable(key)
            && PublicKey::from(key.clone())
                .verify(GIT_NAMESPACE, &signed.payload, &sig)
                .is_ok();
        out.principal = signers
            .iter()
            .flat_map(|s| s.list.entries())
            .find(|e| is_key(e, key) && e.allows_namespace(GIT_NAMESPACE))
            .map(|e| e.principals.clone());
    } else if armored.starts_with("-----BEGIN SIGNED MESSAGE-----") {
        out.kind = SignatureKind::X509;
        if let Some((fingerprint, identity)) = x509::signer(armored) {
            out.key = Some(fingerprint);
            out.identity = identity;
        }
    } else {
        out.kind = SignatureKind::Openpgp;
        out.key = openpgp::issuer(armored);
    }
    out
}

/// The base64 body of an armored block: the lines between its `-----BEGIN` and `-----END`
/// lines, without armor headers (`Key: value` lines up to a blank one) or an OpenPGP
/// checksum line (`=XXXX`).
fn armored_body(armored: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    let mut lines = armored.lines().skip_while(|l| !l.starts_with("-----BEGIN"));
    lines.next()?;
    let body: Vec<&str> = lines.take_while(|l| !l.starts_with("-----END")).collect();
    let has_headers = body.iter().any(|l| l.trim().is_empty());
    let text: String = body
        .iter()
        .skip_while(|l| has_headers && !l.trim().is_empty())
        .filter(|l| !l.trim().is_empty() && !l.starts_with('='))
        .map(|l| l.trim())
        .collect();
    base64::engine::general_purpose::STANDARD.decode(text).ok()
}

#[cfg(test)]
mod tests;
