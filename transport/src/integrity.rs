//! Subresource Integrity values (`sha512-<base64>`): what npm records for a tarball, and
//! checking a downloaded file against one.

use std::io::Read as _;
use std::path::Path;

use base64::Engine as _;
use sha2::{Digest, Sha256, Sha384, Sha512};

/// A Subresource Integrity value (`sha512-<base64>`), as npm writes `dist.integrity`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Integrity {
    algorithm: Algorithm,
    digest: Vec<u8>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Algorithm {
    Sha256,
    Sha384,
    Sha512,
}

impl Algorithm {
    fn name(self) -> &'static str {
        match self {
            Algorithm::Sha256 => "sha256",
            Algorithm::Sha384 => "sha384",
            Algorithm::Sha512 => "sha512",
        }
    }
}

impl std::fmt::Display for Integrity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}-{}",
            self.algorithm.name(),
            base64::engine::general_purpose::STANDARD.encode(&self.digest)
        )
    }
}

impl Integrity {
    /// Its digest, when it is a SHA-512 (as npm's `dist.integrity` is).
    pub fn sha512(&self) -> Option<[u8; 64]> {
        match self.algorithm {
            Algorithm::Sha512 => self.digest.as_slice().try_into().ok(),
            _ => None,
        }
    }

    /// The strongest sha2 hash of a space-separated SRI list; `None` when it has none
    /// (old packages list only a sha1 `shasum`, which berth does not trust).
    pub fn parse(text: &str) -> Option<Self> {
        text.split_whitespace()
            .filter_map(|item| {
                let (name, rest) = item.split_once('-')?;
                let algorithm = match name {
                    "sha256" => Algorithm::Sha256,
                    "sha384" => Algorithm::Sha384,
                    "sha512" => Algorithm::Sha512,
                    _ => return None,
                };
                // Options after `?` are allowed by SRI and ignored.
                let b64 = rest.split('?').next().unwrap_or_default();
                let digest = base64::engine::general_purpose::STANDARD.decode(b64).ok()?;
                let len = match algorithm {
                    Algorithm::Sha256 => 32,
                    Algorithm::Sha384 => 48,
                    Algorithm::Sha512 => 64,
                };
                (digest.len() == len).then_some(Integrity { algorithm, digest })
            })
            .max_by_key(|i| i.algorithm)
    }

    /// The same hash of a file's bytes.
    pub fn of_file(&self, path: &Path) -> std::io::Result<Self> {
        let mut file = fs_err::File::open(path)?;
        let mut buffer = vec![0u8; 64 * 1024];
        let mut sha256 = Sha256::new();
        let mut sha384 = Sha384::new();
        let mut sha512 = Sha512::new();
        loop {
            let n = file.read(&mut buffer)?;
            if n == 0 {
                break;
            }
            match self.algorithm {
                Algorithm::Sha256 => sha256.update(&buffer[..n]),
                Algorithm::Sha384 => sha384.update(&buffer[..n]),
                Algorithm::Sha512 => sha512.update(&buffer[..n]),
            }
        }
        let digest = match self.algorithm {
            Algorithm::Sha256 => sha256.finalize().to_vec(),
            Algorithm::Sha384 => sha384.finalize().to_vec(),
            Algorithm::Sha512 => sha512.finalize().to_vec(),
        };
        Ok(Self {
            algorithm: self.algorithm,
            digest,
        })
    }
}
