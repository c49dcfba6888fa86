//! The npm registry keys a lock holds (`[[registry_key]]`): every key its payloads' and
//! its plugins' npm signatures name, once, as a run read it or a lock kept it.

use std::collections::{BTreeMap, BTreeSet};

use berth_lockfile_schema::{Lock, LockedPayload, LockedPlugin, RegistryKey};

use crate::context::Env;
use crate::error::{EntryError, ResolveError};

/// The keys `payloads`' and `plugins`' signatures name, in the lock's order: as this run read them
/// (`read`), else as a lock they were kept from (`kept`) holds them. One id naming two
/// different keys is refused.
pub(super) fn named_keys<'a>(
    read: Vec<RegistryKey>,
    kept: impl Iterator<Item = &'a Lock>,
    payloads: &[LockedPayload],
    plugins: &[LockedPlugin],
) -> Result<Vec<RegistryKey>, String> {
    let named: BTreeSet<&str> = payloads
        .iter()
        .flat_map(|p| &p.npm)
        .filter_map(|package| package.signature.as_ref())
        .chain(
            plugins
                .iter()
                .filter_map(|p| p.npm.as_ref()?.signature.as_ref()),
        )
        .map(|s| s.keyid.as_str())
        .collect();
    let mut keys: BTreeMap<String, RegistryKey> = BTreeMap::new();
    let kept: Vec<RegistryKey> = kept.flat_map(|l| l.registry_keys.iter().cloned()).collect();
    for key in read.into_iter().chain(kept) {
        if !named.contains(key.keyid.as_str()) {
            continue;
        }
        match keys.get(&key.keyid) {
            // A later `expires` of the same key is the registry's word now.
            Some(known) if known.key != key.key || known.keytype != key.keytype => {
                return Err(format!(
                    "the id `{}` names two different keys (from `{}` and `{}`)",
                    key.keyid, known.registry, key.registry
                ));
            }
            Some(_) => {}
            None => {
                keys.insert(key.keyid.clone(), key);
            }
        }
    }
    berth_lockfile_schema::sorted_keys(keys.into_values().collect())
}

/// The keys of a lock whose plugins (`plugins`) were locked now, its payloads kept
/// (`previous`'s, until they are pinned): the keys this run read for plugins taken from
/// npm packages, else as `previous` holds them, those the signatures name.
pub(crate) fn lock_keys(
    env: &Env<'_>,
    plugins: &[LockedPlugin],
    previous: Option<&Lock>,
) -> Result<Vec<RegistryKey>, EntryError> {
    let read = env.npm_keys.all();
    let payloads = previous.map(|p| p.payloads.as_slice()).unwrap_or_default();
    named_keys(read, previous.into_iter(), payloads, plugins).map_err(keys_refused)
}

/// Why a lock's keys could not be kept (one id names two keys), as an entry's error.
pub(super) fn keys_refused(message: String) -> EntryError {
    EntryError {
        label: "npm registry keys".to_owned(),
        error: Box::new(ResolveError::Payload {
            what: "the registry keys".to_owned(),
            message,
        }),
    }
}

#[cfg(test)]
mod tests {
    use berth_lockfile_schema::runner::Ecosystem;
    use berth_lockfile_schema::runner::PayloadUse;
    use berth_lockfile_schema::{LockedNpmPackage, NpmSignature, Sha256Hash};

    use super::*;

    fn key(keyid: &str, key: &str, expires: Option<&str>) -> RegistryKey {
        RegistryKey {
            registry: "https://registry.example/".to_owned(),
            keyid: keyid.to_owned(),
            keytype: "ecdsa-sha2-nistp256".to_owned(),
            key: key.to_owned(),
            expires: expires.map(str::to_owned),
        }
    }

    /// A payload of one package signed with the key `keyid`.
    fn signed_by(keyid: &str) -> LockedPayload {
        LockedPayload {
            plugin: "tools".to_owned(),
            server: "fake".to_owned(),
            used_by: PayloadUse::McpServer,
            runner: "npx".to_owned(),
            spec: "fake-mcp@^1".to_owned(),
            ecosystem: Ecosystem::Npm,
            package: "fake-mcp".to_owned(),
            version: "1.1.0".to_owned(),
            registry: None,
            entry: "node_modules/fake-mcp/bin/server.js".to_owned(),
            hash: Sha256Hash::from_bytes([0; 32]),
            python_version: None,
            npm: vec![LockedNpmPackage {
                path: "node_modules/fake-mcp".to_owned(),
                name: None,
                version: "1.1.0".to_owned(),
                url: "https://registry.example/fake-mcp/-/fake-mcp-1.1.0.tgz".to_owned(),
                integrity: "sha512-AAAA".to_owned(),
                published: None,
                signature: Some(NpmSignature {
                    keyid: keyid.to_owned(),
                    sig: "MEUCIQ==".to_owned(),
                }),
                provenance: None,
            }],
            wheels: Vec::new(),
        }
    }

    #[test]
    fn the_lock_keeps_the_keys_its_signatures_name_as_the_registry_gives_them_now() {
        let kept = Lock {
            registry_keys: vec![key("k1", "A", None), key("k2", "B", None)],
            ..Lock::default()
        };
        let now = key("k1", "A", Some("2027-01-01T00:00:00Z"));
        let keys = named_keys(
            vec![now.clone()],
            std::iter::once(&kept),
            &[signed_by("k1")],
            &[],
        )
        .expect("one key");
        assert_eq!(
            keys,
            [now],
            "the expiry read now, and no key no signature names"
        );
        let keys = named_keys(Vec::new(), std::iter::once(&kept), &[signed_by("k1")], &[])
            .expect("a kept pin's key");
        assert_eq!(keys, [key("k1", "A", None)]);
        let e = named_keys(
            vec![key("k1", "C", None)],
            std::iter::once(&kept),
            &[signed_by("k1")],
            &[],
        )
        .expect_err("one id, two keys");
        assert!(e.contains("the id `k1` names two different keys"), "{e}");
    }
}
