//! A conversation's two objects bound together: `meta.json` records the digest of the lock
//! text the conversation was created with, and, with a fleet's record key
//! (`--record-key`), an HMAC of itself under that key, so a reader can tell a lock or a
//! metadata object someone else wrote.
//!
//! Without the key, whoever can write the data folder or bucket can still replace both
//! objects together (a new lock and a `meta.json` naming its digest); with it, they can
//! only delete a conversation, or put back objects a server wrote for that same id.

use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::Meta;
use crate::refused::{Problem, Refused};

/// The secret a fleet's servers authenticate their conversation records with
/// (`--record-key`, from a file or `BERTH_RECORD_KEY`): every server of the fleet has the
/// same, and nobody who can only write the bucket has it.
#[derive(Clone)]
pub struct RecordKey(Vec<u8>);

impl std::fmt::Debug for RecordKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RecordKey(…)")
    }
}

/// The fewest bytes a record key may have: shorter keys can be guessed.
pub const MIN_RECORD_KEY_BYTES: usize = 16;

impl RecordKey {
    /// The key `text` holds (surrounding white space aside), refused when shorter than
    /// [`MIN_RECORD_KEY_BYTES`].
    pub fn new(text: &str) -> Result<Self, String> {
        let key = text.trim();
        if key.len() < MIN_RECORD_KEY_BYTES {
            return Err(format!(
                "the record key has {} bytes; give at least {MIN_RECORD_KEY_BYTES} (for example `openssl rand -base64 32`)",
                key.len()
            ));
        }
        Ok(Self(key.as_bytes().to_vec()))
    }

    /// `hmac-sha256-<base64>` of `bytes`.
    fn sign(&self, bytes: &[u8]) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes any key");
        mac.update(bytes);
        let tag = mac.finalize().into_bytes();
        format!(
            "{MAC_PREFIX}{}",
            base64::engine::general_purpose::STANDARD.encode(tag)
        )
    }

    /// Whether `tag` is this key's HMAC of `bytes` (compared in constant time).
    fn verifies(&self, bytes: &[u8], tag: &str) -> bool {
        let Some(encoded) = tag.strip_prefix(MAC_PREFIX) else {
            return false;
        };
        let Ok(tag) = base64::engine::general_purpose::STANDARD.decode(encoded) else {
            return false;
        };
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes any key");
        mac.update(bytes);
        mac.verify_slice(&tag).is_ok()
    }
}

const MAC_PREFIX: &str = "hmac-sha256-";

/// The digest `meta.json` records of a lock text: `sha256-<base64>`.
pub fn lock_digest(text: &str) -> String {
    let digest: [u8; 32] = Sha256::digest(text.as_bytes()).into();
    berth_lockfile_schema::Sha256Hash::from_bytes(digest).to_sri()
}

impl Meta {
    /// Records `lock_text`'s digest and, with `key`, the record's HMAC.
    pub fn bind(&mut self, lock_text: &str, key: Option<&RecordKey>) {
        self.lock = Some(lock_digest(lock_text));
        self.mac = None;
        self.mac = key.map(|key| key.sign(&self.unsigned_bytes()));
    }

    /// The record as written: compact JSON, so never much larger than the request.
    pub fn to_record(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a conversation's metadata serialises")
    }

    /// The record without its HMAC: what the HMAC is made over.
    fn unsigned_bytes(&self) -> Vec<u8> {
        let unsigned = Meta {
            mac: None,
            ..self.clone()
        };
        unsigned.to_record()
    }

    /// Checks this metadata, read from `meta_object` as conversation `id`'s, against the
    /// lock text read from `lock_object`: it names `id`, records that lock's digest, and,
    /// with `key`, carries that key's HMAC.
    pub fn check(
        &self,
        id: Uuid,
        (meta_object, lock_object): (&str, &str),
        lock_digest: &str,
        key: Option<&RecordKey>,
    ) -> Result<(), Refused> {
        let refused = |object: &str, problem| Refused {
            id,
            object: object.to_owned(),
            problem,
        };
        if self.id != id {
            return Err(refused(meta_object, Problem::OtherId(self.id)));
        }
        if let Some(key) = key {
            let authentic = self
                .mac
                .as_deref()
                .is_some_and(|tag| key.verifies(&self.unsigned_bytes(), tag));
            if !authentic {
                return Err(refused(meta_object, Problem::NotAuthenticated));
            }
        }
        match self.lock.as_deref() {
            Some(recorded) if recorded == lock_digest => Ok(()),
            Some(_) => Err(refused(lock_object, Problem::LockNotRecorded)),
            // An earlier berth's record: nothing binds its two objects.
            None if key.is_none() => Ok(()),
            None => Err(refused(meta_object, Problem::NotAuthenticated)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(metadata: &str) -> Meta {
        let raw = serde_json::value::RawValue::from_string(metadata.to_owned()).expect("JSON");
        Meta::new(raw)
    }

    const OBJECTS: (&str, &str) = ("c/meta.json", "c/plugins.lock");

    #[test]
    fn a_record_binds_its_lock_and_with_a_key_itself() {
        let key = RecordKey::new("0123456789abcdef0123").expect("key");
        let mut m = meta(r#"{"owner":"alice"}"#);
        m.bind("version = 1\n", Some(&key));
        let text = m.to_record();
        assert!(!String::from_utf8_lossy(&text).contains('\n'), "compact");
        let read: Meta = serde_json::from_slice(&text).expect("reads back");
        let digest = lock_digest("version = 1\n");
        assert_eq!(read.check(m.id, OBJECTS, &digest, Some(&key)), Ok(()));
        assert_eq!(read.check(m.id, OBJECTS, &digest, None), Ok(()));
        // Another lock.
        let other = lock_digest("version = 1\n# changed\n");
        let refused = read
            .check(m.id, OBJECTS, &other, None)
            .expect_err("refused");
        assert_eq!(refused.object, "c/plugins.lock");
        assert_eq!(refused.problem, Problem::LockNotRecorded);
        // Metadata changed, the rest kept: only the key can tell.
        let changed = String::from_utf8(text.clone())
            .expect("utf-8")
            .replace("alice", "mallory");
        let changed: Meta = serde_json::from_str(&changed).expect("reads");
        assert_eq!(changed.check(m.id, OBJECTS, &digest, None), Ok(()));
        let refused = changed
            .check(m.id, OBJECTS, &digest, Some(&key))
            .expect_err("refused with the key");
        assert_eq!(refused.problem, Problem::NotAuthenticated);
        // Both rewritten by someone without the key.
        let mut forged = meta(r#"{"owner":"mallory"}"#);
        forged.id = m.id;
        forged.bind("version = 1\n# changed\n", None);
        assert_eq!(forged.check(m.id, OBJECTS, &other, None), Ok(()));
        let refused = forged
            .check(m.id, OBJECTS, &other, Some(&key))
            .expect_err("refused");
        assert_eq!(refused.problem, Problem::NotAuthenticated);
        // Another key, another id.
        let stranger = RecordKey::new("another key, long enough").expect("key");
        assert!(read.check(m.id, OBJECTS, &digest, Some(&stranger)).is_err());
        let refused = read
            .check(Uuid::nil(), OBJECTS, &digest, None)
            .expect_err("another id");
        assert_eq!(refused.problem, Problem::OtherId(m.id));
        assert!(refused.to_string().contains("c/meta.json"), "{refused}");
    }

    #[test]
    fn an_earlier_record_without_a_digest_passes_only_without_a_key() {
        let mut m = meta("null");
        m.lock = None;
        let key = RecordKey::new("0123456789abcdef0123").expect("key");
        assert_eq!(m.check(m.id, OBJECTS, "sha256-x", None), Ok(()));
        let refused = m
            .check(m.id, OBJECTS, "sha256-x", Some(&key))
            .expect_err("refused");
        assert_eq!(refused.problem, Problem::NotAuthenticated);
        assert!(RecordKey::new("short").is_err());
    }
}
