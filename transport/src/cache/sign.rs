//! Signing keys and narinfo signatures in Nix's format: a secret key is
//! `name:base64(64 bytes: seed, then public key)` (what `nix key generate-secret` prints),
//! a public key `name:base64(32 bytes)`, and a `Sig:` line `name:base64(ed25519 over the
//! narinfo's fingerprint)`.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use berth_lockfile_schema::narinfo::NarInfo;
use ed25519_dalek::{Signature, Signer as _, SigningKey, Verifier as _, VerifyingKey};

/// Why a key was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{shown}` is not a Nix {what} key (`NAME:BASE64`): {why}")]
pub struct KeyError {
    /// The key with its material hidden (`name:…`).
    pub shown: String,
    /// `secret` or `public`.
    pub what: &'static str,
    /// Why.
    pub why: &'static str,
}

fn split<'a>(text: &'a str, what: &'static str) -> Result<(&'a str, Vec<u8>), KeyError> {
    let text = text.trim();
    let (name, b64) = text.split_once(':').ok_or_else(|| KeyError {
        shown: "…".into(),
        what,
        why: "no `:` between name and key",
    })?;
    let shown = format!("{name}:…");
    if name.is_empty() {
        return Err(KeyError {
            shown,
            what,
            why: "the name is empty",
        });
    }
    let bytes = STANDARD.decode(b64).map_err(|_| KeyError {
        shown: shown.clone(),
        what,
        why: "the key is not base64",
    })?;
    Ok((name, bytes))
}

/// A secret signing key.
pub struct SecretKey {
    name: String,
    key: SigningKey,
}

impl std::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SecretKey({}:…)", self.name)
    }
}

impl SecretKey {
    /// A new key named `name` from 32 bytes of the operating system's randomness.
    pub fn generate(name: &str) -> std::io::Result<Self> {
        use std::io::Read as _;
        let mut seed = [0u8; 32];
        fs_err::File::open("/dev/urandom")?.read_exact(&mut seed)?;
        Ok(Self {
            name: name.to_owned(),
            key: SigningKey::from_bytes(&seed),
        })
    }

    /// Parses `name:base64(64 bytes)`.
    pub fn parse(text: &str) -> Result<Self, KeyError> {
        let (name, bytes) = split(text, "secret")?;
        let shown = format!("{name}:…");
        let bytes: [u8; 64] = bytes.try_into().map_err(|_| KeyError {
            shown: shown.clone(),
            what: "secret",
            why: "a secret key is 64 bytes",
        })?;
        let key = SigningKey::from_keypair_bytes(&bytes).map_err(|_| KeyError {
            shown,
            what: "secret",
            why: "its public half does not belong to its secret half",
        })?;
        Ok(Self {
            name: name.to_owned(),
            key,
        })
    }

    /// `name:base64(64 bytes)`, for the key file.
    pub fn to_text(&self) -> String {
        format!(
            "{}:{}",
            self.name,
            STANDARD.encode(self.key.to_keypair_bytes())
        )
    }

    /// The public half.
    pub fn public(&self) -> PublicKey {
        PublicKey {
            name: self.name.clone(),
            key: self.key.verifying_key(),
        }
    }

    /// The `Sig:` value for `info`.
    pub fn sign(&self, info: &NarInfo) -> String {
        let signature = self.key.sign(info.fingerprint().as_bytes());
        format!("{}:{}", self.name, STANDARD.encode(signature.to_bytes()))
    }
}

/// A public key that `Sig:` lines are checked against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicKey {
    name: String,
    key: VerifyingKey,
}

impl PublicKey {
    /// Parses `name:base64(32 bytes)`.
    pub fn parse(text: &str) -> Result<Self, KeyError> {
        let (name, bytes) = split(text, "public")?;
        let bad = |why| KeyError {
            shown: format!("{name}:…"),
            what: "public",
            why,
        };
        let bytes: [u8; 32] = bytes
            .try_into()
            .map_err(|_| bad("a public key is 32 bytes"))?;
        let key = VerifyingKey::from_bytes(&bytes).map_err(|_| bad("not a point on the curve"))?;
        Ok(Self {
            name: name.to_owned(),
            key,
        })
    }

    /// `name:base64(32 bytes)`.
    pub fn to_text(&self) -> String {
        format!("{}:{}", self.name, STANDARD.encode(self.key.to_bytes()))
    }

    /// Whether one of `info`'s signatures is this key's, over its fingerprint.
    pub fn signed(&self, info: &NarInfo) -> bool {
        let message = info.fingerprint();
        info.sigs.iter().any(|sig| {
            let Some((name, b64)) = sig.split_once(':') else {
                return false;
            };
            let Ok(bytes) = STANDARD.decode(b64) else {
                return false;
            };
            let Ok(bytes) = <[u8; 64]>::try_from(bytes) else {
                return false;
            };
            name == self.name
                && self
                    .key
                    .verify(message.as_bytes(), &Signature::from_bytes(&bytes))
                    .is_ok()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_lockfile_schema::Sha256Hash;
    use berth_lockfile_schema::narinfo::Compression;

    fn info() -> NarInfo {
        NarInfo {
            store_path: "/nix/store/pk4rixl8aszirpdar4vvammw3zw1dqh0-alpha".into(),
            url: "nar/x.nar.zst".into(),
            compression: Compression::Zstd,
            file_hash: Sha256Hash::from_bytes([1; 32]),
            file_size: 10,
            nar_hash: Sha256Hash::from_bytes([2; 32]),
            nar_size: 648,
            references: Vec::new(),
            ca: None,
            sigs: Vec::new(),
        }
    }

    #[test]
    fn keys_round_trip_and_signatures_check() {
        let secret = SecretKey::generate("berth-1").expect("key");
        let again = SecretKey::parse(&secret.to_text()).expect("parse");
        assert_eq!(again.public(), secret.public());
        let public = PublicKey::parse(&secret.public().to_text()).expect("parse");
        let mut signed = info();
        signed.sigs.push(secret.sign(&signed));
        assert!(public.signed(&signed));
        // Another key, another name, or another narinfo: not signed.
        let other = SecretKey::generate("berth-1").expect("key").public();
        assert!(!other.signed(&signed));
        let mut changed = signed.clone();
        changed.nar_size += 1;
        assert!(!public.signed(&changed));
        let renamed = PublicKey::parse(&format!(
            "other:{}",
            public.to_text().split_once(':').expect("name").1
        ))
        .expect("parse");
        assert!(!renamed.signed(&signed));
    }

    #[test]
    fn bad_keys_say_why_without_showing_the_key() {
        let secret = SecretKey::generate("k").expect("key").to_text();
        for (text, why) in [
            ("no-colon", "no `:`"),
            (":abc", "the name is empty"),
            ("k:!!!", "not base64"),
            ("k:AAAA", "64 bytes"),
        ] {
            let err = SecretKey::parse(text).expect_err(why).to_string();
            assert!(err.contains(why), "{err}");
        }
        let err = PublicKey::parse(&secret)
            .expect_err("a secret key")
            .to_string();
        assert!(err.contains("32 bytes") && !err.contains(secret.split_once(':').expect("key").1));
    }
}
