//! Signed approvals: an approval's SSH signature (`ssh-keygen -Y sign -n berth-approval`,
//! the SSHSIG format) checked offline, natively, against the plugin as locked and the
//! policy's allowed-signers files. A signature holds for one payload (plugin, source,
//! surface digest, capabilities, approver, signer, time), so an edited record, a signature
//! copied onto another plugin and a plugin that moved all fail the same check; and the key
//! must be listed for both the signer and the principal the approver (`by`) names, so a
//! trusted key cannot record someone else's approval.

use berth_lockfile_schema::governance::{
    Approval, Capability, Policy, SIGNATURE_NAMESPACE, SignerEntry, Signers, principal_of,
};
use ssh_key::public::KeyData;
use ssh_key::{HashAlg, PrivateKey, PublicKey, SshSig};

use super::shape::{APPROVAL_DIGEST_VERSION, Surface};

/// The kinds of key berth verifies signatures of, as messages name them.
pub(super) const VERIFIABLE: &str = "ed25519, RSA and ECDSA (NIST P-256, P-384, P-521)";

/// Whether berth verifies signatures made with `key`: ed25519, RSA and ECDSA, and the
/// FIDO (`sk-`) forms of ed25519 and P-256; not DSA, which OpenSSH itself has dropped.
pub(super) fn verifiable(key: &KeyData) -> bool {
    matches!(
        key,
        KeyData::Ed25519(_)
            | KeyData::SkEd25519(_)
            | KeyData::Rsa(_)
            | KeyData::Ecdsa(_)
            | KeyData::SkEcdsaSha2NistP256(_)
    )
}

/// What an approval's signature is checked against: the text it must be made over, and
/// the text berth signed before the signer was in the payload (version 1), to tell a
/// record signed that way from an edited one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalPayload {
    text: String,
    v1: String,
}

impl ApprovalPayload {
    /// The text signed.
    pub fn text(&self) -> &str {
        &self.text
    }
}

/// The text an approval of `surface`, for the plugin locked from `source`, is signed
/// over, by the `signer` its record names: [`Approval::signed_payload`] with the digest's
/// version and the capabilities the surface has.
pub fn approval_payload(approval: &Approval, source: &str, surface: &Surface) -> ApprovalPayload {
    let signer = approval
        .signature
        .as_ref()
        .map_or("", |s| s.signer.as_str());
    payload_signed_as(approval, signer, source, surface)
}

/// [`approval_payload`] for a signature about to be made as `signer`.
pub fn payload_signed_as(
    approval: &Approval,
    signer: &str,
    source: &str,
    surface: &Surface,
) -> ApprovalPayload {
    let capabilities: Vec<&str> = Capability::ALL
        .iter()
        .filter(|c| surface.has(**c))
        .map(|c| c.as_str())
        .collect();
    ApprovalPayload {
        text: approval.signed_payload(signer, source, APPROVAL_DIGEST_VERSION, &capabilities),
        v1: approval.signed_payload_v1(source, APPROVAL_DIGEST_VERSION, &capabilities),
    }
}

/// Why an approval the policy relies on does not count: the rule and the policy file
/// that refuse it, and what is wrong with it, naming the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignatureRefused {
    /// The rule, as the policy file writes it (`allowed_signers = "keys"`).
    pub rule: String,
    /// The policy file (or berth's defaults).
    pub file: String,
    /// What is wrong, and what to do next.
    pub detail: String,
    /// Whether the approval is simply unsigned (signing it is what is missing), rather
    /// than signed wrongly.
    pub unsigned: bool,
}

/// A public key that signs (or signed) approvals.
#[derive(Debug, Clone)]
pub struct SigningKey {
    key: KeyData,
}

impl SigningKey {
    /// The key an armored SSH signature (`-----BEGIN SSH SIGNATURE-----`) was made with.
    pub fn of_signature(armored: &str) -> Result<SigningKey, String> {
        read_signature(armored).map(|signature| SigningKey {
            key: signature.public_key().clone(),
        })
    }

    /// A public key as OpenSSH writes it (`ssh-ed25519 AAAA… comment`).
    pub fn from_openssh(line: &str) -> Result<SigningKey, String> {
        PublicKey::from_openssh(line.trim())
            .map(|public| SigningKey {
                key: public.key_data().clone(),
            })
            .map_err(|e| format!("not an SSH public key ({e})"))
    }

    /// The public key of a key file's text: a public key, or an OpenSSH private key
    /// (`-----BEGIN OPENSSH PRIVATE KEY-----`), whose public half is readable without its
    /// passphrase.
    pub fn of_key_file(text: &str) -> Result<SigningKey, String> {
        if text
            .trim_start()
            .starts_with("-----BEGIN OPENSSH PRIVATE KEY-----")
        {
            return PrivateKey::from_openssh(text.trim())
                .map(|private| SigningKey {
                    key: private.public_key().key_data().clone(),
                })
                .map_err(|e| format!("not a readable OpenSSH private key ({e})"));
        }
        Self::from_openssh(text)
    }

    /// `ssh-ed25519 key SHA256:…`, as `ssh-keygen -l` names a key.
    pub fn describe(&self) -> String {
        describe(&self.key)
    }
}

pub(super) fn read_signature(armored: &str) -> Result<SshSig, String> {
    SshSig::from_pem(armored.trim()).map_err(|e| format!("not a readable SSH signature ({e})"))
}

pub(super) fn describe(key: &KeyData) -> String {
    format!(
        "{} key {}",
        key.algorithm(),
        key.fingerprint(HashAlg::Sha256)
    )
}

/// Checks the approval of a plugin that `policy` relies on, whose signed text is
/// `payload` ([`approval_payload`]): an unsigned one is refused when the policy requires
/// signatures; a signed one must be a signature in berth's namespace over `payload` by an
/// ed25519, RSA or ECDSA key that every allowed-signers file of the policy lists (on one
/// line) for the record's `signer` and for the principal its `by` names, valid at the
/// approval's time. Without allowed-signers files a signature is still checked against
/// the record, so an edited one is never trusted.
pub fn check_signature(
    policy: &Policy,
    approval: &Approval,
    payload: &ApprovalPayload,
) -> Result<(), SignatureRefused> {
    let name = &approval.plugin;
    let again = format!(
        "review it (`berth plugins diff`), then run `berth plugins approve {name} --sign KEY`"
    );
    let Some(signature) = &approval.signature else {
        return match policy.require_signed_approvals() {
            Some(file) => Err(SignatureRefused {
                rule: "require_signed_approvals = true".to_owned(),
                file: file.to_owned(),
                detail: format!(
                    "its approval by {} on {} is not signed; {again}",
                    approval.by, approval.at
                ),
                unsigned: true,
            }),
            None => Ok(()),
        };
    };
    let refuse = |detail: String| {
        let (rule, file) = signature_rule(policy);
        SignatureRefused {
            rule,
            file,
            detail,
            unsigned: false,
        }
    };
    let sig = read_signature(&signature.armored)
        .map_err(|why| refuse(format!("the signature of its approval is {why}; {again}")))?;
    let described = describe(sig.public_key());
    if sig.namespace() != SIGNATURE_NAMESPACE {
        return Err(refuse(format!(
            "the signature of its approval (by {described}) was made for `{}`, not `{SIGNATURE_NAMESPACE}`; {again}",
            sig.namespace()
        )));
    }
    if !verifiable(sig.public_key()) {
        return Err(refuse(format!(
            "its approval is signed by {described}; berth verifies {VERIFIABLE} keys only: {again}"
        )));
    }
    let public = PublicKey::from(sig.public_key().clone());
    let signed = |text: &str| {
        public
            .verify(SIGNATURE_NAMESPACE, text.as_bytes(), &sig)
            .is_ok()
    };
    if !signed(&payload.text) {
        return Err(refuse(if signed(&payload.v1) {
            format!(
                "its approval (by {described}) was signed in berth's earlier form, which does not cover its `signer`; sign it again: `berth plugins approve {name} --sign KEY`"
            )
        } else {
            format!(
                "the signature of its approval (by {described}) does not match the record: the record was edited or copied from another plugin, or the plugin's source or surface changed since it was signed; {again}"
            )
        }));
    }
    let whom = Whom {
        signer: &signature.signer,
        by: &approval.by,
    };
    for signers in policy.signers() {
        if let Err(why) = listed(signers, sig.public_key(), whom, &approval.at) {
            return Err(SignatureRefused {
                rule: format!("allowed_signers = \"{}\"", signers.written),
                file: signers.policy.clone(),
                detail: format!("its approval is signed by {described}, {why}; {again}"),
                unsigned: false,
            });
        }
    }
    Ok(())
}

/// The rule a wrong signature breaks, and its file: the first `allowed_signers`, else
/// `require_signed_approvals`, else berth's own check of a signed record.
fn signature_rule(policy: &Policy) -> (String, String) {
    match (policy.signers().first(), policy.require_signed_approvals()) {
        (Some(s), _) => (
            format!("allowed_signers = \"{}\"", s.written),
            s.policy.clone(),
        ),
        (None, Some(file)) => (
            "require_signed_approvals = true".to_owned(),
            file.to_owned(),
        ),
        (None, None) => (
            "a signed approval is verified".to_owned(),
            "berth's defaults".to_owned(),
        ),
    }
}

/// Whom a signature speaks for: the record's `signer`, and its approver, whose principal
/// ([`Approval::by_principal`]) the key must be listed for too.
#[derive(Clone, Copy)]
struct Whom<'a> {
    signer: &'a str,
    by: &'a str,
}

/// Whether `signers` lists `key`, on one line, for `whom`'s signer and approver, in
/// berth's namespace, at `at`; if not, why, naming the file.
fn listed(signers: &Signers, key: &KeyData, whom: Whom<'_>, at: &str) -> Result<(), String> {
    let file = &signers.file;
    let by = principal_of(whom.by);
    let mut lines = signers.list.entries().iter().filter(|e| is_key(e, key));
    let Some(first) = lines.clone().next() else {
        return Err(format!("which `{file}` does not list"));
    };
    if lines.any(|e| {
        e.names(whom.signer)
            && e.names(by)
            && e.allows_namespace(SIGNATURE_NAMESPACE)
            && e.valid_at(at)
    }) {
        return Ok(());
    }
    let (line, principals) = (first.line, &first.principals);
    Err(if !first.names(by) {
        format!(
            "which `{file}` lists (line {line}) for `{principals}`, not for `{by}`, whom the approval's `by` (`{}`) names",
            whom.by
        )
    } else if !first.names(whom.signer) {
        format!(
            "which `{file}` lists (line {line}) for `{principals}`, not for `{}`, the approval's `signer`",
            whom.signer
        )
    } else if !first.allows_namespace(SIGNATURE_NAMESPACE) {
        format!(
            "which `{file}` (line {line}) lets sign only in `{}`, not in `{SIGNATURE_NAMESPACE}`",
            first.namespaces.as_deref().unwrap_or_default()
        )
    } else {
        format!(
            "which `{file}` (line {line}) does not hold valid at {at}, when the approval says it was signed"
        )
    })
}

/// Whether `entry` is a plain key line (not a certificate authority) for `key`.
pub(super) fn is_key(entry: &SignerEntry, key: &KeyData) -> bool {
    !entry.cert_authority
        && PublicKey::from_bytes(&entry.key_blob).is_ok_and(|listed| listed.key_data() == key)
}

/// The principal an approval by `by` (`Name <email>`) made at `at` is signed as: the one
/// `by` names ([`principal_of`]), when every allowed-signers file of the policy lists
/// `key` for it, in berth's namespace, valid at `at`. Else why not, for the first file
/// that does not (`None` when it does not list the key at all).
pub fn signer_for(
    policy: &Policy,
    key: &SigningKey,
    by: &str,
    at: &str,
) -> Result<String, Option<NotListed>> {
    let principal = principal_of(by);
    let whom = Whom {
        signer: principal,
        by,
    };
    for signers in policy.signers() {
        if let Err(why) = listed(signers, &key.key, whom, at) {
            let lists_key = signers.list.entries().iter().any(|e| is_key(e, &key.key));
            return Err(lists_key.then(|| NotListed {
                file: signers.file.clone(),
                policy: signers.policy.clone(),
                why,
            }));
        }
    }
    Ok(principal.to_owned())
}

/// Why an allowed-signers file that lists a key does not let it sign an approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotListed {
    /// The allowed-signers file, as a label.
    pub file: String,
    /// The policy file that names it.
    pub policy: String,
    /// `which `FILE` lists (line 3) for …, not for …`.
    pub why: String,
}

#[cfg(test)]
mod tests;
