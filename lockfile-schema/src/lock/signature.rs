//! Who signed a locked git plugin: the `signature` of a `[[plugin]]` entry (docs/spec.md
//! section 2, docs/governance.md "Who signed it"). Recorded for every git plugin a lock
//! resolves: the annotated tag's signature when the plugin's ref names a signed tag, else
//! the commit's, else `kind = "none"`.

use std::fmt::Write as _;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::writer::toml_string;

/// The kind of a signature, as git tells them apart by their first line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SignatureKind {
    /// Neither the commit nor the tag its ref names carries a signature.
    None,
    /// An SSH signature (`gpg.format=ssh`): verified by berth.
    Ssh,
    /// An OpenPGP signature: its issuer recorded as claimed, not verified.
    Openpgp,
    /// An X.509 (S/MIME, gitsign) signature: its certificate recorded as claimed.
    X509,
}

impl SignatureKind {
    /// As the lock writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Ssh => "ssh",
            Self::Openpgp => "openpgp",
            Self::X509 => "x509",
        }
    }
}

/// Which object carries the recorded signature.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SignedObject {
    /// The locked commit (its `gpgsig` header).
    Commit,
    /// The annotated tag the plugin's ref names, of the locked commit.
    Tag,
}

/// Who signed a locked git plugin's commit or tag.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SourceSignature {
    /// What kind of signature, `none` when there is none.
    pub kind: SignatureKind,
    /// Which object carries it (absent for `none`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<SignedObject>,
    /// The key: an SSH key's `SHA256:` fingerprint; an OpenPGP issuer's fingerprint (hex),
    /// or `keyid:` and its 16 hex digits when the signature names no fingerprint; an X.509
    /// signing certificate's `SHA256:` fingerprint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub key: Option<String>,
    /// The principal an allowed-signers file of the policy lists for the SSH key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub principal: Option<String>,
    /// The identity an X.509 certificate names (its e-mail or URI), as claimed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub identity: Option<String>,
    /// Whether berth verified the signature over the object with the key (SSH); `false`
    /// for what is only claimed (OpenPGP, X.509).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub verified: bool,
    /// The signer the lock recorded before the pin moved to a commit another signed (or
    /// none did), while that change waits for an approval (`[sources] signer_change`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub was: Option<String>,
}

impl SourceSignature {
    /// An unsigned commit (and tag).
    pub fn none() -> Self {
        Self {
            kind: SignatureKind::None,
            object: None,
            key: None,
            principal: None,
            identity: None,
            verified: false,
            was: None,
        }
    }

    /// Who signed, as compared across locks: the key (an X.509 certificate's identity,
    /// which outlives its short-lived certificates); `None` when unsigned.
    pub fn signer(&self) -> Option<String> {
        match self.kind {
            SignatureKind::None => None,
            SignatureKind::X509 => self
                .identity
                .clone()
                .or_else(|| self.key.clone())
                .map(|who| format!("x509 {who}")),
            kind => Some(format!(
                "{} {}",
                kind.as_str(),
                self.key.as_deref().unwrap_or("?")
            )),
        }
    }

    /// [`Self::signer`], `none` when unsigned: what an approval records of it.
    pub fn signer_id(&self) -> String {
        self.signer().unwrap_or_else(|| "none".to_owned())
    }

    /// Whether moving from `self` to `new` changes hands: `self` was signed, and `new` is
    /// unsigned or signed by another key.
    pub fn changes_hands(&self, new: &Self) -> bool {
        self.kind != SignatureKind::None && self.signer() != new.signer()
    }

    /// As people read it: `signed by ssh key SHA256:abc (alice@acme)`, `unsigned`,
    /// `signed by OpenPGP key 1234… (claimed, not verified)`.
    pub fn describe(&self) -> String {
        self.described(false)
    }

    /// [`Self::describe`] for a reviewer: an SSH key no allowed-signers file of the policy
    /// lists (no `principal`) is said to be unknown.
    pub fn describe_for_review(&self) -> String {
        self.described(true)
    }

    fn described(&self, unlisted_is_unknown: bool) -> String {
        let key = self.key.as_deref().unwrap_or("?");
        let on = match self.object {
            Some(SignedObject::Tag) => " (on its tag)",
            _ => "",
        };
        match self.kind {
            SignatureKind::None => "unsigned".to_owned(),
            SignatureKind::Ssh => {
                let who = self
                    .principal
                    .as_deref()
                    .map_or_else(String::new, |p| format!(" ({p})"));
                let checked = if self.verified { "" } else { ", not verified" };
                let unknown = if unlisted_is_unknown && who.is_empty() {
                    "an unknown "
                } else {
                    ""
                };
                format!("signed by {unknown}ssh key {key}{who}{on}{checked}")
            }
            SignatureKind::Openpgp => {
                format!("signed by OpenPGP key {key}{on} (claimed, not verified)")
            }
            SignatureKind::X509 => {
                let who = self.identity.as_deref().unwrap_or(key);
                format!("signed by an X.509 certificate for {who}{on} (claimed, not verified)")
            }
        }
    }

    /// The inline table the lock writes: `signature = { kind = "ssh", … }`.
    pub(crate) fn write_toml(&self, out: &mut String) {
        let mut fields = vec![format!("kind = {}", toml_string(self.kind.as_str()))];
        if let Some(object) = self.object {
            let object = match object {
                SignedObject::Commit => "commit",
                SignedObject::Tag => "tag",
            };
            fields.push(format!("object = {}", toml_string(object)));
        }
        for (name, value) in [
            ("key", &self.key),
            ("principal", &self.principal),
            ("identity", &self.identity),
        ] {
            if let Some(value) = value {
                fields.push(format!("{name} = {}", toml_string(value)));
            }
        }
        if self.verified {
            fields.push("verified = true".to_owned());
        }
        if let Some(was) = &self.was {
            fields.push(format!("was = {}", toml_string(was)));
        }
        let _ = writeln!(out, "signature = {{ {} }}", fields.join(", "));
    }
}
