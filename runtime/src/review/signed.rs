//! Signed approvals: an approval's SSH signature (`ssh-keygen -Y sign -n berth-approval`,
//! the SSHSIG format) checked offline, natively, against the plugin as locked and the
//! policy's allowed-signers files. A signature holds for one payload (plugin, source,
//! surface digest, capabilities, approver, time), so an edited record, a signature copied
//! onto another plugin and a plugin that moved all fail the same check.

use berth_lockfile_schema::governance::{
    Approval, Capability, Policy, SIGNATURE_NAMESPACE, SignerEntry, Signers,
};
use ssh_key::public::KeyData;
use ssh_key::{HashAlg, PublicKey, SshSig};

use super::shape::{APPROVAL_DIGEST_VERSION, Surface};

/// The text an approval of `surface`, for the plugin locked from `source`, is signed
/// over: [`Approval::signed_payload`] with the digest's version and the capabilities the
/// surface has.
pub fn approval_payload(approval: &Approval, source: &str, surface: &Surface) -> String {
    let capabilities: Vec<&str> = Capability::ALL
        .iter()
        .filter(|c| surface.has(**c))
        .map(|c| c.as_str())
        .collect();
    approval.signed_payload(source, APPROVAL_DIGEST_VERSION, &capabilities)
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

    /// `ssh-ed25519 key SHA256:…`, as `ssh-keygen -l` names a key.
    pub fn describe(&self) -> String {
        describe(&self.key)
    }
}

fn read_signature(armored: &str) -> Result<SshSig, String> {
    SshSig::from_pem(armored.trim()).map_err(|e| format!("not a readable SSH signature ({e})"))
}

fn describe(key: &KeyData) -> String {
    format!("{} key {}", key.algorithm(), key.fingerprint(HashAlg::Sha256))
}

/// Checks the approval of a plugin that `policy` relies on, whose signed text is
/// `payload` ([`approval_payload`]): an unsigned one is refused when the policy requires
/// signatures; a signed one must be a signature in berth's namespace over `payload` by an
/// ed25519 or RSA key that every allowed-signers file of the policy lists for the
/// record's `signer`, valid at the approval's time. Without allowed-signers files a
/// signature is still checked against the record, so an edited one is never trusted.
pub fn check_signature(
    policy: &Policy,
    approval: &Approval,
    payload: &str,
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
        let (rule, file) = match (policy.signers().first(), policy.require_signed_approvals()) {
            (Some(s), _) => (format!("allowed_signers = \"{}\"", s.written), s.policy.clone()),
            (None, Some(file)) => ("require_signed_approvals = true".to_owned(), file.to_owned()),
            (None, None) => (
                "a signed approval is verified".to_owned(),
                "berth's defaults".to_owned(),
            ),
        };
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
    if !matches!(
        sig.public_key(),
        KeyData::Ed25519(_) | KeyData::SkEd25519(_) | KeyData::Rsa(_)
    ) {
        return Err(refuse(format!(
            "its approval is signed by {described}; berth verifies ed25519 and RSA keys only: {again}"
        )));
    }
    if PublicKey::from(sig.public_key().clone())
        .verify(SIGNATURE_NAMESPACE, payload.as_bytes(), &sig)
        .is_err()
    {
        return Err(refuse(format!(
            "the signature of its approval (by {described}) does not match the record: the record was edited or copied from another plugin, or the plugin's source or surface changed since it was signed; {again}"
        )));
    }
    for signers in policy.signers() {
        if let Err(why) = listed(signers, sig.public_key(), &signature.signer, &approval.at) {
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

/// Whether `signers` lists `key` for `principal`, in berth's namespace, at `at`; if not,
/// why, naming the file.
fn listed(signers: &Signers, key: &KeyData, principal: &str, at: &str) -> Result<(), String> {
    let file = &signers.file;
    let mut lines = signers.list.entries().iter().filter(|e| is_key(e, key));
    let Some(first) = lines.clone().next() else {
        return Err(format!("which `{file}` does not list"));
    };
    if lines.any(|e| e.names(principal) && e.allows_namespace(SIGNATURE_NAMESPACE) && e.valid_at(at)) {
        return Ok(());
    }
    let line = first.line;
    Err(if !first.names(principal) {
        format!(
            "which `{file}` lists (line {line}) for `{}`, not for `{principal}`, the approval's `signer`",
            first.principals
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
fn is_key(entry: &SignerEntry, key: &KeyData) -> bool {
    !entry.cert_authority
        && PublicKey::from_bytes(&entry.key_blob).is_ok_and(|listed| listed.key_data() == key)
}

/// The principal the policy's allowed-signers files list `key` for, in
/// berth's namespace and valid at `at` (the first file's first plain name that every file
/// lists it for), preferring `preferred`; `None` when the policy has no such file, or
/// none lists the key.
pub fn principal_for(
    policy: &Policy,
    key: &SigningKey,
    at: &str,
    preferred: Option<&str>,
) -> Option<String> {
    let data = &key.key;
    let first = policy.signers().first()?;
    let candidates = preferred.into_iter().map(str::to_owned).chain(
        first
            .list
            .entries()
            .iter()
            .filter(|e| is_key(e, data))
            .filter_map(|e| e.first_principal().map(str::to_owned)),
    );
    let mut candidates = candidates;
    candidates.find(|principal| {
        policy
            .signers()
            .iter()
            .all(|s| listed(s, data, principal, at).is_ok())
    })
}
