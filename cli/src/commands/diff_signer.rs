//! A change of who signed a plugin's source, as `plugins diff` shows it: a change that
//! runs, whichever way it goes (signed to unsigned, one key to another), since the
//! approval of what a plugin runs trusted its signer too.

use berth_lockfile_schema::{LockedPlugin, SourceSignature};
use serde::Serialize;

/// Who signed the old and the new pin, when both locks record it and the signer differs.
#[derive(Debug, Serialize)]
pub struct SignerDiff {
    /// The old pin's signature record.
    pub from: SourceSignature,
    /// The new pin's.
    pub to: SourceSignature,
    /// Whether it changes hands: the old pin was signed, and the new one is unsigned or
    /// signed by another key (unsigned to signed does not).
    pub changes_hands: bool,
}

impl SignerDiff {
    /// The change of signer between `old` and `new`, if both record one and they differ.
    pub fn between(old: Option<&LockedPlugin>, new: Option<&LockedPlugin>) -> Option<Self> {
        let from = old?.signature.as_ref()?;
        let to = new?.signature.as_ref()?;
        (from.signer() != to.signer()).then(|| SignerDiff {
            changes_hands: from.changes_hands(to),
            from: SourceSignature {
                was: None,
                ..from.clone()
            },
            to: SourceSignature {
                was: None,
                ..to.clone()
            },
        })
    }

    /// `signed by ssh key SHA256:abc (alice@acme) -> unsigned`.
    pub fn text(&self) -> String {
        format!(
            "{} -> {}",
            self.from.describe_for_review(),
            self.to.describe_for_review()
        )
    }
}
