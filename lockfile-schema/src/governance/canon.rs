//! Sources and hosts in one form before policy patterns match them: two spellings of one
//! repository (`github:ACME/Tools`, `https://github.com/acme/tools.git/`) are one string,
//! and a spelling that could reach another repository than it reads (`acme/../ACME`,
//! `%2e%2e`, a backslash) has no form at all and is refused.

use std::net::IpAddr;

/// The URL schemes git reaches a repository over the network with: one repository under
/// any of them is the same repository to a `deny` pattern.
const NETWORK_SCHEMES: [&str; 4] = ["https", "http", "ssh", "git"];

/// The hosts whose repositories `github:OWNER/REPO` names.
const GITHUB_HOSTS: [&str; 2] = ["github.com", "www.github.com"];

/// Why a source (or a pattern) has no canonical form; the text says what to write instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NotCanonical(pub String);

/// How sources are put in one form: which URL `github:` stands for, besides
/// `https://github.com` (`$BERTH_GITHUB_URL`, so that a URL under it and its `github:`
/// form are one source).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Canon {
    /// The canonical form of the `github:` base URL, without a trailing `/`.
    github: Option<String>,
}

impl Default for Canon {
    fn default() -> Self {
        Canon::new("https://github.com")
    }
}

impl Canon {
    /// `github:` expands under `github_url` (a URL; anything else adds nothing to
    /// `https://github.com`).
    pub fn new(github_url: &str) -> Canon {
        let github = split_url(github_url)
            .ok()
            .map(|url| url.render().trim_end_matches('/').to_owned());
        Canon { github }
    }

    /// The canonical form of a source as `plugins.lock` writes it (or of a pattern):
    ///
    /// - `github:OWNER/REPO[/PATH]` with owner and repository lower-cased, `.git` and
    ///   trailing or doubled `/` dropped; a URL of a GitHub repository (`https`, `http`,
    ///   `ssh`, `git` or `git@github.com:`, on `github.com` or under the `github:` base) is
    ///   written in that form too;
    /// - other URLs: `git+` dropped, scheme and host lower-cased, user, default port,
    ///   fragment, `.` segments, doubled and trailing `/` and a final `.git` dropped,
    ///   percent-encoded letters, digits and `-._~` decoded; `user@host:path` is
    ///   `ssh://host/path`;
    /// - local paths: `.` and `..` resolved by name (`./a/../b` is `./b`);
    /// - anything else (a pattern starting with `*`) as written.
    ///
    /// A URL with a backslash, a `..` segment in any spelling or an encoded `/` or `\` in
    /// its path is refused: the server could read it as another repository than the one
    /// its text names.
    pub fn source(&self, text: &str) -> Result<String, NotCanonical> {
        let text = strip_git_plus(text);
        if let Some(rest) = text.strip_prefix("github:") {
            return github_form(rest.split('/'));
        }
        let url = match scp_like(text) {
            Some((host, path)) => split_url(&format!("ssh://{host}/{path}"))?,
            None if has_scheme(text) => split_url(text)?,
            None if is_local(text) => return Ok(local_form(text)),
            None => return Ok(text.to_owned()),
        };
        if NETWORK_SCHEMES.contains(&url.scheme.as_str())
            && GITHUB_HOSTS.contains(&url.host.as_str())
            && url.port.is_none()
        {
            return github_form(url.segments.iter().map(String::as_str));
        }
        let rendered = url.render();
        if let Some(base) = &self.github
            && let Some(rest) = rendered.strip_prefix(base.as_str())
            && let Some(path) = rest.strip_prefix('/')
            && url.query.is_none()
        {
            return github_form(path.split('/'));
        }
        Ok(rendered)
    }
}

/// Whether `pattern` (canonical) matches `canonical` (a source's form) as an `allow`
/// pattern: exactly, `*` matching any run of characters.
pub(super) fn allow_matches(pattern: &str, canonical: &str) -> bool {
    super::glob_match(pattern, canonical)
}

/// Whether `pattern` (canonical) matches `canonical` as a `deny` pattern: in any case (a
/// server may fold it) and over any of git's network transports (`https://h/x` is
/// `ssh://h/x` on a forge). What a `deny` pattern matches is a superset of what the same
/// `allow` pattern matches.
pub(super) fn deny_matches(pattern: &str, canonical: &str) -> bool {
    let pattern = pattern.to_ascii_lowercase();
    let text = canonical.to_ascii_lowercase();
    if super::glob_match(&pattern, &text) {
        return true;
    }
    match text.split_once("://") {
        Some((scheme, rest)) if NETWORK_SCHEMES.contains(&scheme) => NETWORK_SCHEMES
            .iter()
            .any(|other| super::glob_match(&pattern, &format!("{other}://{rest}"))),
        _ => false,
    }
}

/// Why a pattern as written in a policy file cannot be matched: it has no canonical form,
/// or it is a bare name (a marketplace's alias, which each project chooses).
pub(super) fn pattern_problem(pattern: &str) -> Option<String> {
    if crate::source::is_marketplace_name(pattern) {
        return Some(format!(
            "`{pattern}` is not a source: a marketplace is allowed or denied by its source (`github:OWNER/REPO`, a URL or `./path`), not by the name a `plugins.toml` gives it"
        ));
    }
    Canon::default()
        .source(pattern)
        .err()
        .map(|e| format!("the pattern `{pattern}` {e}"))
}

/// The host a remote MCP server at `url` is reached on, as a WHATWG parser (the `url`
/// crate, Node's `URL`) reads it: lower-case, without a final `.`, an IPv6 address
/// without brackets. A URL that does not parse, has no host, holds a backslash or names a
/// user or password has none: whoever reads it could connect elsewhere than it reads.
pub fn url_host(url: &str) -> Result<String, NotCanonical> {
    if url.contains('\\') {
        return Err(NotCanonical("has a backslash".to_owned()));
    }
    let parsed = url::Url::parse(url).map_err(|e| NotCanonical(format!("is not a URL ({e})")))?;
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(NotCanonical("names a user or password".to_owned()));
    }
    let host = match parsed.host() {
        Some(url::Host::Domain(domain)) => domain.to_ascii_lowercase(),
        Some(url::Host::Ipv4(ip)) => IpAddr::V4(ip).to_string(),
        Some(url::Host::Ipv6(ip)) => IpAddr::V6(ip).to_string(),
        None => return Err(NotCanonical("has no host".to_owned())),
    };
    Ok(host.strip_suffix('.').unwrap_or(&host).to_owned())
}

/// A URL taken apart into what identifies the repository.
struct SplitUrl {
    scheme: String,
    host: String,
    port: Option<u16>,
    /// Path segments, none empty, none `.` or `..`, percent-encoding normalised.
    segments: Vec<String>,
    query: Option<String>,
}

impl SplitUrl {
    fn render(&self) -> String {
        let mut out = format!("{}://{}", self.scheme, self.host);
        if let Some(port) = self.port {
            out.push_str(&format!(":{port}"));
        }
        for segment in &self.segments {
            out.push('/');
            out.push_str(segment);
        }
        if let Some(query) = &self.query {
            out.push('?');
            out.push_str(query);
        }
        out
    }
}

fn split_url(text: &str) -> Result<SplitUrl, NotCanonical> {
    let text = strip_git_plus(text);
    if text.contains('\\') {
        return Err(NotCanonical(
            "has a backslash, which a URL parser reads as `/`; write `/`".to_owned(),
        ));
    }
    // The `url` crate resolves `..` (and `%2e%2e`) before anyone sees the path, so the
    // segments are checked as written.
    for segment in raw_path(text).split('/') {
        check_segment(segment)?;
    }
    let url = url::Url::parse(text).map_err(|e| NotCanonical(format!("is not a URL ({e})")))?;
    let scheme = url.scheme().to_owned();
    let host = match url.host() {
        Some(url::Host::Domain(domain)) => {
            let lower = domain.to_ascii_lowercase();
            lower.strip_suffix('.').unwrap_or(&lower).to_owned()
        }
        Some(url::Host::Ipv4(ip)) => ip.to_string(),
        Some(url::Host::Ipv6(ip)) => format!("[{ip}]"),
        None => String::new(),
    };
    let default_port = match scheme.as_str() {
        "ssh" => Some(22),
        "git" => Some(9418),
        _ => None,
    };
    let port = url.port().filter(|p| Some(*p) != default_port);
    let mut segments = Vec::new();
    for segment in url.path().split('/') {
        let segment = normalise_escapes(segment);
        if !segment.is_empty() && segment != "." {
            segments.push(segment);
        }
    }
    if let Some(last) = segments.last_mut()
        && let Some(stem) = last.strip_suffix(".git")
        && !stem.is_empty()
    {
        *last = stem.to_owned();
    }
    Ok(SplitUrl {
        scheme,
        host,
        port,
        segments,
        query: url.query().map(str::to_owned),
    })
}

/// The path of a URL as written: after the authority, before `?` or `#`.
fn raw_path(text: &str) -> &str {
    let after = text.split_once("://").map_or(text, |(_, rest)| rest);
    let path = after.find('/').map_or("", |i| &after[i..]);
    path.split(['?', '#']).next().unwrap_or("")
}

/// Refuses a path segment a server could resolve to another folder: `..` in any spelling,
/// or an encoded `/` or `\`.
fn check_segment(segment: &str) -> Result<(), NotCanonical> {
    let decoded = normalise_escapes(segment);
    if decoded == ".." {
        let spelled = if segment == ".." {
            "`..`".to_owned()
        } else {
            format!("`{segment}` (`..`)")
        };
        return Err(NotCanonical(format!(
            "has the path segment {spelled}, which a server resolves to another folder than the text names; write the path without it"
        )));
    }
    let lower = decoded.to_ascii_lowercase();
    if lower.contains("%2f") || lower.contains("%5c") {
        return Err(NotCanonical(format!(
            "has an encoded `/` or `\\` in the path segment `{segment}`; write the path with plain `/`"
        )));
    }
    Ok(())
}

/// Percent-escapes as RFC 3986 normalises them: letters, digits and `-._~` decoded, every
/// other escape in upper case.
fn normalise_escapes(segment: &str) -> String {
    let bytes = segment.as_bytes();
    let mut out = String::with_capacity(segment.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(hi), Some(lo)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            let byte = hi * 16 + lo;
            if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
                out.push(char::from(byte));
            } else {
                out.push_str(&format!("%{byte:02X}"));
            }
            i += 3;
            continue;
        }
        let ch = segment[i..]
            .chars()
            .next()
            .expect("i is on a char boundary");
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}

fn hex(byte: u8) -> Option<u8> {
    char::from(byte)
        .to_digit(16)
        .and_then(|d| u8::try_from(d).ok())
}

/// `github:` and the segments after it: owner and repository lower-cased (GitHub reads
/// them in any case), `.git` dropped from the repository, empty segments dropped.
fn github_form<'a>(segments: impl Iterator<Item = &'a str>) -> Result<String, NotCanonical> {
    let mut parts: Vec<String> = Vec::new();
    for segment in segments {
        check_segment(segment)?;
        let segment = normalise_escapes(segment);
        if segment.is_empty() || segment == "." {
            continue;
        }
        parts.push(match parts.len() {
            0 => segment.to_ascii_lowercase(),
            1 => {
                let lower = segment.to_ascii_lowercase();
                match lower.strip_suffix(".git") {
                    Some(stem) if !stem.is_empty() => stem.to_owned(),
                    _ => lower,
                }
            }
            _ => segment,
        });
    }
    Ok(format!("github:{}", parts.join("/")))
}

/// A local path with `.` and `..` resolved by name: `./a/../b` is `./b`, `../x` stays.
fn local_form(text: &str) -> String {
    let (root, rest) = if let Some(rest) = text.strip_prefix("~/") {
        ("~/", rest)
    } else if text == "~" {
        ("~/", "")
    } else if let Some(rest) = text.strip_prefix('/') {
        ("/", rest)
    } else {
        ("", text)
    };
    let mut parts: Vec<&str> = Vec::new();
    for part in rest.split('/') {
        match part {
            "" | "." => {}
            ".." if parts.last().is_some_and(|p| *p != "..") => {
                parts.pop();
            }
            // Above the root is the root; above a relative path's start is kept.
            ".." if !root.is_empty() => {}
            other => parts.push(other),
        }
    }
    let joined = parts.join("/");
    match root {
        "" if joined.is_empty() => ".".to_owned(),
        "" if parts.first() == Some(&"..") => joined,
        "" => format!("./{joined}"),
        _ => format!("{root}{joined}"),
    }
}

fn strip_git_plus(text: &str) -> &str {
    match text.strip_prefix("git+") {
        Some(rest) if has_scheme(rest) => rest,
        _ => text,
    }
}

/// `scheme://` with a scheme as RFC 3986 spells it.
fn has_scheme(text: &str) -> bool {
    text.split_once("://").is_some_and(|(scheme, _)| {
        scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    })
}

fn is_local(text: &str) -> bool {
    matches!(text, "." | ".." | "~") || ["/", "./", "../", "~/"].iter().any(|p| text.starts_with(p))
}

/// `user@host:path`, the scp-like syntax git reads as ssh: its host and path.
fn scp_like(text: &str) -> Option<(&str, &str)> {
    if has_scheme(text) || is_local(text) {
        return None;
    }
    let (user_host, path) = text.split_once(':')?;
    let (user, host) = user_host.split_once('@')?;
    let plain = !user.is_empty()
        && !host.is_empty()
        && !path.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'));
    plain.then_some((host, path.trim_start_matches('/')))
}

#[cfg(test)]
mod tests;
