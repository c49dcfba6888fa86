//! The issuer an OpenPGP signature names (RFC 9580): its Issuer Fingerprint subpacket
//! (33), else its Issuer Key ID (16, or a version 3 signature's key id). What the
//! signature claims, read without verifying it.

/// The issuer of the armored signature `armored`: its fingerprint in upper-case hex, or
/// `keyid:` and the key id's 16 hex digits; `None` when it cannot be read.
pub(super) fn issuer(armored: &str) -> Option<String> {
    let bytes = super::armored_body(armored)?;
    let body = signature_packet(&bytes)?;
    match *body.first()? {
        3 => Some(format!("keyid:{}", hex(body.get(7..15)?))),
        version @ 4..=6 => {
            let wide = version == 6;
            let (hashed, rest) = subpackets(body.get(4..)?, wide)?;
            let (unhashed, _) = subpackets(rest, wide)?;
            let all = || hashed.iter().chain(unhashed.iter());
            all()
                .find(|(kind, data)| *kind == 33 && data.len() > 1)
                .map(|(_, data)| hex(&data[1..]))
                .or_else(|| {
                    all()
                        .find(|(kind, data)| *kind == 16 && data.len() == 8)
                        .map(|(_, data)| format!("keyid:{}", hex(data)))
                })
        }
        _ => None,
    }
}

/// The body of the first packet of `bytes` when it is a signature packet (tag 2).
fn signature_packet(bytes: &[u8]) -> Option<&[u8]> {
    let first = *bytes.first()?;
    if first & 0x80 == 0 {
        return None;
    }
    let (tag, len, at) = if first & 0x40 != 0 {
        let (len, used) = new_length(bytes.get(1..)?, false)?;
        (first & 0x3f, len, 1 + used)
    } else {
        let (len, used) = match first & 3 {
            0 => (usize::from(*bytes.get(1)?), 1),
            1 => (
                usize::from(u16::from_be_bytes(bytes.get(1..3)?.try_into().ok()?)),
                2,
            ),
            2 => (
                u32::from_be_bytes(bytes.get(1..5)?.try_into().ok()?) as usize,
                4,
            ),
            _ => (bytes.len() - 1, 0),
        };
        ((first >> 2) & 0x0f, len, 1 + used)
    };
    (tag == 2).then_some(())?;
    bytes.get(at..at.checked_add(len)?)
}

/// A new-format packet length (a partial length is not read), or with `subpacket` a
/// subpacket's (where 224 to 254 start two-octet lengths too): the length and the octets
/// it took.
fn new_length(bytes: &[u8], subpacket: bool) -> Option<(usize, usize)> {
    let first = usize::from(*bytes.first()?);
    let two = if subpacket { 254 } else { 223 };
    match first {
        0..=191 => Some((first, 1)),
        192..=254 if first <= two => {
            Some((((first - 192) << 8) + usize::from(*bytes.get(1)?) + 192, 2))
        }
        255 => Some((
            u32::from_be_bytes(bytes.get(1..5)?.try_into().ok()?) as usize,
            5,
        )),
        _ => None,
    }
}

/// Subpackets, each as its type and data, and what follows their area.
type Subpackets<'a> = (Vec<(u8, &'a [u8])>, &'a [u8]);

/// One area of subpackets (its length in 2 octets, 4 for a version 6 signature): each as
/// its type (the critical bit off) and data, and what follows the area.
fn subpackets(bytes: &[u8], wide: bool) -> Option<Subpackets<'_>> {
    let (len, at) = if wide {
        (
            u32::from_be_bytes(bytes.get(..4)?.try_into().ok()?) as usize,
            4usize,
        )
    } else {
        (
            usize::from(u16::from_be_bytes(bytes.get(..2)?.try_into().ok()?)),
            2,
        )
    };
    let mut area = bytes.get(at..at.checked_add(len)?)?;
    let rest = &bytes[at + len..];
    let mut out = Vec::new();
    while !area.is_empty() {
        let (len, used) = new_length(area, true)?;
        let packet = area.get(used..used.checked_add(len)?)?;
        let (&kind, data) = packet.split_first()?;
        out.push((kind & 0x7f, data));
        area = &area[used + len..];
    }
    Some((out, rest))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02X}")).collect()
}
