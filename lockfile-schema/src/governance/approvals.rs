//! `plugins.approvals.toml`: which capability surface of each plugin was approved, by whom
//! and when, and the approver's SSH signature over that when it is signed. Written
//! canonically (sorted by plugin), so it diffs and merges like code.

use serde::{Deserialize, Serialize};

use super::signers::MAX_PRINCIPAL_BYTES;
use crate::diagnostic::Diagnostic;
use crate::lock::toml_string;

/// The format version this berth writes and reads.
pub const APPROVALS_VERSION: i64 = 1;

const HEADER: &str =
    "# This file is written by `berth plugins approve`; review changes to it like code.\n";

/// The version of [`Approval::signed_payload`]'s document. Version 1 had no `signer`: a
/// record signed that way is refused, and signed again.
pub const SIGNED_PAYLOAD_VERSION: u32 = 2;

/// One plugin's approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approval {
    /// The plugin's locked name.
    pub plugin: String,
    /// The digest of its surface (`sha256:HEX`) when it was approved.
    pub surface: String,
    /// Who approved it: `Name <email>`, or a name alone.
    pub by: String,
    /// When, RFC 3339 in UTC.
    pub at: String,
    /// The approver's signature, when the approval is signed.
    pub signature: Option<ApprovalSignature>,
    /// Who signed the plugin's git commit or tag when it was approved, as the lock's
    /// `signature` names a signer (`ssh SHA256:…`, `none`): an approval covers a change of
    /// signer only to this one (`[sources] signer_change`).
    pub source_signer: Option<String>,
}

/// An approval's SSH signature (`berth plugins approve --sign`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalSignature {
    /// The principal of the allowed-signers file the key is listed for.
    pub signer: String,
    /// The signature, armored as `ssh-keygen -Y sign` writes it (`-----BEGIN SSH
    /// SIGNATURE-----` to `-----END SSH SIGNATURE-----`, without a final line feed).
    pub armored: String,
}

/// An `[[approval]]` as the file writes it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Record {
    plugin: String,
    surface: String,
    by: String,
    at: String,
    signer: Option<String>,
    signature: Option<String>,
    source_signer: Option<String>,
}

/// What a signature covers, in this order ([`Approval::signed_payload`]).
#[derive(Serialize)]
struct Payload<'a> {
    format: &'static str,
    version: u32,
    plugin: &'a str,
    source: &'a str,
    digest_version: u32,
    surface: &'a str,
    capabilities: &'a [&'a str],
    by: &'a str,
    /// Not in version 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    signer: Option<&'a str>,
    at: &'a str,
    /// Only when the approval records it: a record without it is signed over the same
    /// text as before.
    #[serde(skip_serializing_if = "Option::is_none")]
    source_signer: Option<&'a str>,
}

impl Approval {
    /// The text an approval's signature by `signer` is made over: compact JSON of the
    /// payload's version, the plugin's name and locked `source`, the version of its surface
    /// digest and the digest, the `capabilities` its surface has, who approved, the
    /// principal that signed, and when. So a signature holds for this plugin, from this
    /// source, with this surface, approved by this person and signed as this principal,
    /// and for no other record. The key is in the signature; the allowed-signers file says
    /// whom it speaks for.
    pub fn signed_payload(
        &self,
        signer: &str,
        source: &str,
        digest_version: u32,
        capabilities: &[&str],
    ) -> String {
        self.payload(
            SIGNED_PAYLOAD_VERSION,
            Some(signer),
            source,
            digest_version,
            capabilities,
        )
    }

    /// The text berth signed before the signer was in it (payload version 1): only to
    /// tell a record signed that way from an edited one.
    pub fn signed_payload_v1(
        &self,
        source: &str,
        digest_version: u32,
        capabilities: &[&str],
    ) -> String {
        self.payload(1, None, source, digest_version, capabilities)
    }

    fn payload(
        &self,
        version: u32,
        signer: Option<&str>,
        source: &str,
        digest_version: u32,
        capabilities: &[&str],
    ) -> String {
        let payload = Payload {
            format: "berth-approval",
            version,
            plugin: &self.plugin,
            source,
            digest_version,
            surface: &self.surface,
            capabilities,
            by: &self.by,
            signer,
            at: &self.at,
            // Version 1 is read only to tell a record signed so from an edited one.
            source_signer: self.source_signer.as_deref().filter(|_| version > 1),
        };
        serde_json::to_string(&payload).expect("strings serialise")
    }

    /// The principal `by` names, which the signing key must be listed for
    /// ([`principal_of`]).
    pub fn by_principal(&self) -> &str {
        principal_of(&self.by)
    }
}

/// The principal an approver (`by`, `--by`) names: the email between the last `<` and a
/// closing `>` (`alice@example.com` of `Alice <alice@example.com>`), else the whole text;
/// trimmed.
pub fn principal_of(by: &str) -> &str {
    let by = by.trim();
    by.rsplit_once('<')
        .and_then(|(_, rest)| rest.strip_suffix('>'))
        .map(str::trim)
        .filter(|email| !email.is_empty())
        .unwrap_or(by)
}

/// Every approval, sorted by plugin.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Approvals {
    approvals: Vec<Approval>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Wire {
    version: i64,
    #[serde(default)]
    approval: Vec<Record>,
}

/// Parses an approvals file; `label` names it in messages.
pub fn parse_approvals(text: &str, label: &str) -> Result<Approvals, Diagnostic> {
    let wire: Wire = toml::from_str(text).map_err(|e| {
        let offset = e.span().map_or(0, |s| s.start);
        Diagnostic::at(
            label,
            text,
            offset,
            format!(
                "not an approvals file: {}; `berth plugins approve` writes it",
                e.message().trim_end()
            ),
        )
    })?;
    if wire.version != APPROVALS_VERSION {
        return Err(Diagnostic::at(
            label,
            text,
            text.find("version").unwrap_or(0),
            format!(
                "approvals file version {} is not {APPROVALS_VERSION}, the one this berth reads; upgrade berth",
                wire.version
            ),
        ));
    }
    let mut approvals = Approvals::default();
    for record in wire.approval {
        let approval = approval_of(record).map_err(|(plugin, message)| {
            let needle = format!("plugin = {}", toml_string(&plugin));
            Diagnostic::at(label, text, text.find(&needle).unwrap_or(0), message)
        })?;
        if approvals.get(&approval.plugin).is_some() {
            let needle = format!("plugin = {}", toml_string(&approval.plugin));
            return Err(Diagnostic::at(
                label,
                text,
                text.rfind(&needle).unwrap_or(0),
                format!(
                    "plugin `{}` is approved twice; keep one `[[approval]]` for it (`berth plugins approve {}` writes the current one)",
                    approval.plugin, approval.plugin
                ),
            ));
        }
        approvals.record(approval);
    }
    Ok(approvals)
}

/// A record as an approval: a signer and a signature come together, and the signature
/// is an armored SSH signature. Fails with the plugin and why.
fn approval_of(record: Record) -> Result<Approval, (String, String)> {
    for (field, value) in [("by", Some(&record.by)), ("signer", record.signer.as_ref())] {
        if let Some(value) = value
            && value.len() > MAX_PRINCIPAL_BYTES
        {
            return Err((
                record.plugin.clone(),
                format!(
                    "the approval of `{}` has a `{field}` of {} bytes, more than the {MAX_PRINCIPAL_BYTES} berth reads; run `berth plugins approve {} --sign KEY` again",
                    record.plugin,
                    value.len(),
                    record.plugin
                ),
            ));
        }
    }
    let signature = match (record.signer, record.signature) {
        (None, None) => None,
        (Some(signer), Some(armored)) => {
            // A checkout that turned line feeds into CRLF changes no signature.
            let armored = armored.trim().replace("\r\n", "\n");
            if !is_armored(&armored) {
                return Err((
                    record.plugin.clone(),
                    format!(
                        "the approval of `{}` has a `signature` that is not an SSH signature (`-----BEGIN SSH SIGNATURE-----` ...); run `berth plugins approve {} --sign KEY` again",
                        record.plugin, record.plugin
                    ),
                ));
            }
            Some(ApprovalSignature { signer, armored })
        }
        (signer, _) => {
            let (has, lacks) = if signer.is_some() {
                ("signer", "signature")
            } else {
                ("signature", "signer")
            };
            return Err((
                record.plugin.clone(),
                format!(
                    "the approval of `{}` has a `{has}` and no `{lacks}`; run `berth plugins approve {} --sign KEY` again",
                    record.plugin, record.plugin
                ),
            ));
        }
    };
    Ok(Approval {
        plugin: record.plugin,
        surface: record.surface,
        by: record.by,
        at: record.at,
        signature,
        source_signer: record.source_signer,
    })
}

/// Whether `text` is an armored SSH signature: its two lines of armor around base64.
pub fn is_armored(text: &str) -> bool {
    text.strip_prefix("-----BEGIN SSH SIGNATURE-----\n")
        .and_then(|t| t.strip_suffix("\n-----END SSH SIGNATURE-----"))
        .is_some_and(|body| {
            body.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'\n'))
        })
}

impl Approvals {
    /// The approval of `plugin`, if it has one.
    pub fn get(&self, plugin: &str) -> Option<&Approval> {
        self.approvals.iter().find(|a| a.plugin == plugin)
    }

    /// Records `approval`, replacing the plugin's earlier one.
    pub fn record(&mut self, approval: Approval) {
        match self
            .approvals
            .binary_search_by(|a| a.plugin.as_str().cmp(&approval.plugin))
        {
            Ok(i) => self.approvals[i] = approval,
            Err(i) => self.approvals.insert(i, approval),
        }
    }

    /// Every approval, sorted by plugin.
    pub fn iter(&self) -> impl Iterator<Item = &Approval> {
        self.approvals.iter()
    }

    /// The canonical text.
    pub fn to_toml(&self) -> String {
        let mut out = format!("{HEADER}version = {APPROVALS_VERSION}\n");
        for a in &self.approvals {
            out.push_str(&format!(
                "\n[[approval]]\nplugin = {}\nsurface = {}\nby = {}\nat = {}\n",
                toml_string(&a.plugin),
                toml_string(&a.surface),
                toml_string(&a.by),
                toml_string(&a.at)
            ));
            if let Some(source_signer) = &a.source_signer {
                out.push_str(&format!("source_signer = {}\n", toml_string(source_signer)));
            }
            if let Some(signature) = &a.signature {
                // Armor is base64 and dashes ([`is_armored`]): a literal string holds it
                // as `ssh-keygen` wrote it, line by line.
                out.push_str(&format!(
                    "signer = {}\nsignature = '''\n{}\n'''\n",
                    toml_string(&signature.signer),
                    signature.armored
                ));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn approval(plugin: &str, surface: &str) -> Approval {
        Approval {
            plugin: plugin.to_owned(),
            surface: surface.to_owned(),
            by: "Alice \"A\" <alice@example.com>".to_owned(),
            at: "2026-11-25T06:00:00Z".to_owned(),
            signature: None,
            source_signer: None,
        }
    }

    #[test]
    fn round_trips_byte_for_byte_sorted() {
        let mut approvals = Approvals::default();
        approvals.record(approval("zeta", "sha256:01"));
        approvals.record(approval("alpha", "sha256:02"));
        let text = approvals.to_toml();
        assert!(text.find("alpha").expect("a") < text.find("zeta").expect("z"));
        let parsed = parse_approvals(&text, "a.toml").expect("valid");
        assert_eq!(parsed, approvals);
        assert_eq!(parsed.to_toml(), text);
        approvals.record(approval("zeta", "sha256:03"));
        assert_eq!(
            approvals.get("zeta").map(|a| a.surface.as_str()),
            Some("sha256:03")
        );
        assert_eq!(approvals.iter().count(), 2);
    }

    const ARMORED: &str =
        "-----BEGIN SSH SIGNATURE-----\nU1NIU0lHAAAAAQ==\n-----END SSH SIGNATURE-----";

    #[test]
    fn a_signed_approval_round_trips_and_its_payload_names_everything_it_covers() {
        let mut signed = approval("tools", "sha256:01");
        signed.signature = Some(ApprovalSignature {
            signer: "alice@example.com".to_owned(),
            armored: ARMORED.to_owned(),
        });
        let mut approvals = Approvals::default();
        approvals.record(signed.clone());
        approvals.record(approval("plain", "sha256:02"));
        let text = approvals.to_toml();
        let written = format!("signer = \"alice@example.com\"\nsignature = '''\n{ARMORED}\n'''\n");
        assert!(text.contains(&written), "{text}");
        let parsed = parse_approvals(&text, "a.toml").expect("valid");
        assert_eq!(parsed, approvals);
        assert_eq!(parsed.to_toml(), text);
        assert_eq!(
            signed.signed_payload(
                "alice@example.com",
                "github:acme/tools",
                2,
                &["hooks", "executables"]
            ),
            r#"{"format":"berth-approval","version":2,"plugin":"tools","source":"github:acme/tools","digest_version":2,"surface":"sha256:01","capabilities":["hooks","executables"],"by":"Alice \"A\" <alice@example.com>","signer":"alice@example.com","at":"2026-11-25T06:00:00Z"}"#
        );
        assert_eq!(
            signed.signed_payload_v1("github:acme/tools", 2, &["hooks"]),
            r#"{"format":"berth-approval","version":1,"plugin":"tools","source":"github:acme/tools","digest_version":2,"surface":"sha256:01","capabilities":["hooks"],"by":"Alice \"A\" <alice@example.com>","at":"2026-11-25T06:00:00Z"}"#
        );
        assert_eq!(signed.by_principal(), "alice@example.com");
        // The signer of the source is covered when recorded, and written and read back.
        signed.source_signer = Some("ssh SHA256:abc".to_owned());
        assert!(
            signed
                .signed_payload("alice@example.com", "github:acme/tools", 2, &[])
                .ends_with(r#""at":"2026-11-25T06:00:00Z","source_signer":"ssh SHA256:abc"}"#)
        );
        approvals.record(signed);
        let text = approvals.to_toml();
        assert!(
            text.contains("source_signer = \"ssh SHA256:abc\"\n"),
            "{text}"
        );
        assert_eq!(parse_approvals(&text, "a.toml").expect("valid"), approvals);
    }

    #[test]
    fn a_half_signed_record_is_refused_at_its_plugin() {
        let record =
            "version = 1\n[[approval]]\nplugin = \"a\"\nsurface = \"s\"\nby = \"b\"\nat = \"t\"\n";
        let e = parse_approvals(&format!("{record}signer = \"x\"\n"), "a.toml")
            .expect_err("no signature");
        assert_eq!(e.line, 3, "{e}");
        assert!(
            e.message.contains("has a `signer` and no `signature`"),
            "{e}"
        );
        let crlf = format!(
            "{record}signer = \"x\"\nsignature = '''\r\n{}\r\n'''\n",
            ARMORED.replace('\n', "\r\n")
        );
        let parsed = parse_approvals(&crlf, "a.toml").expect("CRLF armor");
        let signature = parsed.get("a").and_then(|a| a.signature.as_ref());
        assert_eq!(signature.map(|s| s.armored.as_str()), Some(ARMORED));
        let forged = format!("{record}signer = \"x\"\nsignature = \"forged\"\n");
        let e = parse_approvals(&forged, "a.toml").expect_err("not armored");
        assert!(e.message.contains("not an SSH signature"), "{e}");
    }

    #[test]
    fn bad_files_are_refused() {
        let twice = "version = 1\n[[approval]]\nplugin = \"a\"\nsurface = \"s\"\nby = \"b\"\nat = \"t\"\n[[approval]]\nplugin = \"a\"\nsurface = \"s\"\nby = \"b\"\nat = \"t\"\n";
        let e = parse_approvals(twice, "a.toml").expect_err("twice");
        assert_eq!(e.line, 8, "{e}");
        assert!(e.message.contains("approved twice"), "{e}");
        let e = parse_approvals("version = 2\n", "a.toml").expect_err("version");
        assert!(e.message.contains("upgrade berth"), "{e}");
        let e = parse_approvals("version = 1\nextra = 1\n", "a.toml").expect_err("unknown");
        assert_eq!(e.line, 2, "{e}");
        let long = format!(
            "version = 1\n[[approval]]\nplugin = \"a\"\nsurface = \"s\"\nby = \"b\"\nat = \"t\"\nsigner = \"{}\"\nsignature = '''\n{ARMORED}\n'''\n",
            "@".repeat(40_000)
        );
        let e = parse_approvals(&long, "a.toml").expect_err("a long signer");
        assert_eq!(e.line, 3, "{e}");
        assert!(
            e.message
                .contains("a `signer` of 40000 bytes, more than the 1024"),
            "{e}"
        );
    }

    #[test]
    fn the_principal_an_approver_names() {
        for (by, principal) in [
            ("Alice <alice@example.com>", "alice@example.com"),
            ("  Alice < alice@example.com > ", "alice@example.com"),
            ("Alice <a> <alice@example.com>", "alice@example.com"),
            ("alice@example.com", "alice@example.com"),
            ("Alice", "Alice"),
            ("Alice <>", "Alice <>"),
        ] {
            assert_eq!(principal_of(by), principal, "{by}");
        }
    }
}
