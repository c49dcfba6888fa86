//! Binary caches in Nix's own format: `nix-cache-info`, `<hash>.narinfo` and
//! `nar/<filehash>.nar.zst` (`.nar.xz`, as Nix writes, is read too). `push` uploads store entries; `substitute` fetches one into a
//! staging folder before upstream is tried, and a cache can never put wrong bytes in the
//! store: the NAR is unpacked with every name checked, hashed as it streams, and compared
//! with the lock before the caller commits it (which hashes it once more).
//!
//! Backends: `file://DIR` (or a plain folder path), `s3://bucket/prefix` and read-only
//! `http(s)://`. The narinfo is written last (a file renamed into place, one S3 PUT), so
//! a reader never sees a narinfo without its NAR.

mod io_context;
mod pins;
mod sign;
mod streams;

pub use sign::{KeyError, PublicKey, SecretKey};

use std::io::{self, BufReader, Read, Write};
use std::path::Path;
use std::sync::Arc;

use berth_lockfile_schema::Sha256Hash;
use berth_lockfile_schema::narinfo::{Compression, NIX_CACHE_INFO, NarInfo, NarInfoError};
use berth_store::{
    NarError, NarUnpackError, Sha256Sink, Staging, Store, StoreError, UnpackLimits, nix_store_path,
    unpack_nar,
};

use crate::objects::ObjectStore;
use io_context::InCache;
use streams::{Bounded, Counting, Tee};

/// Why a cache could not be used.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// The URL names no backend berth knows.
    #[error("`{url}` is not a cache berth can use: {why}")]
    UnsupportedUrl {
        /// The URL.
        url: String,
        /// Why.
        why: String,
    },
    /// Reading or writing the cache failed.
    #[error("cache `{cache}`: {source}")]
    Io {
        /// The cache, as the user named it.
        cache: String,
        /// What failed.
        #[source]
        source: io::Error,
    },
    /// A narinfo that does not parse.
    #[error("cache `{cache}`: `{file}` is not a valid narinfo: {source}")]
    BadNarInfo {
        /// The cache.
        cache: String,
        /// The narinfo's name.
        file: String,
        /// Why.
        #[source]
        source: NarInfoError,
    },
    /// The cache describes something other than what was asked for.
    #[error("cache `{cache}`: `{file}` {why}")]
    Mismatch {
        /// The cache.
        cache: String,
        /// The file.
        file: String,
        /// What differs.
        why: String,
    },
    /// The NAR could not be unpacked.
    #[error("cache `{cache}`: `{file}`: {source}")]
    Unpack {
        /// The cache.
        cache: String,
        /// The NAR file.
        file: String,
        /// Why.
        #[source]
        source: NarUnpackError,
    },
    /// A store entry could not be serialised for pushing.
    #[error(transparent)]
    Nar(#[from] NarError),
}

/// One binary cache.
pub struct Cache {
    label: String,
    backend: Box<dyn ObjectStore>,
    /// When not empty, a narinfo must carry a signature by one of these.
    trusted: Vec<PublicKey>,
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cache").field("url", &self.label).finish()
    }
}

/// What pushing one entry did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pushed {
    /// Its narinfo was already in the cache.
    AlreadyThere,
    /// NAR and narinfo were uploaded (`bytes`: the compressed NAR's size).
    Uploaded {
        /// The compressed NAR's size.
        bytes: u64,
    },
}

/// A store entry's NAR, compressed into a scratch file.
struct CompressedNar {
    file: tempfile::NamedTempFile,
    /// sha256 and size of the compressed file.
    file_hash: Sha256Hash,
    file_size: u64,
    /// Size of the NAR itself.
    nar_size: u64,
}

impl Cache {
    /// Opens the cache at `url`: `file:///abs/path` (or an absolute folder path),
    /// `s3://bucket/prefix[?endpoint=URL&region=R&profile=P]` or `http(s)://…` (read-only).
    pub fn open(url: &str) -> Result<Self, CacheError> {
        let backend = crate::objects::open(url).map_err(|why| CacheError::UnsupportedUrl {
            url: url.to_owned(),
            why,
        })?;
        Ok(Self {
            label: url.to_owned(),
            backend,
            trusted: Vec::new(),
        })
    }

    /// Requires a signature by one of `keys` on every narinfo used (none: any is used,
    /// since a substituted entry is checked against the lock anyway).
    pub fn with_trusted_keys(mut self, keys: Vec<PublicKey>) -> Self {
        self.trusted = keys;
        self
    }

    /// Whether reading the cache needs no network.
    pub fn is_local(&self) -> bool {
        self.backend.is_local()
    }

    /// The cache as the user named it.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// Uploads the store entry at `entry` (whose NAR hash is `hash`) as plugin `name`: the
    /// NAR first, the narinfo last. An entry whose narinfo is already there is skipped.
    /// The entry is serialised afresh and must still hash to `hash`.
    pub fn push(
        &self,
        entry: &Path,
        hash: &Sha256Hash,
        name: &str,
        key: Option<&SecretKey>,
    ) -> Result<Pushed, CacheError> {
        if self.backend.read_only() {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "an http(s) cache is read-only; push to the folder or bucket behind it (`file://` or `s3://`)",
            ))
            .in_cache(self);
        }
        let store_path = nix_store_path(hash, name);
        let info_key = NarInfo::file_name(&store_path);
        if self.backend.exists(&info_key).in_cache(self)? {
            return Ok(Pushed::AlreadyThere);
        }
        self.ensure_cache_info()?;
        let scratch = self.backend.scratch().in_cache(self)?;
        let compression = Compression::Zstd;
        let nar = self.compress(entry, hash, &scratch)?;
        let (file_hash, file_size) = (nar.file_hash, nar.file_size);
        let (nar_hash, nar_size) = (*hash, nar.nar_size);
        let url = format!(
            "nar/{}.nar{}",
            file_hash.to_nix32(),
            compression.extension()
        );
        if !self.backend.exists(&url).in_cache(self)? {
            self.backend
                .put_file(&url, nar.file.path())
                .in_cache(self)?;
        }
        let mut info = NarInfo {
            store_path,
            url,
            compression,
            file_hash,
            file_size,
            nar_hash,
            nar_size,
            references: Vec::new(),
            ca: Some(NarInfo::recursive_ca(&nar_hash)),
            sigs: Vec::new(),
        };
        if let Some(key) = key {
            let sig = key.sign(&info);
            info.sigs.push(sig);
        }
        let mut tmp = tempfile::NamedTempFile::new_in(&scratch).in_cache(self)?;
        tmp.write_all(info.render().as_bytes()).in_cache(self)?;
        berth_store::fault::pause_at(berth_store::fault::PUSH_BEFORE_NARINFO);
        self.backend
            .put_file(&info_key, tmp.path())
            .in_cache(self)?;
        Ok(Pushed::Uploaded { bytes: file_size })
    }

    /// Writes `nix-cache-info` unless the cache has it.
    fn ensure_cache_info(&self) -> Result<(), CacheError> {
        if self.backend.exists("nix-cache-info").in_cache(self)? {
            return Ok(());
        }
        let scratch = self.backend.scratch().in_cache(self)?;
        let mut tmp = tempfile::NamedTempFile::new_in(scratch).in_cache(self)?;
        tmp.write_all(NIX_CACHE_INFO.as_bytes()).in_cache(self)?;
        self.backend
            .put_file("nix-cache-info", tmp.path())
            .in_cache(self)
    }

    /// The store entry at `entry` serialised as a NAR and compressed with zstd into a file
    /// in `scratch`; the NAR must still hash to `hash`.
    fn compress(
        &self,
        entry: &Path,
        hash: &Sha256Hash,
        scratch: &Path,
    ) -> Result<CompressedNar, CacheError> {
        let file = tempfile::NamedTempFile::new_in(scratch).in_cache(self)?;
        let (file_hash, file_size, nar_hash, nar_size) = {
            let mut file_sink = Counting::new(io::BufWriter::new(file.as_file()));
            let mut encoder = zstd::Encoder::new(&mut file_sink, 3).in_cache(self)?;
            let mut nar_sink = Counting::new(Sha256Sink::default());
            berth_store::nar::dump(entry, &mut Tee(&mut nar_sink, &mut encoder))?;
            encoder.finish().in_cache(self)?;
            file_sink.inner.flush().in_cache(self)?;
            let nar_size = nar_sink.count;
            (
                file_sink.digest(),
                file_sink.count,
                nar_sink.inner.finish(),
                nar_size,
            )
        };
        if nar_hash != *hash {
            return Err(CacheError::Mismatch {
                cache: self.label.clone(),
                file: entry.display().to_string(),
                why: format!(
                    "hashes to `{}`, not `{}`: the store entry changed; run `berth store verify --repair`",
                    nar_hash.to_sri(),
                    hash.to_sri()
                ),
            });
        }
        Ok(CompressedNar {
            file,
            file_hash,
            file_size,
            nar_size,
        })
    }

    /// The narinfo for plugin `name` with NAR hash `hash`, checked to describe exactly
    /// that (and signed by a trusted key when keys are required); `None` when the cache
    /// does not have it.
    pub fn narinfo(&self, hash: &Sha256Hash, name: &str) -> Result<Option<NarInfo>, CacheError> {
        let store_path = nix_store_path(hash, name);
        let info_key = NarInfo::file_name(&store_path);
        let Some(mut reader) = self.backend.open(&info_key).in_cache(self)? else {
            return Ok(None);
        };
        let mut text = String::new();
        reader
            .by_ref()
            .take(64 * 1024)
            .read_to_string(&mut text)
            .in_cache(self)?;
        let info = NarInfo::parse(&text).map_err(|source| CacheError::BadNarInfo {
            cache: self.label.clone(),
            file: info_key.clone(),
            source,
        })?;
        let mismatch = |why: String| CacheError::Mismatch {
            cache: self.label.clone(),
            file: info_key.clone(),
            why,
        };
        if info.store_path != store_path {
            return Err(mismatch(format!(
                "describes `{}`, not `{store_path}`",
                info.store_path
            )));
        }
        if info.nar_hash != *hash {
            return Err(mismatch(format!(
                "says the NAR hashes to `{}`, not `{}`",
                info.nar_hash.to_sri(),
                hash.to_sri()
            )));
        }
        if !self.trusted.is_empty() && !self.trusted.iter().any(|k| k.signed(&info)) {
            return Err(mismatch(
                "has no valid signature by a trusted key (`--trusted-public-key`)".into(),
            ));
        }
        Ok(Some(info))
    }

    /// Unpacks the NAR `info` names into `dest` (which must not exist) and checks its file
    /// hash and size and its NAR hash against `info` and `hash`.
    pub fn fetch(
        &self,
        info: &NarInfo,
        hash: &Sha256Hash,
        dest: &Path,
        limits: &UnpackLimits,
    ) -> Result<(), CacheError> {
        let mismatch = |why: String| CacheError::Mismatch {
            cache: self.label.clone(),
            file: NarInfo::file_name(&info.store_path),
            why,
        };
        let Some(nar) = self.backend.open(&info.url).in_cache(self)? else {
            return Err(mismatch(format!("names `{}`, which is missing", info.url)));
        };
        let mut file = Counting::new(nar);
        let unpacked = {
            let body: Box<dyn Read> = match info.compression {
                Compression::Zstd => {
                    Box::new(zstd::Decoder::with_buffer(BufReader::new(&mut file)).in_cache(self)?)
                }
                Compression::None => Box::new(&mut file),
                Compression::Xz => {
                    // The xz decoder writes rather than reads: into a scratch file no
                    // larger than the narinfo's `NarSize`, then unpacked from there.
                    let mut tmp = tempfile::tempfile().in_cache(self)?;
                    let mut out = Bounded {
                        inner: io::BufWriter::new(&mut tmp),
                        left: info.nar_size,
                    };
                    lzma_rs::xz_decompress(&mut BufReader::new(&mut file), &mut out).map_err(
                        |e| mismatch(format!("names `{}`, which is not valid xz: {e}", info.url)),
                    )?;
                    out.inner.flush().in_cache(self)?;
                    drop(out);
                    io::Seek::rewind(&mut tmp).in_cache(self)?;
                    Box::new(BufReader::new(tmp))
                }
            };
            unpack_nar(body, dest, limits).map_err(|source| CacheError::Unpack {
                cache: self.label.clone(),
                file: info.url.clone(),
                source,
            })?
        };
        // The rest of the file (zstd's end) is read so its hash covers every byte.
        io::copy(&mut file, &mut io::sink()).in_cache(self)?;
        if unpacked.nar_hash != *hash {
            return Err(mismatch(format!(
                "names a NAR that hashes to `{}`, not `{}`",
                unpacked.nar_hash.to_sri(),
                hash.to_sri()
            )));
        }
        if unpacked.nar_size != info.nar_size {
            return Err(mismatch(format!(
                "names a NAR of {} bytes, but its `NarSize` is {} bytes",
                unpacked.nar_size, info.nar_size
            )));
        }
        if file.count != info.file_size {
            return Err(mismatch(format!(
                "names `{}`, which is {} bytes, but its `FileSize` is {} bytes",
                info.url, file.count, info.file_size
            )));
        }
        if file.digest() != info.file_hash {
            return Err(mismatch(format!(
                "names `{}`, which hashes to `{}`, but its `FileHash` is `{}`",
                info.url,
                file.digest().to_sri(),
                info.file_hash.to_sri()
            )));
        }
        Ok(())
    }
}

/// Plugin `name` with NAR hash `hash` from the first of `caches` that has it, unpacked and
/// checked in a staging folder of `store`, with the cache's label; `None` when none has it.
/// A cache that fails or holds something else is passed to `skipped` (with why) and the
/// next one is tried. The caller commits the staging folder (which hashes it again).
pub fn substitute_staged<'c>(
    store: &Store,
    caches: &'c [Arc<Cache>],
    hash: &Sha256Hash,
    name: &str,
    limits: &UnpackLimits,
    offline: bool,
    skipped: &dyn Fn(&CacheError),
) -> Result<Option<(Staging, &'c str)>, StoreError> {
    for cache in caches.iter().filter(|c| !offline || c.is_local()) {
        // A cache without the plugin costs one lookup, and no staging folder.
        let info = match cache.narinfo(hash, name) {
            Ok(Some(info)) => info,
            Ok(None) => continue,
            Err(e) => {
                skipped(&e);
                continue;
            }
        };
        let staging = store.stage()?;
        // The unpacker makes the folder itself.
        fs_err::remove_dir(staging.path())?;
        match cache.fetch(&info, hash, staging.path(), limits) {
            Ok(()) => return Ok(Some((staging, cache.label()))),
            Err(e) => skipped(&e),
        }
    }
    Ok(None)
}
