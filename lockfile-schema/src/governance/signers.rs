//! `allowed_signers`: the SSH keys whose signatures on approvals a policy trusts, in
//! OpenSSH's own format (`ssh-keygen(1)`, "ALLOWED SIGNERS"), one key a line:
//!
//! ```text
//! alice@example.com,alice@acme.dev namespaces="berth-approval" ssh-ed25519 AAAAC3Nza…
//! *@acme.dev valid-after="20260101",valid-before="20270101Z" ssh-rsa AAAAB3Nza… laptop
//! ```
//!
//! Read here as text (principals, options and the key's blob); signatures are checked
//! against the keys by the runtime.

use base64::Engine as _;

use crate::diagnostic::Diagnostic;

/// The namespace approvals are signed in (`ssh-keygen -Y sign -n berth-approval`), so a
/// signature made for anything else (a git commit, a file) is never taken for one.
pub const SIGNATURE_NAMESPACE: &str = "berth-approval";

/// The longest principal berth reads, in bytes: a principal pattern of an allowed-signers
/// line, an approval's `signer` and the principal its `by` names. Far above any email,
/// and small enough that matching one against a pattern is cheap.
pub const MAX_PRINCIPAL_BYTES: usize = 1024;

/// The namespace git signs commits and tags in (`git commit -S`, `git tag -s` with
/// `gpg.format=ssh`), and `git verify-commit` checks.
pub const GIT_NAMESPACE: &str = "git";

/// One allowed-signers file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowedSigners {
    entries: Vec<SignerEntry>,
}

/// One line: who the key speaks for, where and when, and the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignerEntry {
    /// Its line in the file.
    pub line: usize,
    /// The principals, a comma-separated list of patterns (`*`, `?`, `!` to exclude).
    pub principals: String,
    /// `cert-authority`: the key signs certificates, which berth does not read.
    pub cert_authority: bool,
    /// `namespaces="…"`: the namespaces the key may sign in (all when not given).
    pub namespaces: Option<String>,
    /// `valid-after`, as `YYYYMMDDHHMMSS` in UTC.
    pub valid_after: Option<String>,
    /// `valid-before`, as `YYYYMMDDHHMMSS` in UTC.
    pub valid_before: Option<String>,
    /// The key type as written (`ssh-ed25519`).
    pub key_type: String,
    /// The key, in SSH's wire format (the base64 text decoded).
    pub key_blob: Vec<u8>,
}

/// One allowed-signers file as a policy names it: the policy file, the value it wrote and
/// the file that value points to (as labels), and what that file says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signers {
    /// The policy file that names it.
    pub policy: String,
    /// `allowed_signers` as that file writes it.
    pub written: String,
    /// The allowed-signers file, as a label.
    pub file: String,
    /// Its keys.
    pub list: AllowedSigners,
}

impl AllowedSigners {
    /// Every key line, in file order.
    pub fn entries(&self) -> &[SignerEntry] {
        &self.entries
    }
}

impl SignerEntry {
    /// Whether the line names `principal`: some pattern matches it and no `!` pattern does.
    /// A principal longer than [`MAX_PRINCIPAL_BYTES`] is named by no line.
    pub fn names(&self, principal: &str) -> bool {
        principal.len() <= MAX_PRINCIPAL_BYTES && pattern_list_matches(&self.principals, principal)
    }

    /// Whether the key may sign in `namespace`.
    pub fn allows_namespace(&self, namespace: &str) -> bool {
        self.namespaces
            .as_deref()
            .is_none_or(|list| pattern_list_matches(list, namespace))
    }

    /// Whether the key was valid at `at` (RFC 3339 in UTC, `2026-11-25T07:21:58Z`, as an
    /// approval records its time): `valid-after <= at <= valid-before`, as `ssh-keygen -Y
    /// verify` checks a signature's time. A time berth cannot read is outside.
    pub fn valid_at(&self, at: &str) -> bool {
        let Some(at) = rfc3339_digits(at) else {
            return self.valid_after.is_none() && self.valid_before.is_none();
        };
        self.valid_after.as_ref().is_none_or(|after| at >= *after)
            && self
                .valid_before
                .as_ref()
                .is_none_or(|before| at <= *before)
    }

    /// Whether the key was valid at `seconds` since the epoch (a commit's committer date, a
    /// tag's tagger date, as `git verify-commit` passes them to `ssh-keygen -Y verify` as
    /// `-Overify-time`); `None`, an object without a date, is valid only on a line without
    /// `valid-after` or `valid-before`.
    pub fn valid_at_seconds(&self, seconds: Option<i64>) -> bool {
        match seconds.and_then(utc_time) {
            Some(at) => self.valid_at(&at),
            None => self.valid_after.is_none() && self.valid_before.is_none(),
        }
    }
}

/// Parses an allowed-signers file; `label` names it in messages. Blank lines and `#`
/// comments are skipped; a line berth cannot read is an error at its place (OpenSSH
/// skips it with a message, but a key meant to be trusted must not vanish silently).
pub fn parse_allowed_signers(text: &str, label: &str) -> Result<AllowedSigners, Diagnostic> {
    let mut entries = Vec::new();
    let mut offset = 0;
    for (i, raw) in text.split_inclusive('\n').enumerate() {
        let start = offset;
        offset += raw.len();
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = start + (raw.len() - raw.trim_start().len());
        let entry = parse_line(line, i + 1).map_err(|message| {
            Diagnostic::at(
                label,
                text,
                at,
                format!("{message}; see the ALLOWED SIGNERS section of ssh-keygen(1)"),
            )
        })?;
        entries.push(entry);
    }
    Ok(AllowedSigners { entries })
}

/// `principals [options] keytype base64 [comment]`.
fn parse_line(line: &str, number: usize) -> Result<SignerEntry, String> {
    let (principals, rest) = next_field(line);
    let principals = principals.trim_matches('"').to_owned();
    if principals.is_empty() || rest.is_empty() {
        return Err("not `principals [options] keytype base64`".to_owned());
    }
    if let Some(long) = principals
        .split(',')
        .find(|p| p.len() > MAX_PRINCIPAL_BYTES)
    {
        return Err(format!(
            "a principal is {} bytes long, more than the {MAX_PRINCIPAL_BYTES} berth reads; write an email or a short pattern",
            long.len()
        ));
    }
    let (second, after) = next_field(rest);
    let (options, key_type, after) = if is_key_type(second) {
        ("", second, after)
    } else {
        let (key_type, after) = next_field(after);
        (second, key_type, after)
    };
    let mut entry = SignerEntry {
        line: number,
        principals,
        cert_authority: false,
        namespaces: None,
        valid_after: None,
        valid_before: None,
        key_type: key_type.to_owned(),
        key_blob: Vec::new(),
    };
    for option in split_options(options) {
        apply_option(&mut entry, option)?;
    }
    let (encoded, _comment) = next_field(after);
    if !is_key_type(key_type) || encoded.is_empty() {
        return Err(format!("`{key_type}` is not a key type berth knows"));
    }
    entry.key_blob = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|e| format!("the key is not base64 ({e})"))?;
    let named = entry
        .key_blob
        .get(4..)
        .zip(entry.key_blob.get(..4))
        .and_then(|(rest, len)| {
            let len = u32::from_be_bytes(len.try_into().ok()?) as usize;
            rest.get(..len)
        });
    if named != Some(key_type.as_bytes()) {
        return Err(format!("the key is not a `{key_type}` key"));
    }
    Ok(entry)
}

fn apply_option(entry: &mut SignerEntry, option: &str) -> Result<(), String> {
    let (name, value) = match option.split_once('=') {
        Some((name, value)) => (name, Some(value.trim_matches('"'))),
        None => (option, None),
    };
    match (name.to_ascii_lowercase().as_str(), value) {
        ("cert-authority", None) => entry.cert_authority = true,
        ("namespaces", Some(list)) => entry.namespaces = Some(list.to_owned()),
        ("valid-after", Some(time)) => entry.valid_after = Some(ssh_time(time)?),
        ("valid-before", Some(time)) => entry.valid_before = Some(ssh_time(time)?),
        _ => return Err(format!("the option `{option}` is not one berth reads")),
    }
    Ok(())
}

/// The field at the start of `line` (a `"`-quoted run counts as one), and the rest
/// after the blanks that follow it.
fn next_field(line: &str) -> (&str, &str) {
    let mut quoted = false;
    let end = line
        .char_indices()
        .find(|&(_, c)| {
            if c == '"' {
                quoted = !quoted;
            }
            !quoted && c.is_whitespace()
        })
        .map_or(line.len(), |(i, _)| i);
    (&line[..end], line[end..].trim_start())
}

/// The options, split at commas outside quotes.
fn split_options(options: &str) -> impl Iterator<Item = &str> {
    let mut quoted = false;
    options
        .split(move |c| {
            if c == '"' {
                quoted = !quoted;
            }
            c == ',' && !quoted
        })
        .filter(|o| !o.is_empty())
}

fn is_key_type(word: &str) -> bool {
    ["ssh-", "ecdsa-sha2-", "sk-ssh-", "sk-ecdsa-", "rsa-sha2-"]
        .iter()
        .any(|p| word.starts_with(p))
}

/// `YYYYMMDD[HHMM[SS]][Z]` as `YYYYMMDDHHMMSS`. berth reads it in UTC with or without
/// the `Z` (OpenSSH reads a time without it in the local zone).
fn ssh_time(time: &str) -> Result<String, String> {
    let digits = time.strip_suffix(['Z', 'z']).unwrap_or(time);
    let ok = digits.bytes().all(|b| b.is_ascii_digit());
    match digits.len() {
        8 if ok => Ok(format!("{digits}000000")),
        12 if ok => Ok(format!("{digits}00")),
        14 if ok => Ok(digits.to_owned()),
        _ => Err(format!("`{time}` is not a time `YYYYMMDD[HHMM[SS]][Z]`")),
    }
}

/// `seconds` since the epoch as RFC 3339 in UTC (`2026-11-25T07:21:58Z`); `None` out of range.
pub fn utc_time(seconds: i64) -> Option<String> {
    let at = jiff::Timestamp::from_second(seconds).ok()?;
    Some(at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
}

/// `2026-11-25T07:21:58Z` as `20261125072158`.
fn rfc3339_digits(at: &str) -> Option<String> {
    let digits: String = at
        .strip_suffix('Z')?
        .chars()
        .filter(|c| !matches!(c, '-' | ':' | 'T'))
        .collect();
    (digits.len() == 14 && digits.bytes().all(|b| b.is_ascii_digit())).then_some(digits)
}

/// OpenSSH's pattern lists: comma-separated patterns with `*` and `?`; a match of a
/// pattern starting with `!` excludes, whatever else matches.
fn pattern_list_matches(list: &str, text: &str) -> bool {
    let mut matched = false;
    for pattern in list.split(',') {
        match pattern.strip_prefix('!') {
            Some(negated) if wildcard(negated.as_bytes(), text.as_bytes()) => return false,
            Some(_) => {}
            None => matched |= wildcard(pattern.as_bytes(), text.as_bytes()),
        }
    }
    matched
}

/// `*` any run of characters, `?` any one, the rest literal. The two-pointer glob match:
/// on a mismatch only the latest `*` is retried, one character further, since an earlier
/// one can never do better; so a match takes at most `pattern.len() * text.len()` steps,
/// whatever the stars, and a pattern without stars one pass.
fn wildcard(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    // Where the latest `*` is in the pattern, and where in the text its run ends now.
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some(b'*') => {
                star = Some((p, t));
                p += 1;
            }
            Some(&c) if c == b'?' || c == text[t] => {
                p += 1;
                t += 1;
            }
            _ => match star {
                Some((star_p, star_t)) => {
                    star = Some((star_p, star_t + 1));
                    p = star_p + 1;
                    t = star_t + 1;
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ssh-ed25519` and 32 zero bytes, in the wire format.
    fn ed25519_base64() -> String {
        let mut blob = Vec::new();
        blob.extend_from_slice(&11u32.to_be_bytes());
        blob.extend_from_slice(b"ssh-ed25519");
        blob.extend_from_slice(&32u32.to_be_bytes());
        blob.extend_from_slice(&[0; 32]);
        base64::engine::general_purpose::STANDARD.encode(blob)
    }

    #[test]
    fn lines_with_and_without_options() {
        let key = ed25519_base64();
        let text = format!(
            "# team\n\nalice@example.com,bob@example.com ssh-ed25519 {key} laptop\n\"*@acme.dev,!eve@acme.dev\" namespaces=\"git,berth-*\",valid-after=\"20260101\",valid-before=\"202701011200Z\" ssh-ed25519 {key}\n"
        );
        let signers = parse_allowed_signers(&text, "s").expect("valid");
        let [alice, acme] = signers.entries() else {
            panic!("two entries: {signers:?}");
        };
        assert_eq!(alice.line, 3);
        assert!(alice.names("bob@example.com") && !alice.names("carol@example.com"));
        assert!(alice.allows_namespace("anything") && alice.valid_at("2000-01-01T00:00:00Z"));
        assert!(acme.names("carol@acme.dev") && !acme.names("eve@acme.dev"));
        assert!(acme.allows_namespace(SIGNATURE_NAMESPACE) && !acme.allows_namespace("file"));
        assert!(acme.valid_at("2026-01-01T00:00:00Z") && acme.valid_at("2027-01-01T12:00:00Z"));
        assert!(!acme.valid_at("2025-12-31T23:59:59Z") && !acme.valid_at("2027-01-01T12:00:01Z"));
        assert!(!acme.valid_at("yesterday"));
        assert_eq!(
            utc_time(1_767_225_600).as_deref(),
            Some("2026-01-01T00:00:00Z")
        );
        assert!(acme.valid_at_seconds(Some(1_767_225_600)));
        assert!(!acme.valid_at_seconds(Some(1_767_225_599)) && !acme.valid_at_seconds(None));
        assert!(alice.valid_at_seconds(None));
        assert_eq!(acme.key_type, "ssh-ed25519");
        assert_eq!(acme.key_blob.len(), 4 + 11 + 4 + 32);
    }

    #[test]
    fn bad_lines_name_their_place() {
        let key = ed25519_base64();
        for (text, needle) in [
            ("alice\n".to_owned(), "not `principals"),
            (format!("a ssh-rsa {key}\n"), "is not a `ssh-rsa` key"),
            ("a ssh-ed25519 %%%\n".to_owned(), "not base64"),
            (format!("a nonsense=1 ssh-ed25519 {key}\n"), "`nonsense=1`"),
            (
                format!("a valid-after=\"2026\" ssh-ed25519 {key}\n"),
                "`2026`",
            ),
            (format!("a foo {key}\n"), "the option `foo`"),
            (
                format!("a cert-authority foo {key}\n"),
                "`foo` is not a key type",
            ),
        ] {
            let e = parse_allowed_signers(&format!("# x\n  {text}"), "s").expect_err(&text);
            assert_eq!((e.line, e.column), (2, 3), "{e}");
            assert!(e.message.contains(needle), "{needle}: {e}");
        }
    }

    #[test]
    fn patterns() {
        assert!(pattern_list_matches("a*,b", "abc"));
        assert!(pattern_list_matches("?b", "ab") && !pattern_list_matches("?b", "b"));
        assert!(!pattern_list_matches("*,!x*", "xy"));
        assert!(!pattern_list_matches("", "a"));
    }

    /// The backtracking matcher the two-pointer one replaced: exponential in the stars,
    /// and the reference it must agree with.
    fn naive(pattern: &[u8], text: &[u8]) -> bool {
        match pattern.split_first() {
            None => text.is_empty(),
            Some((b'*', rest)) => (0..=text.len()).any(|i| naive(rest, &text[i..])),
            Some((b'?', rest)) => !text.is_empty() && naive(rest, &text[1..]),
            Some((c, rest)) => text.first() == Some(c) && naive(rest, &text[1..]),
        }
    }

    #[test]
    fn wildcard_agrees_with_backtracking_on_every_short_case() {
        let alphabet = [b'a', b'b', b'@'];
        let words = |max: usize, extra: &[u8]| {
            let symbols: Vec<u8> = alphabet.iter().chain(extra).copied().collect();
            let mut all = vec![Vec::new()];
            let mut layer = vec![Vec::new()];
            for _ in 0..max {
                layer = layer
                    .iter()
                    .flat_map(|w: &Vec<u8>| {
                        symbols.iter().map(move |&c| {
                            let mut w = w.clone();
                            w.push(c);
                            w
                        })
                    })
                    .collect();
                all.extend(layer.iter().cloned());
            }
            all
        };
        let patterns = words(4, b"*?");
        let texts = words(5, b"");
        for pattern in &patterns {
            for text in &texts {
                assert_eq!(
                    wildcard(pattern, text),
                    naive(pattern, text),
                    "{:?} against {:?}",
                    String::from_utf8_lossy(pattern),
                    String::from_utf8_lossy(text)
                );
            }
        }
    }

    #[test]
    fn a_pathological_principal_is_matched_at_once() {
        // 40 000 `@` against patterns whose stars the backtracking matcher retried at
        // every position (seconds for two stars, far longer for more).
        let signer = "@".repeat(40_000);
        for pattern in ["*@*.example.com", "*@*@*@*.example.com", "*@*@*@*@*"] {
            let started = std::time::Instant::now();
            let matched = wildcard(pattern.as_bytes(), signer.as_bytes());
            assert_eq!(matched, pattern.ends_with("@*"), "{pattern}");
            assert!(
                started.elapsed() < std::time::Duration::from_secs(1),
                "{pattern}: {:?}",
                started.elapsed()
            );
        }
        assert!(wildcard(b"*a*b*c", b"xxaxxbxxc") && !wildcard(b"*a*b*c", b"xxaxxcxxb"));
    }

    #[test]
    fn principals_are_bounded() {
        let key = ed25519_base64();
        let long = format!("{}@example.com", "a".repeat(MAX_PRINCIPAL_BYTES));
        let text = format!("alice@example.com,{long} ssh-ed25519 {key}\n");
        let e = parse_allowed_signers(&text, "s").expect_err("too long");
        assert!(e.message.contains("more than the 1024 berth reads"), "{e}");
        let signers = parse_allowed_signers(&format!("* ssh-ed25519 {key}\n"), "s").expect("valid");
        let any = &signers.entries()[0];
        assert!(any.names(&"a".repeat(MAX_PRINCIPAL_BYTES)));
        assert!(!any.names(&"a".repeat(MAX_PRINCIPAL_BYTES + 1)));
    }
}
