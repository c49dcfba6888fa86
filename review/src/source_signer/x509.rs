//! The certificate an X.509 (S/MIME) signature carries, as git's `gpg.format=x509` and
//! gitsign make it: a CMS `SignedData` (RFC 5652) whose certificates include the signer's.
//! Read without verifying anything: the certificate's SHA-256 fingerprint and the identity
//! it names (its subject alternative name's e-mail or URI, with the OpenID Connect issuer a
//! Sigstore certificate records), as claimed.

use sha2::{Digest as _, Sha256};

/// `1.2.840.113549.1.7.2`, signed data.
const SIGNED_DATA: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x07, 0x02];
/// `2.5.29.17`, subject alternative name.
const SUBJECT_ALT_NAME: &[u8] = &[0x55, 0x1d, 0x11];
/// `1.3.6.1.4.1.57264.1.1`, Fulcio's OIDC issuer (a raw string).
const FULCIO_ISSUER: &[u8] = &[0x2b, 0x06, 0x01, 0x04, 0x01, 0x83, 0xbf, 0x30, 0x01, 0x01];
/// `1.3.6.1.4.1.57264.1.8`, Fulcio's OIDC issuer (a DER UTF8String).
const FULCIO_ISSUER_V2: &[u8] = &[0x2b, 0x06, 0x01, 0x04, 0x01, 0x83, 0xbf, 0x30, 0x01, 0x08];

/// The signing certificate's `sha256:` fingerprint (hex) and the identity it names.
pub(super) fn signer(armored: &str) -> Option<(String, Option<String>)> {
    let der = super::armored_body(armored)?;
    let (_, info, _) = tlv(&der)?;
    let (_, oid, rest) = tlv(info)?;
    (oid == SIGNED_DATA).then_some(())?;
    let (_, explicit, _) = tlv(rest)?;
    let (_, signed_data, _) = tlv(explicit)?;
    let cert = signing_certificate(signed_data)?;
    let fingerprint = Sha256::digest(cert)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<String>();
    Some((format!("sha256:{fingerprint}"), identity(cert)))
}

/// The whole DER of the certificate whose serial number the first signer names, else the
/// first certificate of `SignedData`.
fn signing_certificate(signed_data: &[u8]) -> Option<&[u8]> {
    let mut fields = Vec::new();
    let mut rest = signed_data;
    while let Some((tag, content, after)) = tlv(rest) {
        fields.push((tag, content, &rest[..rest.len() - after.len()]));
        rest = after;
    }
    let (_, certificates, _) = fields.iter().find(|(tag, ..)| *tag == 0xa0)?;
    let mut certs = Vec::new();
    let mut rest: &[u8] = certificates;
    while let Some((tag, _, after)) = tlv(rest) {
        if tag == 0x30 {
            certs.push(&rest[..rest.len() - after.len()]);
        }
        rest = after;
    }
    let wanted = fields
        .iter()
        .rev()
        .find(|(tag, ..)| *tag == 0x31)
        .and_then(|(_, infos, _)| signer_serial(infos));
    wanted
        .and_then(|serial| certs.iter().find(|c| serial_of(c) == Some(serial)))
        .or(certs.first())
        .copied()
}

/// The serial number `issuerAndSerialNumber` of the first `SignerInfo` names.
fn signer_serial(infos: &[u8]) -> Option<&[u8]> {
    let (_, info, _) = tlv(infos)?;
    let (_, rest) = skip(info)?; // version
    let (_, sid, _) = tlv(rest)?;
    let (_, after_issuer) = skip(sid)?;
    let (_, serial, _) = tlv(after_issuer)?;
    Some(serial)
}

/// A certificate's serial number.
fn serial_of(cert: &[u8]) -> Option<&[u8]> {
    let (_, body, _) = tlv(cert)?;
    let (_, tbs, _) = tlv(body)?;
    let (tag, _, rest) = tlv(tbs)?;
    let rest = if tag == 0xa0 { rest } else { tbs };
    let (_, serial, _) = tlv(rest)?;
    Some(serial)
}

/// The e-mail or URI of the certificate's subject alternative name, with ` via ISSUER`
/// when it records a Fulcio OIDC issuer.
fn identity(cert: &[u8]) -> Option<String> {
    let (_, body, _) = tlv(cert)?;
    let (_, tbs, _) = tlv(body)?;
    let mut rest = tbs;
    let mut extensions = None;
    while let Some((tag, content, after)) = tlv(rest) {
        if tag == 0xa3 {
            extensions = tlv(content).map(|(_, list, _)| list);
        }
        rest = after;
    }
    let mut rest = extensions?;
    let (mut name, mut issuer) = (None, None);
    while let Some((_, extension, after)) = tlv(rest) {
        rest = after;
        let (_, oid, mut value) = tlv(extension)?;
        if let Some((0x01, _, after)) = tlv(value) {
            value = after; // `critical`
        }
        let (_, octets, _) = tlv(value)?;
        if oid == SUBJECT_ALT_NAME {
            name = alt_name(octets);
        } else if oid == FULCIO_ISSUER {
            issuer = std::str::from_utf8(octets).ok().map(str::to_owned);
        } else if oid == FULCIO_ISSUER_V2 {
            issuer =
                tlv(octets).and_then(|(_, s, _)| std::str::from_utf8(s).ok().map(str::to_owned));
        }
    }
    let name = name?;
    Some(match issuer {
        Some(issuer) => format!("{name} via {issuer}"),
        None => name,
    })
}

/// The first `rfc822Name` ([1]) or URI ([6]) of `GeneralNames`.
fn alt_name(octets: &[u8]) -> Option<String> {
    let (_, mut names, _) = tlv(octets)?;
    while let Some((tag, content, after)) = tlv(names) {
        if matches!(tag, 0x81 | 0x86) {
            return std::str::from_utf8(content).ok().map(str::to_owned);
        }
        names = after;
    }
    None
}

/// Skips one element: its tag and what follows it.
fn skip(bytes: &[u8]) -> Option<(u8, &[u8])> {
    tlv(bytes).map(|(tag, _, rest)| (tag, rest))
}

/// One DER element (single-octet tags, definite lengths of up to four octets): its tag,
/// its content and what follows it.
fn tlv(bytes: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = bytes.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let octets = usize::from(first & 0x7f);
        if !(1..=4).contains(&octets) {
            return None;
        }
        let len = rest
            .get(..octets)?
            .iter()
            .fold(0usize, |n, &b| (n << 8) | usize::from(b));
        (len, &rest[octets..])
    };
    Some((tag, rest.get(..len)?, &rest[len..]))
}
