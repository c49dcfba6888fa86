//! npm registry signatures, as `npm audit signatures` checks them: a registry signs the
//! text `NAME@VERSION:INTEGRITY` of each version it publishes with ECDSA over P-256 and
//! SHA-256 (`dist.signatures`: `keyid` and `sig`, base64 of a DER signature), and publishes
//! its public keys at `/-/npm/v1/keys` (`key`: base64 of a DER `SubjectPublicKeyInfo`).

use base64::Engine as _;
use p256::ecdsa::signature::Verifier as _;
use p256::ecdsa::{Signature, VerifyingKey};

/// The only key type npm's registry uses, and the only one berth checks.
pub const P256_KEYTYPE: &str = "ecdsa-sha2-nistp256";

/// The DER `SubjectPublicKeyInfo` header of a P-256 key (`id-ecPublicKey`, `prime256v1`)
/// before its uncompressed point (`04 || X || Y`, 65 bytes). The header of a P-256 key is
/// fixed, so the key is read by matching it, not by a general DER reader.
const SPKI_UNCOMPRESSED: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
    0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

/// The same header before a compressed point (`02`/`03 || X`, 33 bytes).
const SPKI_COMPRESSED: [u8; 26] = [
    0x30, 0x39, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
    0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x22, 0x00,
];

/// Why a registry signature was not verified.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// The key is not base64 of a P-256 `SubjectPublicKeyInfo`.
    #[error("the key is not base64 of a P-256 public key")]
    Key,
    /// The signature is not base64 of a DER ECDSA signature.
    #[error("the signature is not base64 of a DER ECDSA signature")]
    Malformed,
    /// Well formed, but not a signature of this text by this key.
    #[error("the signature does not verify")]
    Mismatch,
}

/// A registry's public key, read from its `key` (base64 of its DER
/// `SubjectPublicKeyInfo`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryPublicKey(VerifyingKey);

impl RegistryPublicKey {
    /// Reads a P-256 key.
    pub fn parse(key: &str) -> Result<Self, SignatureError> {
        let der = base64::engine::general_purpose::STANDARD
            .decode(key.trim())
            .map_err(|_| SignatureError::Key)?;
        let point = der
            .strip_prefix(&SPKI_UNCOMPRESSED)
            .filter(|p| p.len() == 65)
            .or_else(|| der.strip_prefix(&SPKI_COMPRESSED).filter(|p| p.len() == 33))
            .ok_or(SignatureError::Key)?;
        VerifyingKey::from_sec1_bytes(point)
            .map(Self)
            .map_err(|_| SignatureError::Key)
    }

    /// Whether `sig` (base64 of a DER ECDSA signature) signs `text` with this key
    /// (SHA-256 of its UTF-8 bytes).
    pub fn verify(&self, text: &str, sig: &str) -> Result<(), SignatureError> {
        let der = base64::engine::general_purpose::STANDARD
            .decode(sig.trim())
            .map_err(|_| SignatureError::Malformed)?;
        let signature = Signature::from_der(&der).map_err(|_| SignatureError::Malformed)?;
        self.0
            .verify(text.as_bytes(), &signature)
            .map_err(|_| SignatureError::Mismatch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use p256::ecdsa::SigningKey;
    use p256::ecdsa::signature::Signer as _;

    fn b64(bytes: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    /// A fixed key, as a registry's `/-/npm/v1/keys` gives it, and its signing half.
    fn key(compressed: bool) -> (SigningKey, String) {
        let signing = SigningKey::from_slice(&[7; 32]).expect("a scalar");
        let point = signing.verifying_key().to_encoded_point(compressed);
        let header = if compressed {
            SPKI_COMPRESSED
        } else {
            SPKI_UNCOMPRESSED
        };
        (signing, b64(&[&header[..], point.as_bytes()].concat()))
    }

    #[test]
    fn a_registry_signature_verifies_and_anything_else_is_named() {
        for compressed in [false, true] {
            let (signing, public) = key(compressed);
            let text = "fake-dep@1.0.0:sha512-AAAA";
            let signature: Signature = signing.sign(text.as_bytes());
            let sig = b64(signature.to_der().as_bytes());
            let key = RegistryPublicKey::parse(&public).expect("a P-256 key");
            assert_eq!(key.verify(text, &sig), Ok(()));
            assert_eq!(
                key.verify("fake-dep@1.0.1:sha512-AAAA", &sig),
                Err(SignatureError::Mismatch)
            );
            assert_eq!(
                key.verify(text, "not base64!"),
                Err(SignatureError::Malformed)
            );
            assert_eq!(
                key.verify(text, &b64(b"\x30\x00")),
                Err(SignatureError::Malformed)
            );
        }
        let (_, public) = key(false);
        let mut der = base64::engine::general_purpose::STANDARD
            .decode(&public)
            .expect("base64");
        der[20] ^= 1;
        assert_eq!(
            RegistryPublicKey::parse(&b64(&der)),
            Err(SignatureError::Key),
            "another curve's OID"
        );
        assert_eq!(RegistryPublicKey::parse("MFkw"), Err(SignatureError::Key));
    }
}
