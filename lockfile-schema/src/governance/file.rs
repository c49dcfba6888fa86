//! One policy file, as written.

use serde::Deserialize;

use crate::diagnostic::Diagnostic;

/// What a capability rule says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Let it run.
    Allow,
    /// Let it run once `berth plugins approve` recorded the plugin's current surface.
    Approve,
    /// Never let it run.
    Deny,
}

impl Level {
    /// As the policy file writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Allow => "allow",
            Level::Approve => "approve",
            Level::Deny => "deny",
        }
    }
}

/// What `hidden_unicode` says of a critical finding (bidirectional controls, tag
/// characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UnicodeLevel {
    /// Report it and go on.
    Warn,
    /// Refuse the plugin.
    Deny,
}

impl UnicodeLevel {
    /// As the policy file writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            UnicodeLevel::Warn => "warn",
            UnicodeLevel::Deny => "deny",
        }
    }
}

/// What `tools` says of what MCP servers offer the model (their tools, prompts and
/// resources, observed by running the pinned code).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolsRule {
    /// What `lock` does by default (observes the allowed servers whose code is new or
    /// changed and records what they offer; a change shows in `plugins diff` and asks for
    /// a new approval), made a rule: `--no-observe` is refused, and every lock fills the
    /// records its servers lack, even when no code changed.
    Record,
    /// As `record`, and what runs the set (`sync --check-tools`, `berth serve`) asks each
    /// server again at the start and refuses one whose answer changed, or that was never
    /// observed.
    Pinned,
}

impl ToolsRule {
    /// As the policy file writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolsRule::Record => "record",
            ToolsRule::Pinned => "pinned",
        }
    }
}

/// What a plugin may do, each ruled by `[capabilities]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Capability {
    /// Hooks: commands (and prompts) run at lifecycle events.
    Hooks,
    /// MCP and LSP servers berth's harness starts as programs over stdio.
    McpStdio,
    /// MCP servers reached by URL.
    McpRemote,
    /// Files with an exec bit, and `bin/`.
    Executables,
}

impl Capability {
    /// Every capability.
    pub const ALL: [Capability; 4] = [
        Capability::Hooks,
        Capability::McpStdio,
        Capability::McpRemote,
        Capability::Executables,
    ];

    /// Its key in `[capabilities]`.
    pub fn as_str(self) -> &'static str {
        match self {
            Capability::Hooks => "hooks",
            Capability::McpStdio => "mcp_stdio",
            Capability::McpRemote => "mcp_remote",
            Capability::Executables => "executables",
        }
    }
}

/// One policy file: each setting `None` when the file does not say it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyFile {
    /// Parent policies: files (relative to this one's folder) or https URLs.
    #[serde(default)]
    pub extends: Vec<String>,
    /// `allowed_signers`: an OpenSSH allowed-signers file (relative to this one's folder,
    /// or to its URL), the keys whose signatures on approvals this policy trusts.
    pub allowed_signers: Option<String>,
    /// `require_signed_approvals`: an approval this policy relies on must be signed by a
    /// key an `allowed_signers` file lists.
    pub require_signed_approvals: Option<bool>,
    /// `[sources]`.
    #[serde(default)]
    pub sources: Sources,
    /// `[capabilities]`.
    #[serde(default)]
    pub capabilities: Capabilities,
    /// `[payloads]`.
    #[serde(default)]
    pub payloads: Payloads,
    /// `exclude-newer`: releases younger than this are not locked; the earliest cutoff of
    /// the chain and the manifest wins.
    #[serde(rename = "exclude-newer", default)]
    pub exclude_newer: Option<String>,
}

impl PolicyFile {
    /// Its `exclude-newer`, read (`parse_policy` refused a value that does not read).
    pub fn release_age(&self) -> Option<crate::release_age::ExcludeNewer> {
        crate::release_age::ExcludeNewer::parse(self.exclude_newer.as_deref()?).ok()
    }
}

/// `[sources]`: patterns over a plugin's source and its marketplace's name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sources {
    /// Only these (when given).
    pub allow: Option<Vec<String>>,
    /// Never these.
    #[serde(default)]
    pub deny: Vec<String>,
    /// `require_signed`: an OpenSSH allowed-signers file (relative to this one's folder, or
    /// to its URL). Every plugin must be locked from a git commit that carries an SSH
    /// signature (namespace `git`) by a key the file lists, or from an annotated tag of it
    /// that does.
    pub require_signed: Option<String>,
    /// `signer_change`: what a lock whose pin moved to a commit (or tag) another key
    /// signed, or none did, gets, once the plugin was seen signed.
    pub signer_change: Option<SignerChange>,
}

/// What `[sources] signer_change` says of a plugin whose signer changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SignerChange {
    /// Say so and go on.
    Warn,
    /// Run it once `berth plugins approve` recorded the new signer (the default).
    Approve,
    /// Refuse the lock.
    Deny,
}

impl SignerChange {
    /// As the policy file writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            SignerChange::Warn => "warn",
            SignerChange::Approve => "approve",
            SignerChange::Deny => "deny",
        }
    }
}

/// `[payloads]`: what the packages runner lines start (`npx`, `uvx`) must be.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Payloads {
    /// `require_registry_signatures`: every npm package of a locked closure must carry its
    /// registry's signature, verified with a registry key the lock holds.
    pub require_registry_signatures: Option<bool>,
}

/// `[capabilities]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Capabilities {
    /// `hooks`.
    pub hooks: Option<Level>,
    /// `mcp_stdio`.
    pub mcp_stdio: Option<Level>,
    /// `mcp_remote`.
    pub mcp_remote: Option<Level>,
    /// `mcp_remote_hosts`: when given, a remote MCP server's host must match one.
    pub mcp_remote_hosts: Option<Vec<String>>,
    /// `executables`.
    pub executables: Option<Level>,
    /// `hidden_unicode`.
    pub hidden_unicode: Option<UnicodeLevel>,
    /// `tools`: whether what MCP servers offer the model is recorded, and re-checked.
    pub tools: Option<ToolsRule>,
}

impl Capabilities {
    /// What this file says of `capability`.
    pub fn get(&self, capability: Capability) -> Option<Level> {
        match capability {
            Capability::Hooks => self.hooks,
            Capability::McpStdio => self.mcp_stdio,
            Capability::McpRemote => self.mcp_remote,
            Capability::Executables => self.executables,
        }
    }
}

/// Parses one policy file; `label` names it in messages. A `[sources]` pattern that no
/// source could match in canonical form (a bare marketplace name, a URL with `..` or a
/// backslash) is an error at its line, so a `deny` that means nothing is never silent.
pub fn parse_policy(text: &str, label: &str) -> Result<PolicyFile, Diagnostic> {
    let file: PolicyFile = toml::from_str(text).map_err(|e| {
        let offset = e.span().map_or(0, |s| s.start);
        Diagnostic::at(
            label,
            text,
            offset,
            format!(
                "not a berth policy: {} (see docs/governance.md for its keys)",
                e.message().trim_end()
            ),
        )
    })?;
    if let Some(value) = &file.exclude_newer
        && let Err(why) = crate::release_age::ExcludeNewer::parse(value)
    {
        // The key's own line is where it is.
        let offset = text.find("exclude-newer").unwrap_or(0);
        return Err(Diagnostic::at(
            label,
            text,
            offset,
            format!("`exclude-newer`: {why}; see docs/governance.md"),
        ));
    }
    let (allow, deny) = (&file.sources.allow, &file.sources.deny);
    for (key, pattern) in allow
        .iter()
        .flatten()
        .map(|p| ("allow", p))
        .chain(deny.iter().map(|p| ("deny", p)))
    {
        if let Some(problem) = super::canon::pattern_problem(pattern) {
            // The pattern's own text, quoted as TOML writes a plain string, is where it is.
            let offset = text.find(&format!("\"{pattern}\"")).unwrap_or(0);
            return Err(Diagnostic::at(
                label,
                text,
                offset,
                format!("`sources.{key}`: {problem}; see docs/governance.md"),
            ));
        }
    }
    Ok(file)
}

/// The parents `file` extends, as written.
pub fn extends_of(file: &PolicyFile) -> &[String] {
    &file.extends
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_file_parses() {
        let file = parse_policy(
            r#"
extends = ["../org/berth-policy.toml"]
allowed_signers = "allowed_signers"
require_signed_approvals = true
[sources]
allow = ["github:acme/*", "github:anthropics/claude-plugins-official"]
deny = ["github:acme/experimental-*"]
require_signed = "git_signers"
[capabilities]
hooks = "approve"
mcp_stdio = "approve"
mcp_remote = "allow"
mcp_remote_hosts = ["*.acme.dev"]
executables = "deny"
hidden_unicode = "warn"
[payloads]
require_registry_signatures = true
"#,
            "p.toml",
        )
        .expect("valid");
        assert_eq!(file.payloads.require_registry_signatures, Some(true));
        assert_eq!(file.extends, ["../org/berth-policy.toml"]);
        assert_eq!(file.allowed_signers.as_deref(), Some("allowed_signers"));
        assert_eq!(file.require_signed_approvals, Some(true));
        assert_eq!(file.sources.deny, ["github:acme/experimental-*"]);
        assert_eq!(file.sources.require_signed.as_deref(), Some("git_signers"));
        assert_eq!(
            file.capabilities.get(Capability::Hooks),
            Some(Level::Approve)
        );
        assert_eq!(
            file.capabilities.get(Capability::Executables),
            Some(Level::Deny)
        );
        assert_eq!(file.capabilities.hidden_unicode, Some(UnicodeLevel::Warn));
    }

    #[test]
    fn exclude_newer_is_read_and_a_bad_one_names_its_line() {
        let file = parse_policy("exclude-newer = \"14 days\"\n", "p.toml").expect("valid");
        assert!(matches!(
            file.release_age(),
            Some(crate::release_age::ExcludeNewer::Span {
                seconds: 1_209_600,
                ..
            })
        ));
        let e =
            parse_policy("[capabilities]\nhooks = \"allow\"\n", "p.toml").map(|f| f.release_age());
        assert_eq!(e, Ok(None));
        let e = parse_policy("\nexclude-newer = \"next week\"\n", "p.toml").expect_err("bad");
        assert_eq!(e.line, 2, "{e}");
        assert!(e.message.contains("`next week` is not"), "{e}");
    }

    #[test]
    fn an_unknown_key_names_its_line() {
        let e = parse_policy(
            "[capabilities]\nhooks = \"allow\"\nhook = \"deny\"\n",
            "p.toml",
        )
        .expect_err("unknown key");
        assert_eq!((e.file.as_str(), e.line), ("p.toml", 3), "{e}");
        assert!(e.message.contains("hook"), "{e}");
        let e =
            parse_policy("[capabilities]\nhooks = \"maybe\"\n", "p.toml").expect_err("bad level");
        assert_eq!(e.line, 2, "{e}");
    }

    #[test]
    fn a_pattern_no_source_can_match_names_its_line() {
        let e = parse_policy(
            "[sources]\nallow = [\n  \"github:acme/*\",\n  \"official\",\n]\n",
            "p.toml",
        )
        .expect_err("a marketplace alias");
        assert_eq!((e.line, e.column), (4, 3), "{e}");
        assert!(e.message.contains("`official` is not a source"), "{e}");
        let e = parse_policy(
            "[sources]\ndeny = [\"https://h.example/acme/%2e%2e/x\"]\n",
            "p.toml",
        )
        .expect_err("dot segments");
        assert!(e.message.starts_with("`sources.deny`: the pattern"), "{e}");
    }
}
