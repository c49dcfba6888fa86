//! What may run: the policy file `berth-policy.toml` (one file, and the effective policy of
//! a file and everything it extends) and the approvals file `plugins.approvals.toml`.
//!
//! `file` parses one policy file; `canon` puts sources, patterns and hosts in the one form
//! they are matched in; `chain` folds a chain of files, parents first, into the effective
//! policy and refuses a child that loosens a parent; `approvals` is the approvals file;
//! `signers` is an OpenSSH allowed-signers file, the keys a policy trusts to sign
//! approvals (and, under `[sources] require_signed`, git commits and tags). Reading files and URLs is the caller's (the resolver's `load_policy`).

mod approvals;
mod canon;
mod chain;
mod file;
mod signers;

pub use approvals::{
    APPROVALS_VERSION, Approval, ApprovalSignature, Approvals, SIGNED_PAYLOAD_VERSION, is_armored,
    parse_approvals, principal_of,
};
pub use canon::{Canon, NotCanonical, url_host};
pub use chain::{HostRefused, Policy, PolicyError, SourceDenied};
pub use file::{
    Capability, Level, PolicyFile, SignerChange, ToolsRule, UnicodeLevel, extends_of, parse_policy,
};
pub use signers::{
    AllowedSigners, GIT_NAMESPACE, MAX_PRINCIPAL_BYTES, SIGNATURE_NAMESPACE, SignerEntry, Signers,
    parse_allowed_signers, utc_time,
};

/// The policy file's name, next to the manifest.
pub const POLICY_FILE: &str = "berth-policy.toml";

/// `*` matches any run of characters (`/` included); everything else is literal.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !text.starts_with(first) || text.len() < first.len() + last.len() || !text.ends_with(last) {
        return false;
    }
    let mut rest = &text[first.len()..text.len() - last.len()];
    for middle in &parts[1..parts.len() - 1] {
        match rest.find(middle) {
            Some(i) => rest = &rest[i + middle.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn globs() {
        assert!(glob_match("github:acme/*", "github:acme/tools"));
        assert!(glob_match("github:acme/*", "github:acme/a/b"));
        assert!(!glob_match("github:acme/*", "github:acmex/tools"));
        assert!(glob_match("*.acme.dev", "mcp.acme.dev"));
        assert!(!glob_match("*.acme.dev", "acme.dev"));
        assert!(glob_match("a*b*c", "a-b-c"));
        assert!(!glob_match("a*b*c", "a-c-b"));
        assert!(glob_match("official", "official"));
        assert!(!glob_match("official", "official2"));
        assert!(glob_match("*", ""));
    }
}
