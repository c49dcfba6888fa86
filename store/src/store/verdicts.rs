//! Verdicts: what a reader concluded from an entry's content, remembered beside the entry.
//!
//! An entry's content never changes (it is named after its hash, and [`Store::checked_lookup`]
//! refuses one that did), so a conclusion drawn from it stays true for as long as the
//! reader would draw it the same way. The runtime's scan for hidden characters records
//! one when it finds an entry clean, so that `plugins show` and `run` scan only what was
//! never found clean; the verdict names the scanner's version, and a newer scanner, with
//! its own words, finds none and scans again.
//!
//! A verdict is `meta-v1/<nix32>-<name>.verdict`, beside the entry's stat record: a
//! symlink whose target is the reader's words (one line), so that asking for it is one
//! `readlink`, not an open, a read and a close (the commands that use a lock ask it of
//! every plugin, on their hot path). Nothing follows the link; it is made beside and
//! renamed into place, goes with its entry (`gc`, `store verify --repair`, `sync`
//! replacing a changed entry), and, like a stat record, it is bookkeeping against
//! mistakes, not a signature: whoever can write the store can write it.

use berth_lockfile_schema::Sha256Hash;

use super::{Store, entry_name};

impl Store {
    /// Whether the entry `(hash, name)` carries exactly `verdict` (one line). One
    /// `readlink`; a missing or different one is `false`.
    pub fn has_verdict(&self, hash: &Sha256Hash, name: &str, verdict: &str) -> bool {
        std::fs::read_link(self.verdict_path(&folder(hash, name)))
            .is_ok_and(|words| words.as_os_str() == verdict)
    }

    /// Records `verdict` (one line) for the entry `(hash, name)`, replacing any other.
    /// Best effort for callers: a read-only store has none, and its entries are read again.
    pub fn record_verdict(
        &self,
        hash: &Sha256Hash,
        name: &str,
        verdict: &str,
    ) -> std::io::Result<()> {
        let folder = folder(hash, name);
        self.link_meta(&self.verdict_path(&folder), &folder, verdict)
    }
}

fn folder(hash: &Sha256Hash, name: &str) -> String {
    format!("{}-{}", hash.to_nix32(), entry_name(name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nar::Exclude;

    #[test]
    fn a_verdict_is_kept_with_its_entry_and_goes_with_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let src = dir.path().join("src");
        fs_err::create_dir_all(&src).expect("mkdir");
        fs_err::write(src.join("a.md"), "hi\n").expect("write");
        let store = Store::new(dir.path().join("store"));
        let entry = store
            .add_dir(&src, "demo", None, Exclude::NOTHING)
            .expect("add");
        assert!(!store.has_verdict(&entry.hash, "demo", "scan 2: clean"));
        store
            .record_verdict(&entry.hash, "demo", "scan 2: clean")
            .expect("record");
        assert!(store.has_verdict(&entry.hash, "demo", "scan 2: clean"));
        assert!(!store.has_verdict(&entry.hash, "demo", "scan 3: clean"));
        assert!(!store.has_verdict(&entry.hash, "other", "scan 2: clean"));

        // gc keeps the verdict of a live entry...
        assert_eq!(store.remove_stale_records().expect("clean"), 0);
        assert!(store.has_verdict(&entry.hash, "demo", "scan 2: clean"));
        // ...and a removed entry's goes with it.
        store.discard_entry(&entry.hash, "demo").expect("discard");
        assert!(!store.has_verdict(&entry.hash, "demo", "scan 2: clean"));
        store
            .record_verdict(&entry.hash, "demo", "scan 2: clean")
            .expect("record for an entry that is gone");
        assert_eq!(store.remove_stale_records().expect("clean"), 1);
        assert!(!store.has_verdict(&entry.hash, "demo", "scan 2: clean"));
    }
}
