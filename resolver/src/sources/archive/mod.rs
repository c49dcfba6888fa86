//! Archive sources: download while hashing, cache by content, unpack safely, pick the
//! plugin folder.

mod source;

pub(crate) use source::ArchiveSource;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use berth_lockfile_schema::Sha256Hash;
use berth_store::{ARCHIVES_DIR, Sha256Sink, Staging, Store};
use berth_transport::auth;
use berth_transport::extract::{ArchiveFormat, ArchiveLimits, extract, find_escaping_link};
use berth_transport::http::{Upstream, client_builder};
use berth_transport::policy::{Refusal, refusal_in};
use berth_transport::tree_path::{DiskTree, resolve_dir};
use berth_transport::url::SourceUrl;

use crate::context::Env;
use crate::error::{ArchiveProblem, DownloadError, ResolveError};

/// A URL to download, and the format of the file it serves.
#[derive(Debug, Clone)]
pub(crate) struct ArchiveUrl {
    /// The URL: fetched, shown and scrubbed through one value.
    pub url: SourceUrl,
    pub format: ArchiveFormat,
    /// The `Authorization` a registry's configuration gives for this URL (an npm token),
    /// sent instead of `~/.netrc`'s.
    pub credential: Option<auth::Credential>,
}

/// A plugin unpacked from an archive into a staging folder, ready to hash or commit.
pub(crate) struct Unpacked {
    /// Holds the unpacked plugin folder (the staging root itself).
    pub staging: Staging,
    /// The name the plugin has when it has no manifest.
    pub folder_name: String,
}

fn client() -> Result<&'static reqwest::blocking::Client, Upstream> {
    static CLIENT: OnceLock<Result<reqwest::blocking::Client, Upstream>> = OnceLock::new();
    CLIENT
        .get_or_init(|| {
            client_builder()
                .build()
                .map_err(|e| Upstream::from_text(e.to_string()))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Downloads `source` into a new staging folder while hashing it, with the run's limits
/// and credentials. Returns the file and its sha256.
pub(crate) fn download(
    env: &Env<'_>,
    source: &ArchiveUrl,
) -> Result<(Staging, PathBuf, Sha256Hash), ResolveError> {
    download_limited(env, source, env.settings.archive_limits)
}

/// [`download`], refusing more than `limits.max_bytes`.
pub(crate) fn download_limited(
    env: &Env<'_>,
    source: &ArchiveUrl,
    limits: ArchiveLimits,
) -> Result<(Staging, PathBuf, Sha256Hash), ResolveError> {
    let staging = env.store.stage()?;
    let file_path = staging
        .path()
        .join(format!("download.{}", source.format.suffix()));
    if let (Some(policy), Some(url)) = (&env.settings.policy, source.url.parsed()) {
        policy.check(url).map_err(|why| refused(source, why))?;
    }
    let (body, expected_len) = open_body(env, source)?;
    if let Some(len) = expected_len
        && len > limits.max_bytes
    {
        return Err(failed(
            source,
            DownloadError::TooLarge {
                size: len,
                limit: limits.max_bytes,
            },
        ));
    }
    let task = env
        .reporter
        .task("Downloading", &source.url.shown, expected_len);
    let hash = copy_hashing(env, source, body, expected_len, &file_path, limits, &*task)?;
    Ok((staging, file_path, hash))
}

fn failed(source: &ArchiveUrl, cause: DownloadError) -> ResolveError {
    ResolveError::Download {
        url: source.url.shown.clone(),
        cause,
    }
}

fn refused(source: &ArchiveUrl, why: Refusal) -> ResolveError {
    ResolveError::Refused {
        url: source.url.shown.clone(),
        why,
    }
}

/// The body of `source` (a `file://` file, or an http(s) response) and its length when
/// known.
fn open_body(
    env: &Env<'_>,
    source: &ArchiveUrl,
) -> Result<(Box<dyn Read>, Option<u64>), ResolveError> {
    let fail = |cause| failed(source, cause);
    if let Some(path) = source.url.fetch.strip_prefix("file://") {
        let file = fs_err::File::open(path).map_err(|e| fail(DownloadError::File(e)))?;
        let len = file
            .metadata()
            .map_err(|e| fail(DownloadError::File(e)))?
            .len();
        return Ok((Box::new(file), Some(len)));
    }
    let url = source
        .url
        .parsed()
        .ok_or_else(|| fail(DownloadError::NotHttp))?;
    let client = match &env.settings.policy {
        Some(policy) => policy.client(),
        None => client(),
    }
    .map_err(|e| fail(DownloadError::Client(e)))?;
    let host = url.host_str().unwrap_or_default().to_owned();
    let may_send = auth::may_send_password(url.scheme(), &host);
    let mut request = client.get(url.as_str());
    if (!url.username().is_empty() || source.credential.is_some()) && !may_send {
        return Err(ResolveError::PlainHttpCredentials {
            url: source.url.shown.clone(),
        });
    }
    // A registry's credential, or Basic auth from `~/.netrc`, goes to this host only:
    // reqwest drops the header when a redirect leads elsewhere. The header is marked
    // sensitive, so no log of the request shows it.
    if let Some(credential) = &source.credential {
        if let Ok(mut value) = reqwest::header::HeaderValue::from_str(&credential.header_value()) {
            value.set_sensitive(true);
            request = request.header(reqwest::header::AUTHORIZATION, value);
        }
    } else if url.username().is_empty()
        && may_send
        && let Some((login, password)) = auth::netrc(&host, env.settings.home_dir.as_deref())
    {
        request = request.basic_auth(login, Some(password));
    }
    let response = request.send().map_err(|e| {
        let unreachable =
            berth_transport::http::unreachable_reason([&e as &(dyn std::error::Error + 'static)]);
        match (refusal_in(&e), unreachable) {
            (Some(why), _) => refused(source, why),
            (None, Some(why)) => ResolveError::Unreachable {
                url: source.url.shown.clone(),
                why: source.url.scrub(&why),
            },
            (None, None) => fail(DownloadError::Client(Upstream::new(
                &e.without_url().to_string(),
                &source.url,
            ))),
        }
    })?;
    let status = response.status();
    if status == reqwest::StatusCode::UNAUTHORIZED || status == reqwest::StatusCode::FORBIDDEN {
        return Err(fail(match source.credential {
            Some(_) => DownloadError::CredentialRefused { status },
            None => DownloadError::Unauthorized { status },
        }));
    }
    if !status.is_success() {
        return Err(fail(DownloadError::Status { status }));
    }
    let len = response.content_length();
    Ok((Box::new(response), len))
}

/// Copies `body` into a new file at `path` while hashing it, refusing more than
/// `limits.max_bytes` and a body shorter than `expected_len`.
fn copy_hashing(
    env: &Env<'_>,
    source: &ArchiveUrl,
    mut body: Box<dyn Read>,
    expected_len: Option<u64>,
    path: &Path,
    limits: ArchiveLimits,
    task: &dyn crate::context::Task,
) -> Result<Sha256Hash, ResolveError> {
    let fail = |cause| failed(source, cause);
    let mut file = fs_err::File::create(path)?;
    let mut sink = Sha256Sink::default();
    let mut buffer = vec![0u8; 64 * 1024];
    let mut total: u64 = 0;
    loop {
        env.settings.cancel.check()?;
        let n = body.read(&mut buffer).map_err(|e| match expected_len {
            Some(len) if total < len => fail(DownloadError::Truncated {
                got: total,
                expected: len,
                cause: Some(e),
            }),
            _ if e.kind() == std::io::ErrorKind::TimedOut => ResolveError::Timeout {
                url: source.url.shown.clone(),
                cause: Upstream::new(&format!("the download stalled: {e}"), &source.url),
            },
            _ => fail(DownloadError::BrokeOff(e)),
        })?;
        if n == 0 {
            break;
        }
        total += n as u64;
        if total > limits.max_bytes {
            return Err(fail(DownloadError::GrewTooLarge {
                limit: limits.max_bytes,
            }));
        }
        file.write_all(&buffer[..n])?;
        sink.write_all(&buffer[..n])?;
        task.advance(n as u64);
    }
    if let Some(len) = expected_len
        && total != len
    {
        return Err(fail(DownloadError::Truncated {
            got: total,
            expected: len,
            cause: None,
        }));
    }
    file.sync_all()?;
    Ok(sink.finish())
}

/// The cached archive with this hash, if one was kept.
pub(crate) fn cached(store: &Store, hash: &Sha256Hash, format: ArchiveFormat) -> Option<PathBuf> {
    let path = cache_path(store, hash, format);
    path.is_file().then_some(path)
}

fn cache_path(store: &Store, hash: &Sha256Hash, format: ArchiveFormat) -> PathBuf {
    store
        .root()
        .join(ARCHIVES_DIR)
        .join(format!("{}.{}", hash.to_nix32(), format.suffix()))
}

/// Keeps a verified download in the cache (content-addressed, so a rename is enough).
pub(crate) fn keep(
    store: &Store,
    file: &Path,
    hash: &Sha256Hash,
    format: ArchiveFormat,
) -> Result<PathBuf, ResolveError> {
    let path = cache_path(store, hash, format);
    fs_err::create_dir_all(path.parent().expect("cache files have a parent"))?;
    fs_err::rename(file, &path)?;
    Ok(path)
}

/// Unpacks `archive` and narrows it to the plugin folder: the single top-level folder is
/// stripped, then `subdir` (a `repo_path`, whose symlinks are followed within the archive)
/// is applied. Links leaving the plugin are refused.
pub(crate) fn unpack(
    store: &Store,
    source: &ArchiveUrl,
    archive: &Path,
    subdir: Option<&str>,
    limits: ArchiveLimits,
) -> Result<Unpacked, ResolveError> {
    let refuse = |problem: ArchiveProblem| ResolveError::Archive {
        url: source.url.shown.clone(),
        problem,
    };
    let work = store.stage()?;
    let out = work.path().join("x");
    fs_err::create_dir(&out)?;
    extract(archive, source.format, &out, limits).map_err(|e| refuse(e.into()))?;
    let top: Vec<_> = fs_err::read_dir(&out)?.collect::<Result<_, _>>()?;
    let (mut root, mut folder_name) = match top.as_slice() {
        [only] if only.file_type()?.is_dir() => {
            (only.path(), only.file_name().to_string_lossy().into_owned())
        }
        _ => (out.clone(), archive_stem(&source.url.shown)),
    };
    if let Some(subdir) = subdir {
        // A `repo_path` that is (or passes through) a symlink to a folder of the archive is
        // followed, as for git; the plugin is the folder it leads to, named after it.
        let view = DiskTree { root: root.clone() };
        match resolve_dir(&view, subdir)? {
            Ok(found) => {
                if let Some(last) = found.real_path.rsplit('/').next().filter(|n| !n.is_empty()) {
                    folder_name = last.to_owned();
                }
                root = found.dir;
            }
            Err(problem) => {
                return Err(refuse(ArchiveProblem::RepoPath {
                    repo_path: subdir.to_owned(),
                    problem: Box::new(problem),
                }));
            }
        }
    }
    if let Some(link) = find_escaping_link(&root)? {
        return Err(refuse(ArchiveProblem::EscapingLink(link)));
    }
    // The plugin folder becomes a staging folder of its own, ready to hash and commit.
    let plugin = store.stage()?;
    fs_err::rename(&root, plugin.path())?;
    drop(work);
    Ok(Unpacked {
        staging: plugin,
        folder_name,
    })
}

/// The archive's file name without its suffix: the plugin's name of last resort.
fn archive_stem(url: &str) -> String {
    let end = url.find(['?', '#']).unwrap_or(url.len());
    let file = url[..end].rsplit('/').next().unwrap_or("plugin");
    let lower = file.to_ascii_lowercase();
    for suffix in [".tar.gz", ".tgz", ".zip", ".tar"] {
        if lower.ends_with(suffix) {
            return file[..file.len() - suffix.len()].to_owned();
        }
    }
    file.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stems() {
        assert_eq!(archive_stem("https://h/p/lint-1.0.tar.gz?x=1"), "lint-1.0");
        assert_eq!(archive_stem("file:///a/b.ZIP"), "b");
    }
}
