use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;
use sha2::{Digest as _, Sha512};

use super::*;
use berth_sigstore_testkit::{
    BUILDER, COMMIT, EntryKind, INTEGRATED_TIME, ISSUER, REPOSITORY, TestCa, TestSigstore,
    WORKFLOW, attest_with,
};

/// The test Sigstore's `trusted_root.json`, read as berth reads one.
fn root_of(sigstore: &TestSigstore) -> TrustedRoot {
    TrustedRoot::from_json(sigstore.trusted_root_json().as_bytes()).expect("the test root is read")
}

const NAME: &str = "left-pad";
const VERSION: &str = "1.3.0";
const PURL: &str = "pkg:npm/left-pad@1.3.0";

fn tarball_sha512() -> [u8; 64] {
    Sha512::digest(b"the tarball of left-pad 1.3.0").into()
}

fn verify_doc(doc: &Value, root: &TrustedRoot) -> Result<Provenance, ProvenanceError> {
    verify_npm_provenance(
        doc.to_string().as_bytes(),
        NAME,
        VERSION,
        &tarball_sha512(),
        root,
    )
}

/// The refusal of `doc`, whose message must name the package.
fn refused(doc: &Value, root: &TrustedRoot) -> ProvenanceProblem {
    let err = verify_doc(doc, root).expect_err("refused");
    assert!(
        err.to_string().contains("`left-pad@1.3.0`"),
        "the message names the package: {err}"
    );
    err.problem
}

/// The SLSA bundle of a document, to tamper with.
fn bundle(doc: &mut Value) -> &mut Value {
    &mut doc["attestations"][1]["bundle"]
}

/// Flips the last byte of a base64 field.
fn flip(field: &mut Value) {
    let mut bytes = STANDARD
        .decode(field.as_str().expect("a string"))
        .expect("base64");
    *bytes.last_mut().expect("not empty") ^= 1;
    *field = Value::from(STANDARD.encode(bytes));
}

#[test]
fn a_good_bundle_passes_and_names_repository_commit_and_workflow() {
    let sigstore = TestSigstore::new();
    let doc = sigstore.attest(PURL, &tarball_sha512());
    let provenance = verify_doc(&doc, &root_of(&sigstore)).expect("verified");
    let cert = &provenance.certificate;
    assert_eq!(cert.source_repository.as_deref(), Some(REPOSITORY));
    assert_eq!(cert.source_commit.as_deref(), Some(COMMIT));
    assert_eq!(cert.build_workflow.as_deref(), Some(WORKFLOW));
    assert_eq!(cert.subject, WORKFLOW);
    assert_eq!(cert.issuer.as_deref(), Some(ISSUER));
    assert_eq!(cert.source_ref.as_deref(), Some("refs/heads/main"));
    let claims = &provenance.statement;
    assert_eq!(claims.repository.as_deref(), Some(REPOSITORY));
    assert_eq!(claims.commit.as_deref(), Some(COMMIT));
    assert_eq!(
        claims.workflow_path.as_deref(),
        Some(".github/workflows/release.yml")
    );
    assert_eq!(claims.workflow_ref.as_deref(), Some("refs/heads/main"));
    assert_eq!(claims.builder.as_deref(), Some(BUILDER));
    assert_eq!(provenance.predicate_type, "https://slsa.dev/provenance/v1");
    assert_eq!(provenance.integrated_time, INTEGRATED_TIME);
    assert_eq!(provenance.log_index, 2);
}

#[test]
fn a_tampered_envelope_signature_is_refused() {
    let sigstore = TestSigstore::new();
    let mut doc = sigstore.attest(PURL, &tarball_sha512());
    flip(&mut bundle(&mut doc)["dsseEnvelope"]["signatures"][0]["sig"]);
    let problem = refused(&doc, &root_of(&sigstore));
    assert!(
        matches!(problem, ProvenanceProblem::EnvelopeSignature(_)),
        "{problem:?}"
    );
}

#[test]
fn a_statement_about_another_package_is_refused() {
    let sigstore = TestSigstore::new();
    let doc = sigstore.attest("pkg:npm/right-pad@1.3.0", &tarball_sha512());
    let problem = refused(&doc, &root_of(&sigstore));
    assert_eq!(
        problem,
        ProvenanceProblem::OtherPackage("`pkg:npm/right-pad@1.3.0`".into())
    );
    let other_version = sigstore.attest("pkg:npm/left-pad@1.2.9", &tarball_sha512());
    let problem = refused(&other_version, &root_of(&sigstore));
    assert!(
        matches!(problem, ProvenanceProblem::OtherPackage(_)),
        "{problem:?}"
    );
}

#[test]
fn a_statement_about_another_tarball_is_refused() {
    let sigstore = TestSigstore::new();
    let other: [u8; 64] = Sha512::digest(b"another tarball").into();
    let doc = sigstore.attest(PURL, &other);
    let problem = refused(&doc, &root_of(&sigstore));
    assert!(
        matches!(problem, ProvenanceProblem::OtherDigest(_)),
        "{problem:?}"
    );
}

#[test]
fn a_broken_inclusion_proof_is_refused() {
    let sigstore = TestSigstore::new();
    let mut doc = sigstore.attest(PURL, &tarball_sha512());
    flip(
        &mut bundle(&mut doc)["verificationMaterial"]["tlogEntries"][0]["inclusionProof"]["hashes"]
            [0],
    );
    let problem = refused(&doc, &root_of(&sigstore));
    assert!(
        matches!(problem, ProvenanceProblem::InclusionProof(_)),
        "{problem:?}"
    );
}

#[test]
fn a_leaf_from_a_ca_not_in_the_trusted_root_is_refused() {
    let sigstore = TestSigstore::new();
    let stranger = TestCa::new("berth test fulcio");
    let doc = attest_with(
        &stranger,
        &sigstore.log,
        EntryKind::Dsse,
        PURL,
        &tarball_sha512(),
    );
    let problem = refused(&doc, &root_of(&sigstore));
    assert!(
        matches!(problem, ProvenanceProblem::Certificate(_)),
        "{problem:?}"
    );
}

#[test]
fn a_changed_log_time_or_a_missing_signed_entry_timestamp_is_refused() {
    let sigstore = TestSigstore::new();
    let root = root_of(&sigstore);
    let mut doc = sigstore.attest(PURL, &tarball_sha512());
    let entry = &mut bundle(&mut doc)["verificationMaterial"]["tlogEntries"][0];
    entry["integratedTime"] = Value::from((INTEGRATED_TIME + 60).to_string());
    let problem = refused(&doc, &root);
    assert!(
        matches!(problem, ProvenanceProblem::SignedEntryTimestamp(_)),
        "{problem:?}"
    );
    let entry = &mut bundle(&mut doc)["verificationMaterial"]["tlogEntries"][0];
    entry
        .as_object_mut()
        .expect("an object")
        .remove("inclusionPromise");
    assert_eq!(refused(&doc, &root), ProvenanceProblem::NoVerifiedTime);
}

#[test]
fn a_checkpoint_or_entry_of_another_log_is_refused() {
    let sigstore = TestSigstore::new();
    let other = TestSigstore::new();
    // The other log's entry: its key is not the trusted root's.
    let doc = attest_with(
        &sigstore.ca,
        &other.log,
        EntryKind::Dsse,
        PURL,
        &tarball_sha512(),
    );
    let problem = refused(&doc, &root_of(&sigstore));
    assert!(
        matches!(problem, ProvenanceProblem::UnknownLog(_)),
        "{problem:?}"
    );
    // The right log, its checkpoint's signature altered.
    let mut doc = sigstore.attest(PURL, &tarball_sha512());
    let proof = &mut bundle(&mut doc)["verificationMaterial"]["tlogEntries"][0]["inclusionProof"];
    let envelope = proof["checkpoint"]["envelope"].as_str().expect("text");
    proof["checkpoint"]["envelope"] = Value::from(envelope.replacen("\n5\n", "\n6\n", 1));
    let problem = refused(&doc, &root_of(&sigstore));
    assert!(
        matches!(problem, ProvenanceProblem::Checkpoint(_)),
        "{problem:?}"
    );
}

#[test]
fn a_log_entry_of_another_envelope_is_refused() {
    let sigstore = TestSigstore::new();
    let mut doc = sigstore.attest(PURL, &tarball_sha512());
    let other = sigstore.attest(PURL, &tarball_sha512());
    // The other bundle's entry (its own leaf key and signature), this bundle's envelope.
    bundle(&mut doc)["verificationMaterial"]["tlogEntries"] =
        other["attestations"][1]["bundle"]["verificationMaterial"]["tlogEntries"].clone();
    let problem = refused(&doc, &root_of(&sigstore));
    assert!(
        matches!(problem, ProvenanceProblem::LogEntry(_)),
        "{problem:?}"
    );
}

#[test]
fn an_intoto_log_entry_as_npm_wrote_before_passes() {
    let sigstore = TestSigstore::new();
    let doc = attest_with(
        &sigstore.ca,
        &sigstore.log,
        EntryKind::Intoto,
        PURL,
        &tarball_sha512(),
    );
    let provenance = verify_doc(&doc, &root_of(&sigstore)).expect("verified");
    assert_eq!(
        provenance.certificate.source_commit.as_deref(),
        Some(COMMIT)
    );
}

/// A v0.1 bundle (a certificate chain, the inclusion proof optional) passes on its signed
/// entry timestamp; from v0.2 on the proof is required.
#[test]
fn only_a_v0_1_bundle_may_lack_the_inclusion_proof() {
    let sigstore = TestSigstore::new();
    let root = root_of(&sigstore);
    let mut doc = sigstore.attest(PURL, &tarball_sha512());
    let material = &mut bundle(&mut doc)["verificationMaterial"];
    material["tlogEntries"][0]
        .as_object_mut()
        .expect("an object")
        .remove("inclusionProof");
    assert!(matches!(
        refused(&doc, &root),
        ProvenanceProblem::InclusionProof(_)
    ));
    let v01 = bundle(&mut doc);
    v01["mediaType"] = Value::from("application/vnd.dev.sigstore.bundle+json;version=0.1");
    let material = v01["verificationMaterial"]
        .as_object_mut()
        .expect("an object");
    let certificate = material.remove("certificate").expect("a certificate");
    material.insert(
        "x509CertificateChain".into(),
        serde_json::json!({"certificates": [certificate]}),
    );
    verify_doc(&doc, &root).expect("verified on its signed entry timestamp");
}

#[test]
fn a_document_without_slsa_provenance_is_refused() {
    let sigstore = TestSigstore::new();
    let mut doc = sigstore.attest(PURL, &tarball_sha512());
    doc["attestations"]
        .as_array_mut()
        .expect("a list")
        .truncate(1);
    assert_eq!(
        refused(&doc, &root_of(&sigstore)),
        ProvenanceProblem::NoProvenance
    );
}

#[test]
fn a_scoped_package_is_named_as_npm_writes_its_purl() {
    assert_eq!(
        statement::purl("@sigstore/sign", "2.0.0"),
        "pkg:npm/%40sigstore/sign@2.0.0"
    );
    assert_eq!(statement::purl("left-pad", "1.3.0"), PURL);
}

#[test]
fn the_pinned_public_good_root_is_read() {
    let root = TrustedRoot::public_good();
    assert_eq!(root.counts(), [2, 2, 2, 1]);
}

/// The SHA-512 of the `sigstore@5.0.0` tarball.
const REAL_SHA512: &str = "849a897e81bf7b8a8541a6ae40bd3473a27a16b1cb0462ad905bd6dc96d34881053a12eb4a375233f81677fc9439f628fe0b0445e8535c60b5559597fbd5f80e";

/// A real npm provenance (`sigstore@5.0.0`, see provenance/sigstore/README.md), offline,
/// against the pinned public-good root: long expired, its certificate is checked at the
/// time Rekor recorded it.
#[test]
fn a_real_npm_provenance_verifies_against_the_public_good_root() {
    let doc = include_bytes!("../sigstore/npm-sigstore-5.0.0-attestations.json");
    let sha512: [u8; 64] = (0..64)
        .map(|i| u8::from_str_radix(&REAL_SHA512[2 * i..2 * i + 2], 16).expect("hex"))
        .collect::<Vec<_>>()
        .try_into()
        .expect("64 bytes");
    let root = TrustedRoot::public_good();
    let provenance =
        verify_npm_provenance(doc, "sigstore", "5.0.0", &sha512, &root).expect("verified");
    let cert = &provenance.certificate;
    assert_eq!(
        cert.source_repository.as_deref(),
        Some("https://github.com/sigstore/sigstore-js")
    );
    assert_eq!(
        cert.source_commit.as_deref(),
        Some("7d2900eca1c22b3f87c13987c8d4b7c9a29b733a")
    );
    assert_eq!(
        cert.subject,
        "https://github.com/sigstore/sigstore-js/.github/workflows/release.yml@refs/heads/main"
    );
    assert_eq!(provenance.statement.commit, cert.source_commit);
    let wrong = verify_npm_provenance(doc, "sigstore", "5.0.1", &sha512, &root)
        .expect_err("another version");
    assert!(wrong.to_string().contains("`sigstore@5.0.1`"), "{wrong}");
}

/// The real `sigstore@5.0.0` bundle's signing certificate and the time Rekor recorded it.
fn real_certificate() -> (Vec<u8>, i64) {
    let doc: Value = serde_json::from_slice(include_bytes!(
        "../sigstore/npm-sigstore-5.0.0-attestations.json"
    ))
    .expect("JSON");
    let bundle = doc["attestations"]
        .as_array()
        .expect("a list")
        .iter()
        .find(|a| a["predicateType"] == "https://slsa.dev/provenance/v1")
        .expect("SLSA provenance");
    let material = &bundle["bundle"]["verificationMaterial"];
    let certificate = STANDARD
        .decode(material["certificate"]["rawBytes"].as_str().expect("text"))
        .expect("base64");
    let time = material["tlogEntries"][0]["integratedTime"]
        .as_str()
        .expect("text")
        .parse()
        .expect("a number");
    (certificate, time)
}

/// The real certificate's SCT, by the public-good CT log, verifies; with the last byte of
/// its signature flipped (the SCT list's last byte), it does not.
#[test]
fn the_real_certificate_s_sct_verifies_and_a_flipped_signature_is_refused() {
    let (mut certificate, time) = real_certificate();
    let root = TrustedRoot::public_good();
    let issuer = cert::verify_chain(&certificate, &root, time).expect("chained");
    sct::check(&certificate, &issuer, &root.ctlogs).expect("its SCT verifies");
    let list = {
        use x509_cert::der::Decode as _;
        let parsed = x509_cert::Certificate::from_der(&certificate).expect("a certificate");
        let extensions = parsed.tbs_certificate.extensions.expect("extensions");
        let sct_list = extensions.iter().find(|e| e.extn_id == sct::SCT_LIST);
        sct_list
            .expect("an SCT list")
            .extn_value
            .as_bytes()
            .to_vec()
    };
    let at = certificate
        .windows(list.len())
        .position(|w| w == list.as_slice())
        .expect("the list in the certificate");
    certificate[at + list.len() - 1] ^= 1;
    let problem = sct::check(&certificate, &issuer, &root.ctlogs).expect_err("refused");
    assert!(
        matches!(&problem, ProvenanceProblem::CertificateTimestamp(why) if why.contains("does not verify")),
        "{problem:?}"
    );
    assert!(problem.to_string().contains("does not verify"), "{problem}");
}

/// Without the CT log that signed its SCT, or with that log not valid at the SCT's time,
/// the real provenance is refused.
#[test]
fn the_real_provenance_without_its_ct_log_is_refused() {
    let (certificate, time) = real_certificate();
    let mut root = TrustedRoot::public_good();
    let issuer = cert::verify_chain(&certificate, &root, time).expect("chained");
    for log in &mut root.ctlogs {
        log.valid = trust::Validity {
            start: 0,
            end: Some(1),
        };
    }
    let problem = sct::check(&certificate, &issuer, &root.ctlogs).expect_err("refused");
    assert!(
        matches!(problem, ProvenanceProblem::NoCertificateTimestamp(_)),
        "{problem:?}"
    );
    root.ctlogs.clear();
    let doc = include_bytes!("../sigstore/npm-sigstore-5.0.0-attestations.json");
    let sha512: [u8; 64] = (0..64)
        .map(|i| u8::from_str_radix(&REAL_SHA512[2 * i..2 * i + 2], 16).expect("hex"))
        .collect::<Vec<_>>()
        .try_into()
        .expect("64 bytes");
    let err = verify_npm_provenance(doc, "sigstore", "5.0.0", &sha512, &root).expect_err("refused");
    assert!(
        matches!(err.problem, ProvenanceProblem::NoCertificateTimestamp(_)),
        "{err:?}"
    );
    assert!(
        err.to_string().contains(
            "the signing certificate carries no signed certificate timestamp of a CT log of the trusted root"
        ),
        "{err}"
    );
}

/// A test bundle's leaf carries its CA's CT log's SCT: refused by a trusted root that
/// names no CT log, or another one.
#[test]
fn a_test_root_without_the_ct_log_is_refused() {
    let sigstore = TestSigstore::new();
    let doc = sigstore.attest(PURL, &tarball_sha512());
    let other = TestSigstore::new();
    for ctlogs in [Value::Array(vec![]), root_json(&other)["ctlogs"].clone()] {
        let mut json = root_json(&sigstore);
        json["ctlogs"] = ctlogs;
        let root = TrustedRoot::from_json(json.to_string().as_bytes()).expect("read");
        assert!(matches!(
            refused(&doc, &root),
            ProvenanceProblem::NoCertificateTimestamp(_)
        ));
    }
}

fn root_json(sigstore: &TestSigstore) -> Value {
    serde_json::from_str(&sigstore.trusted_root_json()).expect("JSON")
}
