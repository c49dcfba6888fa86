//! Package payloads: the code an MCP server's runner line (`npx -y pkg@^1`, `uvx pkg`)
//! would fetch from a registry at every start, locked with its whole dependency closure by
//! the ecosystem's own resolver (npm's lockfile resolution in `npm.rs`, uv in `python.rs`),
//! kept as a content-addressed store entry (NAR hash, like a plugin) and synced and
//! substituted like one.
//!
//! Which servers start through a runner is the runtime's to say (it reads plugin folders);
//! the front end hands that reader to the resolver as [`Settings::payload_finder`].

mod keys;
mod npm;
mod npm_provenance;
mod npm_signed;
mod python;
mod signatures;

use std::collections::BTreeMap;

use berth_lockfile_schema::runner::{Ecosystem, PayloadWant};
use berth_lockfile_schema::{Lock, LockedPayload, RegistryKey};
use berth_store::{Staging, Store, StoreEntry, StoreError};

pub use crate::context::PayloadFinder;
use berth_provenance as provenance;
pub use berth_transport::registries::DEFAULT_NPM_REGISTRY;
pub(crate) use keys::lock_keys;
use keys::named_keys;
pub(crate) use npm_signed::resolve_signed;
pub use provenance::{
    BuildClaims, BuildIdentity, Provenance, ProvenanceError, ProvenanceProblem, TrustedRoot,
    TrustedRootError, verify_npm_provenance,
};
pub use signatures::{PackageSignature, SignatureState, npm_signatures};
pub(crate) use signatures::{refusals_of, refused_signatures, source_refusal};

use crate::context::{ActiveCutoff, Env, Network, Reporter, Settings};
use crate::error::{EntryError, ResolveError};

/// A closure an ecosystem resolved and staged, not yet in the store.
pub(crate) struct Staged {
    version: String,
    /// The registry or index it was resolved against, without credentials.
    registry: String,
    entry: String,
    python_version: Option<String>,
    npm: Vec<berth_lockfile_schema::LockedNpmPackage>,
    wheels: Vec<berth_lockfile_schema::LockedWheel>,
    /// The registry keys its npm packages' signatures name.
    registry_keys: Vec<RegistryKey>,
    staging: Staging,
}

/// Why a payload was not locked.
pub(crate) enum NotLocked {
    /// The line is left as written, with a warning saying why (install scripts, a
    /// platform-specific dependency, no program to run).
    Left(String),
    /// Locking failed (the registry, the index, a download).
    Failed(Box<ResolveError>),
}

impl From<ResolveError> for NotLocked {
    fn from(e: ResolveError) -> Self {
        NotLocked::Failed(Box::new(e))
    }
}

impl From<std::io::Error> for NotLocked {
    fn from(e: std::io::Error) -> Self {
        NotLocked::Failed(Box::new(e.into()))
    }
}

impl From<StoreError> for NotLocked {
    fn from(e: StoreError) -> Self {
        NotLocked::Failed(Box::new(e.into()))
    }
}

/// The payloads of `lock`'s runner-started MCP servers, and the npm registry keys their
/// signatures name: a previous pin is kept while the server's line still asks for the
/// same package spec (unless `upgrade` covers its plugin, `may_move` says); the rest are
/// resolved, their closures fetched, checked (npm registry signatures included) and added
/// to the store. Without a [`Settings::payload_finder`] the lock's own payloads and keys
/// are returned as they are.
pub fn lock_payloads(
    store: &Store,
    settings: &Settings,
    reporter: &dyn Reporter,
    lock: &Lock,
    previous: Option<&Lock>,
    may_move: &dyn Fn(&str) -> bool,
) -> Result<(Vec<LockedPayload>, Vec<RegistryKey>), Vec<EntryError>> {
    let Some(finder) = settings.payload_finder else {
        return Ok((lock.payloads.clone(), lock.registry_keys.clone()));
    };
    let (wants, warnings) = finder(store, lock).map_err(|message| {
        vec![EntryError {
            label: "MCP servers".to_owned(),
            error: Box::new(ResolveError::Payload {
                what: "the plugins' MCP servers".to_owned(),
                message,
            }),
        }]
    })?;
    for warning in warnings {
        reporter.warn(&warning);
    }
    let mut run = PayloadRun {
        // Under the cutoff the plugins were locked with.
        env: Env::new(store, settings, reporter)
            .under(lock.exclude_newer.as_ref().map(ActiveCutoff::recorded)),
        lock,
        previous,
        may_move,
        resolved: BTreeMap::new(),
        keys: crate::context::RunKeys::default(),
        out: Vec::new(),
        errors: Vec::new(),
    };
    for want in wants {
        run.lock_want(&want);
    }
    if !run.errors.is_empty() {
        return Err(run.errors);
    }
    let kept = previous.into_iter().chain(std::iter::once(lock));
    named_keys(run.keys.all(), kept, &run.out, &lock.plugins)
        .map(|keys| (run.out, keys))
        .map_err(|message| vec![keys::keys_refused(message)])
}

/// Checks the npm registry signatures of `lock`'s payloads against its keys, offline,
/// under `settings`' policy, as `sync` does before anything else: for a front end that
/// reads a lock without syncing it.
pub fn check_registry_signatures(
    store: &Store,
    settings: &Settings,
    reporter: &dyn Reporter,
    lock: &Lock,
) -> Result<(), Vec<EntryError>> {
    let refused = refused_signatures(&Env::new(store, settings, reporter), lock);
    if refused.is_empty() {
        Ok(())
    } else {
        Err(refused)
    }
}

/// Whose closure a refused package is in, as a refusal says it: `in the closure of
/// `fake-mcp` 1.1.0`.
pub(crate) fn closure_of(package: &str, version: &str) -> String {
    format!("in the closure of `{package}` {version}")
}

/// A run of [`lock_payloads`]: what it pins against, and what it found so far.
struct PayloadRun<'a> {
    env: Env<'a>,
    lock: &'a Lock,
    previous: Option<&'a Lock>,
    may_move: &'a dyn Fn(&str) -> bool,
    /// One resolution per package spec in a run, shared by every server that names it.
    resolved: BTreeMap<(Ecosystem, String, Option<String>), LockedPayload>,
    /// The registry keys read in this run, once per registry.
    keys: crate::context::RunKeys,
    out: Vec<LockedPayload>,
    errors: Vec<EntryError>,
}

impl PayloadRun<'_> {
    /// Pins one server's package: its previous pin while the line is unchanged (and may
    /// not move), else this run's resolution of the same spec, else resolved now.
    fn lock_want(&mut self, want: &PayloadWant) {
        let call = &want.call;
        let same = |p: &&LockedPayload| {
            p.plugin == want.plugin
                && p.server == want.server
                && p.used_by == want.used_by
                && p.runner == call.runner
                && p.spec == call.spec
        };
        let kept = self
            .previous
            .into_iter()
            .chain(std::iter::once(self.lock))
            .flat_map(|l| &l.payloads)
            .find(same)
            .filter(|_| !(self.may_move)(&want.plugin));
        if let Some(kept) = kept {
            self.out.push(kept.clone());
            return;
        }
        let key = (call.ecosystem, call.spec.clone(), call.program.clone());
        if let Some(done) = self.resolved.get(&key) {
            self.out.push(LockedPayload {
                plugin: want.plugin.clone(),
                server: want.server.clone(),
                used_by: want.used_by,
                runner: call.runner.clone(),
                ..done.clone()
            });
            return;
        }
        self.resolve(want, key);
    }

    /// Resolves `want`'s package with its ecosystem's resolver and stores its closure.
    fn resolve(&mut self, want: &PayloadWant, key: (Ecosystem, String, Option<String>)) {
        let (env, call) = (&self.env, &want.call);
        let user = want.used_by.describe(&want.server);
        let label = format!(
            "plugin `{}`, {user} (`{} {}`)",
            want.plugin, call.runner, call.spec
        );
        if env.settings.network == Network::Offline {
            self.errors.push(EntryError {
                label,
                error: Box::new(ResolveError::Offline {
                    what: format!("the package `{}`", call.spec),
                }),
            });
            return;
        }
        env.reporter.status(
            "Resolving",
            &format!(
                "`{} {}` of plugin `{}`",
                call.runner, call.spec, want.plugin
            ),
        );
        let result = match call.ecosystem {
            Ecosystem::Npm => npm::lock_npm(env, want, &self.keys),
            Ecosystem::Python => python::lock_python(env, want),
        }
        .and_then(|staged| commit_payload(env, want, staged));
        match result {
            Ok(payload) => {
                env.reporter.status(
                    "Locked",
                    &format!(
                        "{} {} for {user} of plugin `{}` ({} packages)",
                        payload.package,
                        payload.version,
                        want.plugin,
                        payload.npm.len() + payload.wheels.len()
                    ),
                );
                self.resolved.insert(key, payload.clone());
                self.out.push(payload);
            }
            Err(NotLocked::Left(why)) => env.reporter.warn(&format!(
                "plugin `{}`, {user}: `{} {}` is left as written and fetched at every start: {why}",
                want.plugin, call.runner, call.spec
            )),
            Err(NotLocked::Failed(error)) => self.errors.push(EntryError { label, error }),
        }
    }
}

/// The payload of `want` whose closure `staged` holds, added to the store under its
/// NAR hash (with the verdict that its npm signatures were checked).
fn commit_payload(
    env: &Env<'_>,
    want: &PayloadWant,
    staged: Staged,
) -> Result<LockedPayload, NotLocked> {
    let call = &want.call;
    let mut payload = LockedPayload {
        plugin: want.plugin.clone(),
        server: want.server.clone(),
        used_by: want.used_by,
        runner: call.runner.clone(),
        spec: call.spec.clone(),
        ecosystem: call.ecosystem,
        package: call.package.clone(),
        version: staged.version,
        registry: Some(staged.registry),
        entry: staged.entry,
        hash: berth_lockfile_schema::Sha256Hash::from_bytes([0; 32]),
        python_version: staged.python_version,
        npm: staged.npm,
        wheels: staged.wheels,
    };
    payload.hash = env
        .store
        .commit(staged.staging, &payload.entry_name(), None)?
        .hash;
    if !payload.npm.is_empty() {
        let verdict = signatures::checked_verdict(&payload.npm, &staged.registry_keys);
        // Best effort: without it the next sync verifies the signatures again.
        let _ = env
            .store
            .record_verdict(&payload.hash, &payload.entry_name(), &verdict);
    }
    Ok(payload)
}

/// Makes a locked payload's closure present in the store: found, substituted, or
/// fetched again from its pins and checked against the locked hash.
pub(crate) fn sync_payload(
    env: &Env<'_>,
    payload: &LockedPayload,
) -> Result<(StoreEntry, bool), ResolveError> {
    let name = payload.entry_name();
    match env.store.checked_lookup(&payload.hash, &name) {
        Ok(Some(entry)) => return Ok((entry, false)),
        Ok(None) => {}
        Err(StoreError::Tampered { path, found, .. }) => {
            env.reporter.warn(&format!(
                "store entry `{}` of the package `{}` was changed after it was added ({found}); replacing it",
                path.display(),
                payload.package
            ));
            env.store.discard_entry(&payload.hash, &name)?;
        }
        Err(e) => return Err(e.into()),
    }
    let _guard = env
        .store
        .lock(&format!("entry-{}", payload.hash.to_nix32()), || {})?;
    if let Ok(Some(entry)) = env.store.checked_lookup(&payload.hash, &name) {
        return Ok((entry, false));
    }
    let what = format!("package `{}`", payload.package);
    let staging = match crate::sources::substitute(env, &payload.hash, &name, &what)? {
        Some(staging) => staging,
        None => fetch_closure(env, payload)?,
    };
    let entry = env.store.commit(staging, &name, Some(&payload.hash))?;
    // The provenance the lock records, from the attestations fetched with it.
    if let Some(refused) = npm_provenance::refused_provenance(payload, &entry.path) {
        return Err(refused.into());
    }
    env.reporter.status(
        "Added",
        &format!(
            "{} {} {}",
            payload.package,
            payload.version,
            entry.path.display()
        ),
    );
    Ok((entry, true))
}

/// The NAR hash of a payload's closure fetched afresh from its registry, bypassing
/// the store and the substituters (`verify`), once the provenance the lock records
/// verifies from the attestations fetched with it.
pub(crate) fn fresh_payload_hash(
    env: &Env<'_>,
    payload: &LockedPayload,
) -> Result<berth_lockfile_schema::Sha256Hash, ResolveError> {
    let staging = fetch_closure(env, payload)?;
    if let Some(refused) = npm_provenance::refused_provenance(payload, staging.path()) {
        return Err(refused.into());
    }
    Ok(berth_store::hash_path(staging.path())?)
}

/// A payload's closure fetched from its recorded registry into a staging folder, every
/// package checked against its pin; credentials are this machine's for that registry.
fn fetch_closure(env: &Env<'_>, payload: &LockedPayload) -> Result<Staging, ResolveError> {
    env.settings
        .require_network(|| format!("the package `{}` {}", payload.package, payload.version))?;
    let built = match payload.ecosystem {
        Ecosystem::Npm => npm::fetch_npm(env, payload),
        Ecosystem::Python => crate::agent::recorded_index(env, payload.registry.as_deref())
            .map_err(NotLocked::from)
            .and_then(|index| python::assemble_wheels(env, &payload.wheels, &index)),
    };
    built.map_err(|e| match e {
        NotLocked::Failed(e) => *e,
        NotLocked::Left(why) => ResolveError::Payload {
            what: format!("the package `{}`", payload.package),
            message: why,
        },
    })
}
