//! The effective policy of a chain of files, parents first: every file must let a plugin
//! through (the rules intersect), and a file that tries to loosen what it extends is an
//! error naming both.

use super::canon::{Canon, allow_matches, deny_matches, url_host};
use super::file::{Capability, Level, PolicyFile, SignerChange, ToolsRule, UnicodeLevel};
use super::glob_match;
use super::signers::Signers;

mod levels;

use levels::looser_levels;

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
    /// The allowed-signers files the chain names, as read by the caller.
    signers: Vec<Signers>,
    /// The allowed-signers files the chain's `[sources] require_signed` name, as read by
    /// the caller.
    source_signers: Vec<Signers>,
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
            signers: Vec::new(),
            source_signers: Vec::new(),
        })
    }

    /// The policy with the allowed-signers files its files name (`allowed_signers`), read
    /// by the caller, as files and URLs are.
    pub fn with_signers(mut self, signers: Vec<Signers>) -> Policy {
        self.signers = signers;
        self
    }

    /// The policy with every file it names (its own, those it extends, their allowed-signers
    /// files) labelled by `label` of its label in messages: a server names its policy to
    /// clients by file name only.
    pub fn relabelled(mut self, label: impl Fn(&str) -> String) -> Policy {
        for (name, _) in &mut self.files {
            *name = label(name);
        }
        for signers in self.signers.iter_mut().chain(&mut self.source_signers) {
            signers.policy = label(&signers.policy);
            signers.file = label(&signers.file);
        }
        self
    }

    /// Every allowed-signers file of the chain, parents first. A signature must be by a key
    /// each of them lists (they intersect, as `[sources]` allow lists do).
    pub fn signers(&self) -> &[Signers] {
        &self.signers
    }

    /// The policy with the allowed-signers files its `[sources] require_signed` name, read by
    /// the caller.
    pub fn with_source_signers(mut self, signers: Vec<Signers>) -> Policy {
        self.source_signers = signers;
        self
    }

    /// The allowed-signers files of every `[sources] require_signed` of the chain: a plugin's commit (or its tag) must be signed by a key each of them lists for
    /// the namespace `git`. Empty when no file requires signed sources.
    pub fn source_signers(&self) -> &[Signers] {
        &self.source_signers
    }

    /// Whether some file decides by where plugins come from: `[sources]` patterns or
    /// `require_signed`. A lock's pins then count only once checked against their content.
    pub fn decides_by_source(&self) -> bool {
        self.patterns.iter().any(|p| !p.is_empty()) || self.require_signed_sources().is_some()
    }

    /// The first file that sets `[sources] require_signed`, if any.
    pub fn require_signed_sources(&self) -> Option<&str> {
        self.files
            .iter()
            .find(|(_, f)| f.sources.require_signed.is_some())
            .map(|(label, _)| label.as_str())
    }

    /// The first file that sets `require_signed_approvals = true`, if any: then every
    /// approval the policy relies on must be signed.
    pub fn require_signed_approvals(&self) -> Option<&str> {
        self.files
            .iter()
            .find(|(_, f)| f.require_signed_approvals == Some(true))
            .map(|(label, _)| label.as_str())
    }

    /// The first file that sets `[payloads] require_registry_signatures = true`, if any:
    /// then every npm package of a locked closure must carry its registry's signature,
    /// verified with a key the lock holds.
    pub fn require_registry_signatures(&self) -> Option<&str> {
        self.files
            .iter()
            .find(|(_, f)| f.payloads.require_registry_signatures == Some(true))
            .map(|(label, _)| label.as_str())
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

    /// What a change of signer gets: the strictest file's `[sources] signer_change`, with
    /// that file; `approve` (and no file) when none says.
    pub fn signer_change(&self) -> (SignerChange, Option<&str>) {
        self.files
            .iter()
            .filter_map(|(label, f)| f.sources.signer_change.map(|rule| (rule, label.as_str())))
            .max_by_key(|(rule, _)| *rule)
            .map_or((SignerChange::Approve, None), |(rule, label)| {
                (rule, Some(label))
            })
    }

    /// What the chain says of MCP servers' offers: the strictest file's rule (`pinned`
    /// over `record`), with that file; `None` when no file says.
    pub fn tools(&self) -> Option<(ToolsRule, &str)> {
        self.files
            .iter()
            .filter_map(|(label, f)| f.capabilities.tools.map(|rule| (rule, label.as_str())))
            .max_by_key(|(rule, _)| *rule)
    }

    /// Every file's `exclude-newer`, parents first. Unlike a capability, a child may set a
    /// later cutoff than its parent without error: the earliest cutoff of the chain and
    /// the manifest is the one used, so the parent's still holds.
    pub fn release_age(&self) -> Vec<crate::release_age::Ask> {
        self.files
            .iter()
            .filter_map(|(label, file)| {
                file.release_age().map(|value| crate::release_age::Ask {
                    from: label.clone(),
                    value,
                })
            })
            .collect()
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
        let Some(forms) = self.canonical_forms(std::iter::once(source).chain(marketplace))? else {
            return Ok(());
        };
        for ((label, _), patterns) in self.files.iter().zip(&self.patterns) {
            if let Some(denied) = denied_by(label, patterns, &forms) {
                return Err(denied);
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

    /// Whether a marketplace at `source` (as a `plugins.toml` writes it) may be read: no
    /// file's `[sources] deny` matches it, and it has a canonical form when some file has
    /// `[sources]` rules. An allow list does not keep a marketplace from being read: a
    /// plugin picked from it may pass by its own source ([`Policy::check_source`]); one a
    /// deny pattern matches could pass nothing, so it is never fetched.
    pub fn check_marketplace_source(&self, source: &str) -> Result<(), SourceDenied> {
        let Some(forms) = self.canonical_forms(std::iter::once(source))? else {
            return Ok(());
        };
        for ((label, _), patterns) in self.files.iter().zip(&self.patterns) {
            if let Some(denied) = denied_by(label, patterns, &forms) {
                return Err(denied);
            }
        }
        Ok(())
    }

    /// The canonical form of each of `sources`; `None` when no file has `[sources]` rules
    /// (nothing to match), and refused by the first file with rules when one has none.
    fn canonical_forms<'s>(
        &self,
        sources: impl Iterator<Item = &'s str>,
    ) -> Result<Option<Vec<String>>, SourceDenied> {
        let Some(first) = self.patterns.iter().position(|p| !p.is_empty()) else {
            return Ok(None);
        };
        let mut forms = Vec::with_capacity(2);
        for text in sources {
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
        Ok(Some(forms))
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

/// The file `label`'s first deny pattern that matches one of `forms`, as a refusal.
fn denied_by(label: &str, patterns: &Patterns, forms: &[String]) -> Option<SourceDenied> {
    let pattern = patterns
        .deny
        .iter()
        .find(|p| forms.iter().any(|f| deny_matches(&p.canonical, f)))?;
    Some(SourceDenied {
        file: label.to_owned(),
        rule: format!("sources.deny = \"{}\"", pattern.written),
        reason: "denied by",
        why: None,
    })
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
    if let Some((what, parent_says)) = looser_levels(file, earlier) {
        return Err(error(what, parent_says));
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
mod tests;
