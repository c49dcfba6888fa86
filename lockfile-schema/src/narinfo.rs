//! Nix binary cache files: `nix-cache-info` and `<hash>.narinfo`, written the way
//! `nix copy --to file://` writes them and read back strictly enough that a damaged or
//! hostile file is refused, never half-understood.

use std::fmt::Write as _;

use crate::hash::{Sha256Hash, nix32};

/// The `nix-cache-info` berth writes: Nix's store folder, mass queries allowed, and a
/// priority behind cache.nixos.org's (40), as Nix writes for its own file caches.
pub const NIX_CACHE_INFO: &str = "StoreDir: /nix/store\nWantMassQuery: 1\nPriority: 50\n";

/// The compressions berth writes and reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// zstd (`nar/<filehash>.nar.zst`), the default.
    Zstd,
    /// xz (`nar/<filehash>.nar.xz`), what `nix copy` writes by default.
    Xz,
    /// None (`nar/<filehash>.nar`).
    None,
}

impl Compression {
    /// The narinfo's `Compression:` value.
    pub fn as_str(self) -> &'static str {
        match self {
            Compression::Zstd => "zstd",
            Compression::Xz => "xz",
            Compression::None => "none",
        }
    }

    /// The NAR file's extension after `.nar`.
    pub fn extension(self) -> &'static str {
        match self {
            Compression::Zstd => ".zst",
            Compression::Xz => ".xz",
            Compression::None => "",
        }
    }

    fn parse(value: &str) -> Option<Self> {
        match value {
            "zstd" => Some(Compression::Zstd),
            "xz" => Some(Compression::Xz),
            "none" | "" => Some(Compression::None),
            _ => None,
        }
    }
}

/// One `<hash>.narinfo`: where a store path's NAR is and what it must hash to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NarInfo {
    /// `/nix/store/<hash>-<name>`.
    pub store_path: String,
    /// The NAR file, relative to the cache (`nar/<filehash>.nar.zst`).
    pub url: String,
    /// How the NAR file is compressed.
    pub compression: Compression,
    /// sha256 of the (compressed) NAR file.
    pub file_hash: Sha256Hash,
    /// Size of the (compressed) NAR file.
    pub file_size: u64,
    /// sha256 of the NAR: the plugin's hash in the lock.
    pub nar_hash: Sha256Hash,
    /// Size of the NAR.
    pub nar_size: u64,
    /// Store paths this one refers to (always none for a plugin folder).
    pub references: Vec<String>,
    /// `fixed:r:sha256:<nix32>` for a content-addressed path.
    pub ca: Option<String>,
    /// `name:base64` signatures over [`NarInfo::fingerprint`].
    pub sigs: Vec<String>,
}

/// Why a narinfo was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NarInfoError {
    /// A line without `: `.
    #[error("line {line} is not `Key: value`")]
    BadLine {
        /// 1-based.
        line: usize,
    },
    /// A required field is absent.
    #[error("`{0}` is missing")]
    Missing(&'static str),
    /// A field given twice.
    #[error("`{0}` is given twice")]
    Duplicate(String),
    /// A value that does not parse.
    #[error("`{field}` has the invalid value `{value}`")]
    Invalid {
        /// The field.
        field: &'static str,
        /// Its value.
        value: String,
    },
}

impl NarInfo {
    /// The narinfo's file name in the cache: the store path's hash part + `.narinfo`.
    pub fn file_name(store_path: &str) -> String {
        let base = store_path.rsplit('/').next().unwrap_or(store_path);
        let hash = base.split('-').next().unwrap_or(base);
        format!("{hash}.narinfo")
    }

    /// `CA: fixed:r:sha256:<nix32>`, the content address of a folder added as a
    /// recursive sha256 fixed output.
    pub fn recursive_ca(nar_hash: &Sha256Hash) -> String {
        format!("fixed:r:sha256:{}", nar_hash.to_nix32())
    }

    /// What a `Sig:` signs, in Nix's form: `1;<store path>;sha256:<nix32>;<nar size>;<refs>`.
    pub fn fingerprint(&self) -> String {
        format!(
            "1;{};sha256:{};{};{}",
            self.store_path,
            self.nar_hash.to_nix32(),
            self.nar_size,
            self.references.join(",")
        )
    }

    /// The file's text, in the order `nix copy` writes the fields.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "StorePath: {}", self.store_path);
        let _ = writeln!(out, "URL: {}", self.url);
        let _ = writeln!(out, "Compression: {}", self.compression.as_str());
        let _ = writeln!(out, "FileHash: sha256:{}", nix32(self.file_hash.as_bytes()));
        let _ = writeln!(out, "FileSize: {}", self.file_size);
        let _ = writeln!(out, "NarHash: sha256:{}", self.nar_hash.to_nix32());
        let _ = writeln!(out, "NarSize: {}", self.nar_size);
        let _ = writeln!(out, "References: {}", self.references.join(" "));
        for sig in &self.sigs {
            let _ = writeln!(out, "Sig: {sig}");
        }
        if let Some(ca) = &self.ca {
            let _ = writeln!(out, "CA: {ca}");
        }
        out
    }

    /// Reads a narinfo. Unknown fields (`Deriver`, `System`, ...) are ignored, as Nix
    /// ignores them; the fields berth relies on must be present, once, and valid.
    pub fn parse(text: &str) -> Result<Self, NarInfoError> {
        let mut fields: Vec<(&str, &str)> = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if line.is_empty() {
                continue;
            }
            let (key, value) = line
                .split_once(':')
                .ok_or(NarInfoError::BadLine { line: i + 1 })?;
            let value = value.strip_prefix(' ').unwrap_or(value);
            if key != "Sig" && fields.iter().any(|(k, _)| *k == key) {
                return Err(NarInfoError::Duplicate(key.to_owned()));
            }
            fields.push((key, value));
        }
        let get = |key: &'static str| fields.iter().find(|(k, _)| *k == key).map(|(_, v)| *v);
        let need = |key: &'static str| get(key).ok_or(NarInfoError::Missing(key));
        let invalid = |field: &'static str, value: &str| NarInfoError::Invalid {
            field,
            value: value.to_owned(),
        };
        let hash = |field: &'static str| -> Result<Sha256Hash, NarInfoError> {
            let value = need(field)?;
            value
                .strip_prefix("sha256:")
                .and_then(|h| Sha256Hash::from_nix32(h).ok())
                .ok_or_else(|| invalid(field, value))
        };
        let size = |field: &'static str| -> Result<u64, NarInfoError> {
            let value = need(field)?;
            value.parse().map_err(|_| invalid(field, value))
        };
        let store_path = need("StorePath")?.to_owned();
        if !store_path.starts_with("/nix/store/") || store_path.contains("/../") {
            return Err(invalid("StorePath", &store_path));
        }
        let url = need("URL")?.to_owned();
        if url.is_empty()
            || url.starts_with('/')
            || url.split('/').any(|p| p == "..")
            || url.contains("://")
        {
            return Err(invalid("URL", &url));
        }
        let compression = get("Compression").unwrap_or("bzip2");
        let compression =
            Compression::parse(compression).ok_or_else(|| invalid("Compression", compression))?;
        Ok(Self {
            store_path,
            url,
            compression,
            file_hash: hash("FileHash")?,
            file_size: size("FileSize")?,
            nar_hash: hash("NarHash")?,
            nar_size: size("NarSize")?,
            references: get("References")
                .map(|r| r.split_whitespace().map(str::to_owned).collect())
                .unwrap_or_default(),
            ca: get("CA").map(str::to_owned),
            sigs: fields
                .iter()
                .filter(|(k, _)| *k == "Sig")
                .map(|(_, v)| (*v).to_owned())
                .collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The narinfo `nix copy --to file://` wrote for a folder (NOTES-nix-cache.md).
    const NIX_WROTE: &str = "StorePath: /nix/store/pk4rixl8aszirpdar4vvammw3zw1dqh0-alpha
URL: nar/0sx4c2w06sxiawrgs382idvykwij36a02q9096apry1gxnlnz7bp.nar.xz
Compression: xz
FileHash: sha256:0sx4c2w06sxiawrgs382idvykwij36a02q9096apry1gxnlnz7bp
FileSize: 196
NarHash: sha256:1qmapbxvz7wgy0nyiyf6n3x5b8n623944sh14nfm5ibf2143d9wp
NarSize: 648
References: 
CA: fixed:r:sha256:1qmapbxvz7wgy0nyiyf6n3x5b8n623944sh14nfm5ibf2143d9wp
";

    #[test]
    fn reads_and_writes_what_nix_writes() {
        let info = NarInfo::parse(NIX_WROTE).expect("valid");
        assert_eq!(info.compression, Compression::Xz);
        assert_eq!(info.nar_size, 648);
        assert_eq!(info.references, Vec::<String>::new());
        assert_eq!(
            info.ca.as_deref(),
            Some(NarInfo::recursive_ca(&info.nar_hash).as_str())
        );
        assert_eq!(info.render(), NIX_WROTE);
        assert_eq!(
            NarInfo::file_name(&info.store_path),
            "pk4rixl8aszirpdar4vvammw3zw1dqh0.narinfo"
        );
    }

    #[test]
    fn refuses_what_it_cannot_trust() {
        for (edit, why) in [
            (
                NIX_WROTE.replace("NarHash", "Narhash"),
                "`NarHash` is missing",
            ),
            (
                NIX_WROTE.replace("NarSize: 648", "NarSize: many"),
                "`NarSize` has the invalid value `many`",
            ),
            (
                NIX_WROTE.replace("URL: nar/", "URL: ../../nar/"),
                "`URL` has the invalid value",
            ),
            (
                NIX_WROTE.replace("URL: nar/", "URL: https://elsewhere/nar/"),
                "`URL` has the invalid value",
            ),
            (
                format!("{NIX_WROTE}NarSize: 1\n"),
                "`NarSize` is given twice",
            ),
            (
                NIX_WROTE.replace(
                    "1qmapbxvz7wgy0nyiyf6n3x5b8n623944sh14nfm5ibf2143d9wp\nNarSize",
                    "1qmapbxvz7wgy0nyiyf6n3x5b8n623944sh14nfm5ibf2143d9we\nNarSize",
                ),
                "`NarHash` has the invalid value",
            ),
            (
                NIX_WROTE.replace("Compression: xz", "Compression: lz4"),
                "`Compression` has the invalid value",
            ),
            ("StorePath /nix/store/x\n".to_owned(), "line 1 is not"),
        ] {
            let err = NarInfo::parse(&edit).expect_err(why).to_string();
            assert!(err.contains(why), "{err} vs {why}");
        }
    }

    #[test]
    fn nix32_round_trips_and_refuses_stray_bits() {
        let hash = Sha256Hash::from_bytes(std::array::from_fn(|i| (i * 37 % 256) as u8));
        assert_eq!(Sha256Hash::from_nix32(&hash.to_nix32()), Ok(hash));
        // The first character carries one bit: `1` is the largest that fits.
        let mut text = hash.to_nix32();
        text.replace_range(0..1, "2");
        assert!(Sha256Hash::from_nix32(&text).is_err());
        assert!(Sha256Hash::from_nix32("short").is_err());
    }
}
