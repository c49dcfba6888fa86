//! berth's resolver: turns the plugin sources of a manifest into exact pins (a commit and
//! a content hash) and turns pins into verified store entries.
//!
//! It talks to the network through `berth-transport` (URLs, the source policy, object
//! storage, binary caches, extraction). Git goes through gix into bare caches under the
//! store's `git-v1/`; trees are exported straight from git objects, never through a working
//! copy. Everything it adds to the store goes through [`berth_store::Store::commit`], so an
//! entry is complete and verified or absent.
//!
//! # Layers
//!
//! Its modules are layers, each using only those listed before it (`tests/it/layers.rs`
//! reads this list and holds the code to it):
//!
//! 1. **vocabulary**: `error/` (`ResolveError`, its `kind()` in `kind.rs`, the causes it
//!    carries, the agent's errors), `meta.rs` (a plugin's name from its manifest),
//!    `skipped.rs` (files of a tree the runtime will skip);
//! 2. **`context/`**: what a run works in, as data: `Settings`, `Network`, `LocalCheck` and
//!    the `Cancel` flag (`settings.rs`), the policy's `[sources]` every plugin and
//!    marketplace source is matched against before it is contacted (`source_rules.rs`,
//!    `SourceRules`, with `LockedPicks` saying whether a lock's record of a pick's
//!    marketplace counts, and `LockedPins` whether a lock's pins count as written or only
//!    once the store saw them give their hash), the `Reporter` with its typed `Event`s
//!    (`report.rs`), the resolutions the runs of a process share (`memo.rs`: refs and tags
//!    per git cache, and the trees a lock serialised while hashing them, for the sync that
//!    stores them next), a run's throw-away folders (`scratch.rs`, `verify`'s), and `Env`
//!    (store, settings, reporter, memo, scratch), which has no methods but `new`. It is
//!    defined here, below the sources that take it, never in `ops`;
//! 3. **`sources/`**: the source kinds as values (as Cargo's `SourceId::load(&config) ->
//!    Box<dyn Source>`). `mod.rs` holds the traits and the only two matches on a kind:
//!    `load(&Env, &Source) -> Box<dyn PluginSource>` (a request's source, which pins a
//!    request and lists its tags) and `kind_of(&Pin) -> &dyn PinKind` (what a kind does with
//!    its own pin: load the `PinnedSource` that stages, stores or fetches afresh the locked
//!    tree, mark what `gc` keeps, say whether its content can change in place). Each kind is
//!    a private folder, its mechanics and its values together: `git/` (gix: bare caches, ref
//!    and semver resolution, release age in `age.rs` (tag and commit dates, a range's new
//!    tags passed over, a branch walked back along first parents, an exact new pin refused), fetching one commit, hashing and exporting trees; `GitDb` never
//!    leaves the folder; `source.rs` has `GitSource` and `GitCommit`), `archive/` (download
//!    while hashing, unpack, keep; `ArchiveSource`, `LockedArchive`), `local/` (`LocalSource`,
//!    `LocalFolder`; what a folder must be before it is locked or copied, a plugin and
//!    readable by every user, in `checks.rs`), `npm/` (a registry document's version picked, under a release-age cutoff
//!    by its `time` in `age.rs`, its tarball an archive checked against `dist.integrity`), `marketplace/` (a declaration read at its locked
//!    commit or its `ref`, the catalog's hash checked, in `mod.rs`; a pick turned into the
//!    request its entry gives, in `derive.rs`: a source of requests, never of pins). Beside
//!    them: `resolved.rs` (what pinning gives), `objects.rs` (a locked commit's git objects, and
//!    its tag's, handed to a front end that checks signatures: `PinnedSource::git_objects`, git's
//!    in `git/objects.rs`), `substitute.rs` (an entry from the binary
//!    caches, asked before a source), `entry.rs` (one locked entry made present in the
//!    store, for `sync` and the agent's tree; a lock's pin the store never saw give its
//!    entry checked against its source, `PinnedSource::pin_hash`, or a substituter's record
//!    of it, and pins recorded as they are fetched, locked and verified);
//! 4. **`agent/`**: the agent package (a Python package locked with uv, its wheels checked,
//!    git and archive sources pinned through `sources` and built with `uv build`);
//! 5. **`payload/`**: the packages runner lines start (`npx`, `uvx`, ...): `npm.rs` (npm's
//!    `--package-lock-only` resolution read, with the registries and credentials berth read
//!    from npm's configuration handed to npm, every tarball fetched with its credential,
//!    checked against its integrity and laid out as `node_modules/`), `npm_signed.rs` (each
//!    npm package's registry signatures and publish time from its document, and the
//!    registry's keys, read at `lock`), `signatures.rs` (those signatures checked offline
//!    against the lock's keys, at `lock`, `sync` and `verify`, and what refuses them),
//!    `python.rs` (uv's
//!    resolution, as `agent/` compiles it, the wheels kept as `wheels/`),
//!    `npm_provenance.rs` (an npm package's SLSA provenance fetched at `lock`, verified by
//!    the `berth-provenance` crate, kept in the closure and verified again at `sync`);
//!    `mod.rs` locks them (keeping pins whose line is
//!    unchanged) and syncs, substitutes and re-fetches a closure as a store entry. Which
//!    lines there are is the runtime's to say: the front end hands its reader down as
//!    `Settings::payload_finder`;
//! 6. **`ops/`**: the operations over a manifest, which loop over entries and reach a kind
//!    only through `sources`' traits: `lock/` (`mod.rs` is `lock_plugins` in named steps,
//!    with `Upgrade::covers` the one rule of what may move; `markets.rs` the marketplaces of
//!    a run and what a pick does; `auto.rs` what a marketplace's `auto_load` brings, the
//!    OpenHands SDK's registered marketplaces, locked ahead of the manifest's entries), `pin.rs` (the payloads after the plugins), `age.rs` (the
//!    release-age cutoff of a lock: the manifest's and the policy's `exclude-newer` settled
//!    against the previous lock, and whether a lock was made under the cutoff asked now), `sync.rs`,
//!    `verify.rs` (in parallel over entries), `dependencies/` (the closure of marketplace
//!    plugins; `graph.rs` walks it, refuses cycles and clashes, orders it), `workflow.rs`
//!    (`LockMode` and `lock`, the lock step every front end runs, the CLI's `plugins lock`
//!    as `LockMode::Relock`; `lock_and_sync`, what `sync` and the server run), `live.rs`
//!    (what a lock keeps alive for gc), `policy/` (a policy and what it extends, read, with the
//!    allowed-signers files it names), `objects.rs` (every locked plugin's git objects, from the
//!    cache or afresh, for `[sources] require_signed`).
//!
//! This file only declares the modules and says what is public.

mod agent;
mod context;
mod error;
mod meta;
mod ops;
mod payload;
mod skipped;
mod sources;

pub use agent::{AgentVerifyOutcome, AgentVerifyStatus, DEFAULT_INDEX_URL, SOURCE_DATE_EPOCH};
pub use context::{
    Cancel, DEFAULT_GITHUB_URL, Event, LocalCheck, LockedPicks, LockedPins, Network, ReleaseAge,
    Reporter, Settings, SharedResolutions, SignatureReader, SilentReporter, SourceRules, Task,
    git_cache_name,
};
pub use error::{
    AgentLockError, ArchiveProblem, DeniedSource, DownloadError, EntryError, ErrorKind,
    LocalPathProblem, PinMismatch, PolicyDenied, ResolveError, Rewritten, SignatureRefused, TooNew,
};
pub use meta::plugin_name_from_manifest;
pub use ops::{
    InMemoryLock, LocalRelock, LockAndSyncError, LockMode, LockOptions, LockOutcome, Locked,
    Lockfile, ObjectsOutcome, PolicyLoadError, Relock, StoredQuietly, SyncOutcome, Synced, Upgrade,
    VerifyOutcome, VerifyStatus, git_objects, load_policy, lock, lock_and_sync, lock_plugins,
    mark_live, pin_payloads, staleness, sync_plugins, verify_agent, verify_payloads,
    verify_plugins,
};
pub use payload::{
    BuildClaims, BuildIdentity, DEFAULT_NPM_REGISTRY, PackageSignature, PayloadFinder, Provenance,
    ProvenanceError, ProvenanceProblem, SignatureState, TrustedRoot, TrustedRootError,
    check_registry_signatures, lock_payloads, npm_signatures, verify_npm_provenance,
};
pub use sources::{GitObjects, ObjectsFrom, TagObject, read_marketplace};

#[cfg(test)]
mod tests;
