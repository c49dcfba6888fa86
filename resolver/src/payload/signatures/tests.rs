use base64::Engine as _;
use berth_lockfile_schema::{LockedNpmPackage, NpmSignature, RegistryKey};
use p256::ecdsa::signature::Signer as _;
use p256::ecdsa::{Signature, SigningKey};

use super::{Origin, SignatureState, checked_verdict, refusal, state_of};

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A registry's key `id` (made from `seed`), as its `/-/npm/v1/keys` gives it.
fn registry_key(seed: u8, id: &str, expires: Option<&str>) -> (SigningKey, RegistryKey) {
    let signing = SigningKey::from_slice(&[seed; 32]).expect("a scalar");
    let header = [
        0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08,
        0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
    ];
    let point = signing.verifying_key().to_encoded_point(false);
    let key = RegistryKey {
        registry: "https://registry.example/".to_owned(),
        keyid: id.to_owned(),
        keytype: "ecdsa-sha2-nistp256".to_owned(),
        key: b64(&[&header[..], point.as_bytes()].concat()),
        expires: expires.map(str::to_owned),
    };
    (signing, key)
}

/// `fake-dep@1.0.0`, published in 2026, signed by `signing` as key `keyid`.
fn package(signing: &SigningKey, keyid: &str) -> LockedNpmPackage {
    let mut package = LockedNpmPackage {
        path: "node_modules/fake-dep".to_owned(),
        name: None,
        version: "1.0.0".to_owned(),
        url: "https://registry.example/fake-dep/-/fake-dep-1.0.0.tgz".to_owned(),
        integrity: "sha512-AAAA".to_owned(),
        published: Some("2026-01-02T03:04:05.000Z".to_owned()),
        signature: None,
        provenance: None,
    };
    let signature: Signature = signing.sign(package.signed_text().as_bytes());
    package.signature = Some(NpmSignature {
        keyid: keyid.to_owned(),
        sig: b64(signature.to_der().as_bytes()),
    });
    package
}

#[test]
fn a_signature_verifies_with_the_key_that_made_it_and_nothing_else() {
    let (signing, key) = registry_key(7, "SHA256:one", None);
    let good = package(&signing, "SHA256:one");
    let keys = [key];
    assert_eq!(state_of(&good, &keys, true), SignatureState::Verified);

    let mut changed = good.clone();
    changed.integrity = "sha512-BBBB".to_owned();
    let state = state_of(&changed, &keys, true);
    assert!(
        matches!(&state, SignatureState::Bad { keyid, .. } if keyid == "SHA256:one"),
        "{state:?}"
    );
    assert_eq!(
        state_of(&changed, &keys, false),
        SignatureState::Verified,
        "a verdict stands in for the check"
    );

    let (other, _) = registry_key(8, "SHA256:two", None);
    let unknown = package(&other, "SHA256:two");
    assert_eq!(
        state_of(&unknown, &keys, true),
        SignatureState::UnknownKey("SHA256:two".to_owned())
    );
    let mut unsigned = good.clone();
    unsigned.signature = None;
    assert_eq!(state_of(&unsigned, &keys, true), SignatureState::Unsigned);
}

#[test]
fn a_key_that_expired_before_the_version_was_published_does_not_count() {
    for (expires, published, counts) in [
        (
            "2027-01-01T00:00:00.000Z",
            Some("2026-01-02T03:04:05.000Z"),
            true,
        ),
        (
            "2025-01-29T00:00:00.000Z",
            Some("2026-01-02T03:04:05.000Z"),
            false,
        ),
        ("2027-01-01T00:00:00.000Z", None, false),
    ] {
        let (signing, key) = registry_key(7, "SHA256:one", Some(expires));
        let mut signed = package(&signing, "SHA256:one");
        signed.published = published.map(str::to_owned);
        let state = state_of(&signed, &[key], true);
        assert_eq!(
            state.is_verified(),
            counts,
            "{expires} {published:?}: {state:?}"
        );
        if !counts {
            assert!(state.describe().contains("does not count"), "{state:?}");
        }
    }
}

#[test]
fn a_bad_signature_is_always_refused_and_an_unsigned_package_only_under_the_policy() {
    let (signing, key) = registry_key(7, "SHA256:one", None);
    let mut changed = package(&signing, "SHA256:one");
    changed.version = "1.0.1".to_owned();
    let bad = state_of(&changed, &[key], true);
    let of = ("in the closure of `fake-mcp` 1.1.0", "tools");
    let refused = refusal(None, of, &changed, &bad, Origin::Lock).expect("always refused");
    let text = refused.to_string();
    assert!(
        text.starts_with("npm package `fake-dep@1.0.1` (in the closure of `fake-mcp` 1.1.0): its registry signature does not verify with the key `SHA256:one`")
            && text.contains("the lock was changed after it was made")
            && text.ends_with("run `berth plugins lock --upgrade-plugin tools` to lock it again from its registry"),
        "{text}"
    );
    assert_eq!(refused.policy, None);

    let unsigned = SignatureState::Unsigned;
    assert_eq!(refusal(None, of, &changed, &unsigned, Origin::Lock), None);
    let refused = refusal(
        Some("berth-policy.toml"),
        of,
        &changed,
        &unsigned,
        Origin::Registry,
    )
    .expect("the policy refuses it");
    let text = refused.to_string();
    assert!(
        text.contains("`fake-dep@1.0.1`")
            && text.contains("`require_registry_signatures = true` in `berth-policy.toml`")
            && text.contains("nothing was locked"),
        "{text}"
    );
    assert_eq!(refused.policy.as_deref(), Some("berth-policy.toml"));
}

#[test]
fn the_verdict_names_everything_the_check_read() {
    let (signing, key) = registry_key(7, "SHA256:one", None);
    let signed = package(&signing, "SHA256:one");
    let keys = vec![key];
    let verdict = checked_verdict(std::slice::from_ref(&signed), &keys);
    assert!(verdict.starts_with("npm registry signatures ") && verdict.ends_with(": none bad"));
    let mut other = signed.clone();
    other.integrity = "sha512-BBBB".to_owned();
    assert_ne!(checked_verdict(&[other], &keys), verdict);
    let mut expiring = keys.clone();
    expiring[0].expires = Some("2027-01-01T00:00:00Z".to_owned());
    assert_ne!(checked_verdict(&[signed], &expiring), verdict);
}
