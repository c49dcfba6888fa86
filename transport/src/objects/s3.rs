//! Object storage over HTTP: `s3://bucket/prefix` (read and write, requests signed with AWS
//! Signature V4 by `rusty-s3`) and `http(s)://` (read-only, plain GETs).
//!
//! S3 settings come from where AWS tools take them, never from anything berth writes:
//! the URL's `endpoint`, `region` and `profile` query parameters (as Nix's S3 caches take
//! them), else `AWS_ENDPOINT_URL_S3` / `AWS_ENDPOINT_URL`, `AWS_REGION` /
//! `AWS_DEFAULT_REGION`; credentials from `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and
//! `AWS_SESSION_TOKEN`, else the profile (`AWS_PROFILE`, else `default`) of the shared
//! credentials file (`AWS_SHARED_CREDENTIALS_FILE`, else `~/.aws/credentials`); without
//! any, requests go unsigned (a public bucket). Presigned URLs carry the key id and a
//! signature, so no error message ever shows a request's URL: only the object's key.

use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusty_s3::actions::S3Action;
use rusty_s3::{Bucket, Credentials, UrlStyle};

use super::{Listed, Listing, ObjectStore, read_only_error};

/// How long a signed request stays valid.
const SIGNED_FOR: Duration = Duration::from_secs(15 * 60);

/// How long connecting to an object store may take. A binary cache is asked before
/// upstream on every start that misses the store, so one that does not answer must cost
/// seconds, not the request's deadline: past it the next cache, then upstream, is tried.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long an object store may keep a read waiting for its answer's first byte, and then
/// for each next piece of the body. An upload's answer comes after the whole body is
/// sent, so a `PUT` waits for it without this bound.
pub const FIRST_BYTE_TIMEOUT: Duration = Duration::from_secs(5);

fn client() -> io::Result<reqwest::blocking::Client> {
    crate::http::client_builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .build()
        .map_err(|e| io::Error::other(e.without_url().to_string()))
}

/// An error for `what` (`GET nar/…`) without the request's URL.
fn request_error(what: &str, e: reqwest::Error) -> io::Error {
    if e.is_timeout() {
        return io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "{what}: timed out (berth waits {} s to connect and {} s for each part of an answer)",
                CONNECT_TIMEOUT.as_secs(),
                FIRST_BYTE_TIMEOUT.as_secs()
            ),
        );
    }
    io::Error::other(format!("{what}: {}", e.without_url()))
}

fn status_error(what: &str, status: reqwest::StatusCode) -> io::Error {
    let kind = match status.as_u16() {
        401 | 403 => io::ErrorKind::PermissionDenied,
        _ => io::ErrorKind::Other,
    };
    io::Error::new(kind, format!("{what}: HTTP {status}"))
}

pub(super) struct S3Backend {
    bucket: Bucket,
    prefix: String,
    credentials: Option<Credentials>,
    http: reqwest::blocking::Client,
}

impl S3Backend {
    /// `s3://bucket[/prefix][?endpoint=…&region=…&profile=…]`.
    pub(super) fn new(url: &url::Url, home: Option<&Path>) -> Result<Self, String> {
        let name = url
            .host_str()
            .filter(|h| !h.is_empty())
            .ok_or("an `s3://` URL needs a bucket: `s3://BUCKET/PREFIX`")?
            .to_owned();
        let param = |key: &str| {
            url.query_pairs()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.into_owned())
        };
        let env = |key: &str| std::env::var(key).ok().filter(|v| !v.is_empty());
        let profile = param("profile")
            .or_else(|| env("AWS_PROFILE"))
            .unwrap_or_else(|| "default".to_owned());
        let region = param("region")
            .or_else(|| env("AWS_REGION"))
            .or_else(|| env("AWS_DEFAULT_REGION"))
            .unwrap_or_else(|| "us-east-1".to_owned());
        let (endpoint, style) = match param("endpoint")
            .or_else(|| env("AWS_ENDPOINT_URL_S3"))
            .or_else(|| env("AWS_ENDPOINT_URL"))
        {
            // A bare host (as Nix accepts) is https.
            Some(e) if !e.contains("://") => (format!("https://{e}"), UrlStyle::Path),
            Some(e) => (e, UrlStyle::Path),
            None => (
                format!("https://s3.{region}.amazonaws.com"),
                UrlStyle::VirtualHost,
            ),
        };
        let endpoint: url::Url = endpoint
            .parse()
            .map_err(|e| format!("the S3 endpoint `{endpoint}` is not a URL: {e}"))?;
        let bucket = Bucket::new(endpoint, style, name, region)
            .map_err(|e| format!("cannot address the bucket: {e}"))?;
        let prefix = url.path().trim_matches('/').to_owned();
        let credentials = match (env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY")) {
            (Some(key), Some(secret)) => Some(match env("AWS_SESSION_TOKEN") {
                Some(token) => Credentials::new_with_token(key, secret, token),
                None => Credentials::new(key, secret),
            }),
            _ => shared_credentials(home, &profile),
        };
        Ok(Self {
            bucket,
            prefix,
            credentials,
            http: client().map_err(|e| e.to_string())?,
        })
    }

    fn key(&self, key: &str) -> String {
        if self.prefix.is_empty() {
            key.to_owned()
        } else {
            format!("{}/{key}", self.prefix)
        }
    }
}

/// The profile's keys in the shared credentials file (an INI file).
fn shared_credentials(home: Option<&Path>, profile: &str) -> Option<Credentials> {
    let path = std::env::var_os("AWS_SHARED_CREDENTIALS_FILE")
        .map(PathBuf::from)
        .or_else(|| home.map(|h| h.join(".aws/credentials")))?;
    let text = std::fs::read_to_string(path).ok()?;
    let mut in_profile = false;
    let (mut key, mut secret, mut token) = (None, None, None);
    for line in text.lines() {
        let line = line.trim();
        if let Some(section) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            in_profile = section.trim() == profile;
            continue;
        }
        if !in_profile {
            continue;
        }
        if let Some((k, v)) = line.split_once('=') {
            let v = v.trim().to_owned();
            match k.trim() {
                "aws_access_key_id" => key = Some(v),
                "aws_secret_access_key" => secret = Some(v),
                "aws_session_token" => token = Some(v),
                _ => {}
            }
        }
    }
    match (key, secret, token) {
        (Some(k), Some(s), Some(t)) => Some(Credentials::new_with_token(k, s, t)),
        (Some(k), Some(s), None) => Some(Credentials::new(k, s)),
        _ => None,
    }
}

impl S3Backend {
    /// Signs `verb` on `key`'s object, sends it (with `body` and its length for a PUT)
    /// and sorts the answer: see [`respond`].
    fn call(
        &self,
        verb: Verb,
        key: &str,
        body: Option<(reqwest::blocking::Body, u64)>,
        missing: &[u16],
    ) -> io::Result<Option<reqwest::blocking::Response>> {
        let object = self.key(key);
        let credentials = self.credentials.as_ref();
        let (method, url) = match verb {
            Verb::Get => (
                reqwest::Method::GET,
                self.bucket
                    .get_object(credentials, &object)
                    .sign(SIGNED_FOR),
            ),
            Verb::Head => (
                reqwest::Method::HEAD,
                self.bucket
                    .head_object(credentials, &object)
                    .sign(SIGNED_FOR),
            ),
            Verb::Put => (
                reqwest::Method::PUT,
                self.bucket
                    .put_object(credentials, &object)
                    .sign(SIGNED_FOR),
            ),
            Verb::Delete => (
                reqwest::Method::DELETE,
                self.bucket
                    .delete_object(credentials, &object)
                    .sign(SIGNED_FOR),
            ),
        };
        let mut request = self.http.request(method.clone(), url);
        match body {
            Some((body, len)) => {
                request = request
                    .header(reqwest::header::CONTENT_LENGTH, len)
                    .body(body);
            }
            None => request = request.timeout(FIRST_BYTE_TIMEOUT),
        }
        respond(&format!("{method} `{object}`"), request, missing)
    }
}

/// The object operations berth signs.
#[derive(Debug, Clone, Copy)]
enum Verb {
    Get,
    Head,
    Put,
    Delete,
}

/// Sends `request` (`what` names it in errors, never its URL: a presigned URL carries a
/// signature) and sorts the answer: a success is the response, a status in `missing` is
/// `None` (the object is not there), anything else an error.
fn respond(
    what: &str,
    request: reqwest::blocking::RequestBuilder,
    missing: &[u16],
) -> io::Result<Option<reqwest::blocking::Response>> {
    let response = request.send().map_err(|e| request_error(what, e))?;
    let status = response.status();
    if status.is_success() {
        Ok(Some(response))
    } else if missing.contains(&status.as_u16()) {
        Ok(None)
    } else {
        Err(status_error(what, status))
    }
}

impl ObjectStore for S3Backend {
    fn open(&self, key: &str) -> io::Result<Option<Box<dyn Read + Send>>> {
        let response = self.call(Verb::Get, key, None, &[404])?;
        Ok(response.map(|r| Box::new(r) as Box<dyn Read + Send>))
    }

    fn exists(&self, key: &str) -> io::Result<bool> {
        Ok(self.call(Verb::Head, key, None, &[404])?.is_some())
    }

    fn put_file(&self, key: &str, path: &Path) -> io::Result<()> {
        let file = fs_err::File::open(path)?;
        let len = file.metadata()?.len();
        // One PUT of a sized body (Content-Length, no chunking): S3 makes the object
        // visible whole or not at all.
        let body = reqwest::blocking::Body::sized(file.into_parts().0, len);
        self.call(Verb::Put, key, Some((body, len)), &[]).map(drop)
    }

    fn put_bytes(&self, key: &str, bytes: &[u8]) -> io::Result<()> {
        let body = (bytes.to_vec().into(), bytes.len() as u64);
        self.call(Verb::Put, key, Some(body), &[]).map(drop)
    }

    fn delete(&self, key: &str) -> io::Result<()> {
        // S3 answers 204 whether or not the key existed; a 404 is just as gone.
        self.call(Verb::Delete, key, None, &[404]).map(drop)
    }

    fn list(&self, prefix: &str, start_after: Option<&str>, max: usize) -> io::Result<Listing> {
        let full_prefix = self.key(prefix);
        let mut action = self.bucket.list_objects_v2(self.credentials.as_ref());
        action.with_prefix(full_prefix.as_str());
        let after = start_after.map(|a| self.key(a));
        if let Some(after) = &after {
            action.with_start_after(after.as_str());
        }
        action.with_max_keys(max.clamp(1, 1000));
        let url = action.sign(SIGNED_FOR);
        let what = format!("LIST `{full_prefix}`");
        let request = self.http.get(url).timeout(FIRST_BYTE_TIMEOUT);
        let response =
            respond(&what, request, &[])?.expect("a success, as nothing counts as missing");
        let text = response.text().map_err(|e| request_error(&what, e))?;
        let parsed = rusty_s3::actions::ListObjectsV2::parse_response(&text)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("{what}: {e}")))?;
        let strip = if self.prefix.is_empty() {
            0
        } else {
            self.prefix.len() + 1
        };
        Ok(Listing {
            objects: parsed
                .contents
                .into_iter()
                .filter_map(|c| {
                    let key = c.key.get(strip..)?.to_owned();
                    // RFC 3339, as S3 writes it.
                    let modified = c
                        .last_modified
                        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
                        .map(std::time::SystemTime::from);
                    Some(Listed { key, modified })
                })
                .collect(),
            truncated: parsed.next_continuation_token.is_some(),
        })
    }

    fn scratch(&self) -> io::Result<PathBuf> {
        Ok(std::env::temp_dir())
    }

    fn is_local(&self) -> bool {
        false
    }
}

/// A read-only cache served over HTTP(S) (a web server in front of a cache folder).
pub(super) struct HttpBackend {
    base: url::Url,
    http: reqwest::blocking::Client,
}

impl HttpBackend {
    pub(super) fn new(mut base: url::Url) -> Result<Self, String> {
        if !base.path().ends_with('/') {
            let path = format!("{}/", base.path());
            base.set_path(&path);
        }
        Ok(Self {
            base,
            http: client().map_err(|e| e.to_string())?,
        })
    }

    fn url(&self, key: &str) -> io::Result<url::Url> {
        self.base
            .join(key)
            .map_err(|e| io::Error::other(format!("`{key}`: {e}")))
    }
}

impl ObjectStore for HttpBackend {
    fn open(&self, key: &str) -> io::Result<Option<Box<dyn Read + Send>>> {
        let request = self.http.get(self.url(key)?).timeout(FIRST_BYTE_TIMEOUT);
        let response = respond(&format!("GET `{key}`"), request, &[404, 410])?;
        Ok(response.map(|r| Box::new(r) as Box<dyn Read + Send>))
    }

    fn exists(&self, key: &str) -> io::Result<bool> {
        let request = self.http.head(self.url(key)?).timeout(FIRST_BYTE_TIMEOUT);
        Ok(respond(&format!("HEAD `{key}`"), request, &[404, 410])?.is_some())
    }

    fn put_file(&self, key: &str, _path: &Path) -> io::Result<()> {
        Err(read_only_error(key))
    }

    fn put_bytes(&self, key: &str, _bytes: &[u8]) -> io::Result<()> {
        Err(read_only_error(key))
    }

    fn delete(&self, key: &str) -> io::Result<()> {
        Err(read_only_error(key))
    }

    fn list(&self, prefix: &str, _start_after: Option<&str>, _max: usize) -> io::Result<Listing> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!(
                "cannot list `{prefix}`: a web server does not list its objects; use `file://` or `s3://`"
            ),
        ))
    }

    fn scratch(&self) -> io::Result<PathBuf> {
        Ok(std::env::temp_dir())
    }

    fn read_only(&self) -> bool {
        true
    }

    fn is_local(&self) -> bool {
        false
    }
}
