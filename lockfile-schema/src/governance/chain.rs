//! The effective policy of a chain of files, parents first: every file must let a plugin
//! through (the rules intersect), and a file that tries to loosen what it extends is an
//! error naming both.

use super::canon::{Canon, allow_matches, deny_matches, url_host};
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
    /// `denied by`, `not in the allow list of` or `refused by`.
    pub reason: &'static str,
    /// Why a source with no canonical form is refused (`refused by`): which source, and
    /// what in it could name another repository than it reads.
    pub why: Option<String>,
}

/// A remote MCP server's host that no `mcp_remote_hosts` entry matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostRefused {
    /// The policy file whose list it is not on.
    pub file: String,
    /// The host, as a WHATWG parser reads it (empty when the URL has none).
    pub host: String,
    /// Why the URL has no host berth matches (a backslash, a user or password, not a
    /// URL); `None` when it has one that no entry matches.
    pub why: Option<String>,
}

/// One `[sources]` pattern: as the file writes it (for messages) and in canonical form
/// (for matching).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Pattern {
    written: String,
    canonical: String,
}

/// A file's `[sources]`, canonical.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Patterns {
    allow: Option<Vec<Pattern>>,
    deny: Vec<Pattern>,
}

impl Patterns {
    fn of(file: &PolicyFile, canon: &Canon) -> Patterns {
        let pattern = |written: &String| Pattern {
            written: written.clone(),
            // `parse_policy` refuses a pattern with no canonical form; one built by hand
            // that has none is matched as written, which no canonical source equals.
            canonical: canon.source(written).unwrap_or_else(|_| written.clone()),
        };
        Patterns {
            allow: file
                .sources
                .allow
                .as_ref()
                .map(|a| a.iter().map(pattern).collect()),
            deny: file.sources.deny.iter().map(pattern).collect(),
        }
    }

    fn is_empty(&self) -> bool {
        self.allow.is_none() && self.deny.is_empty()
    }
}

/// The effective policy: the chain of files, parents first. [`Policy::default`] is no
/// policy file at all: every capability allowed, hidden Unicode denied.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    files: Vec<(String, PolicyFile)>,
    /// Each file's `[sources]`, canonical, in the order of `files`.
    patterns: Vec<Patterns>,
    canon: Canon,
}

impl Policy {
    /// Folds `files` (each with the label that names it, parents before the files that
    /// extend them) into one policy, refusing a file that loosens an earlier one. Sources
    /// and patterns are compared in `canon`'s form.
    pub fn from_chain(
        files: Vec<(String, PolicyFile)>,
        canon: Canon,
    ) -> Result<Policy, PolicyError> {
        let patterns: Vec<Patterns> = files.iter().map(|(_, f)| Patterns::of(f, &canon)).collect();
        for (i, (child, file)) in files.iter().enumerate() {
            for (j, (parent, earlier)) in files[..i].iter().enumerate() {
                loosens((child, file, &patterns[i]), (parent, earlier, &patterns[j]))?;
            }
        }
        Ok(Policy {
            files,
            patterns,
            canon,
        })
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

    /// Whether a plugin from `source` (as the lock writes it), picked from a marketplace
    /// whose locked source is `marketplace` (if it was), passes every file's `[sources]`.
    /// Both are put in canonical form first ([`Canon::source`]); a pattern matches either.
    /// A marketplace counts by its source alone: its name is the one a `plugins.toml`
    /// chose. A source with no canonical form is refused by the first file with a
    /// `[sources]` rule.
    pub fn check_source(
        &self,
        source: &str,
        marketplace: Option<&str>,
    ) -> Result<(), SourceDenied> {
        let Some(first) = self.patterns.iter().position(|p| !p.is_empty()) else {
            return Ok(());
        };
        let mut forms = Vec::with_capacity(2);
        for text in std::iter::once(source).chain(marketplace) {
            match self.canon.source(text) {
                Ok(form) => forms.push(form),
                Err(e) => {
                    return Err(SourceDenied {
                        file: self.files[first].0.clone(),
                        rule: if self.patterns[first].allow.is_some() {
                            "sources.allow".to_owned()
                        } else {
                            "sources.deny".to_owned()
                        },
                        reason: "refused by",
                        why: Some(format!("`{text}` {e}")),
                    });
                }
            }
        }
        for ((label, _), patterns) in self.files.iter().zip(&self.patterns) {
            if let Some(pattern) = patterns
                .deny
                .iter()
                .find(|p| forms.iter().any(|f| deny_matches(&p.canonical, f)))
            {
                return Err(SourceDenied {
                    file: label.clone(),
                    rule: format!("sources.deny = \"{}\"", pattern.written),
                    reason: "denied by",
                    why: None,
                });
            }
            if let Some(allow) = &patterns.allow
                && !allow
                    .iter()
                    .any(|p| forms.iter().any(|f| allow_matches(&p.canonical, f)))
            {
                return Err(SourceDenied {
                    file: label.clone(),
                    rule: "sources.allow".to_owned(),
                    reason: "not in the allow list of",
                    why: None,
                });
            }
        }
        Ok(())
    }

    /// Whether a remote MCP server at `url` is on a host every `mcp_remote_hosts` list
    /// allows. The host is the one a WHATWG parser connects to ([`url_host`]); a URL with
    /// none berth can trust (a backslash, a user or password, not a URL) is on no list.
    pub fn check_remote_host(&self, url: &str) -> Result<(), HostRefused> {
        let host = url_host(url);
        for (label, file) in &self.files {
            if let Some(hosts) = &file.capabilities.mcp_remote_hosts
                && !host
                    .as_ref()
                    .is_ok_and(|h| hosts.iter().any(|p| glob_match(&host_pattern(p), h)))
            {
                return Err(HostRefused {
                    file: label.clone(),
                    host: host.clone().unwrap_or_default(),
                    why: host.as_ref().err().map(ToString::to_string),
                });
            }
        }
        Ok(())
    }
}

/// An `mcp_remote_hosts` entry as hosts are matched: lower-case, without a final `.`.
fn host_pattern(pattern: &str) -> String {
    let lower = pattern.to_ascii_lowercase();
    lower.strip_suffix('.').unwrap_or(&lower).to_owned()
}

/// Refuses `file` (labelled `child`) where it is looser than `earlier` (`parent`).
fn loosens(
    (child, file, mine): (&str, &PolicyFile, &Patterns),
    (parent, earlier, theirs): (&str, &PolicyFile, &Patterns),
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
    // Patterns are compared in canonical form, as sources are: a child's allow pattern
    // is a text a parent's pattern must let through.
    for pattern in mine.allow.iter().flatten() {
        let written = &pattern.written;
        if let Some(denied) = theirs
            .deny
            .iter()
            .find(|d| deny_matches(&d.canonical, &pattern.canonical))
        {
            return Err(error(
                format!("allows the sources `{written}`"),
                format!("denies `{}`", denied.written),
            ));
        }
        if let Some(allowed) = &theirs.allow
            && !allowed
                .iter()
                .any(|a| allow_matches(&a.canonical, &pattern.canonical))
        {
            let allowed: Vec<String> = allowed.iter().map(|a| a.written.clone()).collect();
            return Err(error(
                format!("allows the sources `{written}`"),
                format!("allows only {}", quoted(&allowed)),
            ));
        }
    }
    if let (Some(mine), Some(theirs)) = (
        &file.capabilities.mcp_remote_hosts,
        &earlier.capabilities.mcp_remote_hosts,
    ) && let Some(host) = mine.iter().find(|h| {
        !theirs
            .iter()
            .any(|t| glob_match(&host_pattern(t), &host_pattern(h)))
    }) {
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
        chain_under("https://github.com", files)
    }

    fn chain_under(github_url: &str, files: &[(&str, &str)]) -> Result<Policy, PolicyError> {
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
            Canon::new(github_url),
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
                "[sources]\nallow = [\"github:acme/*\", \"github:anthropics/market\"]\n",
            ),
            (
                "team.toml",
                "[sources]\ndeny = [\"github:acme/experimental-*\"]\n",
            ),
        ])
        .expect("tightens");
        assert_eq!(policy.check_source("github:acme/tools", None), Ok(()));
        assert_eq!(
            policy.check_source("https://x.example/y.git", Some("github:Anthropics/market")),
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
            .check_source("github:evil/x", Some("./anthropics/market"))
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
            policy.check_remote_host("https://MCP.example.com:8443/x"),
            Ok(())
        );
        // A user or password in the URL is refused: it is how `evil@x.acme.dev` reads as
        // an allowed host to a naive eye.
        assert!(
            policy
                .check_remote_host("https://u:p@mcp.example.com/x")
                .is_err()
        );
        let refused = policy
            .check_remote_host("https://evil.dev/mcp")
            .expect_err("refused");
        assert_eq!(
            (refused.host.as_str(), refused.why.as_deref()),
            ("evil.dev", None)
        );
    }

    #[test]
    fn a_remote_host_is_the_one_a_whatwg_parser_connects_to() {
        let policy = chain(&[(
            "p.toml",
            "[capabilities]\nmcp_remote_hosts = [\"*.acme.dev\", \"::1\", \"Mcp.Example.com.\"]\n",
        )])
        .expect("valid");
        assert_eq!(policy.check_remote_host("http://[::1]:80/x"), Ok(()));
        assert_eq!(
            policy.check_remote_host("https://mcp.example.com./x"),
            Ok(())
        );
        // F7: WHATWG parsers read `\\` as `/`: the host is `evil.example`.
        let refused = policy
            .check_remote_host("https://evil.example\\.acme.dev/mcp")
            .expect_err("a backslash");
        assert!(refused.why.is_some_and(|w| w.contains("backslash")));
        for url in [
            "https://evil.example\\@x.acme.dev/",
            "https://evil.example@x.acme.dev/",
            "https://u:p@a.acme.dev/x",
            "a.acme.dev/mcp",
        ] {
            let refused = policy.check_remote_host(url).expect_err(url);
            assert!(refused.why.is_some(), "{url}");
        }
        // Without a host list, any URL is on no list to be refused from.
        assert_eq!(Policy::default().check_remote_host("not a url"), Ok(()));
    }

    #[test]
    fn sources_are_matched_in_canonical_form() {
        // F8: a deny catches every spelling of the repository; an allow is not satisfied
        // by a spelling whose path leaves the allowed folder.
        let policy = chain_under(
            "http://127.0.0.1:8080",
            &[(
                "p.toml",
                "[sources]\nallow = [\"http://127.0.0.1:8080/acme/*\", \"https://git.example.com/team/*\"]\ndeny = [\"github:acme/experimental-*\", \"https://git.example.com/team/old\"]\n",
            )],
        )
        .expect("valid");
        for denied in [
            "github:ACME/Experimental-x",
            "github:acme/experimental-x.git",
            "http://127.0.0.1:8080/acme/experimental-x.git",
            "https://github.com/Acme/Experimental-X/",
            "git@github.com:acme/experimental-x.git",
            "https://git.example.com/TEAM/Old.git",
            "ssh://git@git.example.com/team/old",
        ] {
            let e = policy.check_source(denied, None).expect_err(denied);
            assert_eq!(e.reason, "denied by", "{denied}");
        }
        for refused in [
            "http://127.0.0.1:8080/acme/../ACME/Experimental-x.git",
            "http://127.0.0.1:8080/acme/%2e%2e/ACME/Experimental-x.git",
            "https://git.example.com/team\\..\\x",
        ] {
            let e = policy.check_source(refused, None).expect_err(refused);
            assert_eq!((e.reason, e.file.as_str()), ("refused by", "p.toml"));
            assert!(e.why.is_some_and(|w| w.contains(refused)), "{refused}");
        }
        assert_eq!(policy.check_source("github:ACME/Tools", None), Ok(()));
        assert_eq!(
            policy.check_source("git+https://git.example.com/team/tools.git", None),
            Ok(())
        );
        // An allow pattern does not fold the case of a path on a server berth does not
        // know: `TEAM` may be another account there.
        let outside = policy
            .check_source("https://git.example.com/TEAM/tools", None)
            .expect_err("another path");
        assert_eq!(outside.reason, "not in the allow list of");
        // A marketplace counts by its locked source.
        assert_eq!(
            policy.check_source("https://x.example/y", Some("github:acme/market")),
            Ok(())
        );
        assert!(
            policy
                .check_source("https://x.example/y", Some("./official"))
                .is_err()
        );
        // No `[sources]` rule: nothing to match, nothing refused.
        assert_eq!(
            Policy::default().check_source("https://h/a/../b", None),
            Ok(())
        );
    }

    #[test]
    fn loosening_is_judged_in_canonical_form() {
        let e = chain(&[
            ("org.toml", "[sources]\ndeny = [\"github:acme/x-*\"]\n"),
            (
                "team.toml",
                "[sources]\nallow = [\"https://GitHub.com/ACME/X-Tools.git\"]\n",
            ),
        ])
        .expect_err("the URL of a denied repository");
        assert!(e.to_string().contains("denies `github:acme/x-*`"), "{e}");
        chain(&[
            ("org.toml", "[sources]\nallow = [\"github:acme/*\"]\n"),
            (
                "team.toml",
                "[sources]\nallow = [\"https://github.com/Acme/tools\"]\n",
            ),
        ])
        .expect("the URL of an allowed repository narrows the list");
        let e = chain(&[
            (
                "org.toml",
                "[capabilities]\nmcp_remote_hosts = [\"*.acme.dev\"]\n",
            ),
            (
                "team.toml",
                "[capabilities]\nmcp_remote_hosts = [\"EVIL.dev\"]\n",
            ),
        ])
        .expect_err("a wider host list");
        assert!(e.to_string().contains("`EVIL.dev`"), "{e}");
    }
}
