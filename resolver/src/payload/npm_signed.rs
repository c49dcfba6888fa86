//! What a registry says of each package of an npm closure at `lock`, as `npm audit
//! signatures` reads it: the package's document gives its signatures (`dist.signatures`)
//! and publish time (`time[version]`), and the registry its public keys
//! (`REGISTRY/-/npm/v1/keys`, read once per registry in a run). Each signature is verified
//! before anything is locked ([`super::signatures`]); the lock records the signature, the
//! publish time and the keys, so `sync` checks them again offline.

use std::collections::BTreeMap;

use berth_lockfile_schema::{LockedNpmPackage, NpmSignature, NpmSource, RegistryKey};
use berth_transport::registries::NpmConfig;
use berth_transport::url::without_userinfo;
use serde_json::Value;

use super::signatures::{Origin, SignatureState, refusal, source_of, state_of};
use super::{NotLocked, npm_provenance};
use crate::context::{Env, Reporter, RunKeys, Task, run_parallel};
use crate::error::{DownloadError, ResolveError, SignatureRefused};
use crate::sources::marketplace::{Derived, resolve_derived};
use crate::sources::{Resolved, npm_document_url, npm_registry_document};

/// The keys of every registry a run asked, each read at its first ask: `None` for a
/// registry that publishes none (it answers 404 or 400, as npm reads it).
impl RunKeys {
    /// `registry`'s keys (read now if this run has not yet).
    fn of(
        &self,
        env: &Env<'_>,
        config: &NpmConfig,
        registry: &str,
    ) -> Result<Option<Vec<RegistryKey>>, ResolveError> {
        let mut known = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(keys) = known.get(registry) {
            return Ok(keys.clone());
        }
        let keys = fetch_keys(env, config, registry)?;
        known.insert(registry.to_owned(), keys.clone());
        Ok(keys)
    }

    /// Every key read in this run.
    pub(crate) fn all(&self) -> Vec<RegistryKey> {
        let known = self.0.lock().unwrap_or_else(|e| e.into_inner());
        known.values().flatten().flatten().cloned().collect()
    }
}

/// `registry`'s public keys, from its `/-/npm/v1/keys`.
fn fetch_keys(
    env: &Env<'_>,
    config: &NpmConfig,
    registry: &str,
) -> Result<Option<Vec<RegistryKey>>, ResolveError> {
    let url = format!("{}/-/npm/v1/keys", registry.trim_end_matches('/'));
    let credential = config.credential_for(&url, registry);
    let document = match npm_registry_document(env, "the registry's keys", &url, credential) {
        Err(ResolveError::Download {
            cause: DownloadError::Status { status },
            ..
        }) if status.as_u16() == 404 || status.as_u16() == 400 => return Ok(None),
        other => other?,
    };
    let shown = without_userinfo(registry);
    let keys = document
        .get("keys")
        .and_then(Value::as_array)
        .ok_or_else(|| ResolveError::Payload {
            what: format!("the keys of `{shown}`"),
            message: "`/-/npm/v1/keys` has no `keys` list".to_owned(),
        })?;
    let text = |key: &Value, field: &str| key.get(field).and_then(Value::as_str).map(str::to_owned);
    Ok(Some(
        keys.iter()
            .filter_map(|key| {
                Some(RegistryKey {
                    registry: shown.clone(),
                    keyid: text(key, "keyid").filter(|k| !k.is_empty())?,
                    keytype: text(key, "keytype").filter(|k| !k.is_empty())?,
                    key: text(key, "key").filter(|k| !k.is_empty())?,
                    // An expiry that does not read is left out with the key, not taken as none.
                    expires: match key.get("expires") {
                        None | Some(Value::Null) => None,
                        Some(at) => Some(at.as_str().filter(|at| instant(at))?.to_owned()),
                    },
                })
            })
            .collect(),
    ))
}

fn instant(text: &str) -> bool {
    text.parse::<jiff::Timestamp>().is_ok()
}

/// What a registry's document says of one version.
struct Registered {
    published: Option<String>,
    signatures: Vec<NpmSignature>,
    integrity: Option<String>,
    /// Where its attestations document is (`dist.attestations.url`).
    attestations: Option<String>,
}

/// `packages` (a closure npm resolved for the payload `of` of `plugin`) with their
/// signatures and publish times, and the keys those signatures name. Refuses a signature
/// that does not verify, a signed document whose `dist.integrity` is not npm's, and, under
/// `[payloads] require_registry_signatures`, a package not signed by a key that counts.
pub(super) fn signed_closure(
    env: &Env<'_>,
    config: &NpmConfig,
    keys: &RunKeys,
    mut packages: Vec<LockedNpmPackage>,
    (of, plugin): (&str, &str),
) -> Result<Signed, NotLocked> {
    let registries: Vec<String> = packages
        .iter()
        .map(|p| config.registry_for(p.name()).to_owned())
        .collect();
    // The keys and one document per package, fetched as a lock's tarballs are, without a
    // status line each: the lock's own lines say what was locked.
    let quiet = Quiet(env.reporter);
    let quiet_env = Env::new(env.store, env.settings, &quiet);
    let mut by_registry = BTreeMap::new();
    for registry in &registries {
        if !by_registry.contains_key(registry) {
            by_registry.insert(registry.clone(), keys.of(&quiet_env, config, registry)?);
        }
    }
    let documents = run_parallel(&packages, env.settings.jobs, |i, package| {
        registered(&quiet_env, config, &registries[i], package)
    });
    let policy = env.settings.require_registry_signatures.as_deref();
    let mut used = Vec::new();
    let mut refused = None;
    let mut attestations = Vec::new();
    for ((package, document), registry) in packages.iter_mut().zip(documents).zip(&registries) {
        let document = document?;
        package.published = document.published.clone();
        attestations.push(document.attestations.clone());
        let known: &[RegistryKey] = by_registry
            .get(registry)
            .and_then(Option::as_deref)
            .unwrap_or_default();
        let (signature, state) = chosen(package, &document, known)?;
        if let Some(key) = signature
            .as_ref()
            .and_then(|s| known.iter().find(|k| k.keyid == s.keyid))
        {
            used.push(key.clone());
        }
        package.signature = signature;
        // The first bad signature is named before any missing one.
        let replaces = refused.as_ref().is_none_or(|r: &SignatureRefused| {
            r.policy.is_some() && matches!(state, SignatureState::Bad { .. })
        });
        if replaces
            && let Some(r) = refusal(policy, (of, plugin), package, &state, Origin::Registry)
        {
            refused = Some(r);
        }
    }
    if let Some(refused) = refused {
        return Err(ResolveError::from(refused).into());
    }
    let documents = npm_provenance::verify_closure(
        &quiet_env,
        (config, of),
        &registries,
        &mut packages,
        &attestations,
    )?;
    Ok(Signed {
        packages,
        keys: used,
        attestations: documents,
    })
}

/// A closure's packages with their signatures and provenance, as [`signed_closure`]
/// found them.
pub(super) struct Signed {
    pub(super) packages: Vec<LockedNpmPackage>,
    /// The registry keys their signatures name.
    pub(super) keys: Vec<RegistryKey>,
    /// Each package's attestations document (`None` without provenance), to keep in the
    /// closure.
    pub(super) attestations: Vec<Option<Vec<u8>>>,
}

/// The signature of `package` to record, of those its registry's `document` gives, and
/// its state against `keys`: a bad one (refused), else one that verifies, else the first.
fn chosen(
    package: &LockedNpmPackage,
    document: &Registered,
    keys: &[RegistryKey],
) -> Result<(Option<NpmSignature>, SignatureState), NotLocked> {
    // What the registry signed is its `dist.integrity`; npm's lock copies it.
    if let Some(integrity) = &document.integrity
        && *integrity != package.integrity
        && !document.signatures.is_empty()
    {
        return Err(ResolveError::Npm {
            package: format!("{}@{}", package.name(), package.version),
            message: format!(
                "the registry's document gives `dist.integrity` `{integrity}`, npm's lock `{}`; nothing was locked",
                package.integrity
            ),
        }
        .into());
    }
    Ok(pick_signature(package, &document.signatures, keys))
}

/// The signature of `package` to record, of `signatures`, and its state against `keys`:
/// a bad one (refused), else one that verifies, else the first.
fn pick_signature(
    package: &LockedNpmPackage,
    signatures: &[NpmSignature],
    keys: &[RegistryKey],
) -> (Option<NpmSignature>, SignatureState) {
    let mut states: Vec<(NpmSignature, SignatureState)> = signatures
        .iter()
        .map(|signature| {
            let signed = LockedNpmPackage {
                signature: Some(signature.clone()),
                ..package.clone()
            };
            (signature.clone(), state_of(&signed, keys, true))
        })
        .collect();
    if states.is_empty() {
        return (None, SignatureState::Unsigned);
    }
    let best = states
        .iter()
        .position(|(_, s)| matches!(s, SignatureState::Bad { .. }))
        .or_else(|| states.iter().position(|(_, s)| s.is_verified()))
        .unwrap_or(0);
    let (signature, state) = states.swap_remove(best);
    (Some(signature), state)
}

/// Locks the plugin `derived` stands for; one taken from an npm package first has its
/// registry signature checked against its registry's keys (read once per registry in the
/// run) and then recorded in its entry's `npm`: a bad one is refused before the tarball
/// is fetched, and so is, under `[payloads] require_registry_signatures`, one not signed
/// by a key that counts.
pub(crate) fn resolve_signed(env: &Env<'_>, derived: &Derived) -> Result<Resolved, ResolveError> {
    let Some(npm) = &derived.npm else {
        return resolve_derived(env, derived);
    };
    let quiet = Quiet(env.reporter);
    let quiet_env = Env::new(env.store, env.settings, &quiet);
    let keys = env
        .npm_keys
        .of(&quiet_env, &NpmConfig::default(), &npm.registry)?;
    let package = npm.source.as_package(&derived.request.source);
    let known = keys.as_deref().unwrap_or_default();
    let (signature, state) = pick_signature(&package, &npm.signatures, known);
    let policy = env.settings.require_registry_signatures.as_deref();
    let plugin = &derived.entry_name;
    let of = source_of(plugin);
    if let Some(refused) = refusal(policy, (&of, plugin), &package, &state, Origin::Registry) {
        return Err(refused.into());
    }
    let mut resolved = resolve_derived(env, derived)?;
    resolved.plugin.npm = Some(NpmSource {
        signature,
        ..npm.source.clone()
    });
    Ok(resolved)
}

/// What `registry`'s document of `package` says of its version.
fn registered(
    env: &Env<'_>,
    config: &NpmConfig,
    registry: &str,
    package: &LockedNpmPackage,
) -> Result<Registered, ResolveError> {
    let name = package.name();
    let url = npm_document_url(registry, name);
    let credential = config.credential_for(&url, registry);
    let document = npm_registry_document(env, name, &url, credential)?;
    let version = document
        .get("versions")
        .and_then(|v| v.get(&package.version))
        .ok_or_else(|| ResolveError::Npm {
            package: name.to_owned(),
            message: format!(
                "the registry's document does not list version {}, which npm's lock names",
                package.version
            ),
        })?;
    let dist = version.get("dist");
    let signatures = dist
        .and_then(|d| d.get("signatures"))
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|s| serde_json::from_value::<NpmSignature>(s.clone()).ok())
                .filter(|s| !s.keyid.is_empty() && !s.sig.is_empty())
                .collect()
        })
        .unwrap_or_default();
    Ok(Registered {
        published: document
            .get("time")
            .and_then(|t| t.get(&package.version))
            .and_then(Value::as_str)
            .filter(|at| instant(at))
            .map(str::to_owned),
        signatures,
        integrity: dist
            .and_then(|d| d.get("integrity"))
            .and_then(Value::as_str)
            .map(str::to_owned),
        attestations: dist
            .and_then(|d| d.pointer("/attestations/url"))
            .and_then(Value::as_str)
            .filter(|url| !url.is_empty())
            .map(str::to_owned),
    })
}

/// A reporter whose downloads are progress (a spinner on a terminal), not status lines.
struct Quiet<'a>(&'a dyn Reporter);

impl Reporter for Quiet<'_> {
    fn status(&self, verb: &str, message: &str) {
        self.0.status(verb, message);
    }
    fn warn(&self, message: &str) {
        self.0.warn(message);
    }
    fn detail(&self, verb: &str, message: &str) {
        self.0.detail(verb, message);
    }
    fn task(&self, verb: &str, message: &str, _total: Option<u64>) -> Box<dyn Task + '_> {
        self.0.progress(verb, message)
    }
    fn progress(&self, verb: &str, message: &str) -> Box<dyn Task + '_> {
        self.0.progress(verb, message)
    }
}
