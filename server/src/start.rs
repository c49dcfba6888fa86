//! Starting a conversation: a request checked before any work (sizes, the source policy,
//! registered marketplaces; a lockfile text once for all requests that send it), the quick
//! start that needs no work, and the full one (lock, sync, push, build the set) under the
//! request's deadline.

use std::sync::Arc;

use axum::http::StatusCode;
use berth_lockfile_schema::{AgentRequest, Manifest, PluginRequest, Source, parse_lock};
use berth_resolver::{Cancel, InMemoryLock, LockAndSyncError, LockMode, lock_and_sync};

use crate::api::{AgentSourceBody, CreateConversation, MAX_PLUGINS, PluginSourceBody};
use crate::conversations::{LockedText, Meta, SetJson};
use crate::error::AppError;
use crate::lock_check::{check_agent_source, check_lock_against};
use crate::report::LogReporter;
use crate::state::AppState;
use berth_store::unpoisoned;

/// The registered marketplace `PLUGIN@MARKETPLACE` names, or a 400 naming those there are.
fn registered_marketplace(
    state: &AppState,
    plugin: &str,
    marketplace: &str,
) -> Result<(), AppError> {
    let registered = &state.config().marketplaces;
    if registered.iter().any(|m| m.name == marketplace) {
        return Ok(());
    }
    Err(AppError::bad_request(format!(
        "`{plugin}@{marketplace}`: this server has no marketplace `{marketplace}` ({}); give the plugin's own source, or ask the operator to register it with `--marketplace`",
        if registered.is_empty() {
            "it registers none".to_owned()
        } else {
            format!(
                "it registers {}",
                registered
                    .iter()
                    .map(|m| format!("`{}`", m.name))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    )))
}

/// A validated request, before anything is fetched.
pub(crate) struct Prepared {
    pub(crate) manifest: Option<Manifest>,
    pub(crate) lock: Option<Arc<LockedText>>,
    /// The client's `metadata`, as compact JSON text.
    pub(crate) metadata: Box<serde_json::value::RawValue>,
    /// For the `plugins` form with `--ref-ttl`: the request's plugins and agent, as text,
    /// under which the lock they resolved to is remembered for the TTL.
    pub(crate) plan_key: Option<String>,
}

/// A lockfile from a request, parsed and checked against this server's limits and source
/// policy once for every request that sends the same text.
fn checked_lock(state: &AppState, text: &str) -> Result<Arc<LockedText>, AppError> {
    if let Some(known) = unpoisoned(state.inner.checked.lock()).get(text) {
        return Ok(known.clone());
    }
    let lock = parse_lock("lockfile", text).map_err(|e| AppError::bad_request(e.to_string()))?;
    check_lock_against(&state.config().policy, &lock)?;
    // Refused before anything is fetched for it; `build_set` checks it again, and logs `warn`.
    crate::lock_check::check_signer_change(&state.config().run_policy, &lock)?;
    // Stored as berth writes it, shared with every conversation that has it.
    let written = lock.to_toml();
    let locked = state
        .inner
        .conversations
        .intern(LockedText::new(lock, written));
    if text.len() <= crate::state::REQUEST_CACHE_MAX_TEXT {
        let mut checked = unpoisoned(state.inner.checked.lock());
        if checked.len() >= crate::state::REQUEST_CACHE_ENTRIES {
            checked.clear();
        }
        checked.insert(text.to_owned(), locked.clone());
    }
    Ok(locked)
}

impl Prepared {
    pub(crate) fn from_body(state: &AppState, body: CreateConversation) -> Result<Self, AppError> {
        let metadata = serde_json::value::to_raw_value(
            body.metadata.as_ref().unwrap_or(&serde_json::Value::Null),
        )
        .map_err(AppError::internal)?;
        // Written compact, and refused before any work when no server could read the
        // record back.
        state
            .inner
            .conversations
            .check_size(&metadata)
            .map_err(|e| AppError::from_data_store(&e))?;
        if body.agent.is_some() && body.lockfile.is_some() {
            return Err(AppError::bad_request(
                "`agent` goes with `plugins`; a lockfile carries its own `[agent]`",
            ));
        }
        match (body.plugins, body.lockfile) {
            (Some(plugins), None) => {
                Self::from_plugins(state, &plugins, body.agent.as_ref(), metadata)
            }
            (None, Some(text)) => Ok(Self {
                manifest: None,
                lock: Some(checked_lock(state, &text)?),
                metadata,
                plan_key: None,
            }),
            _ => Err(AppError::bad_request("give either `plugins` or `lockfile`")),
        }
    }
}

impl Prepared {
    /// A `plugins` request: each plugin (and the agent) checked against the server's
    /// policy before anything is parsed further or fetched.
    fn from_plugins(
        state: &AppState,
        plugins: &[PluginSourceBody],
        agent: Option<&AgentSourceBody>,
        metadata: Box<serde_json::value::RawValue>,
    ) -> Result<Self, AppError> {
        let policy = &state.config().policy;
        if plugins.len() > MAX_PLUGINS {
            return Err(AppError::bad_request(format!(
                "{} plugins requested; a conversation may have at most {MAX_PLUGINS}",
                plugins.len()
            )));
        }
        // Sizes and characters first: nothing is parsed or fetched for a request that
        // carries a huge or deceptive field.
        crate::input::check_plugin_bodies(plugins)?;
        if let Some(agent) = agent {
            crate::input::check_agent(agent)?;
        }
        let mut requests = Vec::with_capacity(plugins.len());
        for (i, p) in plugins.iter().enumerate() {
            let request = PluginRequest::new(
                &p.source,
                p.git_ref.as_deref(),
                None,
                p.repo_path.as_deref(),
            )
            .map_err(|m| AppError::bad_request(format!("plugins[{i}]: {m}")))?;
            match request.parsed_source() {
                // Its sources are the marketplace's: each is checked when fetched.
                Source::Marketplace {
                    plugin,
                    marketplace,
                } => {
                    registered_marketplace(state, plugin, marketplace)?;
                }
                parsed => policy.check(&p.source, parsed)?,
            }
            requests.push(request);
        }
        let agent_request = match agent {
            None => None,
            Some(a) => {
                let request = AgentRequest::new(
                    &a.source,
                    a.git_ref.as_deref(),
                    a.entry_point.as_deref(),
                    a.python.as_deref(),
                )
                .map_err(|(_, m)| AppError::bad_request(format!("agent: {m}")))?;
                check_agent_source(policy, &a.source, request.origin())?;
                Some(request)
            }
        };
        let plan_key = (!state.config().ref_ttl.is_zero())
            .then(|| serde_json::to_string(&(plugins, agent)).ok())
            .flatten();
        let marketplaces = state
            .config()
            .marketplaces
            .iter()
            .filter(|m| {
                requests.iter().any(|r| {
                    matches!(r.parsed_source(), Source::Marketplace { marketplace, .. } if *marketplace == m.name)
                })
            })
            .cloned()
            .collect();
        Ok(Self {
            plan_key,
            manifest: Some(Manifest {
                marketplaces,
                plugins: requests,
                agent: agent_request,
                ..Manifest::default()
            }),
            lock: None,
            metadata,
        })
    }
}

impl AppState {
    /// The lock a `plugins` request with this key resolved to, when that began within
    /// `--ref-ttl`.
    pub(crate) fn planned(&self, key: &str) -> Option<Arc<LockedText>> {
        let ttl = self.config().ref_ttl;
        unpoisoned(self.inner.planned.lock())
            .get(key)
            .filter(|(since, _)| since.elapsed() < ttl)
            .map(|(_, locked)| locked.clone())
    }

    /// Remembers what a `plugins` request resolved to, as of when its resolution began.
    pub(crate) fn remember_plan(
        &self,
        key: String,
        since: std::time::Instant,
        locked: &Arc<LockedText>,
    ) {
        let ttl = self.config().ref_ttl;
        let mut planned = unpoisoned(self.inner.planned.lock());
        if key.len() > crate::state::REQUEST_CACHE_MAX_TEXT {
            return;
        }
        if planned.len() >= crate::state::REQUEST_CACHE_ENTRIES {
            planned.retain(|_, (at, _)| at.elapsed() < ttl);
            if planned.len() >= crate::state::REQUEST_CACHE_ENTRIES {
                planned.clear();
            }
        }
        planned.insert(key, (since, locked.clone()));
    }

    /// When a request's lockfile needs no work at all, what its start needs: the lock, its
    /// plugin set (built before), and a hold on the store against gc. That is when every
    /// entry was found unchanged within the recheck window and is still there, nothing is
    /// left to push to `--push-to`, there is no agent package, and no gc runs. Checked
    /// with `lstat`s only, so it may run on an async task.
    pub(crate) fn ready_without_work(
        &self,
        request: &Prepared,
    ) -> Option<(Arc<LockedText>, Arc<SetJson>, berth_store::SharedUse)> {
        let locked = request.lock.as_ref()?;
        // Object storage's writes block; an agent's environment is checked on disk; under
        // `tools = "pinned"` every start asks the MCP servers again.
        if locked.lock.agent.is_some()
            || self.inner.conversations.shared()
            || crate::lock_check::tools_pinned(&self.config().run_policy)
        {
            return None;
        }
        let set = unpoisoned(self.inner.sets.lock())
            .map
            .get(&locked.text)
            .cloned()?;
        if self.config().push_to.is_some() {
            let pushed = unpoisoned(self.inner.pushed.lock());
            let all_pushed = locked.lock.plugins.iter().all(|p| {
                matches!(p.pin, berth_lockfile_schema::Pin::Local(_)) || pushed.contains(&p.hash)
            });
            if !all_pushed {
                return None;
            }
        }
        let store = &self.config().store;
        // Held before the entries are looked at: gc cannot take them meanwhile.
        let hold = store.try_shared_use().ok()??;
        let present = locked
            .entry_paths
            .get_or_init(|| {
                locked
                    .lock
                    .plugins
                    .iter()
                    .map(|p| store.entry_path(&p.hash, &p.name))
                    .collect()
            })
            .iter()
            .all(|path| store.remembered_presence(path) == Some(true));
        present.then(|| (locked.clone(), set, hold))
    }

    /// Locks the request's plugins (or takes its lockfile, `--frozen`) and fetches what the
    /// store lacks.
    pub(crate) fn lock_and_sync(
        &self,
        request: &Prepared,
        cancel: &Cancel,
    ) -> Result<Arc<LockedText>, AppError> {
        // A posted lock's pins are its client's word: each counts once this store saw it
        // give its entry, and is fetched and hashed first otherwise.
        let settings = berth_resolver::Settings {
            // A fleet that authenticates its records takes no cache's word for a pin.
            pins: if self.config().record_key.is_some() {
                berth_resolver::LockedPins::RecordedHere
            } else {
                berth_resolver::LockedPins::Recorded
            },
            ..self.settings(cancel)
        };
        let mode = match &request.manifest {
            Some(manifest) => LockMode::Update {
                manifest,
                manifest_label: "plugins",
            },
            None => LockMode::Frozen,
        };
        let lock = lock_and_sync(
            &self.config().store,
            &settings,
            &LogReporter,
            mode,
            &InMemoryLock(request.lock.as_ref().map(|l| l.lock.clone())),
        )
        .map_err(|e| match e {
            LockAndSyncError::Lock(errors) | LockAndSyncError::Sync(errors) => {
                AppError::from_entries(&errors)
            }
            LockAndSyncError::Lockfile(never) => match never {},
            e @ (LockAndSyncError::NoLock | LockAndSyncError::Stale(_)) => AppError::internal(e),
        })?
        .lock;
        let text = lock.to_toml();
        Ok(self.inner.conversations.intern(LockedText::new(lock, text)))
    }

    /// Locks (when given plugins), syncs, builds the set and stores the conversation.
    pub(crate) fn start(
        &self,
        request: Prepared,
        deadline: &Deadline,
    ) -> Result<(Meta, Arc<LockedText>, Arc<SetJson>), AppError> {
        let config = self.config();
        // From resolving to the conversation on disk, gc must not remove what it uses.
        let _hold = self.hold_store()?;
        // A lock whose every entry is in the store, unchanged, with its plugin set built
        // before (the common start: the same lock again) needs nothing fetched or checked.
        let ready = request.lock.as_ref().and_then(|locked| {
            let agent_ready = locked
                .lock
                .agent
                .as_ref()
                .is_none_or(|agent| config.store.has_agent(agent));
            agent_ready
                .then(|| self.cached_set(locked))
                .flatten()
                .map(|set| (locked.clone(), set))
        });
        let (locked, set) = match ready {
            Some(ready) => ready,
            None => {
                let locked = self.lock_and_sync(&request, &deadline.cancel)?;
                let set = self.build_set(&locked, &deadline.cancel)?;
                (locked, set)
            }
        };
        // The fleet's cache gets the plugins before the conversation exists anywhere.
        self.push_to_cache(&locked.lock)
            .map_err(|errors| AppError::from_entries(&errors))?;
        let mut meta = Meta::new(request.metadata);
        deadline.commit(|| {
            self.inner
                .conversations
                .create(&mut meta, locked.clone())
                .map_err(|e| AppError::from_data_store(&e))
        })?;
        tracing::info!(
            "conversation {} started with {} plugins",
            meta.id,
            locked.lock.plugins.len()
        );
        Ok((meta, locked, set))
    }
}

/// A request's deadline as its worker sees it: the resolver's cancel flag, and whether the
/// client still waits. Storing the conversation and giving up on it exclude each other, so
/// a client that was answered 504 never has a conversation stored for it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Deadline {
    pub(crate) cancel: Cancel,
    phase: Arc<std::sync::Mutex<Phase>>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Phase {
    #[default]
    Working,
    Abandoned,
    Committed,
}

impl Deadline {
    fn phase(&self) -> std::sync::MutexGuard<'_, Phase> {
        unpoisoned(self.phase.lock())
    }

    /// The handler gives up: stops the work, and says whether it was in time (`false`:
    /// the conversation is already stored, and the handler answers with it).
    pub(crate) fn abandon(&self) -> bool {
        self.cancel.cancel();
        let mut phase = self.phase();
        if *phase == Phase::Working {
            *phase = Phase::Abandoned;
        }
        *phase == Phase::Abandoned
    }

    /// Runs `store` unless the handler gave up, holding off `abandon` meanwhile.
    pub(crate) fn commit<T>(
        &self,
        store: impl FnOnce() -> Result<T, AppError>,
    ) -> Result<T, AppError> {
        let mut phase = self.phase();
        if *phase == Phase::Abandoned {
            return Err(AppError::new(
                StatusCode::GATEWAY_TIMEOUT,
                "upstream_timeout",
                "the request's deadline passed; nothing was stored",
            ));
        }
        let stored = store()?;
        *phase = Phase::Committed;
        Ok(stored)
    }
}
