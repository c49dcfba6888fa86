//! An npm package of a payload's closure whose registry signature is refused: one that
//! does not verify (always), or, under `[payloads] require_registry_signatures`, one the
//! registry did not sign with a key the lock holds; and one whose recorded provenance is
//! not proven by the attestations its closure keeps (`payload/npm_provenance.rs`), which
//! is refused in the same shape.

/// A refused npm registry signature (or recorded provenance), naming the package and what
/// to do next.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("npm package `{package}` ({of}): {why}; {next}")]
pub struct SignatureRefused {
    /// `NAME@VERSION`.
    pub package: String,
    /// Whose closure it is in: ``in the closure of `fake-mcp` 1.1.0``.
    pub of: String,
    /// What is wrong.
    pub why: String,
    /// What to do next.
    pub next: String,
    /// The policy file that asks for signatures, when the policy refused it (an unsigned
    /// package); `None` for a signature that does not verify, which is always refused.
    pub policy: Option<String>,
}

impl From<SignatureRefused> for super::ResolveError {
    fn from(e: SignatureRefused) -> Self {
        Self::RegistrySignature(Box::new(e))
    }
}
