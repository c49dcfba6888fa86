use berth_lockfile_schema::governance::{
    ApprovalSignature, Canon, parse_allowed_signers, parse_policy,
};

use super::*;

/// A key made with `ssh-keygen -t ed25519`, and its signatures (`ssh-keygen -Y sign`) of
/// [`payload`]: in `berth-approval`, in `file`, of the same record signed as
/// `mallory@example.com`, and of its payload version 1 (without the signer).
const KEY: &str =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOL4a2SONa7Y8+QbvT7QjEmRHgo8T0eBci/x3mY5nyM0";
const SIGNED: &str = "-----BEGIN SSH SIGNATURE-----
U1NIU0lHAAAAAQAAADMAAAALc3NoLWVkMjU1MTkAAAAg4vhrZI41rtjz5Bu9PtCMSZEeCj
xPR4FyL/HeZjmfIzQAAAAOYmVydGgtYXBwcm92YWwAAAAAAAAABnNoYTUxMgAAAFMAAAAL
c3NoLWVkMjU1MTkAAABA4rNM2kxXu7tBOw9WMO3vCMIuoMD8avDzs6Y2jxeP2K8DEtWypy
jnDF5lny+km9dXFdYA8ESLILOlcagDdc13CA==
-----END SSH SIGNATURE-----";
const SIGNED_AS_FILE: &str = "-----BEGIN SSH SIGNATURE-----
U1NIU0lHAAAAAQAAADMAAAALc3NoLWVkMjU1MTkAAAAg4vhrZI41rtjz5Bu9PtCMSZEeCj
xPR4FyL/HeZjmfIzQAAAAEZmlsZQAAAAAAAAAGc2hhNTEyAAAAUwAAAAtzc2gtZWQyNTUx
OQAAAEAY+x0IzyBoRunKtf6SJbg76mi7sxtyjEhkGRbIWMzVJOfgWRgl5a/KvPkdX4K6x6
KK6+xg5/gdBPM0RyZechEK
-----END SSH SIGNATURE-----";
const SIGNED_AS_MALLORY: &str = "-----BEGIN SSH SIGNATURE-----
U1NIU0lHAAAAAQAAADMAAAALc3NoLWVkMjU1MTkAAAAg4vhrZI41rtjz5Bu9PtCMSZEeCj
xPR4FyL/HeZjmfIzQAAAAOYmVydGgtYXBwcm92YWwAAAAAAAAABnNoYTUxMgAAAFMAAAAL
c3NoLWVkMjU1MTkAAABAwq0VfLqOhVChV4bfzrFp20FHinpctt8sx/DjUpz+g5+ZRc9b6n
f2Hz+dB4U2dTIhAe+Pi+/8DQ6U6yaGpliqDw==
-----END SSH SIGNATURE-----";
const SIGNED_V1: &str = "-----BEGIN SSH SIGNATURE-----
U1NIU0lHAAAAAQAAADMAAAALc3NoLWVkMjU1MTkAAAAg4vhrZI41rtjz5Bu9PtCMSZEeCj
xPR4FyL/HeZjmfIzQAAAAOYmVydGgtYXBwcm92YWwAAAAAAAAABnNoYTUxMgAAAFMAAAAL
c3NoLWVkMjU1MTkAAABAdST2ZXoTHdULl/OLxu6l0lt/318gm/+FKVqVdMhjfIFc1iD1Jn
NZIjQTssAjoC7W4G4dyBxvwDeRyQBQWRTRCw==
-----END SSH SIGNATURE-----";

fn approval(armored: &str) -> Approval {
    signed_as(armored, "alice@example.com")
}

fn signed_as(armored: &str, signer: &str) -> Approval {
    Approval {
        plugin: "tools".to_owned(),
        surface: "sha256:01".to_owned(),
        by: "Alice <alice@example.com>".to_owned(),
        at: "2026-11-25T06:00:00Z".to_owned(),
        signature: Some(ApprovalSignature {
            signer: signer.to_owned(),
            armored: armored.to_owned(),
        }),
        source_signer: None,
    }
}

fn payload(approval: &Approval) -> ApprovalPayload {
    let signer = approval
        .signature
        .as_ref()
        .map_or("", |s| s.signer.as_str());
    let source = "github:acme/tools";
    ApprovalPayload {
        text: approval.signed_payload(signer, source, 2, &["hooks"]),
        v1: approval.signed_payload_v1(source, 2, &["hooks"]),
    }
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
    let key = SigningKey::of_key_file(&format!("{KEY} alice\n")).expect("a public key");
    assert_eq!(
        key.describe(),
        SigningKey::of_signature(SIGNED)
            .expect("a signature")
            .describe()
    );
    assert!(key.describe().starts_with("ssh-ed25519 key SHA256:"));
    assert_eq!(
        signer_for(&listed, &key, &signed.by, &signed.at).as_deref(),
        Ok("alice@example.com")
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
    let refused = check_signature(&listed, &unsigned, &payload(&unsigned)).expect_err("unsigned");
    assert!(refused.unsigned && refused.rule == "require_signed_approvals = true");
    assert_eq!(
        check_signature(&Policy::default(), &unsigned, &payload(&unsigned)),
        Ok(())
    );
}

#[test]
fn the_signer_is_signed_and_the_key_must_be_listed_for_the_approver() {
    let both = policy(&format!("mallory@example.com,alice@example.com {KEY}\n"));
    // Another principal of the same line, written over the signed one.
    let edited = approval(SIGNED)
        .signature
        .map(|s| signed_as(&s.armored, "mallory@example.com"))
        .expect("signed");
    assert!(refusal(&both, &edited).contains("does not match the record"));
    // Mallory's key, signing as herself, records Alice as the approver.
    let mallory = policy(&format!("mallory@example.com {KEY}\n"));
    let attributed = signed_as(SIGNED_AS_MALLORY, "mallory@example.com");
    assert_eq!(
        check_signature(&both, &attributed, &payload(&attributed)),
        Ok(())
    );
    let why = refusal(&mallory, &attributed);
    assert!(
        why.contains("lists (line 1) for `mallory@example.com`, not for `alice@example.com`, whom the approval's `by` (`Alice <alice@example.com>`) names"),
        "{why}"
    );
    let key = SigningKey::of_signature(SIGNED).expect("a signature");
    let refused = signer_for(&mallory, &key, "Alice <alice@example.com>", &attributed.at)
        .expect_err("not listed for Alice")
        .expect("listed for someone");
    assert!(
        refused.why.contains("not for `alice@example.com`"),
        "{refused:?}"
    );
    assert_eq!(
        signer_for(
            &policy("# nobody\n"),
            &key,
            "Alice <alice@example.com>",
            "x"
        ),
        Err(None)
    );
    // A pattern names the approver as it names the signer.
    let domain = policy(&format!("*@example.com {KEY}\n"));
    assert_eq!(
        check_signature(&domain, &attributed, &payload(&attributed)),
        Ok(())
    );
}

#[test]
fn a_record_signed_before_the_signer_was_signed_is_signed_again() {
    let listed = policy(&format!("alice@example.com {KEY}\n"));
    let old = approval(SIGNED_V1);
    let why = refusal(&listed, &old);
    assert!(
        why.contains("was signed in berth's earlier form, which does not cover its `signer`; sign it again: `berth plugins approve tools --sign KEY`"),
        "{why}"
    );
    assert!(refusal(&Policy::default(), &old).contains("earlier form"));
}
