//! Pin records: which pins this store saw produce an entry.
//!
//! An entry is named by its hash, so its content is what its name says; what a lock says
//! of where the content came from (a git commit at a URL, an archive, a folder) is another
//! claim, which only fetching that pin and hashing what it gives can check. A pin record
//! says this store did: `meta-v1/<nix32>-<name>.pins/<digest>`, one file per pin, whose
//! name is a digest of the pin's provenance as its caller writes it (the store does not
//! know what a pin is) and whose content is that text, for people. Asking for one is one
//! `lstat`.
//!
//! A record is made when an entry is fetched from its source (not from a binary cache,
//! which vouches for content only) or when a pin is fetched and hashed to check it. Like
//! the stat record and the verdict beside it, it goes with its entry, and it is
//! bookkeeping, not a signature: whoever can write the store can write it.

use std::path::PathBuf;

use berth_lockfile_schema::Sha256Hash;
use sha2::{Digest, Sha256};

use super::{Store, entry_name};
use crate::record::{PINS_SUFFIX, RECORDS_DIR};

impl Store {
    /// Whether this store recorded that the pin `provenance` produced the entry
    /// `(hash, name)`.
    pub fn has_pin(&self, hash: &Sha256Hash, name: &str, provenance: &str) -> bool {
        std::fs::symlink_metadata(self.pin_path(hash, name, provenance)).is_ok()
    }

    /// Records that the pin `provenance` produced the entry `(hash, name)` (the caller
    /// fetched and hashed it). Best effort for callers: a store that cannot be written
    /// keeps no record, and the pin is checked again next time.
    pub fn record_pin(
        &self,
        hash: &Sha256Hash,
        name: &str,
        provenance: &str,
    ) -> std::io::Result<()> {
        let path = self.pin_path(hash, name, provenance);
        if std::fs::symlink_metadata(&path).is_ok() {
            return Ok(());
        }
        let folder = folder(hash, name);
        fs_err::create_dir_all(
            path.parent()
                .expect("a pin record is in its entry's folder"),
        )?;
        self.write_meta(&path, &folder, provenance.as_bytes())
    }

    /// The provenance of every pin this store saw produce the entry `(hash, name)` (what
    /// a binary cache it is pushed to records beside it).
    pub fn pins(&self, hash: &Sha256Hash, name: &str) -> Vec<String> {
        let Ok(files) = std::fs::read_dir(self.pins_dir(hash, name)) else {
            return Vec::new();
        };
        let mut pins: Vec<String> = files
            .filter_map(Result::ok)
            .filter(|file| !file.file_name().to_string_lossy().starts_with('.'))
            .filter_map(|file| std::fs::read_to_string(file.path()).ok())
            .collect();
        pins.sort();
        pins
    }

    /// `meta-v1/<nix32>-<name>.pins/<digest of provenance>`.
    fn pin_path(&self, hash: &Sha256Hash, name: &str, provenance: &str) -> PathBuf {
        self.pins_dir(hash, name).join(pin_digest(provenance))
    }

    fn pins_dir(&self, hash: &Sha256Hash, name: &str) -> PathBuf {
        self.root()
            .join(RECORDS_DIR)
            .join(format!("{}{PINS_SUFFIX}", folder(hash, name)))
    }
}

/// What a pin record is named by: the first 16 bytes of the sha256 of its provenance, in
/// hex (a binary cache names its copy the same way).
pub fn pin_digest(provenance: &str) -> String {
    let digest = Sha256::digest(provenance.as_bytes());
    digest[..16].iter().map(|b| format!("{b:02x}")).collect()
}

fn folder(hash: &Sha256Hash, name: &str) -> String {
    format!("{}-{}", hash.to_nix32(), entry_name(name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nar::Exclude;

    #[test]
    fn a_pin_record_is_kept_with_its_entry_and_goes_with_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let src = dir.path().join("src");
        fs_err::create_dir_all(&src).expect("mkdir");
        fs_err::write(src.join("a.md"), "hi\n").expect("write");
        let store = Store::new(dir.path().join("store"));
        let entry = store
            .add_dir(&src, "demo", None, Exclude::NOTHING)
            .expect("add");
        let (pin, other) = ("url = \"a\"\nrev = \"1\"\n", "url = \"b\"\nrev = \"1\"\n");
        assert!(!store.has_pin(&entry.hash, "demo", pin));
        store.record_pin(&entry.hash, "demo", pin).expect("record");
        store.record_pin(&entry.hash, "demo", pin).expect("again");
        assert!(store.has_pin(&entry.hash, "demo", pin));
        assert_eq!(store.pins(&entry.hash, "demo"), vec![pin.to_owned()]);
        assert!(!store.has_pin(&entry.hash, "demo", other), "another pin");
        assert!(!store.has_pin(&entry.hash, "other", pin), "another entry");

        // gc keeps the records of a live entry...
        assert_eq!(store.remove_stale_records().expect("clean"), 0);
        assert!(store.has_pin(&entry.hash, "demo", pin));
        // ...and a removed entry's go with it.
        store.discard_entry(&entry.hash, "demo").expect("discard");
        assert!(!store.has_pin(&entry.hash, "demo", pin));
        store
            .record_pin(&entry.hash, "demo", pin)
            .expect("record for an entry that is gone");
        assert_eq!(store.remove_stale_records().expect("clean"), 1);
        assert!(!store.has_pin(&entry.hash, "demo", pin));
    }
}
