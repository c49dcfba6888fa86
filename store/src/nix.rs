//! Where Nix would keep a store entry: the store path of a folder added as a fixed-output
//! source with a recursive sha256 (`nix-store --add-fixed --recursive sha256 DIR`), which
//! is what a binary cache names it by.

use berth_lockfile_schema::{Sha256Hash, nix32};
use sha2::{Digest, Sha256};

use crate::store::entry_name;

/// Nix's store folder, as every public binary cache assumes.
pub const NIX_STORE_DIR: &str = "/nix/store";

/// `/nix/store/<hash>-<name>` for a tree whose NAR hashes to `nar_hash`: Nix's
/// `makeFixedOutputPath` for a recursive sha256, i.e. the sha256 of
/// `source:sha256:<hex>:/nix/store:<name>`, folded to 20 bytes and written in nix32.
/// `name` goes through [`entry_name`], so it is one Nix accepts.
pub fn nix_store_path(nar_hash: &Sha256Hash, name: &str) -> String {
    let name = entry_name(name);
    let fingerprint = format!("source:sha256:{}:{NIX_STORE_DIR}:{name}", nar_hash.to_hex());
    let digest = Sha256::digest(fingerprint.as_bytes());
    let mut folded = [0u8; 20];
    for (i, byte) in digest.iter().enumerate() {
        folded[i % 20] ^= byte;
    }
    format!("{NIX_STORE_DIR}/{}-{name}", nix32(&folded))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_path_nix_gave_a_folder() {
        // `nix-store --add-fixed --recursive sha256 alpha` (NOTES-nix-cache.md).
        let hash = Sha256Hash::from_nix32("1qmapbxvz7wgy0nyiyf6n3x5b8n623944sh14nfm5ibf2143d9wp")
            .expect("nix32");
        assert_eq!(
            nix_store_path(&hash, "alpha"),
            "/nix/store/pk4rixl8aszirpdar4vvammw3zw1dqh0-alpha"
        );
    }
}
