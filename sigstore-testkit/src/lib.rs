//! A Sigstore made at test time: a Fulcio-like CA (a P-384 root) issuing a leaf certificate
//! with Fulcio's extensions and an embedded SCT of its CT log (a P-256 key, RFC 6962), a
//! Rekor-like log (a P-256 key) with a tiny Merkle tree, and
//! npm's attestations document of a bundle (v0.3) they make, with the `trusted_root.json`
//! naming them. Nothing here is a real Sigstore key.
//!
//! Built for berth-resolver's unit tests and the end-to-end tests, whose test registry
//! serves what it makes (`tests/it/common/npm.rs`): a dev-dependency only, so no test CA
//! is built into berth. It hands out text (documents, the trusted root's JSON), which each
//! test reads with berth's own parsers.

// Test keys: `new` makes fresh ones (not a default), and nothing prints them.
#![allow(missing_debug_implementations, clippy::new_without_default)]

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use ct_merkle::mem_backed_tree::MemoryBackedTree;
use rcgen::string::Ia5String;
use rcgen::{
    BasicConstraints, CertificateParams, CustomExtension, DistinguishedName, DnType,
    ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose, PublicKeyData as _, SanType,
    SerialNumber, SigningKey as _, date_time_ymd,
};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};
use x509_cert::Certificate;
use x509_cert::der::asn1::{OctetString, Utf8StringRef};
use x509_cert::der::{Decode as _, Encode as _};

/// When the test log records an entry: 2026-01-01T12:00:00Z, inside the leaf's validity.
pub const INTEGRATED_TIME: i64 = 1_767_268_800;
pub const REPOSITORY: &str = "https://github.com/berth-test/left-pad";
pub const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";
pub const WORKFLOW: &str =
    "https://github.com/berth-test/left-pad/.github/workflows/release.yml@refs/heads/main";
pub const ISSUER: &str = "https://token.actions.githubusercontent.com";
pub const BUILDER: &str = "https://github.com/actions/runner/github-hosted";

/// What a test build names: its repository, commit and signing workflow.
#[derive(Debug, Clone)]
pub struct Build {
    pub repository: String,
    pub commit: String,
    /// The workflow with its ref, as Fulcio's Build Signer URI reads.
    pub workflow: String,
}

impl Default for Build {
    /// The test build: `REPOSITORY` at `COMMIT`, signed by `WORKFLOW`.
    fn default() -> Self {
        Build {
            repository: REPOSITORY.to_owned(),
            commit: COMMIT.to_owned(),
            workflow: WORKFLOW.to_owned(),
        }
    }
}

const LOG_HOST: &str = "rekor.berth.test";
/// When the CT log signs the test leaf's SCT: 2026-01-01T00:00:00Z, in milliseconds.
const SCT_TIME: u64 = 1_767_225_600_000;
/// The index of the test entry in its log's tree of `TREE_SIZE` leaves.
const INDEX: usize = 2;
const TREE_SIZE: usize = 5;

/// A certificate authority: its root certificate, the issuer that signs with its key, and
/// the CT log it submits its precertificates to, whose SCT each leaf embeds.
pub struct TestCa {
    der: Vec<u8>,
    issuer: Issuer<'static, KeyPair>,
    pub ct_log: TestLog,
}

impl TestCa {
    pub fn new(name: &str) -> Self {
        let key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P384_SHA384).expect("a P-384 key");
        let mut params = CertificateParams::default();
        params.distinguished_name = DistinguishedName::new();
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        params.not_before = date_time_ymd(2025, 1, 1);
        params.not_after = date_time_ymd(2030, 1, 1);
        let der = params.self_signed(&key).expect("a root").der().to_vec();
        TestCa {
            der,
            issuer: Issuer::new(params, key),
            ct_log: TestLog::new(),
        }
    }

    /// A leaf certificate of `key` for `build`'s workflow, with Fulcio's extensions and the
    /// SCT its CT log signs over the precertificate: the same certificate without the SCT
    /// list (its TBS is what a verifier rebuilds by removing the list).
    fn leaf(&self, key: &KeyPair, build: &Build) -> Vec<u8> {
        let mut params = self.leaf_params(key, build);
        let precert = params
            .signed_by(key, &self.issuer)
            .expect("a precertificate");
        let tbs = Certificate::from_der(precert.der())
            .and_then(|c| c.tbs_certificate.to_der())
            .expect("a TBS certificate");
        let issuer_key_hash = Sha256::digest(self.issuer.key().subject_public_key_info());
        let list = self.ct_log.sct_list(&issuer_key_hash, &tbs);
        params
            .custom_extensions
            .push(CustomExtension::from_oid_content(
                &[1, 3, 6, 1, 4, 1, 11129, 2, 4, 2],
                OctetString::new(list)
                    .and_then(|o| o.to_der())
                    .expect("a DER OCTET STRING"),
            ));
        params
            .signed_by(key, &self.issuer)
            .expect("a leaf")
            .der()
            .to_vec()
    }

    /// The leaf's parameters, without the SCT list.
    fn leaf_params(&self, key: &KeyPair, build: &Build) -> CertificateParams {
        let mut params = CertificateParams::default();
        params.distinguished_name = DistinguishedName::new();
        params.subject_alt_names = vec![SanType::URI(
            Ia5String::try_from(build.workflow.as_str()).expect("an ASCII URI"),
        )];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::CodeSigning];
        params.use_authority_key_identifier_extension = true;
        params.serial_number = Some(SerialNumber::from_slice(
            &Sha256::digest(key.subject_public_key_info())[..16],
        ));
        params.not_before = date_time_ymd(2026, 1, 1);
        params.not_after = date_time_ymd(2026, 1, 2);
        params.custom_extensions = [
            (1, ISSUER.as_bytes().to_vec()),
            (8, utf8(ISSUER)),
            (9, utf8(&build.workflow)),
            (12, utf8(&build.repository)),
            (13, utf8(&build.commit)),
            (14, utf8("refs/heads/main")),
        ]
        .into_iter()
        .map(|(n, value)| {
            CustomExtension::from_oid_content(&[1, 3, 6, 1, 4, 1, 57264, 1, n], value)
        })
        .collect();
        params
    }
}

fn utf8(text: &str) -> Vec<u8> {
    Utf8StringRef::new(text)
        .and_then(|s| s.to_der())
        .expect("a DER UTF8String")
}

/// A transparency log: its key and its id (the SHA-256 of the key's DER).
pub struct TestLog {
    key: KeyPair,
}

impl TestLog {
    pub fn new() -> Self {
        TestLog {
            key: KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).expect("a P-256 key"),
        }
    }

    fn spki(&self) -> Vec<u8> {
        self.key.subject_public_key_info()
    }

    fn log_id(&self) -> Vec<u8> {
        Sha256::digest(self.spki()).to_vec()
    }

    fn sign(&self, message: &[u8]) -> Vec<u8> {
        self.key.sign(message).expect("a signature")
    }

    /// A TLS-encoded `SignedCertificateTimestampList` holding this log's SCT (version 1,
    /// ECDSA with SHA-256) for the precertificate entry of `tbs` (RFC 6962 section 3.2).
    fn sct_list(&self, issuer_key_hash: &[u8], tbs: &[u8]) -> Vec<u8> {
        let mut signed = vec![0, 0];
        signed.extend_from_slice(&SCT_TIME.to_be_bytes());
        signed.extend_from_slice(&[0, 1]);
        signed.extend_from_slice(issuer_key_hash);
        signed.extend_from_slice(&u32::try_from(tbs.len()).expect("small").to_be_bytes()[1..]);
        signed.extend_from_slice(tbs);
        // No extensions.
        signed.extend_from_slice(&[0, 0]);
        let signature = self.sign(&signed);
        let mut sct = vec![0];
        sct.extend(self.log_id());
        sct.extend_from_slice(&SCT_TIME.to_be_bytes());
        sct.extend_from_slice(&[0, 0, 4, 3]);
        sct.extend(tls_vec16(&signature));
        tls_vec16(&tls_vec16(&sct))
    }

    /// Its entry of a trusted root's `tlogs` or `ctlogs`.
    fn trusted_root_entry(&self, base_url: &str) -> Value {
        json!({
            "baseUrl": base_url,
            "hashAlgorithm": "SHA2_256",
            "publicKey": {
                "rawBytes": STANDARD.encode(self.spki()),
                "keyDetails": "PKIX_ECDSA_P256_SHA_256",
                "validFor": {"start": "2025-01-01T00:00:00Z"},
            },
            "logId": {"keyId": STANDARD.encode(self.log_id())},
        })
    }
}

/// TLS's `opaque <0..2^16-1>`: the length in two bytes, then the bytes.
fn tls_vec16(bytes: &[u8]) -> Vec<u8> {
    let mut out = u16::try_from(bytes.len())
        .expect("short")
        .to_be_bytes()
        .to_vec();
    out.extend_from_slice(bytes);
    out
}

/// The test instance: one CA (with its CT log) and one log, and the trusted root naming
/// them.
pub struct TestSigstore {
    pub ca: TestCa,
    pub log: TestLog,
}

impl TestSigstore {
    pub fn new() -> Self {
        TestSigstore {
            ca: TestCa::new("berth test fulcio"),
            log: TestLog::new(),
        }
    }

    /// The text of the `trusted_root.json` naming the CA, its CT log and the log.
    pub fn trusted_root_json(&self) -> String {
        json!({
            "mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
            "tlogs": [self.log.trusted_root_entry(&format!("https://{LOG_HOST}"))],
            "certificateAuthorities": [{
                "subject": {"organization": "berth.test", "commonName": "berth test fulcio"},
                "uri": "https://fulcio.berth.test",
                "certChain": {"certificates": [{"rawBytes": STANDARD.encode(&self.ca.der)}]},
                "validFor": {"start": "2025-01-01T00:00:00Z"},
            }],
            "ctlogs": [self.ca.ct_log.trusted_root_entry("https://ctfe.berth.test")],
            "timestampAuthorities": [],
        })
        .to_string()
    }

    /// npm's attestations document for a statement about `purl` with this SHA-512, signed
    /// under this instance's CA and log.
    pub fn attest(&self, purl: &str, sha512: &[u8; 64]) -> Value {
        attest_with(&self.ca, &self.log, EntryKind::Dsse, purl, sha512)
    }

    /// [`TestSigstore::attest`] for a package `build` built.
    pub fn attest_built(&self, purl: &str, sha512: &[u8; 64], build: &Build) -> Value {
        attest_build(&self.ca, &self.log, (EntryKind::Dsse, build), purl, sha512)
    }
}

/// The kind of Rekor entry a bundle's log records: `dsse` 0.0.1 (what npm writes now) or
/// `intoto` 0.0.2 (what it wrote before).
#[derive(Clone, Copy)]
pub enum EntryKind {
    Dsse,
    Intoto,
}

/// The document of a bundle whose leaf `ca` issued and whose entry `log` recorded.
pub fn attest_with(
    ca: &TestCa,
    log: &TestLog,
    kind: EntryKind,
    purl: &str,
    sha512: &[u8; 64],
) -> Value {
    attest_build(ca, log, (kind, &Build::default()), purl, sha512)
}

/// [`attest_with`], for a package `build` built.
fn attest_build(
    ca: &TestCa,
    log: &TestLog,
    (kind, build): (EntryKind, &Build),
    purl: &str,
    sha512: &[u8; 64],
) -> Value {
    let leaf_key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).expect("a P-256 key");
    let leaf = ca.leaf(&leaf_key, build);
    let payload = statement(purl, sha512, build).to_string().into_bytes();
    let payload_type = "application/vnd.in-toto+json";
    let mut pae = format!(
        "DSSEv1 {} {payload_type} {} ",
        payload_type.len(),
        payload.len()
    )
    .into_bytes();
    pae.extend_from_slice(&payload);
    let signature = leaf_key.sign(&pae).expect("a signature");
    let envelope = json!({
        "payload": STANDARD.encode(&payload),
        "payloadType": payload_type,
        "signatures": [{"sig": STANDARD.encode(&signature), "keyid": ""}],
    });
    let body = entry_body(kind, &envelope, &payload, &signature, &leaf);
    let bundle = json!({
        "mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
        "verificationMaterial": {
            "certificate": {"rawBytes": STANDARD.encode(&leaf)},
            "tlogEntries": [log_entry(log, kind, &body)],
            "timestampVerificationData": {},
        },
        "dsseEnvelope": envelope,
    });
    json!({"attestations": [
        {"predicateType": "https://github.com/npm/attestation/tree/main/specs/publish/v0.1",
         "bundle": {"mediaType": "not read by the provenance check"}},
        {"predicateType": "https://slsa.dev/provenance/v1", "bundle": bundle},
    ]})
}

/// The canonicalized body Rekor writes of the envelope (the certificate stands for the PEM
/// Rekor records, which the verifier does not read).
fn entry_body(
    kind: EntryKind,
    envelope: &Value,
    payload: &[u8],
    signature: &[u8],
    leaf: &[u8],
) -> Vec<u8> {
    let payload_hash = json!({"algorithm": "sha256", "value": hex(&Sha256::digest(payload))});
    let body = match kind {
        EntryKind::Dsse => json!({
            "apiVersion": "0.0.1",
            "kind": "dsse",
            "spec": {
                "envelopeHash": {"algorithm": "sha256", "value": hex(&Sha256::digest(envelope.to_string()))},
                "payloadHash": payload_hash,
                "signatures": [{"signature": STANDARD.encode(signature), "verifier": STANDARD.encode(leaf)}],
            },
        }),
        // An intoto entry holds the signature base64-encoded twice.
        EntryKind::Intoto => json!({
            "apiVersion": "0.0.2",
            "kind": "intoto",
            "spec": {"content": {
                "envelope": {
                    "payloadType": envelope["payloadType"],
                    "signatures": [{
                        "sig": STANDARD.encode(STANDARD.encode(signature)),
                        "publicKey": STANDARD.encode(leaf),
                    }],
                },
                "hash": {"algorithm": "sha256", "value": hex(&Sha256::digest(envelope.to_string()))},
                "payloadHash": payload_hash,
            }},
        }),
    };
    body.to_string().into_bytes()
}

/// The entry of `body` in a tree of `TREE_SIZE` leaves, with its signed entry timestamp,
/// its inclusion proof and a checkpoint the log signs.
fn log_entry(log: &TestLog, kind: EntryKind, body: &[u8]) -> Value {
    let mut tree = MemoryBackedTree::<Sha256, Vec<u8>>::new();
    for i in 0..TREE_SIZE {
        tree.push(if i == INDEX {
            body.to_vec()
        } else {
            format!("entry {i}").into_bytes()
        });
    }
    let root = tree.root();
    let proof = tree.prove_inclusion(INDEX);
    let note = format!(
        "{LOG_HOST} - 1\n{TREE_SIZE}\n{}\n",
        STANDARD.encode(root.as_bytes())
    );
    let mut keyed = log.log_id()[..4].to_vec();
    keyed.extend(log.sign(note.as_bytes()));
    let checkpoint = format!("{note}\n\u{2014} {LOG_HOST} {}\n", STANDARD.encode(keyed));
    let set = json!({
        "body": STANDARD.encode(body),
        "integratedTime": INTEGRATED_TIME,
        "logID": hex(&log.log_id()),
        "logIndex": INDEX,
    });
    json!({
        "logIndex": INDEX.to_string(),
        "logId": {"keyId": STANDARD.encode(log.log_id())},
        "kindVersion": match kind {
            EntryKind::Dsse => json!({"kind": "dsse", "version": "0.0.1"}),
            EntryKind::Intoto => json!({"kind": "intoto", "version": "0.0.2"}),
        },
        "integratedTime": INTEGRATED_TIME.to_string(),
        "inclusionPromise": {"signedEntryTimestamp": STANDARD.encode(log.sign(set.to_string().as_bytes()))},
        "inclusionProof": {
            "logIndex": INDEX.to_string(),
            "rootHash": STANDARD.encode(root.as_bytes()),
            "treeSize": TREE_SIZE.to_string(),
            "hashes": proof.as_bytes().chunks(32).map(|h| STANDARD.encode(h)).collect::<Vec<_>>(),
            "checkpoint": {"envelope": checkpoint},
        },
        "canonicalizedBody": STANDARD.encode(body),
    })
}

/// An in-toto statement of SLSA provenance v1, as npm writes it from GitHub Actions.
fn statement(purl: &str, sha512: &[u8; 64], build: &Build) -> Value {
    let repository = &build.repository;
    json!({
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": purl, "digest": {"sha512": hex(sha512)}}],
        "predicateType": "https://slsa.dev/provenance/v1",
        "predicate": {
            "buildDefinition": {
                "buildType": "https://slsa-framework.github.io/github-actions-buildtypes/workflow/v1",
                "externalParameters": {"workflow": {
                    "ref": "refs/heads/main",
                    "repository": repository,
                    "path": ".github/workflows/release.yml",
                }},
                "resolvedDependencies": [{
                    "uri": format!("git+{repository}@refs/heads/main"),
                    "digest": {"gitCommit": build.commit},
                }],
            },
            "runDetails": {
                "builder": {"id": BUILDER},
                "metadata": {"invocationId": format!("{repository}/actions/runs/1/attempts/1")},
            },
        },
    })
}

/// Lower-case hex, as Sigstore's documents write digests and log ids.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
