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
/// ed25519, RSA or ECDSA key that every allowed-signers file of the policy lists for the
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

/// Whether `signers` lists `key` for `principal`, in berth's namespace, at `at`; if not,
/// why, naming the file.
fn listed(signers: &Signers, key: &KeyData, principal: &str, at: &str) -> Result<(), String> {
    let file = &signers.file;
    let mut lines = signers.list.entries().iter().filter(|e| is_key(e, key));
    let Some(first) = lines.clone().next() else {
        return Err(format!("which `{file}` does not list"));
    };
    if lines
        .any(|e| e.names(principal) && e.allows_namespace(SIGNATURE_NAMESPACE) && e.valid_at(at))
    {
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
pub(super) fn is_key(entry: &SignerEntry, key: &KeyData) -> bool {
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

#[cfg(test)]
mod tests {
    use berth_lockfile_schema::governance::{
        ApprovalSignature, Canon, parse_allowed_signers, parse_policy,
    };

    use super::*;

    /// A key made with `ssh-keygen -t ed25519`, and its signatures of [`payload`] made with
    /// `ssh-keygen -Y sign -n berth-approval` and `-n file`.
    const KEY: &str =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEzLRdbJ17WENiTR9alDXSdmwh9giXOK7IXzmrHeRjcY";
    const SIGNED: &str = "-----BEGIN SSH SIGNATURE-----
U1NIU0lHAAAAAQAAADMAAAALc3NoLWVkMjU1MTkAAAAgTMtF1snXtYQ2JNH1qUNdJ2bCH2
CJc4rshfOasd5GNxgAAAAOYmVydGgtYXBwcm92YWwAAAAAAAAABnNoYTUxMgAAAFMAAAAL
c3NoLWVkMjU1MTkAAABAyGjPR12kvOAIguC6zNEwn/rj5iNhC1Ikqgld2GTCTaoZdeI8Gv
9zHxe1guHUPokIpsVHkPR6VqaX0lge6Gf5CA==
-----END SSH SIGNATURE-----";
    const SIGNED_AS_FILE: &str = "-----BEGIN SSH SIGNATURE-----
U1NIU0lHAAAAAQAAADMAAAALc3NoLWVkMjU1MTkAAAAgTMtF1snXtYQ2JNH1qUNdJ2bCH2
CJc4rshfOasd5GNxgAAAAEZmlsZQAAAAAAAAAGc2hhNTEyAAAAUwAAAAtzc2gtZWQyNTUx
OQAAAEBp3LLVxocX0bUp+fRckDNX2+ViROFWb1csv3NF5OzZIdUJ1mHArSKT9tE98FTDyu
qeXum6j2vVJ++VCwUAv8cK
-----END SSH SIGNATURE-----";

    fn approval(armored: &str) -> Approval {
        Approval {
            plugin: "tools".to_owned(),
            surface: "sha256:01".to_owned(),
            by: "Alice <alice@example.com>".to_owned(),
            at: "2026-11-25T06:00:00Z".to_owned(),
            signature: Some(ApprovalSignature {
                signer: "alice@example.com".to_owned(),
                armored: armored.to_owned(),
            }),
        }
    }

    fn payload(approval: &Approval) -> String {
        approval.signed_payload("github:acme/tools", 2, &["hooks"])
    }

    /// A policy requiring signed approvals, whose allowed-signers file is `signers`.
    fn policy(signers: &str) -> Policy {
        let file = parse_policy("require_signed_approvals = true\n", "p.toml").expect("valid");
        let list = parse_allowed_signers(signers, "keys").expect("valid");
        Policy::from_chain(vec![("p.toml".to_owned(), file)], Canon::default())
            .expect("valid")
            .with_signers(vec![Signers {
                policy: "p.toml".to_owned(),
                written: "keys".to_owned(),
                file: "keys".to_owned(),
                list,
            }])
    }

    fn refusal(policy: &Policy, approval: &Approval) -> String {
        check_signature(policy, approval, &payload(approval))
            .expect_err("refused")
            .detail
    }

    #[test]
    fn a_signature_by_a_listed_key_over_the_record_passes() {
        let listed = policy(&format!("alice@example.com {KEY}\n"));
        let signed = approval(SIGNED);
        assert_eq!(check_signature(&listed, &signed, &payload(&signed)), Ok(()));
        let key = SigningKey::of_signature(SIGNED).expect("a signature");
        assert!(key.describe().starts_with("ssh-ed25519 key SHA256:"));
        assert_eq!(
            principal_for(&listed, &key, &signed.at, Some("bob@example.com")).as_deref(),
            Some("alice@example.com")
        );
        // Without allowed signers, the signature is still held to the record.
        let none = Policy::default();
        assert_eq!(check_signature(&none, &signed, &payload(&signed)), Ok(()));
        let mut edited = signed.clone();
        edited.by = "Mallory <m@example.com>".to_owned();
        assert!(refusal(&none, &edited).contains("does not match the record"));
    }

    #[test]
    fn an_edited_unlisted_or_misplaced_signature_is_refused() {
        let listed = policy(&format!("alice@example.com {KEY}\n"));
        for edit in [
            |a: &mut Approval| a.plugin = "twin".to_owned(),
            |a: &mut Approval| a.surface = "sha256:02".to_owned(),
            |a: &mut Approval| a.at = "2026-11-25T06:00:01Z".to_owned(),
        ] {
            let mut edited = approval(SIGNED);
            edit(&mut edited);
            assert!(refusal(&listed, &edited).contains("does not match the record"));
        }
        let signed = approval(SIGNED);
        let other = policy(&format!("bob@example.com {KEY}\n"));
        assert!(refusal(&other, &signed).contains("lists (line 1) for `bob@example.com`"));
        let nobody = policy("# nobody\n");
        assert!(refusal(&nobody, &signed).contains("which `keys` does not list"));
        let expired = policy(&format!(
            "alice@example.com valid-before=\"20260101\" {KEY}\n"
        ));
        assert!(refusal(&expired, &signed).contains("does not hold valid at 2026-11-25T06:00:00Z"));
        let git = policy(&format!("alice@example.com namespaces=\"git\" {KEY}\n"));
        assert!(refusal(&git, &signed).contains("lets sign only in `git`"));
        let as_file = approval(SIGNED_AS_FILE);
        assert!(refusal(&listed, &as_file).contains("was made for `file`"));
        let mut unsigned = approval(SIGNED);
        unsigned.signature = None;
        let refused = check_signature(&listed, &unsigned, "").expect_err("unsigned");
        assert!(refused.unsigned && refused.rule == "require_signed_approvals = true");
        assert_eq!(check_signature(&Policy::default(), &unsigned, ""), Ok(()));
    }
}
