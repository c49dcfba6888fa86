//! The source strings of docs/spec.md section 1 and the redaction of credentials in them.

use std::fmt;

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
        let hint = if text.contains("://") {
            "use an `https://`, `http://`, `git://`, `ssh://` or `file://` URL".to_owned()
        } else if text.matches('/').count() == 1 && !text.starts_with('/') {
            format!(
                "write `github:{text}` for a GitHub repository or `./{text}` for a local folder"
            )
        } else {
            format!(
                "write `github:OWNER/REPO` for a GitHub repository or `./{text}` for a local folder"
            )
        };
        fail(format!("unknown source `{shown}`: {hint}"))
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

/// A source or URL with every literal credential removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redacted {
    /// The text that is safe to write and print.
    pub text: String,
    /// Whether something was removed (the caller warns the user to use `${VAR}`).
    pub removed_secret: bool,
}

/// Removes literal credentials from a URL-like source string, keeping `${VAR}` references.
///
/// A password is always secret. A user name alone is secret on `http(s)` URLs, where tokens
/// are commonly passed as the user name, and kept on `ssh` URLs (`git@host`), where it is
/// the account.
pub fn redact(text: &str) -> Redacted {
    let unchanged = || Redacted {
        text: text.to_owned(),
        removed_secret: false,
    };
    let Some(scheme_end) = text.find("://") else {
        return unchanged();
    };
    let authority_start = scheme_end + 3;
    let scheme = &text[..scheme_end];
    let web = scheme.ends_with("http") || scheme.ends_with("https");
    // Where the authority ends is where the HTTP client (the `url` crate, WHATWG rules)
    // ends it: for web and file URLs a backslash ends it too, so in
    // `https://evil.example\@github.com/` the host is `evil.example` and nothing is a
    // credential.
    let special = web || scheme.ends_with("file") || scheme.ends_with("ftp");
    let ends: &[char] = if special {
        &['/', '?', '#', '\\']
    } else {
        &['/', '?', '#']
    };
    let authority_end = text[authority_start..]
        .find(ends)
        .map_or(text.len(), |i| authority_start + i);
    let authority = &text[authority_start..authority_end];
    let Some(at) = authority.rfind('@') else {
        return unchanged();
    };
    let userinfo = &authority[..at];
    let (user, password) = match userinfo.split_once(':') {
        Some((u, p)) => (u, Some(p)),
        None => (userinfo, None),
    };
    let is_var = |s: &str| is_env_reference(s);
    let keep_password = password.is_none_or(is_var);
    let keep_user = match password {
        // Over http(s) a lone user name is the token (`https://ghp_x@github.com/...`), so
        // removing a literal password must take the user too: `https://oauth2@host`, left
        // behind, would read as a token and a second redaction would change it again.
        Some(_) if web => keep_password || is_var(user) || user.is_empty(),
        // Over ssh the user is an account (`git`), never the secret.
        Some(_) => true,
        None => !web || is_var(user) || user.is_empty(),
    };
    if keep_user && keep_password {
        return unchanged();
    }
    let mut kept = String::new();
    if keep_user {
        kept.push_str(user);
    }
    if keep_password && let Some(p) = password {
        kept.push(':');
        kept.push_str(p);
    }
    let mut out = String::with_capacity(text.len());
    out.push_str(&text[..authority_start]);
    if !kept.is_empty() {
        out.push_str(&kept);
        out.push('@');
    }
    out.push_str(&authority[at + 1..]);
    out.push_str(&text[authority_end..]);
    Redacted {
        text: out,
        removed_secret: true,
    }
}

/// `${NAME}` and nothing else.
fn is_env_reference(s: &str) -> bool {
    s.strip_prefix("${")
        .and_then(|r| r.strip_suffix('}'))
        .is_some_and(|name| {
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(s: &str) -> SourceKind {
        Source::parse(s)
            .unwrap_or_else(|e| panic!("{s}: {e}"))
            .kind()
    }

    #[test]
    fn a_backslash_ends_a_web_authority_as_the_http_client_ends_it() {
        // The host is `evil.example`: nothing before `\\` is userinfo, so nothing is a
        // credential and the text stays as written.
        let text = "https://evil.example\\@github.com/x.tar.gz";
        let redacted = redact(text);
        assert_eq!(redacted.text, text);
        assert!(!redacted.removed_secret);
        assert_eq!(redact("https://u:p@h\\x").text, "https://h\\x");
        // For other schemes a backslash is an ordinary character.
        assert!(redact("ssh://a\\b:pw@h/x").removed_secret);
    }

    #[test]
    fn parses_every_form_of_the_spec_table() {
        assert_eq!(
            Source::parse("github:acme/review-tools/plugins/review"),
            Ok(Source::GitHub {
                owner: "acme".into(),
                repo: "review-tools".into(),
                subpath: Some("plugins/review".into())
            })
        );
        assert_eq!(
            Source::parse("git+https://h/r.git"),
            Ok(Source::Git {
                url: "https://h/r.git".into()
            })
        );
        for git in [
            "https://h/o/r",
            "http://h/o/r.git",
            "git://h/r",
            "ssh://git@h/r",
            "file:///srv/repo",
            "git@github.com:o/r.git",
            "git+ssh://git@h/r",
            "git+file:///srv/r",
        ] {
            assert_eq!(kind(git), SourceKind::Git, "{git}");
        }
        for archive in [
            "https://h/p/lint-1.0.tar.gz",
            "http://h/x.zip",
            "file:///tmp/x.tgz",
            "https://h/x.tar?download=1",
        ] {
            assert_eq!(kind(archive), SourceKind::Archive, "{archive}");
        }
        for local in ["/abs", "./rel", "../rel", "~/p", "."] {
            assert_eq!(kind(local), SourceKind::Local, "{local}");
        }
    }

    #[test]
    fn unknown_forms_suggest_github_or_dot_slash() {
        let err = Source::parse("acme/tools").expect_err("ambiguous");
        assert!(err.message.contains("github:acme/tools"), "{err}");
        assert!(err.message.contains("./acme/tools"), "{err}");
        let err = Source::parse("justaname").expect_err("unknown");
        assert!(err.message.contains("github:OWNER/REPO"), "{err}");
        assert!(Source::parse("github:onlyowner").is_err());
        assert!(Source::parse("github:o/r/../x").is_err());
        assert!(Source::parse("").is_err());
    }

    #[test]
    fn repo_paths_are_normalised_and_kept_inside() {
        assert_eq!(normalize_repo_path("./plugins//a/"), Ok("plugins/a".into()));
        assert!(normalize_repo_path("/etc").is_err());
        assert!(normalize_repo_path("a/../../b").is_err());
        assert!(normalize_repo_path("./").is_err());
    }

    #[test]
    fn redacts_literal_credentials_and_keeps_variables() {
        let r = redact("https://oauth2:TOKEN@gitlab.com/g/r");
        assert_eq!(r.text, "https://gitlab.com/g/r");
        assert!(r.removed_secret);
        assert_eq!(
            redact("https://ghp_secret@github.com/o/r").text,
            "https://github.com/o/r"
        );
        let kept = redact("https://x:${GL_TOKEN}@gitlab.com/g/r");
        assert_eq!(kept.text, "https://x:${GL_TOKEN}@gitlab.com/g/r");
        assert!(!kept.removed_secret);
        assert!(!redact("ssh://git@host/r").removed_secret);
        assert!(!redact("git@github.com:o/r.git").removed_secret);
        assert_eq!(
            redact("ssh://git:pw@host/r").text,
            "ssh://git@host/r",
            "an ssh password is a secret"
        );
        // Found by tests/fuzz.rs: redaction must be idempotent.
        let once = redact("https://a:000aAa@a.aa").text;
        assert_eq!(once, "https://a.aa");
        assert_eq!(redact(&once).text, once);
        assert_eq!(
            redact("https://${U}:pw@h/r").text,
            "https://${U}@h/r",
            "a variable user is kept"
        );
    }
}
