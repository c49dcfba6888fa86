//! The source strings of docs/spec.md section 1.

use std::fmt;

use crate::hash::{CommitId, Sha256Hash};
use crate::redact::redact;

/// Where a plugin comes from, parsed from the manifest's `source` string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// `github:OWNER/REPO[/SUB/PATH]`: a git repository under `$BERTH_GITHUB_URL`.
    GitHub {
        /// The account or organisation.
        owner: String,
        /// The repository, without a `.git` suffix.
        repo: String,
        /// The plugin's folder inside the repository, if the source names one.
        subpath: Option<String>,
    },
    /// A git URL (`https://`, `ssh://`, `file://`, `user@host:path`, ...), `git+` already dropped.
    Git {
        /// The URL as written (credentials included: never print it, use [`redact`]).
        url: String,
    },
    /// A `.zip`, `.tar.gz`, `.tgz` or `.tar` URL.
    Archive {
        /// The URL as written (credentials included: never print it, use [`redact`]).
        url: String,
        /// The format its suffix names.
        format: ArchiveFormat,
    },
    /// A local directory, relative to the manifest's folder unless absolute or `~/`.
    Local {
        /// The path as written.
        path: String,
    },
    /// `PLUGIN@MARKETPLACE`: the plugin a declared `[[marketplace]]` lists under that
    /// name. It stands for the source the marketplace gives, found when locking.
    Marketplace {
        /// The plugin's name in the marketplace.
        plugin: String,
        /// The `[[marketplace]]` name.
        marketplace: String,
    },
}

/// Where a source is fetched from ([`Source::location`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location<'a> {
    /// A URL (a git remote or an archive).
    Url(String),
    /// A local folder, as written.
    Folder(&'a str),
    /// A plugin picked from a marketplace: fetched from wherever the marketplace says.
    Marketplace {
        /// The plugin's name in the marketplace.
        plugin: &'a str,
        /// The `[[marketplace]]` name.
        marketplace: &'a str,
    },
}

/// The three kinds of source, for messages and rules that only care about the kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceKind {
    /// A git repository.
    Git,
    /// A downloadable archive.
    Archive,
    /// A local directory.
    Local,
    /// A plugin picked from a marketplace: a kind of request, never of a pin.
    Marketplace,
}

impl fmt::Display for SourceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SourceKind::Git => "git",
            SourceKind::Archive => "archive",
            SourceKind::Local => "local",
            SourceKind::Marketplace => "marketplace",
        })
    }
}

/// Why a source string was not understood. The message suggests a correct form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SourceError {
    /// The full message.
    pub message: String,
}

const URL_SCHEMES: [&str; 5] = ["https://", "http://", "git://", "ssh://", "file://"];

impl Source {
    /// Parses a manifest `source` string per docs/spec.md section 1.
    pub fn parse(text: &str) -> Result<Self, SourceError> {
        let shown = redact(text).text;
        let fail = |message: String| Err(SourceError { message });
        if text.is_empty() {
            return fail("`source` is empty: write `github:OWNER/REPO`, a git or archive URL, or `./path` for a local folder".into());
        }
        if text.trim() != text || text.contains(['\n', '\r', '\t']) {
            return fail(format!(
                "source `{shown}` has leading, trailing or control whitespace"
            ));
        }
        if let Some(rest) = text.strip_prefix("github:") {
            return parse_github(rest, &shown);
        }
        if let Some(rest) = text.strip_prefix("git+") {
            if URL_SCHEMES.iter().any(|s| rest.starts_with(s)) {
                return Ok(Source::Git { url: rest.into() });
            }
            return fail(format!(
                "source `{shown}`: after `git+` an `https://`, `http://`, `ssh://` or `file://` URL is expected"
            ));
        }
        if URL_SCHEMES.iter().any(|s| text.starts_with(s)) {
            if let Some(format) = ArchiveFormat::from_url(text) {
                return Ok(Source::Archive {
                    url: text.into(),
                    format,
                });
            }
            return Ok(Source::Git { url: text.into() });
        }
        if is_local_path(text) {
            return Ok(Source::Local { path: text.into() });
        }
        if let Some((plugin, marketplace)) = text.split_once('@')
            && is_marketplace_name(plugin)
            && is_marketplace_name(marketplace)
        {
            return Ok(Source::Marketplace {
                plugin: plugin.into(),
                marketplace: marketplace.into(),
            });
        }
        if is_scp_like(text) {
            return Ok(Source::Git { url: text.into() });
        }
        let hint = crate::suggest::source_hint(text);
        fail(format!("unknown source `{shown}`: {hint}"))
    }

    /// The marketplace a `PLUGIN@MARKETPLACE` request picks from; `None` for every other
    /// source.
    pub fn marketplace(&self) -> Option<&str> {
        match self {
            Source::Marketplace { marketplace, .. } => Some(marketplace),
            _ => None,
        }
    }

    /// The kind of this source.
    pub fn kind(&self) -> SourceKind {
        match self {
            Source::GitHub { .. } | Source::Git { .. } => SourceKind::Git,
            Source::Archive { .. } => SourceKind::Archive,
            Source::Local { .. } => SourceKind::Local,
            Source::Marketplace { .. } => SourceKind::Marketplace,
        }
    }

    /// Where this source is fetched from (`github_url` standing for `$BERTH_GITHUB_URL`),
    /// for a rule about places that does not care about the kind: a URL, `${VAR}`
    /// references still in it, a local folder, or a marketplace pick.
    pub fn location(&self, github_url: &str) -> Location<'_> {
        match self {
            Source::GitHub { owner, repo, .. } => Location::Url(format!(
                "{}/{owner}/{repo}.git",
                github_url.trim_end_matches('/')
            )),
            Source::Git { url } | Source::Archive { url, .. } => Location::Url(url.clone()),
            Source::Local { path } => Location::Folder(path),
            Source::Marketplace {
                plugin,
                marketplace,
            } => Location::Marketplace {
                plugin,
                marketplace,
            },
        }
    }
}

/// A plugin or marketplace name as `PLUGIN@MARKETPLACE` writes it: letters, digits, `.`,
/// `_` and `-`, not starting with `.` (Claude Code's names are kebab-case).
pub fn is_marketplace_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 200
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

fn parse_github(rest: &str, shown: &str) -> Result<Source, SourceError> {
    let mut parts = rest.split('/');
    let owner = parts.next().unwrap_or_default();
    let repo = parts.next().unwrap_or_default();
    let subpath: Vec<&str> = parts.collect();
    let valid = |s: &str| {
        !s.is_empty()
            && s != "."
            && s != ".."
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    if !valid(owner) || !valid(repo) {
        return Err(SourceError {
            message: format!(
                "source `{shown}` is not `github:OWNER/REPO` or `github:OWNER/REPO/SUB/PATH`"
            ),
        });
    }
    let repo = repo.strip_suffix(".git").unwrap_or(repo);
    let subpath = if subpath.is_empty() || subpath.iter().all(|s| s.is_empty()) {
        None
    } else {
        let joined = subpath.join("/");
        Some(normalize_repo_path(&joined).map_err(|why| SourceError {
            message: format!("source `{shown}`: the path `{joined}` {why}"),
        })?)
    };
    Ok(Source::GitHub {
        owner: owner.into(),
        repo: repo.into(),
        subpath,
    })
}

/// The archive formats, by the URL's suffix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArchiveFormat {
    /// `.zip`
    Zip,
    /// `.tar.gz`, `.tgz`
    TarGz,
    /// `.tar`
    Tar,
}

impl ArchiveFormat {
    /// The format a URL's path names, if any (the query and fragment aside).
    pub fn from_url(url: &str) -> Option<Self> {
        let end = url.find(['?', '#']).unwrap_or(url.len());
        let path = url[..end].to_ascii_lowercase();
        if path.ends_with(".zip") {
            Some(Self::Zip)
        } else if path.ends_with(".tar.gz") || path.ends_with(".tgz") {
            Some(Self::TarGz)
        } else if path.ends_with(".tar") {
            Some(Self::Tar)
        } else {
            None
        }
    }

    /// The suffix cached downloads keep.
    pub fn suffix(self) -> &'static str {
        match self {
            Self::Zip => "zip",
            Self::TarGz => "tar.gz",
            Self::Tar => "tar",
        }
    }
}

fn is_local_path(text: &str) -> bool {
    matches!(text, "." | ".." | "~") || ["/", "./", "../", "~/"].iter().any(|p| text.starts_with(p))
}

/// `user@host:path`, the scp-like syntax git accepts for ssh.
fn is_scp_like(text: &str) -> bool {
    let Some((user_host, path)) = text.split_once(':') else {
        return false;
    };
    let Some((user, host)) = user_host.split_once('@') else {
        return false;
    };
    !user.is_empty()
        && !host.is_empty()
        && !path.is_empty()
        && !path.starts_with("//")
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
}

/// Normalises a `repo_path`: drops `.` components, empty components and a trailing `/`.
/// Refuses absolute paths and `..`, which could leave the repository or archive.
pub fn normalize_repo_path(path: &str) -> Result<String, &'static str> {
    if path.starts_with('/') || path.starts_with('\\') {
        return Err("is absolute; give a path relative to the repository root");
    }
    if path.contains('\\') {
        return Err("contains `\\`; separate folders with `/`");
    }
    let mut parts = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err("contains `..`; it must stay inside the repository"),
            other => parts.push(other),
        }
    }
    if parts.is_empty() {
        return Err("names the repository root; leave `repo_path` out instead");
    }
    Ok(parts.join("/"))
}

/// The exact thing a lock entry was made from: one variant per kind of source, each with
/// its own type (as Cargo's `SourceId` carries its precise revision, and as uv's
/// `SourceDist::Registry` holds a `RegistrySourceDist`). What a kind's pin holds and which
/// fields of a `[[plugin]]` entry it is written as are both here, beside how the kind's
/// source is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pin {
    /// A commit of a git repository.
    Git(GitPin),
    /// A downloaded archive.
    Archive(ArchivePin),
    /// A local directory.
    Local(LocalPin),
}

/// A commit of a git repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitPin {
    /// The URL fetched, credentials removed.
    pub url: String,
    /// The full commit id.
    pub rev: CommitId,
}

/// A downloaded archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchivePin {
    /// The URL fetched, credentials removed.
    pub url: String,
    /// sha256 of the downloaded file.
    pub archive_hash: Sha256Hash,
}

/// A local directory: its content is pinned by the entry's hash alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalPin {
    /// The path as written in the manifest.
    pub path: String,
}

/// The fields of a `[[plugin]]` entry that say what it was made from, as the lock writes
/// them: which ones an entry has depends on its kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PinFields {
    pub(crate) url: Option<String>,
    pub(crate) rev: Option<String>,
    pub(crate) archive_hash: Option<String>,
    pub(crate) path: Option<String>,
}

/// Which request fields a `[[plugin]]` entry has that only some kinds use.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RequestFields {
    pub(crate) git_ref: bool,
    pub(crate) version: bool,
    pub(crate) repo_path: bool,
}

impl Pin {
    /// The kind of source this pin came from.
    pub fn kind(&self) -> SourceKind {
        match self {
            Pin::Git(_) => SourceKind::Git,
            Pin::Archive(_) => SourceKind::Archive,
            Pin::Local(_) => SourceKind::Local,
        }
    }

    /// The pin of a lock entry whose source is `source` (`written` in the lock), read from
    /// its `fields`; a field of another kind, among them the request's, is refused.
    pub(crate) fn from_fields(
        source: &Source,
        written: &str,
        fields: PinFields,
        request: RequestFields,
    ) -> Result<Self, String> {
        let refuse = |names: &[(&str, bool)]| -> Result<(), String> {
            match names.iter().find(|(_, present)| *present) {
                Some((field, _)) => Err(format!(
                    "`{field}` does not belong to a {} source",
                    source.kind()
                )),
                None => Ok(()),
            }
        };
        let missing = |field: &str| format!("`{field}` is missing");
        match source {
            Source::Marketplace { .. } => Err(format!(
                "`source = \"{written}\"` names a marketplace plugin; a lock entry's `source` is the one its catalog gave, with the request in `requested`"
            )),
            Source::GitHub { .. } | Source::Git { .. } => {
                refuse(&[
                    ("archive_hash", fields.archive_hash.is_some()),
                    ("path", fields.path.is_some()),
                ])?;
                let rev = fields.rev.ok_or_else(|| missing("rev"))?;
                let Some(rev) = CommitId::parse(&rev) else {
                    return Err(format!("`rev = \"{rev}\"` is not a full 40-hex commit id"));
                };
                let url = fields.url.ok_or_else(|| missing("url"))?;
                Ok(Pin::Git(GitPin { url, rev }))
            }
            Source::Archive { .. } => {
                refuse(&[
                    ("rev", fields.rev.is_some()),
                    ("path", fields.path.is_some()),
                    ("ref", request.git_ref),
                    ("version", request.version),
                ])?;
                let archive_hash = fields.archive_hash.ok_or_else(|| missing("archive_hash"))?;
                let url = fields.url.ok_or_else(|| missing("url"))?;
                let archive_hash =
                    Sha256Hash::from_sri(&archive_hash).map_err(|e| e.to_string())?;
                Ok(Pin::Archive(ArchivePin { url, archive_hash }))
            }
            Source::Local { path: named } => {
                refuse(&[
                    ("rev", fields.rev.is_some()),
                    ("url", fields.url.is_some()),
                    ("archive_hash", fields.archive_hash.is_some()),
                    ("ref", request.git_ref),
                    ("version", request.version),
                    ("repo_path", request.repo_path),
                ])?;
                let path = fields.path.ok_or_else(|| missing("path"))?;
                // The folder is the one the source names, as `lock` writes it: a lock
                // cannot send a local entry to another folder (`path = "/etc/ssh"`).
                if path != *named {
                    return Err(format!(
                        "`path = \"{path}\"` is not the folder its source `{written}` names"
                    ));
                }
                Ok(Pin::Local(LocalPin { path }))
            }
        }
    }

    /// The pin's fields that are free text (a URL, a path), each with the name the lock
    /// gives it: what a reader of someone else's lock checks (commit ids and hashes are
    /// checked when they are parsed).
    pub fn text_fields(&self) -> Vec<(&'static str, &str)> {
        match self {
            Pin::Git(pin) => vec![("url", &pin.url)],
            Pin::Archive(pin) => vec![("url", &pin.url)],
            Pin::Local(pin) => vec![("path", &pin.path)],
        }
    }

    /// The fields the lock writes for this pin.
    pub(crate) fn fields(&self) -> PinFields {
        match self {
            Pin::Git(pin) => PinFields {
                url: Some(pin.url.clone()),
                rev: Some(pin.rev.to_string()),
                ..PinFields::default()
            },
            Pin::Archive(pin) => PinFields {
                url: Some(pin.url.clone()),
                archive_hash: Some(pin.archive_hash.to_sri()),
                ..PinFields::default()
            },
            Pin::Local(pin) => PinFields {
                path: Some(pin.path.clone()),
                ..PinFields::default()
            },
        }
    }
}

#[cfg(test)]
mod tests;
