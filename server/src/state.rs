//! The server's state: its configuration, the conversations, and the caches of plugin
//! sets and resolutions shared by its requests; restoring the conversations at start.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use berth_resolver::{Network, Settings, SharedResolutions};
use berth_store::Store;

use crate::conversations::{self, Conversations, DataDir, SetJson};
use crate::error::AppError;
use crate::policy::SourcePolicy;
use berth_store::unpoisoned;

/// How the server runs, from `berth serve`'s flags and environment.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where conversations are kept: a folder, or object storage a fleet shares.
    pub data_dir: DataDir,
    /// The shared plugin store.
    pub store: Store,
    /// When set, every route but `/health` and `/ready` needs it.
    pub api_key: Option<String>,
    /// Without an API key, the `Host` names answered besides the bound address,
    /// `localhost`, `127.0.0.1` and `[::1]` (`--allowed-host-header`): `name` for any
    /// port, `name:port` for one.
    pub allowed_host_headers: Vec<String>,
    /// Which sources may be fetched.
    pub policy: SourcePolicy,
    /// What may run (`--policy`): checked before a lock's plugin set is first served.
    pub run_policy: crate::lock_check::RunPolicy,
    /// The marketplaces conversations may ask plugins of (`--marketplace`).
    pub marketplaces: Vec<berth_lockfile_schema::marketplace::MarketplaceRequest>,
    /// Never fetch: serve what the store has.
    pub offline: bool,
    /// How long locking and fetching a conversation's plugins may take.
    pub fetch_timeout: Duration,
    /// How many plugins one request fetches at once.
    pub jobs: usize,
    /// For `~/.netrc` and `~/` sources.
    pub home_dir: Option<PathBuf>,
    /// The skill limit of plugin sets.
    pub max_skills: usize,
    /// The Python package index for conversations' `agent` packages.
    pub index_url: String,
    /// How large an archive may be (`BERTH_ARCHIVE_MAX_BYTES`, `BERTH_ARCHIVE_MAX_ENTRIES`).
    pub archive_limits: berth_transport::extract::ArchiveLimits,
    /// Binary caches tried before upstream (`--substituter`, `$BERTH_SUBSTITUTERS`).
    pub substituters: Vec<Arc<berth_transport::cache::Cache>>,
    /// The fleet's binary cache every conversation's plugins are pushed to (`--push-to`).
    pub push_to: Option<Arc<berth_transport::cache::Cache>>,
    /// How old a branch or tag resolution may be and still be reused by another start
    /// (`--ref-ttl`; zero: resolve again for every start, as before).
    pub ref_ttl: Duration,
    /// After SIGTERM, how long new requests are answered 503 (and `/ready` too) before the
    /// server stops accepting, so a load balancer moves traffic away (`--drain-secs`).
    pub drain: Duration,
    /// The fleet's secret for its conversation records (`--record-key`): each `meta.json`
    /// carries an HMAC under it, and one without is refused.
    pub record_key: Option<conversations::RecordKey>,
    /// How long a client may take to send its request, and how many connections are open
    /// at once.
    pub connections: crate::connections::Limits,
}

/// The state every handler shares: cheap to clone.
#[derive(Debug, Clone)]
pub struct AppState {
    pub(crate) inner: Arc<Inner>,
}

#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) config: Config,
    pub(crate) conversations: Conversations,
    pub(crate) shared: SharedResolutions,
    /// The source policy as the resolver applies it to every redirect (with its client).
    pub(crate) fetch_policy: Arc<berth_transport::policy::FetchPolicy>,
    /// The run policy's `[sources]`, matched before a source is contacted.
    pub(crate) source_rules: berth_resolver::SourceRules,
    /// Plugin sets by lock text. A set is a function of its lock and the (immutable) store
    /// entries it names, so the bytes can be reused while those entries are present.
    pub(crate) sets: std::sync::Mutex<SetCache>,
    /// Entries known to be in the `--push-to` cache (by this server's pushes or checks), so
    /// a warm start asks the cache nothing.
    pub(crate) pushed:
        std::sync::Mutex<std::collections::HashSet<berth_lockfile_schema::Sha256Hash>>,
    /// Request lockfiles already parsed and checked against this server's policy, by text.
    pub(crate) checked:
        std::sync::Mutex<std::collections::HashMap<String, Arc<conversations::LockedText>>>,
    /// With `--ref-ttl`: what each `plugins` request resolved to, and since when.
    pub(crate) planned: std::sync::Mutex<
        std::collections::HashMap<String, (std::time::Instant, Arc<conversations::LockedText>)>,
    >,
    /// Plugins found signed as `[sources] require_signed` asks, by repository and commit.
    pub(crate) signed: crate::signed_sources::SignedVerdicts,
    /// Set on SIGTERM: new requests are refused while started ones finish.
    pub(crate) draining: std::sync::atomic::AtomicBool,
    /// `/ready`'s last look at the store and the data store.
    pub(crate) ready: crate::readiness::ReadyProbe,
}

/// How many distinct plugin sets are kept in memory, and how many bytes of them.
const SET_CACHE_ENTRIES: usize = 4096;
const SET_CACHE_BYTES: usize = 256 * 1024 * 1024;

/// Plugin sets by lock text, with their size.
#[derive(Debug, Default)]
pub(crate) struct SetCache {
    pub(crate) map: std::collections::HashMap<String, Arc<SetJson>>,
    /// The bytes of the texts and sets held.
    pub(crate) bytes: usize,
}

/// How many request texts (lockfiles checked, `plugins` requests planned) are remembered,
/// and how long a text may be to be remembered at all: a client sending many distinct
/// large texts costs at most a few tens of MiB (a longer text is simply checked each time).
pub(crate) const REQUEST_CACHE_ENTRIES: usize = 1024;
pub(crate) const REQUEST_CACHE_MAX_TEXT: usize = 32 * 1024;

/// What opening the data folder found.
#[derive(Debug, Clone, Default)]
pub struct RestoreReport {
    /// Conversations restored.
    pub conversations: usize,
    /// Conversations with store entries missing (fetched again in the background unless
    /// offline).
    pub incomplete: usize,
}

/// The locks of `stored` conversations whose plugins or agent `store` lacks (or holds
/// changed), each entry checked once.
fn incomplete_locks(
    store: &berth_store::Store,
    stored: Vec<conversations::Stored>,
) -> Vec<Arc<conversations::LockedText>> {
    let mut missing_entries = std::collections::HashMap::new();
    let mut incomplete = Vec::new();
    for conversation in stored {
        let plugins_present = conversation.lock.lock.plugins.iter().all(|plugin| {
            *missing_entries
                .entry((plugin.hash, plugin.name.clone()))
                .or_insert_with(|| {
                    // Present and unchanged since it was added (its stat record holds, or
                    // it re-hashes to its name): a changed entry is fetched again like a
                    // missing one, or answers 503 while offline.
                    match store.checked_lookup(&plugin.hash, &plugin.name) {
                        Ok(found) => found.is_some(),
                        Err(e) => {
                            tracing::warn!("{e}");
                            false
                        }
                    }
                })
        });
        let agent_present = conversation
            .lock
            .lock
            .agent
            .as_ref()
            .is_none_or(|agent| store.has_agent(agent));
        if !(plugins_present && agent_present) {
            incomplete.push(conversation.lock);
        }
    }
    incomplete
}

/// How long an entry found unchanged is taken to stay so, by every request (see
/// [`berth_store::Store::remembering_checks_for`]): a change behind berth's back is
/// caught by the first use at least this long after it.
pub const ENTRY_RECHECK_WINDOW: std::time::Duration = std::time::Duration::from_secs(1);

impl AppState {
    /// Opens the data folder: lists every conversation and checks that its store entries
    /// are present.
    pub fn open(mut config: Config) -> std::io::Result<(Self, RestoreReport)> {
        // Every request checks the entries it uses against their stat records; within
        // this window of a check that found an entry unchanged, only its presence is.
        config.store = config.store.remembering_checks_for(ENTRY_RECHECK_WINDOW);
        // A bucket is shared: a lock read from it passes the checks a posted one does.
        let policy = config.policy.clone();
        let check: conversations::LockCheck = Arc::new(move |lock| {
            crate::lock_check::check_lock_against(&policy, lock).map_err(|e| e.message)
        });
        let (conversations, stored) =
            Conversations::open(&config.data_dir, check, config.record_key.clone())?;
        // Every conversation's lock in a folder is a root of the store: `berth store gc`
        // keeps them. A fleet's conversations are in a bucket, their plugins in its cache:
        // the store is a cache of that cache, and gc may empty it.
        if let Some(folder) = config.data_dir.folder() {
            config
                .store
                .register_root(folder)
                .map_err(|e| std::io::Error::other(e.to_string()))?;
        }
        let conversations_count = stored.len();
        // The locks of conversations whose plugins or agent the store lacks: found once here,
        // fetched again in the background below when online.
        let incomplete = incomplete_locks(&config.store, stored);
        let report = RestoreReport {
            conversations: conversations_count,
            incomplete: incomplete.len(),
        };
        let state = Self {
            inner: Arc::new(Inner {
                fetch_policy: Arc::new(config.policy.fetch_policy()),
                // A posted lock's record of where a plugin was picked from is the client's
                // word: its plugins are matched by their own sources, as the review does.
                source_rules: berth_resolver::SourceRules::new(
                    Arc::new(config.run_policy.policy.clone()),
                    berth_resolver::LockedPicks::Ignored,
                ),
                config,
                conversations,
                shared: SharedResolutions::default(),
                sets: Default::default(),
                pushed: Default::default(),
                checked: Default::default(),
                planned: Default::default(),
                signed: Default::default(),
                draining: Default::default(),
                ready: Default::default(),
            }),
        };
        if report.incomplete > 0 {
            state.restore_in_background(incomplete);
        }
        Ok((state, report))
    }

    /// Fetches again, in the background when online, the plugins and agents of the locks
    /// whose entries the store lacks; offline, says they answer 503.
    fn restore_in_background(&self, incomplete: Vec<Arc<conversations::LockedText>>) {
        if self.inner.config.offline {
            tracing::warn!(
                "{} conversations have plugins missing from the store; offline, so they answer 503 until the store is synced",
                incomplete.len()
            );
            return;
        }
        let background = self.clone();
        std::thread::spawn(move || {
            for lock in incomplete {
                if let Err(errors) = background.sync(&lock.lock, &berth_resolver::Cancel::new()) {
                    for e in errors {
                        tracing::warn!("restoring a conversation's plugins: {e}");
                    }
                }
            }
        });
    }

    pub(crate) fn config(&self) -> &Config {
        &self.inner.config
    }

    /// Whether SIGTERM came: the server is finishing what it started.
    pub(crate) fn draining(&self) -> bool {
        self.inner
            .draining
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Resolver settings for this server; `cancel` stops the work (a request's deadline).
    pub(crate) fn settings(&self, cancel: &berth_resolver::Cancel) -> Settings {
        let config = self.config();
        Settings {
            github_url: config.policy.github_url.clone(),
            network: if config.offline {
                Network::Offline
            } else {
                Network::Online
            },
            jobs: config.jobs,
            base_dir: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
            home_dir: config.home_dir.clone(),
            archive_limits: config.archive_limits,
            // The server's own `--index-url`: it reads no user's uv configuration.
            index: Ok(berth_transport::registries::PackageIndex::given(
                &config.index_url,
            )),
            shared: Some(self.inner.shared.clone()),
            cancel: cancel.clone(),
            policy: Some(self.inner.fetch_policy.clone()),
            substituters: config.substituters.clone(),
            ref_ttl: config.ref_ttl,
            // A server does not run npm or uv for a client's plugins (their requests would
            // not pass the source policy): it runs the payloads a posted lock pins, and
            // sends none of its user's npm credentials to the URLs a client's lock names.
            npm: Ok(Default::default()),
            payload_finder: None,
            // The policy's `exclude-newer`: what a conversation locks stays off releases
            // younger than its cutoff, as the CLI's lock does.
            release_age: berth_resolver::ReleaseAge {
                policy: config.run_policy.policy.release_age(),
                signed_sources: config.run_policy.policy.require_signed_sources().is_some(),
                now: config
                    .run_policy
                    .now
                    .unwrap_or_else(berth_lockfile_schema::release_age::Timestamp::now),
            },
            sources: self.inner.source_rules.clone(),
            // A conversation's own lock, as this server (or the fleet) stored it after its
            // start checked the pins; a start sets `Recorded` for the lock it is given.
            pins: berth_resolver::LockedPins::Taken,
            npm_latest: false,
            signature_reader: Some(berth_review::read_source_signature),
            // What the CLI's `lock` and `sync` ask under the same policy key.
            require_registry_signatures: config
                .run_policy
                .policy
                .require_registry_signatures()
                .map(str::to_owned),
        }
    }

    /// The plugin set of `lock` as the runtime's JSON bytes, from the cache when every
    /// entry it names is still in the store, unchanged (checked against its stat record,
    /// as the runtime checks: a set is never served from an entry changed behind berth).
    /// Never under `tools = "pinned"`: each start asks the MCP servers again.
    pub(crate) fn cached_set(&self, lock: &conversations::LockedText) -> Option<Arc<SetJson>> {
        if crate::lock_check::tools_pinned(&self.config().run_policy) {
            return None;
        }
        let cached = unpoisoned(self.inner.sets.lock())
            .map
            .get(&lock.text)
            .cloned()?;
        let wanted: Vec<_> = lock
            .lock
            .plugins
            .iter()
            .map(|p| (&p.hash, p.name.as_str()))
            .collect();
        self.config()
            .store
            .checked_lookup_all(&wanted)
            .into_iter()
            .all(|found| matches!(found, Ok(Some(_))))
            .then_some(cached)
    }

    /// Builds the plugin set of `lock` from the store (fetching exactly the locked content
    /// again when an entry is missing and the server is online), and caches its bytes.
    pub(crate) fn build_set(
        &self,
        lock: &conversations::LockedText,
        cancel: &berth_resolver::Cancel,
    ) -> Result<Arc<SetJson>, AppError> {
        if let Some(json) = self.cached_set(lock) {
            return Ok(json);
        }
        crate::lock_check::check_lock_rules(&self.config().run_policy, &lock.lock)?;
        let _hold = self.hold_store()?;
        let config = self.config();
        let options = berth_runtime::BuildOptions {
            max_skills: Some(config.max_skills),
            cancel: Some(cancel.shared_flag()),
            // Read again by the run policy's review of what the plugins run, if it has one.
            keep_models: berth_review::reviews_surfaces(&config.run_policy.policy),
            ..berth_runtime::BuildOptions::default()
        };
        let set = match berth_runtime::build_plugin_set(&config.store, &lock.lock, &options) {
            Ok(set) => set,
            // Missing, or changed after it was added: fetched again from the locked pin
            // (`sync` moves a changed entry aside first).
            Err(
                berth_plugin::PluginError::NotSynced { .. }
                | berth_plugin::PluginError::Store(berth_store::StoreError::Tampered { .. }),
            ) if !config.offline => {
                self.sync(&lock.lock, cancel)
                    .map_err(|e| AppError::from_entries(&e))?;
                berth_runtime::build_plugin_set(&config.store, &lock.lock, &options)
                    .map_err(|e| AppError::from_runtime(&e))?
            }
            Err(e) => return Err(AppError::from_runtime(&e)),
        };
        crate::signed_sources::check_signed_sources(
            &self.inner.signed,
            &config.run_policy.policy,
            (&config.store, &self.settings(cancel)),
            &lock.lock,
        )?;
        crate::lock_check::check_run_policy(
            &config.run_policy,
            &config.store,
            &self.inner.fetch_policy,
            &set,
        )?;
        let json = Arc::new(SetJson::new(set.to_json()).map_err(AppError::internal)?);
        let mut sets = unpoisoned(self.inner.sets.lock());
        // Bounded in count and in bytes (a plugin set of many skills is large): past
        // either, the cache starts afresh, and sets are built again as they are asked for.
        let bytes = json.len() + lock.text.len();
        if sets.map.len() >= SET_CACHE_ENTRIES || sets.bytes + bytes > SET_CACHE_BYTES {
            sets.map.clear();
            sets.bytes = 0;
        }
        if sets.map.insert(lock.text.clone(), json.clone()).is_none() {
            sets.bytes += bytes;
        }
        Ok(json)
    }

    /// Holds the store so `berth store gc` waits until this conversation is on disk.
    pub(crate) fn hold_store(&self) -> Result<berth_store::SharedUse, AppError> {
        self.config()
            .store
            .shared_use(|| tracing::info!("waiting for a running `berth store gc`"))
            .map_err(|e| AppError::from_own_files(&e))
    }

    /// Makes every entry of `lock` present (fetching exactly the locked commits).
    pub(crate) fn sync(
        &self,
        lock: &berth_lockfile_schema::Lock,
        cancel: &berth_resolver::Cancel,
    ) -> Result<(), Vec<berth_resolver::EntryError>> {
        berth_resolver::sync_plugins(
            &self.config().store,
            &self.settings(cancel),
            &crate::report::LogReporter,
            lock,
            None,
            berth_resolver::LocalCheck::TrustStore,
        )?;
        self.push_to_cache(lock)
    }

    /// Pushes the lock's git and archive plugins and its payload closures to the `--push-to` cache, each once per
    /// server life (the cache itself skips what it already has). A failure fails the
    /// start: a conversation is answered only when the fleet can restore it.
    pub(crate) fn push_to_cache(
        &self,
        lock: &berth_lockfile_schema::Lock,
    ) -> Result<(), Vec<berth_resolver::EntryError>> {
        let Some(cache) = &self.config().push_to else {
            return Ok(());
        };
        let known = |hash: &berth_lockfile_schema::Sha256Hash| {
            self.inner
                .pushed
                .lock()
                .expect("the pushed set is never poisoned")
                .contains(hash)
        };
        // Git and archive plugins, and the closures of MCP servers' packages.
        let wanted = lock
            .plugins
            .iter()
            .filter(|p| !matches!(p.pin, berth_lockfile_schema::Pin::Local(_)))
            .map(|p| (p.hash, p.name.clone(), format!("plugin `{}`", p.name)))
            .chain(lock.payloads.iter().map(|p| {
                (
                    p.hash,
                    p.entry_name(),
                    format!("package `{}` of plugin `{}`", p.package, p.plugin),
                )
            }));
        let mut errors = Vec::new();
        for (hash, name, label) in wanted {
            if known(&hash) {
                continue;
            }
            let Some(entry) = self.config().store.lookup(&hash, &name) else {
                continue;
            };
            match cache.push(&entry.path, &hash, &name, None) {
                Ok(pushed) => {
                    if let berth_transport::cache::Pushed::Uploaded { bytes } = pushed {
                        tracing::info!(entry = %name, bytes, cache = %cache.label(), "pushed");
                    }
                    // Where it came from, so the fleet's servers need not ask upstream:
                    // without it they check the pin against its source.
                    let pins = self.config().store.pins(&hash, &name);
                    if let Err(e) = cache.push_pins(&hash, &name, &pins) {
                        tracing::warn!("plugin `{name}`: its pins were not recorded: {e}");
                    }
                    self.inner
                        .pushed
                        .lock()
                        .expect("the pushed set is never poisoned")
                        .insert(hash);
                }
                Err(e) => errors.push(berth_resolver::EntryError {
                    label,
                    error: Box::new(berth_resolver::ResolveError::BinaryCache(e)),
                }),
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }
}
