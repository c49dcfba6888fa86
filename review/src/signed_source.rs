//! Signed sources (`[sources] require_signed`): a locked git commit's SSH signature, or
//! that of the annotated tag its ref names, checked offline and natively against the
//! policy's allowed-signers files, the way `git verify-commit` and `git verify-tag` check
//! it with `gpg.format=ssh` and `gpg.ssh.allowedSignersFile`:
//!
//! - a commit is signed in its `gpgsig` header; the signed text is the commit object
//!   without that header (git's `parse_buffer_signed_by_header`);
//! - a tag is signed by the armored signature that ends its message; the signed text is
//!   the tag object before the last line that starts a signature (git's
//!   `parse_signed_buffer`);
//! - the signature is in the namespace `git`, by a key some line of the file lists with
//!   that namespace allowed (a line without `namespaces=` allows all), valid at the
//!   committer's (or tagger's) date, which git passes as `-Overify-time`. Which principal
//!   the line names does not matter, as `git verify-commit` first asks `ssh-keygen -Y
//!   find-principals` for any.
//!
//! The objects are handed in as bytes (the resolver reads them); nothing here fetches.

use berth_lockfile_schema::governance::{GIT_NAMESPACE, Policy, Signers, utc_time};
use ssh_key::PublicKey;
use ssh_key::public::KeyData;

use super::signed::{describe, is_key, read_signature};

/// The first line of an SSH signature.
pub(crate) const SSH_BEGIN: &str = "-----BEGIN SSH SIGNATURE-----";

/// The first lines of every signature git knows (OpenPGP, X.509 and SSH), as
/// `get_format_by_sig` recognises them.
const SIGNATURE_BEGINS: [&str; 4] = [
    "-----BEGIN PGP SIGNATURE-----",
    "-----BEGIN PGP MESSAGE-----",
    "-----BEGIN SIGNED MESSAGE-----",
    SSH_BEGIN,
];

/// The objects a locked commit's signature can be on: the commit object and, when the
/// plugin's ref is an annotated tag of that commit, the tag object (each as git stores it,
/// without the `commit SIZE\0` header).
#[derive(Debug, Clone, Copy)]
pub struct SignedObjects<'a> {
    /// The commit's id, for messages.
    pub rev: &'a str,
    /// The commit object.
    pub commit: &'a [u8],
    /// The tag's name and its object.
    pub tag: Option<(&'a str, &'a [u8])>,
}

/// Why a plugin's source does not pass `[sources] require_signed`: the rule, its policy
/// file, and what is wrong, naming the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceRefused {
    /// The rule, as the policy file writes it (`sources.require_signed = "keys"`).
    pub rule: String,
    /// The policy file.
    pub file: String,
    /// What is wrong, and what to do next.
    pub detail: String,
}

/// Checks `objects` against every `[sources] require_signed` file of `policy`: the tag (if
/// any) or the commit must be signed by a key each file lists for `git`. Returns, when it
/// passes, what was signed and by which key (`tag `v1.0` by ssh-ed25519 key SHA256:…`).
pub fn check_signed_source(
    policy: &Policy,
    objects: &SignedObjects<'_>,
) -> Result<Vec<String>, SourceRefused> {
    let mut signed_by = Vec::new();
    for signers in policy.source_signers() {
        match check_with(signers, objects) {
            Ok(by) => signed_by.push(by),
            Err(detail) => {
                return Err(SourceRefused {
                    rule: format!("sources.require_signed = \"{}\"", signers.written),
                    file: signers.policy.clone(),
                    detail,
                });
            }
        }
    }
    Ok(signed_by)
}

/// Why plugin `name`, locked from `source`, does not pass `policy`'s `[sources]
/// require_signed`, as every front end says it: one line naming the plugin, the commit or
/// tag, the key and the rule. `objects` is `None` when the source is not a git repository.
/// `None` when it passes, or when the policy requires nothing.
pub fn unsigned_source(
    policy: &Policy,
    name: &str,
    source: &str,
    objects: Option<&SignedObjects<'_>>,
) -> Option<String> {
    let first = policy.source_signers().first()?;
    let Some(objects) = objects else {
        return Some(format!(
            "plugin `{name}`: `{source}` is not a git repository, and only a git commit or tag can carry the SSH signature the policy requires; lock it from a git repository whose commits or tags are signed [`sources.require_signed = \"{}\"` in `{}`]",
            first.written, first.policy
        ));
    };
    check_signed_source(policy, objects).err().map(|refused| {
        format!(
            "plugin `{name}`: {} [`{}` in `{}`]",
            refused.detail, refused.rule, refused.file
        )
    })
}

/// One signed object, split as git splits it.
pub(crate) struct Signed {
    /// `the commit `abc…`` or `the tag `v1.0``, for messages.
    pub(crate) what: String,
    /// The text the signature is over.
    pub(crate) payload: Vec<u8>,
    /// The armored signature, `None` when the object carries none.
    pub(crate) signature: Option<String>,
    /// The committer's or tagger's date, in seconds since the epoch.
    pub(crate) at: Option<i64>,
    /// What else is wrong with the object (a tag of another commit or name).
    pub(crate) problem: Option<String>,
}

/// Why one object does not pass.
enum Failed {
    /// It carries no SSH signature (none, or an OpenPGP or X.509 one): what it carries.
    Unsigned(String),
    /// It carries one that does not pass: why, naming the key.
    Refused(String),
}

/// The tag, then the commit, held to `signers`: the first that passes, else why the
/// first signed one failed, else that neither is signed.
fn check_with(signers: &Signers, objects: &SignedObjects<'_>) -> Result<String, String> {
    let mut candidates = Vec::with_capacity(2);
    if let Some((name, tag)) = objects.tag {
        candidates.push(split_tag(name, objects.rev, tag));
    }
    candidates.push(split_commit(objects.rev, objects.commit));
    let mut failures = Vec::new();
    for candidate in &candidates {
        match check_one(signers, candidate) {
            Ok(by) => return Ok(by),
            Err(failed) => failures.push(failed),
        }
    }
    if let Some(why) = failures.iter().find_map(|f| match f {
        Failed::Refused(why) => Some(why.clone()),
        Failed::Unsigned(_) => None,
    }) {
        return Err(format!(
            "{why}; sign it again with a key `{}` lists for `{GIT_NAMESPACE}`, or lock a commit that is",
            signers.file
        ));
    }
    let unsigned: Vec<String> = failures
        .into_iter()
        .filter_map(|f| match f {
            Failed::Unsigned(what) => Some(what),
            Failed::Refused(_) => None,
        })
        .collect();
    Err(format!(
        "{}; sign it with a key `{}` lists (`git commit -S` or `git tag -s`, with `gpg.format=ssh`)",
        unsigned.join(", and "),
        signers.file
    ))
}

/// Whether `object` passes `signers`: by whom, or why not.
fn check_one(signers: &Signers, object: &Signed) -> Result<String, Failed> {
    let what = &object.what;
    if let Some(problem) = &object.problem {
        return Err(Failed::Refused(format!("{what} {problem}")));
    }
    let Some(armored) = &object.signature else {
        return Err(Failed::Unsigned(format!("{what} carries no SSH signature")));
    };
    if !armored.starts_with(SSH_BEGIN) {
        return Err(Failed::Unsigned(format!(
            "{what} is signed with OpenPGP or X.509, not with SSH"
        )));
    }
    let refuse = |why: String| Failed::Refused(why);
    let sig = read_signature(armored)
        .map_err(|why| refuse(format!("the SSH signature of {what} is {why}")))?;
    let key = sig.public_key();
    let described = describe(key);
    if sig.namespace() != GIT_NAMESPACE {
        return Err(refuse(format!(
            "{what} is signed by {described} in the namespace `{}`, not `{GIT_NAMESPACE}`",
            sig.namespace()
        )));
    }
    if !super::signed::verifiable(key) {
        return Err(refuse(format!(
            "{what} is signed by {described}; berth verifies {} keys only",
            super::signed::VERIFIABLE
        )));
    }
    if PublicKey::from(key.clone())
        .verify(GIT_NAMESPACE, &object.payload, &sig)
        .is_err()
    {
        return Err(refuse(format!(
            "the signature on {what} by {described} is bad: it was not made over this object"
        )));
    }
    listed(signers, key, object.at)
        .map(|()| format!("{what} by {described}"))
        .map_err(|why| refuse(format!("{what} is signed by {described}, {why}")))
}

/// Whether `signers` lists `key` for the namespace `git` at `at`; if not, why, naming the
/// file and the line.
fn listed(signers: &Signers, key: &KeyData, at: Option<i64>) -> Result<(), String> {
    let file = &signers.file;
    let mut lines = signers.list.entries().iter().filter(|e| is_key(e, key));
    let Some(first) = lines.clone().next() else {
        return Err(format!("which `{file}` does not list"));
    };
    if lines.any(|e| e.allows_namespace(GIT_NAMESPACE) && e.valid_at_seconds(at)) {
        return Ok(());
    }
    let line = first.line;
    Err(if !first.allows_namespace(GIT_NAMESPACE) {
        format!(
            "which `{file}` (line {line}) lets sign only in `{}`, not in `{GIT_NAMESPACE}`",
            first.namespaces.as_deref().unwrap_or_default()
        )
    } else {
        let when = at
            .and_then(utc_time)
            .unwrap_or_else(|| "an unknown time".to_owned());
        format!("which `{file}` (line {line}) does not hold valid at {when}, its date")
    })
}

/// A commit object split as `git verify-commit` splits it (`parse_buffer_signed_by_header`):
/// the `gpgsig` header (and its continuation lines) is the signature and is left out of
/// the payload, as is any other signature header's first line (`gpgsig-sha256`).
pub(crate) fn split_commit(rev: &str, object: &[u8]) -> Signed {
    let mut payload = Vec::with_capacity(object.len());
    let mut signature: Option<Vec<u8>> = None;
    let mut in_signature = false;
    let mut rest = object;
    while !rest.is_empty() {
        let end = rest
            .iter()
            .position(|&b| b == b'\n')
            .map_or(rest.len(), |i| i + 1);
        let (line, after) = rest.split_at(end);
        rest = after;
        if in_signature && line.first() == Some(&b' ') {
            signature
                .get_or_insert_default()
                .extend_from_slice(&line[1..]);
        } else if let Some(sig) = line.strip_prefix(b"gpgsig ") {
            signature.get_or_insert_default().extend_from_slice(sig);
            in_signature = true;
        } else if line.starts_with(b"gpgsig-sha256 ") {
            in_signature = false;
        } else {
            payload.extend_from_slice(line);
            in_signature = false;
            if line == b"\n" {
                // The message: the rest of the object, as it is.
                payload.extend_from_slice(rest);
                break;
            }
        }
    }
    let at = header_time(&payload, b"committer ");
    Signed {
        what: format!("the commit `{rev}`"),
        payload,
        signature: signature.map(|s| String::from_utf8_lossy(&s).into_owned()),
        at,
        problem: None,
    }
}

/// A tag object split as `git verify-tag` splits it (`parse_signed_buffer`): the
/// signature starts at the last line that starts one. The tag must be of `rev`, a commit,
/// under the name `name` it was fetched as.
pub(crate) fn split_tag(name: &str, rev: &str, object: &[u8]) -> Signed {
    let mut start = object.len();
    let mut offset = 0;
    for line in object.split_inclusive(|&b| b == b'\n') {
        if SIGNATURE_BEGINS
            .iter()
            .any(|b| line.starts_with(b.as_bytes()))
        {
            start = offset;
        }
        offset += line.len();
    }
    let (payload, signature) = object.split_at(start);
    let header = |field: &str| {
        payload
            .split(|&b| b == b'\n')
            .take_while(|l| !l.is_empty())
            .find_map(|l| l.strip_prefix(format!("{field} ").as_bytes()))
            .map(|v| String::from_utf8_lossy(v).into_owned())
    };
    let problem = if header("object").as_deref() != Some(rev)
        || header("type").as_deref() != Some("commit")
    {
        Some(format!("does not tag the commit `{rev}`"))
    } else if header("tag").as_deref() != Some(name) {
        Some(format!(
            "was made as the tag `{}`, not `{name}`",
            header("tag").unwrap_or_default()
        ))
    } else {
        None
    };
    Signed {
        what: format!("the tag `{name}`"),
        payload: payload.to_vec(),
        signature: (!signature.is_empty()).then(|| String::from_utf8_lossy(signature).into_owned()),
        at: header_time(payload, b"tagger "),
        problem,
    }
}

/// The date of the `field` header of an object's header lines (`committer NAME <EMAIL>
/// SECONDS ZONE`), as git reads it for `-Overify-time`.
fn header_time(object: &[u8], field: &[u8]) -> Option<i64> {
    let line = object
        .split(|&b| b == b'\n')
        .take_while(|l| !l.is_empty())
        .find_map(|l| l.strip_prefix(field))?;
    let after = &line[line.iter().rposition(|&b| b == b'>')? + 1..];
    std::str::from_utf8(after)
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const REV: &str = "0123456789abcdef0123456789abcdef01234567";

    #[test]
    fn the_refusal_names_the_plugin_the_commit_and_the_rule_as_every_front_end_says_it() {
        let unsigned = SignedObjects {
            rev: REV,
            commit: b"tree 1\ncommitter C <c@x> 5 +0000\n\nm\n",
            tag: None,
        };
        let none = Policy::default();
        assert_eq!(
            unsigned_source(&none, "tools", "github:a/t", Some(&unsigned)),
            None
        );
        let list = berth_lockfile_schema::governance::parse_allowed_signers("", "keys")
            .expect("an empty list");
        let policy = Policy::default().with_source_signers(vec![Signers {
            policy: "berth-policy.toml".to_owned(),
            written: "keys".to_owned(),
            file: "keys".to_owned(),
            list,
        }]);
        assert_eq!(
            unsigned_source(&policy, "tools", "github:a/t", Some(&unsigned)).as_deref(),
            Some(
                "plugin `tools`: the commit `0123456789abcdef0123456789abcdef01234567` carries no SSH signature; sign it with a key `keys` lists (`git commit -S` or `git tag -s`, with `gpg.format=ssh`) [`sources.require_signed = \"keys\"` in `berth-policy.toml`]"
            )
        );
        let folder = unsigned_source(&policy, "rules", "./rules", None).expect("refused");
        assert!(
            folder.starts_with("plugin `rules`: `./rules` is not a git repository"),
            "{folder}"
        );
    }

    #[test]
    fn a_commit_loses_its_gpgsig_header_and_keeps_its_message() {
        let object = b"tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nauthor A <a@x> 1700000000 +0000\ncommitter C <c@x> 1700000060 +0100\ngpgsig -----BEGIN SSH SIGNATURE-----\n U1NIU0lH\n -----END SSH SIGNATURE-----\nmergetag object 1\n type commit\n\nmessage\n gpgsig in the message stays\n";
        let signed = split_commit(REV, object);
        assert_eq!(
            String::from_utf8_lossy(&signed.payload),
            "tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nauthor A <a@x> 1700000000 +0000\ncommitter C <c@x> 1700000060 +0100\nmergetag object 1\n type commit\n\nmessage\n gpgsig in the message stays\n"
        );
        assert_eq!(
            signed.signature.as_deref(),
            Some("-----BEGIN SSH SIGNATURE-----\nU1NIU0lH\n-----END SSH SIGNATURE-----\n")
        );
        assert_eq!(signed.at, Some(1_700_000_060));
        let unsigned = split_commit(REV, b"tree 1\ncommitter C <c@x> 5 +0000\n\nm\n");
        assert_eq!(unsigned.signature, None);
        assert_eq!(
            unsigned.payload,
            b"tree 1\ncommitter C <c@x> 5 +0000\n\nm\n"
        );
    }

    #[test]
    fn a_tag_is_split_at_its_last_signature_and_must_name_the_commit() {
        let object = format!(
            "object {REV}\ntype commit\ntag v1.0\ntagger T <t@x> 1700000120 +0000\n\nrelease\n-----BEGIN PGP SIGNATURE-----\nnot the last\n-----BEGIN SSH SIGNATURE-----\nU1NIU0lH\n-----END SSH SIGNATURE-----\n"
        );
        let signed = split_tag("v1.0", REV, object.as_bytes());
        assert!(String::from_utf8_lossy(&signed.payload).ends_with("not the last\n"));
        assert_eq!(
            signed.signature.as_deref(),
            Some("-----BEGIN SSH SIGNATURE-----\nU1NIU0lH\n-----END SSH SIGNATURE-----\n")
        );
        assert_eq!((signed.at, signed.problem), (Some(1_700_000_120), None));
        let renamed = split_tag("v2.0", REV, object.as_bytes());
        assert_eq!(
            renamed.problem.as_deref(),
            Some("was made as the tag `v1.0`, not `v2.0`")
        );
        let other = split_tag("v1.0", &REV.replace('0', "f"), object.as_bytes());
        assert!(other.problem.is_some_and(|p| p.starts_with("does not tag")));
        let plain = split_tag(
            "v1.0",
            REV,
            format!("object {REV}\ntype commit\ntag v1.0\n\nm\n").as_bytes(),
        );
        assert_eq!((plain.signature, plain.at), (None, None));
    }
}
