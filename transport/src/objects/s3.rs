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

fn client() -> io::Result<reqwest::blocking::Client> {
    crate::http::client_builder()
        .build()
        .map_err(|e| io::Error::other(e.without_url().to_string()))
}

/// An error for `what` (`GET nar/…`) without the request's URL.
fn request_error(what: &str, e: reqwest::Error) -> io::Error {
    let kind = if e.is_timeout() {
        io::ErrorKind::TimedOut
    } else {
        io::ErrorKind::Other
    };
    io::Error::new(kind, format!("{what}: {}", e.without_url()))
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

impl ObjectStore for S3Backend {
    fn open(&self, key: &str) -> io::Result<Option<Box<dyn Read + Send>>> {
        let object = self.key(key);
        let url = self
            .bucket
            .get_object(self.credentials.as_ref(), &object)
            .sign(SIGNED_FOR);
        let what = format!("GET `{object}`");
        let response = self
            .http
            .get(url)
            .send()
            .map_err(|e| request_error(&what, e))?;
        match response.status().as_u16() {
            200 => Ok(Some(Box::new(response))),
            404 => Ok(None),
            _ => Err(status_error(&what, response.status())),
        }
    }

    fn exists(&self, key: &str) -> io::Result<bool> {
        let object = self.key(key);
        let url = self
            .bucket
            .head_object(self.credentials.as_ref(), &object)
            .sign(SIGNED_FOR);
        let what = format!("HEAD `{object}`");
        let response = self
            .http
            .head(url)
            .send()
            .map_err(|e| request_error(&what, e))?;
        match response.status().as_u16() {
            200 => Ok(true),
            404 => Ok(false),
            _ => Err(status_error(&what, response.status())),
        }
    }

    fn put_file(&self, key: &str, path: &Path) -> io::Result<()> {
        let object = self.key(key);
        let url = self
            .bucket
            .put_object(self.credentials.as_ref(), &object)
            .sign(SIGNED_FOR);
        let what = format!("PUT `{object}`");
        let file = fs_err::File::open(path)?;
        let len = file.metadata()?.len();
        // One PUT: S3 makes the object visible whole or not at all.
        let response = self
            .http
            .put(url)
            .header(reqwest::header::CONTENT_LENGTH, len)
            .body(reqwest::blocking::Body::sized(file.into_parts().0, len))
            .send()
            .map_err(|e| request_error(&what, e))?;
        if response.status().is_success() {
            Ok(())
        } else {
            Err(status_error(&what, response.status()))
        }
    }

    fn put_bytes(&self, key: &str, bytes: &[u8]) -> io::Result<()> {
        let object = self.key(key);
        let url = self
            .bucket
            .put_object(self.credentials.as_ref(), &object)
            .sign(SIGNED_FOR);
        let what = format!("PUT `{object}`");
        let response = self
            .http
            .put(url)
            .body(bytes.to_vec())
            .send()
            .map_err(|e| request_error(&what, e))?;
        if response.status().is_success() {
            Ok(())
        } else {
            Err(status_error(&what, response.status()))
        }
    }

    fn delete(&self, key: &str) -> io::Result<()> {
        let object = self.key(key);
        let url = self
            .bucket
            .delete_object(self.credentials.as_ref(), &object)
            .sign(SIGNED_FOR);
        let what = format!("DELETE `{object}`");
        let response = self
            .http
            .delete(url)
            .send()
            .map_err(|e| request_error(&what, e))?;
        // S3 answers 204 whether or not the key existed.
        if response.status().is_success() || response.status().as_u16() == 404 {
            Ok(())
        } else {
            Err(status_error(&what, response.status()))
        }
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
        let response = self
            .http
            .get(url)
            .send()
            .map_err(|e| request_error(&what, e))?;
        if !response.status().is_success() {
            return Err(status_error(&what, response.status()));
        }
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
        let what = format!("GET `{key}`");
        let response = self
            .http
            .get(self.url(key)?)
            .send()
            .map_err(|e| request_error(&what, e))?;
        match response.status().as_u16() {
            200 => Ok(Some(Box::new(response))),
            404 | 410 => Ok(None),
            _ => Err(status_error(&what, response.status())),
        }
    }

    fn exists(&self, key: &str) -> io::Result<bool> {
        let what = format!("HEAD `{key}`");
        let response = self
            .http
            .head(self.url(key)?)
            .send()
            .map_err(|e| request_error(&what, e))?;
        match response.status().as_u16() {
            200 => Ok(true),
            404 | 410 => Ok(false),
            _ => Err(status_error(&what, response.status())),
        }
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
