//! From a source to the URL that is fetched, and the names derived from it.

use berth_lockfile_schema::redact;
use sha2::{Digest, Sha256};

/// Why a source URL cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum UrlError {
    /// A source URL that does not parse.
    #[error("`{url}` is not a valid URL ({source})")]
    InvalidUrl {
        /// The URL, credentials removed.
        url: String,
        /// What the URL parser said.
        #[source]
        source: ::url::ParseError,
    },
    /// A password would go over plain http to another machine.
    #[error("`{url}`: refusing to send credentials over plain http to another machine; use https")]
    PlainHttpCredentials {
        /// The URL, credentials removed.
        url: String,
    },
    /// `${VAR}` in a source names an unset variable.
    #[error("environment variable `{name}` used in the source is not set; export it and try again")]
    MissingEnv {
        /// The variable.
        name: String,
    },
}

/// A source URL, parsed once: the text as written (`${VAR}` kept, never shown), the URL
/// that is fetched (variables expanded, normalised by the `url` crate, the same value the
/// HTTP client and the policy read), the redacted text every message shows, and the
/// secrets that must never appear anywhere. Its `Display` is the redacted text, as uv's
/// `DisplaySafeUrl`. scp-like git addresses (`git@host:path`) are kept as written.
#[derive(Clone)]
pub struct SourceUrl {
    /// What is fetched.
    pub fetch: String,
    /// Without credentials: what is shown and locked.
    pub shown: String,
    /// Values that must never appear in a message (expanded `${VAR}`s, passwords, tokens).
    pub secrets: Vec<String>,
    parsed: Option<url::Url>,
}

impl std::fmt::Debug for SourceUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("SourceUrl").field(&self.shown).finish()
    }
}

impl std::fmt::Display for SourceUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

impl SourceUrl {
    /// Expands `written`'s `${VAR}`s and parses the result. A URL the `url` crate cannot
    /// parse is an error naming it (redacted); an scp-like address is kept as it is.
    pub fn new(written: &str) -> Result<Self, UrlError> {
        let shown = redact(written).text;
        let expanded = expand_env(written)?;
        let mut secrets: Vec<String> = env_references(written)
            .filter_map(|name| std::env::var(name).ok())
            .filter(|v| !v.is_empty())
            .collect();
        if !expanded.contains("://") {
            if let Some((user, password)) = userinfo(&expanded) {
                secrets.extend(password.map(str::to_owned).filter(|p| !p.is_empty()));
                let _ = user;
            }
            return Ok(Self {
                fetch: expanded,
                shown,
                secrets,
                parsed: None,
            });
        }
        let parsed = url::Url::parse(&expanded).map_err(|source| UrlError::InvalidUrl {
            url: shown.clone(),
            source,
        })?;
        let decode = |text: &str| {
            url::form_urlencoded::parse(format!("x={text}").as_bytes())
                .next()
                .map_or_else(|| text.to_owned(), |(_, v)| v.into_owned())
        };
        let http = matches!(parsed.scheme(), "http" | "https");
        if let Some(password) = parsed.password().filter(|p| !p.is_empty()) {
            secrets.push(password.to_owned());
            secrets.push(decode(password));
        } else if http && !parsed.username().is_empty() {
            // A lone user name over http(s) is read as a token.
            secrets.push(parsed.username().to_owned());
            secrets.push(decode(parsed.username()));
        }
        secrets.retain(|s| !s.is_empty());
        secrets.sort();
        secrets.dedup();
        Ok(Self {
            fetch: parsed.as_str().to_owned(),
            shown,
            secrets,
            parsed: Some(parsed),
        })
    }

    /// The parsed URL (`None` for an scp-like address).
    pub fn parsed(&self) -> Option<&url::Url> {
        self.parsed.as_ref()
    }

    /// `message` with this URL's secrets and every URL's credentials removed.
    pub fn scrub(&self, message: &str) -> String {
        scrub(message, &self.secrets)
    }

    /// A file the index lists (a wheel's URL, without credentials), to be fetched with this
    /// index's credentials when it is on the index's host (scheme, host and port equal),
    /// and without them anywhere else.
    pub fn for_file_on_index(&self, file: &str) -> SourceUrl {
        let mut fetch = url::Url::parse(file).ok();
        if let (Some(url), Some(index)) = (fetch.as_mut(), self.parsed.as_ref())
            && url.username().is_empty()
            && !index.username().is_empty()
            && url.scheme() == index.scheme()
            && url.host_str() == index.host_str()
            && url.port_or_known_default() == index.port_or_known_default()
        {
            let _ = url.set_username(index.username());
            let _ = url.set_password(index.password());
        }
        SourceUrl {
            fetch: fetch
                .as_ref()
                .map_or_else(|| file.to_owned(), |u| u.as_str().to_owned()),
            shown: redact(file).text,
            secrets: self.secrets.clone(),
            parsed: fetch,
        }
    }

    /// This URL with `user` and `password` as its userinfo when it carries none:
    /// credentials configured beside the URL (uv's `UV_INDEX_<NAME>_PASSWORD`), sent as
    /// the URL's own and, like them, kept out of every message.
    pub fn with_credentials(mut self, user: &str, password: &str) -> Self {
        let Some(parsed) = self.parsed.as_mut() else {
            return self;
        };
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return self;
        }
        let password = Some(password).filter(|p| !p.is_empty());
        if parsed.set_username(user).is_err() || parsed.set_password(password).is_err() {
            return self;
        }
        self.fetch = parsed.as_str().to_owned();
        // A lone user name over http(s) is a token: secret, as in `new`.
        let secret = password.unwrap_or(user);
        let encoded = match password {
            Some(_) => parsed.password().unwrap_or_default(),
            None => parsed.username(),
        };
        self.secrets.extend(
            [secret.to_owned(), encoded.to_owned()]
                .into_iter()
                .filter(|s| !s.is_empty()),
        );
        self.secrets.sort();
        self.secrets.dedup();
        self
    }

    /// The user name and password the URL itself carries, decoded.
    pub fn credentials(&self) -> Option<(String, String)> {
        let url = self.parsed.as_ref()?;
        let password = url.password().filter(|p| !p.is_empty())?;
        let decode = |text: &str| {
            url::form_urlencoded::parse(format!("x={text}").as_bytes())
                .next()
                .map_or_else(|| text.to_owned(), |(_, v)| v.into_owned())
        };
        Some((decode(url.username()), decode(password)))
    }
}

/// `text` with every secret replaced by `***` and every URL's credentials removed.
pub fn scrub(text: &str, secrets: &[String]) -> String {
    let mut out = text.to_owned();
    for secret in secrets {
        out = out.replace(secret.as_str(), "***");
    }
    // Redact each URL in the text, not only the first.
    let mut result = String::with_capacity(out.len());
    let mut rest = out.as_str();
    while let Some(i) = rest.find("://") {
        let start = rest[..i]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
            .map_or(0, |p| p + 1);
        let end = rest[i..]
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '`' | ')' | '>'))
            .map_or(rest.len(), |p| i + p);
        result.push_str(&rest[..start]);
        result.push_str(&redact(&rest[start..end]).text);
        rest = &rest[end..];
    }
    result.push_str(rest);
    result
}

/// Credentials go over plain http only to this machine: an error for an `http://` URL
/// whose expansion carries a password for another host. Git remotes and the agent index
/// share this rule; archive downloads check it as they send the request.
pub fn refuse_plain_http_password(url: &SourceUrl) -> Result<(), UrlError> {
    if let Some(parsed) = url.parsed()
        && parsed.password().is_some_and(|p| !p.is_empty())
        && !crate::auth::may_send_password(parsed.scheme(), parsed.host_str().unwrap_or_default())
    {
        return Err(UrlError::PlainHttpCredentials {
            url: url.shown.clone(),
        });
    }
    Ok(())
}

/// The user and password of a URL's authority, if it has userinfo.
pub fn userinfo(url: &str) -> Option<(&str, Option<&str>)> {
    let rest = &url[url.find("://")? + 3..];
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let (info, _) = authority.rsplit_once('@')?;
    Some(match info.split_once(':') {
        Some((user, password)) => (user, Some(password)),
        None => (info, None),
    })
}

/// `url` without the userinfo of its authority (`https://u:p@h/simple` ->
/// `https://h/simple`), everything else as written: what a lock records of a registry
/// whose credentials are looked up again at every fetch.
pub fn without_userinfo(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return url.to_owned();
    };
    let start = scheme_end + 3;
    let end = url[start..]
        .find(['/', '?', '#', '\\'])
        .map_or(url.len(), |i| start + i);
    match url[start..end].rfind('@') {
        Some(at) => format!("{}{}", &url[..start], &url[start + at + 1..]),
        None => url.to_owned(),
    }
}

fn env_references(text: &str) -> impl Iterator<Item = &str> {
    text.match_indices("${").filter_map(move |(i, _)| {
        let rest = &text[i + 2..];
        rest.find('}').map(|end| &rest[..end])
    })
}

/// Replaces every `${NAME}` with the variable's value. Unset variables are an error.
pub fn expand_env(text: &str) -> Result<String, UrlError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let Some(len) = rest[start + 2..].find('}') else {
            break;
        };
        let name = &rest[start + 2..start + 2 + len];
        out.push_str(&rest[..start]);
        let value = std::env::var(name).map_err(|_| UrlError::MissingEnv {
            name: name.to_owned(),
        })?;
        out.push_str(&value);
        rest = &rest[start + 3 + len..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The cache folder name of a git URL: the repository's name and 16 hex digits of the
/// sha256 of the URL without credentials (a rotated token keeps its cache).
pub fn cache_dir_name(url: &str) -> String {
    let key = redact(url).text;
    let digest = Sha256::digest(key.as_bytes());
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    // The readable part is bounded: the hash is what names the cache, and a file name
    // (also of the cache's lock file) may not pass 255 bytes.
    let name: String = repo_name(url)
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        .take(64)
        .collect();
    format!("{}-{hex}", if name.is_empty() { "repo" } else { &name })
}

/// The last path component of a git URL without `.git`: the folder name a clone gets.
pub fn repo_name(url: &str) -> String {
    let end = url.find(['?', '#']).unwrap_or(url.len());
    let path = url[..end].trim_end_matches('/');
    let last = path.rsplit(['/', ':']).next().unwrap_or(path);
    last.strip_suffix(".git").unwrap_or(last).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repo_names() {
        assert_eq!(repo_name("https://h/o/review-tools.git"), "review-tools");
        assert_eq!(repo_name("git@h:o/r.git"), "r");
        assert_eq!(repo_name("file:///srv/repo/"), "repo");
    }

    #[test]
    fn cache_names_ignore_credentials() {
        assert_eq!(
            cache_dir_name("https://u:one@h/o/r.git"),
            cache_dir_name("https://u:two@h/o/r.git")
        );
        assert_ne!(
            cache_dir_name("https://h/o/r.git"),
            cache_dir_name("https://h/p/r.git")
        );
        assert!(cache_dir_name("https://h/o/r.git").starts_with("r-"));
        let long = format!("https://h/o/{}.git", "x".repeat(900_000));
        assert!(cache_dir_name(&long).len() < 100);
        assert_ne!(
            cache_dir_name(&long),
            cache_dir_name(&format!("https://h/o/{}y.git", "x".repeat(900_000)))
        );
    }

    #[test]
    fn scrub_removes_secrets_and_every_url_credential() {
        let secrets = vec!["s3cret".to_owned()];
        assert_eq!(
            scrub(
                "failed (url http://a:s3cret@h/x) and https://b:pw@k/y; token s3cret",
                &secrets
            ),
            "failed (url http://h/x) and https://k/y; token ***"
        );
        assert_eq!(userinfo("https://u:p@h/r"), Some(("u", Some("p"))));
        assert_eq!(userinfo("https://h/r"), None);
        assert_eq!(
            without_userinfo("https://__token__:${T}@h:8/simple/"),
            "https://h:8/simple/"
        );
        assert_eq!(without_userinfo("https://h/a@b"), "https://h/a@b");
    }

    #[test]
    fn credentials_beside_a_url_are_sent_and_kept_secret() {
        let url = SourceUrl::new("https://h.example/simple")
            .expect("url")
            .with_credentials("alice", "p@ss");
        assert_eq!(url.fetch, "https://alice:p%40ss@h.example/simple");
        assert_eq!(url.shown, "https://h.example/simple");
        assert_eq!(url.scrub("no p@ss, no p%40ss"), "no ***, no ***");
        let written = SourceUrl::new("https://bob:x@h.example/simple")
            .expect("url")
            .with_credentials("alice", "y");
        assert_eq!(
            written.fetch, "https://bob:x@h.example/simple",
            "the URL's own win"
        );
    }

    #[test]
    fn env_references_expand() {
        // SAFETY-free: set_var is safe to call in a single-threaded test of this crate's
        // own variable name.
        let name = "BERTH_TEST_EXPAND_TOKEN";
        assert!(matches!(
            expand_env(&format!("https://x:${{{name}}}@h/r")),
            Err(UrlError::MissingEnv { .. })
        ));
        assert_eq!(expand_env("https://h/r").expect("no vars"), "https://h/r");
    }
}
