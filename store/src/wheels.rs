//! Wheels of custom agent packages and the environments built from them (docs/spec.md section 8).
//!
//! - `wheels-v1/<sha256 hex>/<file name>`: one wheel, read-only, present only if its bytes
//!   hash to the folder's name. Staged in `tmp/`, checked, then renamed into place.
//! - `envs-v1/<key>-<package>/`: a Python environment built offline from locked wheels;
//!   `<key>` digests the wheels, the entry point, uv's and the locked Python's version
//!   (see `berth_runtime::agent_env::env_key`). Built in `tmp/` and
//!   renamed into place, so a present environment is complete.

use std::path::{Path, PathBuf};

use berth_lockfile_schema::Sha256Hash;

use crate::nar::Sha256Sink;
use crate::store::{Staging, Store, StoreError};

/// Where wheels live, under the store root.
pub const WHEELS_DIR: &str = "wheels-v1";
/// Where agent environments live, under the store root.
pub const ENVS_DIR: &str = "envs-v1";

/// A wheel's bytes did not hash to what the lock says.
#[derive(Debug, thiserror::Error)]
#[error("wheel `{file}` hashes to sha256 `{actual}`, but the lock says `{expected}`")]
pub struct WheelMismatch {
    /// The wheel's file name.
    pub file: String,
    /// What the lock says (hex).
    pub expected: String,
    /// What the bytes hash to (hex).
    pub actual: String,
}

/// The sha256 of a file's bytes.
pub fn hash_file(path: &Path) -> std::io::Result<Sha256Hash> {
    let mut sink = Sha256Sink::default();
    std::io::copy(&mut fs_err::File::open(path)?, &mut sink)?;
    Ok(sink.finish())
}

/// The sha256 of a file's bytes, lower-case hex (pip's `--hash=sha256:` form).
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    Ok(hash_file(path)?.to_hex())
}

impl Store {
    /// Where the wheel `file` with sha256 `sha256` lives (whether or not it is there).
    pub fn wheel_path(&self, sha256: &str, file: &str) -> PathBuf {
        self.root().join(WHEELS_DIR).join(sha256).join(file)
    }

    /// The wheel, if the store has it.
    pub fn wheel(&self, sha256: &str, file: &str) -> Option<PathBuf> {
        let path = self.wheel_path(sha256, file);
        path.is_file().then_some(path)
    }

    /// Adds the wheel staged as `staging/<file>` if its bytes hash to `sha256`; on a
    /// mismatch nothing is added and the error names both hashes.
    pub fn add_wheel(
        &self,
        staging: Staging,
        file: &str,
        sha256: &str,
    ) -> Result<Result<PathBuf, WheelMismatch>, StoreError> {
        let staged = staging.path().join(file);
        let actual = sha256_file(&staged)?;
        if actual != sha256 {
            return Ok(Err(WheelMismatch {
                file: file.to_owned(),
                expected: sha256.to_owned(),
                actual,
            }));
        }
        if let Some(path) = self.wheel(sha256, file) {
            return Ok(Ok(path));
        }
        // Only the wheel goes in: anything else a builder left beside it stays in staging.
        for entry in fs_err::read_dir(staging.path())? {
            let entry = entry?;
            if entry.file_name() != file {
                crate::remove_tree(&entry.path())?;
            }
        }
        crate::store::set_mode(&staged, 0o444)?;
        let dest = self.root().join(WHEELS_DIR).join(sha256);
        match staging.persist_to(&dest) {
            Ok(()) => {}
            Err(_) if self.wheel(sha256, file).is_some() => {}
            Err(e) => return Err(e.into()),
        }
        Ok(Ok(self.wheel_path(sha256, file)))
    }

    /// Where the environment `<key>-<package>` lives (whether or not it is there).
    pub fn env_path(&self, key: &str, package: &str) -> PathBuf {
        self.root()
            .join(ENVS_DIR)
            .join(format!("{key}-{}", crate::entry_name(package)))
    }

    /// Every wheel in the store, as `(sha256, file)`.
    pub fn wheels(&self) -> Result<Vec<(String, String)>, StoreError> {
        let mut out = Vec::new();
        let dir = self.root().join(WHEELS_DIR);
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
            Err(e) => return Err(e.into()),
        };
        for entry in entries {
            let entry = entry?;
            let sha = entry.file_name().to_string_lossy().into_owned();
            for file in fs_err::read_dir(entry.path())? {
                out.push((
                    sha.clone(),
                    file?.file_name().to_string_lossy().into_owned(),
                ));
            }
        }
        out.sort();
        Ok(out)
    }
}

/// What of a locked agent package the store holds.
impl Store {
    /// The locked wheels missing from the store.
    pub fn missing_wheels(&self, agent: &berth_lockfile_schema::LockedAgent) -> Vec<String> {
        agent
            .wheels
            .iter()
            .filter(|w| self.wheel(&w.sha256, &w.file).is_none())
            .map(|w| w.file.to_string())
            .collect()
    }

    /// Whether the store holds everything the locked agent needs: its source tree (git
    /// and archive sources) and every wheel.
    pub fn has_agent(&self, agent: &berth_lockfile_schema::LockedAgent) -> bool {
        agent
            .tree
            .as_ref()
            .is_none_or(|t| self.lookup(&t.hash, &t.name).is_some())
            && self.missing_wheels(agent).is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::{Digest, Sha256};

    fn hex(bytes: &[u8]) -> String {
        Sha256Hash::from_bytes(bytes.try_into().expect("32 bytes")).to_hex()
    }

    #[test]
    fn a_wheel_is_added_only_with_its_hash() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::new(dir.path().join("store"));
        let staging = store.stage().expect("stage");
        std::fs::write(staging.path().join("a-1-py3-none-any.whl"), b"wheel").expect("write");
        let wrong = "0".repeat(64);
        let mismatch = store
            .add_wheel(staging, "a-1-py3-none-any.whl", &wrong)
            .expect("io")
            .expect_err("mismatch");
        assert_eq!(mismatch.expected, wrong);
        assert_eq!(
            mismatch.actual,
            hex(&Sha256::digest(b"wheel")),
            "names what it got"
        );
        assert!(store.wheels().expect("list").is_empty());

        let staging = store.stage().expect("stage");
        std::fs::write(staging.path().join("a-1-py3-none-any.whl"), b"wheel").expect("write");
        std::fs::write(staging.path().join("build.log"), b"noise").expect("write");
        let sha = hex(&Sha256::digest(b"wheel"));
        let path = store
            .add_wheel(staging, "a-1-py3-none-any.whl", &sha)
            .expect("io")
            .expect("added");
        assert_eq!(std::fs::read(&path).expect("read"), b"wheel");
        assert_eq!(
            store.wheels().expect("list"),
            vec![(sha.clone(), "a-1-py3-none-any.whl".to_owned())]
        );
        assert!(store.wheel(&sha, "a-1-py3-none-any.whl").is_some());
    }
}
