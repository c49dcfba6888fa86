//! Signatures made once with the real tools over one commit object (`PAYLOAD`):
//! `ssh-keygen -Y sign -n git` (ed25519), `gpg --armor --detach-sign` (ed25519) and
//! `openssl cms -sign` with a certificate naming `carol@example.com` and a Fulcio OIDC
//! issuer, its armor renamed as git's `gpg.format=x509` writes it.

use berth_lockfile_schema::governance::{Signers, parse_allowed_signers};
use berth_lockfile_schema::{SignatureKind, SignedObject, SourceSignature};

use super::source_signature;
use crate::SignedObjects;

const REV: &str = "0123456789abcdef0123456789abcdef01234567";
const PAYLOAD: &str = "tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nauthor A <a@x> 1700000000 +0000\ncommitter C <c@x> 1700000060 +0000\n\nsigned\n";
const SSH_KEY: &str =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKqJz8RhSjNTwp+jkTFJOdHIxxiOKco7KUzxnV2CXTer alice";
const SSH: &str = "-----BEGIN SSH SIGNATURE-----\nU1NIU0lHAAAAAQAAADMAAAALc3NoLWVkMjU1MTkAAAAgqonPxGFKM1PCn6ORMUk50cjHGI\n4pyjspTPGdXYJdN6sAAAADZ2l0AAAAAAAAAAZzaGE1MTIAAABTAAAAC3NzaC1lZDI1NTE5\nAAAAQI+jEJnVWFfzBIt+EL7dv5v8pIg0dFuyLkstXj23dnXu7Hios14gFTYIXeyhwRZB85\ngQ98rz4FWB5+ykCNcO6Qk=\n-----END SSH SIGNATURE-----";
const PGP: &str = "-----BEGIN PGP SIGNATURE-----\n\niHUEABYIAB0WIQSMT/tuSj7tQisWWByQ7TCuzMWQmwUCaxAjoAAKCRCQ7TCuzMWQ\nm0DoAP0RmdPRFipJZDph5LM/KUHSs5+GXne/AsV8IsIg2GbCxwEA1HvDu8qEUsJi\nOYtSQ16KioHO0iiNIS9VGJxOuxPcMwg=\n=Yibi\n-----END PGP SIGNATURE-----";
const X509: &str = "-----BEGIN SIGNED MESSAGE-----\nMIIDiAYJKoZIhvcNAQcCoIIDeTCCA3UCAQExDTALBglghkgBZQMEAgEwCwYJKoZI\nhvcNAQcBoIIBzDCCAcgwggFvoAMCAQICFEiN5q7Y4J6td7RZXdHRBemIDaU1MAoG\nCCqGSM49BAMCMBcxFTATBgNVBAoMDHNpZ3N0b3JlLmRldjAeFw0yNjEyMDIxMzU2\nNDhaFw0zNjExMjkxMzU2NDhaMBcxFTATBgNVBAoMDHNpZ3N0b3JlLmRldjBZMBMG\nByqGSM49AgEGCCqGSM49AwEHA0IABJeclxrEezAEq6vAjNQwaqeYj8CGw9+MN7oX\nppm5Npfvk2dh8c6OdrmHzw+XnlJUz35x0zO1zZ2XiQaiiNFQYWyjgZgwgZUwHQYD\nVR0OBBYEFKOLlqSK+7K543ZSDeghbP/ud3wsMB8GA1UdIwQYMBaAFKOLlqSK+7K5\n43ZSDeghbP/ud3wsMA8GA1UdEwEB/wQFMAMBAf8wHAYDVR0RBBUwE4ERY2Fyb2xA\nZXhhbXBsZS5jb20wJAYKKwYBBAGDvzABAQQWaHR0cHM6Ly9pc3N1ZXIuZXhhbXBs\nZTAKBggqhkjOPQQDAgNHADBEAiAT+34EzBAIQXdMNsBK9ZMOzncEADgFkelNm2E8\n1ZJamwIgV0L10tEObfUw/be5u2NdIEv6N3R9b5qIyM1kNkwejFMxggGCMIIBfgIB\nATAvMBcxFTATBgNVBAoMDHNpZ3N0b3JlLmRldgIUSI3mrtjgnq13tFld0dEF6YgN\npTUwCwYJYIZIAWUDBAIBoIHkMBgGCSqGSIb3DQEJAzELBgkqhkiG9w0BBwEwHAYJ\nKoZIhvcNAQkFMQ8XDTI2MTIwMjEzNTY0OFowLwYJKoZIhvcNAQkEMSIEIN57Z/0B\ngCHGESbX6OZ5amEdkybwOIsBhorxSzMJoiJfMHkGCSqGSIb3DQEJDzFsMGowCwYJ\nYIZIAWUDBAEqMAsGCWCGSAFlAwQBFjALBglghkgBZQMEAQIwCgYIKoZIhvcNAwcw\nDgYIKoZIhvcNAwICAgCAMA0GCCqGSIb3DQMCAgFAMAcGBSsOAwIHMA0GCCqGSIb3\nDQMCAgEoMAoGCCqGSM49BAMCBEgwRgIhAIXcWRbtv/o4Gh3C2noc5swC1acqjEWz\niZmRZdvo1KvxAiEAzEaebO9a7aP/NtnledCf5AIAWc24FRAteIMUm/KRFV8=\n-----END SIGNED MESSAGE-----";

/// The commit object `PAYLOAD` carrying `armored` in its `gpgsig` header, as git writes it.
fn commit_signed(armored: &str) -> Vec<u8> {
    let (head, message) = PAYLOAD.split_once("\n\n").expect("a message");
    let header = armored.replace('\n', "\n ");
    format!("{head}\ngpgsig {header}\n\n{message}").into_bytes()
}

fn signature_of(commit: &[u8], signers: &[&Signers]) -> SourceSignature {
    let objects = SignedObjects {
        rev: REV,
        commit,
        tag: None,
    };
    source_signature(&objects, signers)
}

fn allowed(text: &str) -> Signers {
    Signers {
        policy: "berth-policy.toml".to_owned(),
        written: "keys".to_owned(),
        file: "keys".to_owned(),
        list: parse_allowed_signers(text, "keys").expect("an allowed-signers file"),
    }
}

#[test]
fn an_ssh_signature_is_verified_and_named_by_its_key_and_principal() {
    let commit = commit_signed(SSH);
    let keys = allowed(&format!("alice@example.com namespaces=\"git\" {SSH_KEY}\n"));
    let signed = signature_of(&commit, &[&keys]);
    assert_eq!(signed.kind, SignatureKind::Ssh);
    assert_eq!(signed.object, Some(SignedObject::Commit));
    assert_eq!(
        signed.key.as_deref(),
        Some("SHA256:QHOF0TKilUxPSbkdsXt+xFD4FsRWt3uRsMgNjGstZPA")
    );
    assert!(signed.verified);
    assert_eq!(signed.principal.as_deref(), Some("alice@example.com"));
    assert_eq!(
        signed.describe(),
        "signed by ssh key SHA256:QHOF0TKilUxPSbkdsXt+xFD4FsRWt3uRsMgNjGstZPA (alice@example.com)"
    );
    // Without a list: the same key, no principal; a key listed for another namespace
    // names none either.
    assert_eq!(signature_of(&commit, &[]).principal, None);
    let elsewhere = allowed(&format!("a@x namespaces=\"file\" {SSH_KEY}\n"));
    assert_eq!(signature_of(&commit, &[&elsewhere]).principal, None);
    // An edited commit: the same key, not verified.
    let edited = String::from_utf8(commit)
        .expect("text")
        .replace("\nsigned\n", "\nedited\n");
    let tampered = signature_of(edited.as_bytes(), &[&keys]);
    assert_eq!(tampered.key, signed.key);
    assert!(!tampered.verified);
    assert!(tampered.describe().ends_with(", not verified"));
}

#[test]
fn openpgp_and_x509_signers_are_read_as_claimed() {
    let pgp = signature_of(&commit_signed(PGP), &[]);
    assert_eq!(pgp.kind, SignatureKind::Openpgp);
    assert_eq!(
        pgp.key.as_deref(),
        Some("8C4FFB6E4A3EED422B16581C90ED30AECCC5909B")
    );
    assert!(!pgp.verified);
    assert!(pgp.describe().ends_with("(claimed, not verified)"));
    let x509 = signature_of(&commit_signed(X509), &[]);
    assert_eq!(x509.kind, SignatureKind::X509);
    assert_eq!(
        x509.key.as_deref(),
        Some("sha256:5a4c34e3f4a7209d8c65e37008c73d3d7217e617d47cd5152c8cc62f3a0bfa5b")
    );
    assert_eq!(
        x509.identity.as_deref(),
        Some("carol@example.com via https://issuer.example")
    );
    assert_eq!(
        x509.signer().as_deref(),
        Some("x509 carol@example.com via https://issuer.example")
    );
    // Garbage after a known first line is still a signature of that kind, its key unread.
    let broken = signature_of(
        &commit_signed("-----BEGIN PGP SIGNATURE-----\n\nnot base64\n-----END PGP SIGNATURE-----"),
        &[],
    );
    assert_eq!((broken.kind, broken.key), (SignatureKind::Openpgp, None));
}

#[test]
fn a_signed_tag_of_the_commit_wins_and_an_unsigned_pair_is_none() {
    let tag = format!(
        "object {REV}\ntype commit\ntag v1.0\ntagger T <t@x> 1700000120 +0000\n\nrelease\n{PGP}\n"
    );
    let objects = SignedObjects {
        rev: REV,
        commit: &commit_signed(SSH),
        tag: Some(("v1.0", tag.as_bytes())),
    };
    let signed = source_signature(&objects, &[]);
    assert_eq!(
        (signed.kind, signed.object),
        (SignatureKind::Openpgp, Some(SignedObject::Tag))
    );
    // A tag of another name does not count: the commit's signature is recorded.
    let renamed = SignedObjects {
        tag: Some(("v2.0", tag.as_bytes())),
        ..objects
    };
    assert_eq!(source_signature(&renamed, &[]).kind, SignatureKind::Ssh);
    let unsigned = signature_of(PAYLOAD.as_bytes(), &[]);
    assert_eq!(unsigned, SourceSignature::none());
    assert_eq!(unsigned.describe(), "unsigned");
    // A change of hands: signed to unsigned, or to another key; unsigned to signed is not.
    let ssh = signature_of(&commit_signed(SSH), &[]);
    let pgp = signature_of(&commit_signed(PGP), &[]);
    assert!(ssh.changes_hands(&unsigned));
    assert!(ssh.changes_hands(&pgp));
    assert!(!ssh.changes_hands(&ssh.clone()));
    assert!(!unsigned.changes_hands(&ssh));
}
