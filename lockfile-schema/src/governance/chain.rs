//! The effective policy of a chain of files, parents first: every file must let a plugin
//! through (the rules intersect), and a file that tries to loosen what it extends is an
//! error naming both.

use super::file::{Capability, Level, PolicyFile, UnicodeLevel};
use super::glob_match;

/// A chain of policy files that loosens what it extends.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{child}` {what}, but `{parent}` {parent_says}; a policy may only tighten what it extends: remove it from `{child}` or change `{parent}`"
)]
pub struct PolicyError {
    /// The loosening file.
    pub child: String,
    /// The file it loosens.
    pub parent: String,
    /// What the child says.
    pub what: String,
    /// What the parent says.
    pub parent_says: String,
}

/// Why a source is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceDenied {
    /// The policy file.
    pub file: String,
    /// The rule: `sources.deny = "PATTERN"` or `sources.allow`.
    pub rule: String,
    /// `denied by` or `not in the allow list of`.
    pub reason: &'static str,
}

/// A remote MCP server's host that no `mcp_remote_hosts` entry matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostRefused {
    /// The policy file whose list it is not on.
    pub file: String,
    /// The host.
    pub host: String,
}

/// The effective policy: the chain of files, parents first. [`Policy::default`] is no
/// policy file at all: every capability allowed, hidden Unicode denied.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    files: Vec<(String, PolicyFile)>,
}

impl Policy {
    /// Folds `files` (each with the label that names it, parents before the files that
    /// extend them) into one policy, refusing a file that loosens an earlier one.
    pub fn from_chain(files: Vec<(String, PolicyFile)>) -> Result<Policy, PolicyError> {
        for (i, (child, file)) in files.iter().enumerate() {
            for (parent, earlier) in &files[..i] {
                loosens(child, file, parent, earlier)?;
            }
        }
        Ok(Policy { files })
    }

    /// The files of the chain, parents first.
    pub fn files(&self) -> impl Iterator<Item = &str> {
        self.files.iter().map(|(label, _)| label.as_str())
    }

    /// The strictest level any file sets for `capability`, and the first file that set it
    /// (`None`: no file says, so it is allowed).
    pub fn capability(&self, capability: Capability) -> (Level, Option<&str>) {
        let mut best: (Level, Option<&str>) = (Level::Allow, None);
        for (label, file) in &self.files {
            if let Some(level) = file.capabilities.get(capability)
                && (best.1.is_none() || level > best.0)
            {
                best = (level, Some(label));
            }
        }
        best
    }

    /// What a critical hidden-Unicode finding gets: `deny` unless the chain says `warn`
    /// (and no file says `deny`); with the file that said it.
    pub fn hidden_unicode(&self) -> (UnicodeLevel, Option<&str>) {
        let mut best: (UnicodeLevel, Option<&str>) = (UnicodeLevel::Deny, None);
        for (label, file) in &self.files {
            if let Some(level) = file.capabilities.hidden_unicode
                && (best.1.is_none() || level > best.0)
            {
                best = (level, Some(label));
            }
        }
        best
    }

    /// Whether some file lists the hosts remote MCP servers may be on.
    pub fn has_remote_hosts(&self) -> bool {
        self.files
            .iter()
            .any(|(_, f)| f.capabilities.mcp_remote_hosts.is_some())
    }

    /// Whether a plugin from `source` (as the lock writes it), asked for from
    /// `marketplace` (if it was), passes every file's `[sources]`. A pattern matches the
    /// source or the marketplace's name.
    pub fn check_source(
        &self,
        source: &str,
        marketplace: Option<&str>,
    ) -> Result<(), SourceDenied> {
        let matches = |pattern: &str| {
            glob_match(pattern, source) || marketplace.is_some_and(|m| glob_match(pattern, m))
        };
        for (label, file) in &self.files {
            if let Some(pattern) = file.sources.deny.iter().find(|p| matches(p)) {
                return Err(SourceDenied {
                    file: label.clone(),
                    rule: format!("sources.deny = \"{pattern}\""),
                    reason: "denied by",
                });
            }
            if let Some(allow) = &file.sources.allow
                && !allow.iter().any(|p| matches(p))
            {
                return Err(SourceDenied {
                    file: label.clone(),
                    rule: "sources.allow".to_owned(),
                    reason: "not in the allow list of",
                });
            }
        }
        Ok(())
    }

    /// Whether a remote MCP server at `url` is on a host every `mcp_remote_hosts` list
    /// allows.
    pub fn check_remote_host(&self, url: &str) -> Result<(), HostRefused> {
        let host = host_of(url);
        for (label, file) in &self.files {
            if let Some(hosts) = &file.capabilities.mcp_remote_hosts
                && !hosts
                    .iter()
                    .any(|h| glob_match(&h.to_ascii_lowercase(), &host))
            {
                return Err(HostRefused {
                    file: label.clone(),
                    host,
                });
            }
        }
        Ok(())
    }
}

/// The host of a URL, lower-cased, without user, port or path (`""` if it has none).
fn host_of(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if let Some(bracketed) = host_port.strip_prefix('[') {
        bracketed.split(']').next().unwrap_or("")
    } else {
        host_port.split(':').next().unwrap_or("")
    };
    host.to_ascii_lowercase()
}

/// Refuses `file` (labelled `child`) where it is looser than `earlier` (`parent`).
fn loosens(
    child: &str,
    file: &PolicyFile,
    parent: &str,
    earlier: &PolicyFile,
) -> Result<(), PolicyError> {
    let error = |what: String, parent_says: String| PolicyError {
        child: child.to_owned(),
        parent: parent.to_owned(),
        what,
        parent_says,
    };
    for capability in Capability::ALL {
        if let (Some(mine), Some(theirs)) = (
            file.capabilities.get(capability),
            earlier.capabilities.get(capability),
        ) && mine < theirs
        {
            let key = capability.as_str();
            return Err(error(
                format!("sets {key} = \"{}\"", mine.as_str()),
                format!("sets it to \"{}\"", theirs.as_str()),
            ));
        }
    }
    if file.capabilities.hidden_unicode == Some(UnicodeLevel::Warn)
        && earlier.capabilities.hidden_unicode == Some(UnicodeLevel::Deny)
    {
        return Err(error(
            "sets hidden_unicode = \"warn\"".to_owned(),
            "sets it to \"deny\"".to_owned(),
        ));
    }
    for pattern in file.sources.allow.iter().flatten() {
        if let Some(denied) = earlier.sources.deny.iter().find(|d| glob_match(d, pattern)) {
            return Err(error(
                format!("allows the sources `{pattern}`"),
                format!("denies `{denied}`"),
            ));
        }
        if let Some(allowed) = &earlier.sources.allow
            && !allowed.iter().any(|a| glob_match(a, pattern))
        {
            return Err(error(
                format!("allows the sources `{pattern}`"),
                format!("allows only {}", quoted(allowed)),
            ));
        }
    }
    if let (Some(mine), Some(theirs)) = (
        &file.capabilities.mcp_remote_hosts,
        &earlier.capabilities.mcp_remote_hosts,
    ) && let Some(host) = mine
        .iter()
        .find(|h| !theirs.iter().any(|t| glob_match(t, h)))
    {
        return Err(error(
            format!("allows remote MCP servers on `{host}`"),
            format!("allows only {}", quoted(theirs)),
        ));
    }
    Ok(())
}

fn quoted(items: &[String]) -> String {
    items
        .iter()
        .map(|i| format!("`{i}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::governance::parse_policy;

    fn chain(files: &[(&str, &str)]) -> Result<Policy, PolicyError> {
        Policy::from_chain(
            files
                .iter()
                .map(|(label, text)| {
                    (
                        (*label).to_owned(),
                        parse_policy(text, label).expect("valid"),
                    )
                })
                .collect(),
        )
    }

    #[test]
    fn a_child_may_not_allow_what_a_parent_denies() {
        let e = chain(&[
            ("org.toml", "[capabilities]\nhooks = \"deny\"\n"),
            ("team.toml", "[capabilities]\nhooks = \"allow\"\n"),
        ])
        .expect_err("loosens");
        let text = e.to_string();
        assert!(
            text.contains("`team.toml` sets hooks = \"allow\""),
            "{text}"
        );
        assert!(text.contains("`org.toml` sets it to \"deny\""), "{text}");
        let e = chain(&[
            ("org.toml", "[capabilities]\nhidden_unicode = \"deny\"\n"),
            ("team.toml", "[capabilities]\nhidden_unicode = \"warn\"\n"),
        ])
        .expect_err("loosens");
        assert_eq!(
            (e.child.as_str(), e.parent.as_str()),
            ("team.toml", "org.toml")
        );
    }

    #[test]
    fn a_child_may_tighten_and_the_strictest_wins() {
        let policy = chain(&[
            (
                "org.toml",
                "[capabilities]\nhooks = \"approve\"\nmcp_stdio = \"approve\"\n",
            ),
            ("team.toml", "[capabilities]\nhooks = \"deny\"\n"),
        ])
        .expect("tightens");
        assert_eq!(
            policy.capability(Capability::Hooks),
            (Level::Deny, Some("team.toml"))
        );
        assert_eq!(
            policy.capability(Capability::McpStdio),
            (Level::Approve, Some("org.toml"))
        );
        assert_eq!(
            policy.capability(Capability::Executables),
            (Level::Allow, None)
        );
        assert_eq!(policy.hidden_unicode(), (UnicodeLevel::Deny, None));
        assert_eq!(Policy::default().hidden_unicode().0, UnicodeLevel::Deny);
    }

    #[test]
    fn sources_intersect_and_a_wider_allow_list_is_refused() {
        let e = chain(&[
            ("org.toml", "[sources]\nallow = [\"github:acme/*\"]\n"),
            ("team.toml", "[sources]\nallow = [\"github:other/*\"]\n"),
        ])
        .expect_err("wider");
        assert!(e.to_string().contains("allows only `github:acme/*`"), "{e}");
        let e = chain(&[
            ("org.toml", "[sources]\ndeny = [\"github:acme/x-*\"]\n"),
            (
                "team.toml",
                "[sources]\nallow = [\"github:acme/x-tools\"]\n",
            ),
        ])
        .expect_err("denied");
        assert!(e.to_string().contains("denies `github:acme/x-*`"), "{e}");
        let policy = chain(&[
            (
                "org.toml",
                "[sources]\nallow = [\"github:acme/*\", \"official\"]\n",
            ),
            (
                "team.toml",
                "[sources]\ndeny = [\"github:acme/experimental-*\"]\n",
            ),
        ])
        .expect("tightens");
        assert_eq!(policy.check_source("github:acme/tools", None), Ok(()));
        assert_eq!(
            policy.check_source("https://x.example/y.git", Some("official")),
            Ok(())
        );
        let denied = policy
            .check_source("github:acme/experimental-a", None)
            .expect_err("denied");
        assert_eq!(
            (denied.file.as_str(), denied.reason),
            ("team.toml", "denied by")
        );
        let outside = policy
            .check_source("github:evil/x", Some("other"))
            .expect_err("not allowed");
        assert_eq!(
            (outside.file.as_str(), outside.reason),
            ("org.toml", "not in the allow list of")
        );
    }

    #[test]
    fn remote_hosts() {
        let policy = chain(&[(
            "p.toml",
            "[capabilities]\nmcp_remote_hosts = [\"*.acme.dev\", \"mcp.example.com\"]\n",
        )])
        .expect("valid");
        assert!(policy.has_remote_hosts());
        assert_eq!(policy.check_remote_host("https://a.acme.dev/mcp"), Ok(()));
        assert_eq!(
            policy.check_remote_host("https://u:p@MCP.example.com:8443/x"),
            Ok(())
        );
        let refused = policy
            .check_remote_host("https://evil.dev/mcp")
            .expect_err("refused");
        assert_eq!(refused.host, "evil.dev");
        assert_eq!(host_of("http://[::1]:80/x"), "::1");
    }
}
