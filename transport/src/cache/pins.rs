//! Pin records in a binary cache: beside an entry's NAR, the pins the pushing store saw
//! produce it (`pins/<hash part>/<digest>`, each the pin's provenance as text), so a server
//! of a fleet that substitutes the entry knows where it came from without asking upstream.
//!
//! A cache's pin record is its writer's word, as its narinfo is: berth takes it from a
//! cache it requires no signature of (no `--trusted-public-key`), and a caller may take
//! none at all (a server with a record key checks every pin it has not seen against its
//! source).

use berth_lockfile_schema::Sha256Hash;
use berth_store::{nix_store_path, pin_digest};

use super::io_context::InCache;
use super::{Cache, CacheError};

/// Where the record of `provenance` for the entry `(hash, name)` is kept.
fn pin_key(hash: &Sha256Hash, name: &str, provenance: &str) -> String {
    let store_path = nix_store_path(hash, name);
    let base = store_path.rsplit('/').next().unwrap_or(&store_path);
    let hash_part = base.split('-').next().unwrap_or(base);
    format!("pins/{hash_part}/{}", pin_digest(provenance))
}

impl Cache {
    /// Records `pins` (provenance texts) beside the entry `(hash, name)`, skipping those
    /// already there; returns how many were written.
    pub fn push_pins(
        &self,
        hash: &Sha256Hash,
        name: &str,
        pins: &[String],
    ) -> Result<usize, CacheError> {
        let mut written = 0;
        for provenance in pins {
            let key = pin_key(hash, name, provenance);
            if self.backend.exists(&key).in_cache(self)? {
                continue;
            }
            self.backend
                .put_bytes(&key, provenance.as_bytes())
                .in_cache(self)?;
            written += 1;
        }
        Ok(written)
    }

    /// Whether this cache records that the pin `provenance` produced the entry
    /// `(hash, name)`: never for a cache whose narinfos must be signed (its pin records
    /// are not).
    pub fn has_pin(
        &self,
        hash: &Sha256Hash,
        name: &str,
        provenance: &str,
    ) -> Result<bool, CacheError> {
        if !self.trusted.is_empty() {
            return Ok(false);
        }
        let key = pin_key(hash, name, provenance);
        let Some(mut reader) = self.backend.open(&key).in_cache(self)? else {
            return Ok(false);
        };
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::Read::take(&mut reader, 64 * 1024), &mut text)
            .in_cache(self)?;
        Ok(text == provenance)
    }
}
