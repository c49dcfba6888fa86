//! Object storage: a flat namespace of immutable-ish objects named by `/`-separated keys,
//! in a local folder (`file:///path`, or an absolute path), an S3 bucket
//! (`s3://bucket/prefix`) or, read-only, behind a web server (`http(s)://`).
//!
//! Binary caches ([`crate::cache`]) and `berth serve`'s fleet data folder keep their
//! objects here. Every write is whole: a reader sees the old object or all of the new one.

mod file;
mod s3;

pub use s3::{CONNECT_TIMEOUT, FIRST_BYTE_TIMEOUT};

use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// One page of a listing.
#[derive(Debug, Default)]
pub struct Listing {
    /// The objects, by key (relative to the store's root), in byte order.
    pub objects: Vec<Listed>,
    /// Whether keys after the last one were left out.
    pub truncated: bool,
}

/// One object of a listing.
#[derive(Debug, Clone)]
pub struct Listed {
    pub key: String,
    /// When it was last written, when the store says.
    pub modified: Option<std::time::SystemTime>,
}

/// Where objects are kept.
pub trait ObjectStore: Send + Sync {
    /// The object `key`, or `None` when it is absent.
    fn open(&self, key: &str) -> io::Result<Option<Box<dyn Read + Send>>>;
    /// The whole object `key`, or `None` when it is absent.
    fn get(&self, key: &str) -> io::Result<Option<Vec<u8>>> {
        let Some(mut reader) = self.open(key)? else {
            return Ok(None);
        };
        let mut bytes = Vec::new();
        reader.read_to_end(&mut bytes)?;
        Ok(Some(bytes))
    }
    /// Whether `key` exists.
    fn exists(&self, key: &str) -> io::Result<bool>;
    /// Stores the file at `path` as `key`, all at once: readers see the old object or the
    /// whole new one, never part of it.
    fn put_file(&self, key: &str, path: &Path) -> io::Result<()>;
    /// Stores `bytes` as `key`, all at once and durably.
    fn put_bytes(&self, key: &str, bytes: &[u8]) -> io::Result<()>;
    /// Removes `key`; removing an absent key succeeds.
    fn delete(&self, key: &str) -> io::Result<()>;
    /// Up to `max` keys starting with `prefix` and sorting after `start_after`, in byte
    /// order.
    fn list(&self, prefix: &str, start_after: Option<&str>, max: usize) -> io::Result<Listing>;
    /// A folder for files being written before they are stored.
    fn scratch(&self) -> io::Result<PathBuf>;
    /// Whether reading it needs no network (`--offline` still uses it).
    fn is_local(&self) -> bool;
    /// Whether it can only be read (`http(s)://`).
    fn read_only(&self) -> bool {
        false
    }
}

/// Opens the object store at `url`: `file:///abs/path` (or an absolute folder path),
/// `s3://bucket/prefix[?endpoint=URL&region=R&profile=P]` or `http(s)://…` (read-only).
/// The error says why the URL is not one berth can use.
pub fn open(url: &str) -> Result<Box<dyn ObjectStore>, String> {
    if url.starts_with('/') {
        return Ok(Box::new(file::FileBackend::new(PathBuf::from(url))));
    }
    let parsed = url::Url::parse(url).map_err(|e| {
        format!("{e} (use `file:///path`, `s3://bucket/prefix` or `https://host/path`)")
    })?;
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(
            "credentials do not belong in the URL (berth would print it); use the AWS variables or files"
                .into(),
        );
    }
    match parsed.scheme() {
        "file" => {
            let path = parsed
                .to_file_path()
                .map_err(|()| "not an absolute local path".to_owned())?;
            Ok(Box::new(file::FileBackend::new(path)))
        }
        "s3" => {
            let home = std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(PathBuf::from);
            Ok(Box::new(s3::S3Backend::new(&parsed, home.as_deref())?))
        }
        "http" | "https" => Ok(Box::new(s3::HttpBackend::new(parsed)?)),
        other => Err(format!(
            "berth reads `file://`, `s3://` and `http(s)://` object stores, not `{other}://`"
        )),
    }
}

/// The error of a write to a read-only store.
fn read_only_error(key: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        format!(
            "cannot write `{key}`: an http(s) store is read-only; write to the folder or bucket behind it (`file://` or `s3://`)"
        ),
    )
}
