//! npm registry signatures of locked closures, checked offline against the keys the lock
//! holds (`[[registry_key]]`), as `npm audit signatures` checks them against the keys it
//! fetches: a signature of `NAME@VERSION:INTEGRITY` by a key that counts for the version
//! (no `expires`, or one after the version was published) verifies, or the package is
//! refused. A package the registry did not sign, or signed with a key the lock does not
//! hold or that does not count, is refused only under `[payloads]
//! require_registry_signatures`; `berth audit` names it.
//!
//! A plugin taken from an npm package (its entry's `npm`) is checked the same way.
//!
//! A check that found no bad signature is remembered as the payload's store entry's
//! verdict, under a digest of everything it read, so a no-op `sync` verifies nothing again.

use berth_lockfile_schema::{Lock, LockedNpmPackage, LockedPayload, LockedPlugin, RegistryKey};
use berth_transport::npm_signature::{P256_KEYTYPE, RegistryPublicKey, SignatureError};
use sha2::{Digest as _, Sha256};

use super::closure_of;
use crate::context::Env;
use crate::error::{EntryError, SignatureRefused};

/// What a lock (or a registry's answer) says of one npm package's registry signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignatureState {
    /// Signed, and the signature verifies with a key that counts for the version.
    Verified,
    /// No signature is recorded: the registry gave none, or the lock was written before
    /// berth recorded them.
    Unsigned,
    /// Signed with a key the lock does not hold (its registry did not publish it).
    UnknownKey(String),
    /// Signed with a key that does not count for this version.
    KeyNotCounted {
        /// The key's id.
        keyid: String,
        /// Why it does not count.
        why: String,
    },
    /// The signature does not verify, or cannot be read: always refused.
    Bad {
        /// The key's id.
        keyid: String,
        /// What could not be read (the signature, the key); `None`: it is read, and is not
        /// a signature of the package by that key.
        why: Option<String>,
    },
}

impl SignatureState {
    /// Whether the registry's signature verified.
    pub fn is_verified(&self) -> bool {
        *self == Self::Verified
    }

    /// Its name in a report (`berth audit --json`).
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Verified => "verified",
            Self::Unsigned => "unsigned",
            Self::UnknownKey(_) => "unknown_key",
            Self::KeyNotCounted { .. } => "key_not_counted",
            Self::Bad { .. } => "bad",
        }
    }

    /// What it is, in a few words.
    pub fn describe(&self) -> String {
        match self {
            Self::Verified => "signed by its registry".to_owned(),
            Self::Unsigned => "no registry signature is recorded (the registry gave none, or the lock was written before berth recorded them)".to_owned(),
            Self::UnknownKey(keyid) => {
                format!("signed with the key `{keyid}`, which is not a registry key the lock holds")
            }
            Self::KeyNotCounted { keyid, why } => {
                format!("signed with the registry key `{keyid}`, which does not count: {why}")
            }
            Self::Bad { keyid, why } => format!(
                "its registry signature does not verify with the key `{keyid}`{}",
                why.as_ref().map(|why| format!(" ({why})")).unwrap_or_default()
            ),
        }
    }
}

/// One npm package of a locked payload or plugin source, and what its signature says.
#[derive(Debug, Clone)]
pub struct PackageSignature<'a> {
    /// The plugin whose payload or source it is.
    pub plugin: &'a str,
    /// The payload whose closure it is in; `None`: it is the plugin's own source (a
    /// marketplace entry `{"source": "npm"}`).
    pub payload: Option<&'a LockedPayload>,
    /// The package.
    pub package: LockedNpmPackage,
    /// Its signature, checked against the lock's keys.
    pub state: SignatureState,
}

/// Every npm package of `lock`'s plugin sources, then of its payloads, its signature
/// checked against the lock's keys (offline: no registry is asked), in lock order.
pub fn npm_signatures(lock: &Lock) -> Vec<PackageSignature<'_>> {
    let keys = &lock.registry_keys;
    let sources = npm_sources(lock).map(|(plugin, package)| PackageSignature {
        plugin: &plugin.name,
        payload: None,
        state: state_of(&package, keys, true),
        package,
    });
    let payloads = lock.payloads.iter().flat_map(|payload| {
        payload.npm.iter().map(move |package| PackageSignature {
            plugin: &payload.plugin,
            payload: Some(payload),
            package: package.clone(),
            state: state_of(package, keys, true),
        })
    });
    sources.chain(payloads).collect()
}

/// The plugins of `lock` taken from npm packages, each with its package as a closure's
/// is recorded.
fn npm_sources(lock: &Lock) -> impl Iterator<Item = (&LockedPlugin, LockedNpmPackage)> {
    lock.plugins
        .iter()
        .filter_map(|plugin| Some((plugin, plugin.npm.as_ref()?.as_package(&plugin.source))))
}

/// The state of `package`'s signature against `keys`. Without `verify`, a signature by a
/// key that counts is taken as verified (a verdict says it verified before).
pub(crate) fn state_of(
    package: &LockedNpmPackage,
    keys: &[RegistryKey],
    verify: bool,
) -> SignatureState {
    let Some(signature) = &package.signature else {
        return SignatureState::Unsigned;
    };
    let keyid = signature.keyid.clone();
    let Some(key) = keys.iter().find(|k| k.keyid == keyid) else {
        return SignatureState::UnknownKey(keyid);
    };
    if key.keytype != P256_KEYTYPE {
        let why = format!("its type `{}` is not one berth checks", key.keytype);
        return SignatureState::KeyNotCounted { keyid, why };
    }
    if let Some(expires) = &key.expires {
        let instant = |text: &str| text.parse::<jiff::Timestamp>().ok();
        let published = package.published.as_deref();
        // As npm: a key counts for a version published before it expired.
        if !matches!((published.and_then(instant), instant(expires)), (Some(p), Some(e)) if p < e) {
            let why = format!(
                "it expires at {expires}, and the version was published {}",
                published.map_or("at a time the registry did not give".to_owned(), |p| {
                    format!("at {p}")
                })
            );
            return SignatureState::KeyNotCounted { keyid, why };
        }
    }
    if !verify {
        return SignatureState::Verified;
    }
    match RegistryPublicKey::parse(&key.key)
        .and_then(|public| public.verify(&package.signed_text(), &signature.sig))
    {
        Ok(()) => SignatureState::Verified,
        Err(SignatureError::Mismatch) => SignatureState::Bad { keyid, why: None },
        Err(e) => SignatureState::Bad {
            keyid,
            why: Some(e.to_string()),
        },
    }
}

/// Where a signature comes from, for what a refusal says to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    /// The registry's answer, at `lock`: nothing is locked.
    Registry,
    /// The lock (`sync`, `verify`).
    Lock,
}

/// What refuses `package` (in the closure `of`, of plugin `plugin`) with `state`: a bad
/// signature always, an unverified one under `policy` (the file that asks for
/// signatures); `None` when nothing does.
pub(crate) fn refusal(
    policy: Option<&str>,
    (of, plugin): (&str, &str),
    package: &LockedNpmPackage,
    state: &SignatureState,
    from: Origin,
) -> Option<SignatureRefused> {
    let relock = format!(
        "run `berth plugins lock --upgrade-plugin {plugin}` to lock it again from its registry"
    );
    let (why, next, policy) = match (state, from) {
        (SignatureState::Verified, _) => return None,
        (SignatureState::Bad { .. }, Origin::Registry) => (
            format!(
                "{}: what the registry serves is not what it signed",
                state.describe()
            ),
            "nothing was locked; ask the registry's operator, or pin another version".to_owned(),
            None,
        ),
        (SignatureState::Bad { .. }, Origin::Lock) => (
            format!(
                "{}: the lock was changed after it was made",
                state.describe()
            ),
            relock,
            None,
        ),
        (_, _) => {
            let file = policy?;
            let next = match from {
                Origin::Registry => "nothing was locked; lock it from a registry that signs its packages with a key it publishes, or stop using the package (remove the server from the plugin, or the plugin from the manifest)".to_owned(),
                Origin::Lock => format!("lock it from a registry that signs its packages with a key it publishes (`berth plugins lock --upgrade-plugin {plugin}` resolves it again and records its signatures)"),
            };
            (
                format!(
                    "{}, and `require_registry_signatures = true` in `{file}` asks for a registry signature that verifies",
                    state.describe()
                ),
                next,
                Some(file.to_owned()),
            )
        }
    };
    Some(SignatureRefused {
        package: format!("{}@{}", package.name(), package.version),
        of: of.to_owned(),
        why,
        next,
        policy,
    })
}

/// Whose source a refused package is, as a refusal says it.
pub(crate) fn source_of(plugin: &str) -> String {
    format!("the source of plugin `{plugin}`")
}

/// What refuses the npm signature of `plugin`'s source (when it was taken from an npm
/// package), checked against `keys` (a lock's) under the run's policy.
pub(crate) fn source_refusal(
    env: &Env<'_>,
    plugin: &LockedPlugin,
    keys: &[RegistryKey],
) -> Option<SignatureRefused> {
    let package = plugin.npm.as_ref()?.as_package(&plugin.source);
    let state = state_of(&package, keys, true);
    let policy = env.settings.require_registry_signatures.as_deref();
    let of = source_of(&plugin.name);
    refusal(policy, (&of, &plugin.name), &package, &state, Origin::Lock)
}

/// What `sync` refuses of the npm signatures of `lock`'s plugin sources and payloads,
/// checked against the lock's keys (offline): one error per refused package.
pub(crate) fn refused_signatures(env: &Env<'_>, lock: &Lock) -> Vec<EntryError> {
    // A plugin's own source is one signature: checked every time.
    let sources = lock.plugins.iter().filter_map(|plugin| {
        Some(EntryError {
            label: format!("plugin `{}`", plugin.name),
            error: Box::new(source_refusal(env, plugin, &lock.registry_keys)?.into()),
        })
    });
    let payloads = lock.payloads.iter().flat_map(|payload| {
        refusals_of(env, payload, &lock.registry_keys)
            .into_iter()
            .map(move |refused| EntryError {
                label: format!(
                    "plugin `{}`, {}",
                    payload.plugin,
                    payload.used_by.describe(&payload.server)
                ),
                error: Box::new(refused.into()),
            })
    });
    sources.chain(payloads).collect()
}

/// What refuses the npm signatures of `payload`, checked against `keys` (a lock's) under
/// the run's policy. A payload whose store entry's verdict says this same data was checked
/// is not verified again; one checked now with no bad signature gets that verdict.
pub(crate) fn refusals_of(
    env: &Env<'_>,
    payload: &LockedPayload,
    keys: &[RegistryKey],
) -> Vec<SignatureRefused> {
    if payload.npm.is_empty() {
        return Vec::new();
    }
    let policy = env.settings.require_registry_signatures.as_deref();
    let (name, verdict) = (payload.entry_name(), checked_verdict(&payload.npm, keys));
    let known = env.store.has_verdict(&payload.hash, &name, &verdict);
    let of = closure_of(&payload.package, &payload.version);
    let mut bad = false;
    let mut refused = Vec::new();
    for package in &payload.npm {
        let state = state_of(package, keys, !known);
        bad |= matches!(state, SignatureState::Bad { .. });
        refused.extend(refusal(
            policy,
            (&of, &payload.plugin),
            package,
            &state,
            Origin::Lock,
        ));
    }
    if known || bad {
        return refused;
    }
    // The provenance the lock records is verified again from the closure's attestations,
    // when its entry is here (else once `sync` has fetched it).
    let Some(entry) = env.store.lookup(&payload.hash, &name) else {
        return refused;
    };
    match super::npm_provenance::refused_provenance(payload, &entry.path) {
        Some(provenance) => refused.push(provenance),
        // Best effort: without it the next sync verifies again.
        None => {
            let _ = env.store.record_verdict(&payload.hash, &name, &verdict);
        }
    }
    refused
}

/// The verdict that a closure's signatures (`packages`, against `keys`) were checked and
/// none is bad, and its recorded provenance verified: a digest of everything the checks
/// read (the trusted root's text too, when a package records a provenance).
pub(crate) fn checked_verdict(packages: &[LockedNpmPackage], keys: &[RegistryKey]) -> String {
    let mut hasher = Sha256::new();
    hasher.update(b"npm registry signatures and provenance 2\n");
    let mut attested = packages
        .iter()
        .filter_map(|p| Some((p, p.provenance.as_ref()?)));
    if let Some(first) = attested.next() {
        hasher.update(super::npm_provenance::trusted_root_text());
        for (package, provenance) in std::iter::once(first).chain(attested) {
            hasher.update(format!("{}\t{provenance:?}\n", package.signed_text()));
        }
    }
    for package in packages {
        let Some(signature) = &package.signature else {
            continue;
        };
        let published = package.published.as_deref().unwrap_or_default();
        hasher.update(format!(
            "{}\t{published}\t{}\t{}\n",
            package.signed_text(),
            signature.keyid,
            signature.sig
        ));
        if let Some(key) = keys.iter().find(|k| k.keyid == signature.keyid) {
            let expires = key.expires.as_deref().unwrap_or_default();
            hasher.update(format!("{}\t{}\t{expires}\n", key.keytype, key.key));
        }
    }
    let digest: String = hasher.finalize()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("npm registry signatures {digest}: none bad")
}

#[cfg(test)]
mod tests;
