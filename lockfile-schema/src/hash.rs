//! The sha256 digests berth records: NAR hashes of plugin trees and hashes of downloaded files.

use std::fmt;
use std::str::FromStr;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

/// The alphabet of Nix's base-32 encoding (no `e`, `o`, `u`, `t`).
const NIX32_ALPHABET: &[u8; 32] = b"0123456789abcdfghijklmnpqrsvwxyz";

/// A sha256 digest, written in SRI form (`sha256-` + standard base64 with padding), the form
/// `nix hash path` prints and the lockfile stores.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Sha256Hash([u8; 32]);

/// Why a string is not an SRI sha256 hash.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{value}` is not a sha256 hash in SRI form (`sha256-` followed by 44 base64 characters)")]
pub struct HashParseError {
    /// The rejected text.
    pub value: String,
}

impl Sha256Hash {
    /// Wraps raw digest bytes.
    pub const fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// The raw digest bytes.
    pub const fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// `sha256-<base64>`, exactly as `nix hash path` prints it.
    pub fn to_sri(&self) -> String {
        format!("sha256-{}", STANDARD.encode(self.0))
    }

    /// Parses the SRI form.
    pub fn from_sri(value: &str) -> Result<Self, HashParseError> {
        let err = || HashParseError {
            value: value.to_owned(),
        };
        let b64 = value.strip_prefix("sha256-").ok_or_else(err)?;
        let bytes = STANDARD.decode(b64).map_err(|_| err())?;
        let bytes: [u8; 32] = bytes.try_into().map_err(|_| err())?;
        Ok(Self(bytes))
    }

    /// Nix's base-32 form (52 characters), used to name store entries like Nix store paths.
    pub fn to_nix32(&self) -> String {
        nix32(&self.0)
    }

    /// Parses Nix's base-32 form (52 characters), as narinfo files write hashes.
    pub fn from_nix32(value: &str) -> Result<Self, HashParseError> {
        let err = || HashParseError {
            value: value.to_owned(),
        };
        let bytes = parse_nix32(value, 32).ok_or_else(err)?;
        Ok(Self(bytes.try_into().map_err(|_| err())?))
    }

    /// Lower-case hexadecimal.
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// The `len` bytes that [`nix32`] wrote as `text`, or `None` when `text` is not exactly
/// that (wrong length, a character outside the alphabet, bits set past the end).
pub fn parse_nix32(text: &str, len: usize) -> Option<Vec<u8>> {
    if text.len() != (len * 8).div_ceil(5) {
        return None;
    }
    let mut bytes = vec![0u8; len];
    for (n, c) in text.bytes().rev().enumerate() {
        let digit = NIX32_ALPHABET.iter().position(|&a| a == c)?;
        let digit = u16::try_from(digit).ok()?;
        let bit = n * 5;
        let i = bit / 8;
        let j = bit % 8;
        bytes[i] |= u8::try_from((digit << j) & 0xff).ok()?;
        let carry = digit >> (8 - j);
        if i + 1 < len {
            bytes[i + 1] |= u8::try_from(carry).ok()?;
        } else if carry != 0 {
            return None;
        }
    }
    Some(bytes)
}

/// Nix's base-32 encoding: characters are produced from the last 5-bit group to the first,
/// reading the bytes as one little-endian number.
pub fn nix32(bytes: &[u8]) -> String {
    let len = (bytes.len() * 8).div_ceil(5);
    let mut out = String::with_capacity(len);
    for n in (0..len).rev() {
        let bit = n * 5;
        let i = bit / 8;
        let j = bit % 8;
        let low = u16::from(bytes[i]) >> j;
        let high = if i + 1 < bytes.len() {
            u16::from(bytes[i + 1]) << (8 - j)
        } else {
            0
        };
        out.push(char::from(NIX32_ALPHABET[usize::from((low | high) & 0x1f)]));
    }
    out
}

impl fmt::Display for Sha256Hash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_sri())
    }
}

impl fmt::Debug for Sha256Hash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Sha256Hash({})", self.to_sri())
    }
}

impl FromStr for Sha256Hash {
    type Err = HashParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::from_sri(s)
    }
}

/// Whether `s` is a full commit id in lower-case hex.
pub fn is_full_commit_id(s: &str) -> bool {
    s.len() == 40 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// A full git commit id (SHA-1), valid from construction: 40 lower-case hex digits, so
/// code that holds one never re-checks or `expect`s it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CommitId(String);

impl CommitId {
    /// `text` if it is 40 lower-case hex digits.
    pub fn parse(text: &str) -> Option<Self> {
        is_full_commit_id(text).then(|| Self(text.to_owned()))
    }

    /// The id of these 20 bytes.
    pub fn from_bytes(bytes: [u8; 20]) -> Self {
        Self(bytes.iter().map(|b| format!("{b:02x}")).collect())
    }

    /// Its 20 bytes.
    pub fn to_bytes(&self) -> [u8; 20] {
        let mut out = [0u8; 20];
        for (i, byte) in out.iter_mut().enumerate() {
            let digit = |c: u8| match c {
                b'0'..=b'9' => c - b'0',
                _ => c - b'a' + 10,
            };
            let pair = &self.0.as_bytes()[2 * i..2 * i + 2];
            *byte = digit(pair[0]) << 4 | digit(pair[1]);
        }
        out
    }

    /// The 40 hex digits.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::ops::Deref for CommitId {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for CommitId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sri_round_trips() {
        let sri = "sha256-YTabh+pYy+1YFX8++ODYhifhcgXuF8i+vwqJMFLypkE=";
        let hash = Sha256Hash::from_sri(sri).expect("valid SRI");
        assert_eq!(hash.to_sri(), sri);
    }

    #[test]
    fn nix32_matches_the_spec_vector() {
        // docs/spec.md section 3 gives both forms of the same digest.
        let hash = Sha256Hash::from_sri("sha256-YTabh+pYy+1YFX8++ODYhifhcgXuF8i+vwqJMFLypkE=")
            .expect("valid SRI");
        assert_eq!(
            hash.to_nix32(),
            "0hd6y993128apyzch5zf0mrf29w6v3hghgkz2mcfvjsqxa3rndk1"
        );
    }

    #[test]
    fn rejects_malformed_sri() {
        for bad in [
            "",
            "sha256-",
            "sha512-YTabh+pYy+1YFX8++ODYhifhcgXuF8i+vwqJMFLypkE=",
            "sha256-YTabh+pYy+1YFX8++ODYhifhcgXuF8i+vwqJMFLyp=",
            "sha256-!!!",
        ] {
            assert!(Sha256Hash::from_sri(bad).is_err(), "{bad} must be rejected");
        }
    }

    #[test]
    fn commit_ids_are_valid_from_construction() {
        let id = CommitId::parse("3ad07f06c4b1d6a1f7e0d7f2a9c1b4e5d6f7a8b9").expect("valid");
        assert_eq!(CommitId::from_bytes(id.to_bytes()), id);
        assert_eq!(id.to_bytes()[0], 0x3a);
        assert!(CommitId::parse("3AD07F06C4B1D6A1F7E0D7F2A9C1B4E5D6F7A8B9").is_none());
        assert!(CommitId::parse("3ad07f0").is_none());
        assert!(CommitId::parse("zad07f06c4b1d6a1f7e0d7f2a9c1b4e5d6f7a8b9").is_none());
    }
}
