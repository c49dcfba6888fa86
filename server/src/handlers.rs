//! The route handlers. Anything that touches git, the network or many files runs on a
//! blocking thread.

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use berth_lockfile_schema::{
    AgentOrigin, AgentRequest, Lock, LockedPluginWire, Manifest, PluginRequest, Source, parse_lock,
};
use berth_resolver::{Cancel, InMemoryLock, LockAndSyncError, LockMode, Reporter, lock_and_sync};
use utoipa::OpenApi;
use uuid::Uuid;

use crate::AppState;
use crate::api::{
    AgentSourceBody, ApiJson, ConversationCreated, ConversationDetail, ConversationList,
    ConversationPath, ConversationSummary, CreateConversation, Health, LockedAgentBody,
    LockedPluginBody, MAX_PLUGINS, PluginSourceBody,
};
use std::sync::Arc;

use crate::conversations::{LockedText, Meta};
use crate::error::{AppError, ErrorBody, ErrorDetail};

/// The OpenAPI description, generated from the handlers and their types.
#[derive(OpenApi)]
#[openapi(
    info(title = "berth", description = "Conversations that keep exactly their locked plugin set."),
    paths(health, create, list, get_one, lockfile, plugin_set, delete),
    components(schemas(
        CreateConversation, PluginSourceBody, ConversationCreated, ConversationList,
        ConversationSummary, ConversationDetail, LockedPluginBody, AgentSourceBody, LockedAgentBody,
        Health, ErrorBody, ErrorDetail
    )),
    modifiers(&ApiKeyScheme),
    security(("api_key" = []), ("bearer" = []))
)]
#[derive(Debug)]
pub struct ApiDoc;

struct ApiKeyScheme;

impl utoipa::Modify for ApiKeyScheme {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{
            ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme,
        };
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "api_key",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::new("X-Session-API-Key"))),
        );
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// Logs the resolver's progress instead of printing it.
#[derive(Debug)]
pub(crate) struct LogReporter;

impl Reporter for LogReporter {
    fn status(&self, verb: &str, message: &str) {
        match verb {
            "Added" => crate::fleet::METRICS
                .added
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            "Substituted" => crate::fleet::METRICS
                .cache_hits
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            _ => 0,
        };
        tracing::info!("{verb} {message}");
    }
    fn warn(&self, message: &str) {
        tracing::warn!("{message}");
    }
}

/// Every route but `/health` needs the API key when one is set.
pub async fn require_key(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let Some(expected) = state.config().api_key.as_deref() else {
        return next.run(request).await;
    };
    let headers = request.headers();
    let given = headers
        .get("x-session-api-key")
        .and_then(|v| v.to_str().ok())
        .or_else(|| {
            headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "))
        });
    match given {
        Some(key) if constant_time_eq(key.as_bytes(), expected.as_bytes()) => {
            next.run(request).await
        }
        _ => AppError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "a valid API key is required (X-Session-API-Key or Authorization: Bearer)",
        )
        .into_response(),
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

pub async fn not_found() -> AppError {
    AppError::new(StatusCode::NOT_FOUND, "not_found", "no such route")
}

/// A route that exists, called with another method. axum adds the `Allow` header.
pub async fn method_not_allowed(method: axum::http::Method) -> AppError {
    AppError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!(
            "this route does not answer {method}; the `Allow` header lists the methods it does"
        ),
    )
}

/// Liveness.
#[utoipa::path(get, path = "/health", security(()), responses((status = 200, body = Health)))]
pub async fn health(State(state): State<AppState>) -> axum::Json<Health> {
    axum::Json(Health {
        status: "ok".into(),
        conversations: state.inner.conversations.len(),
    })
}

/// The API description.
pub async fn openapi() -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        ApiDoc::openapi().to_pretty_json().unwrap_or_default(),
    )
        .into_response()
}

/// Starts a conversation: locks the plugins (or takes the lockfile), fetches what the store
/// lacks, stores the conversation's lockfile, and answers with its plugin set.
#[utoipa::path(
    post,
    path = "/api/conversations",
    request_body = CreateConversation,
    responses(
        (status = 201, description = "created", body = ConversationCreated),
        (status = 400, description = "bad source, `repo_path` leaving the repository, invalid lockfile, a field over 4 KiB or with control characters", body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 403, description = "source host not allowed or local sources disabled", body = ErrorBody),
        (status = 413, description = "body over 1 MiB", body = ErrorBody),
        (status = 422, description = "plugin invalid or hash mismatch", body = ErrorBody),
        (status = 502, description = "upstream fetch failed", body = ErrorBody),
        (status = 504, description = "upstream timed out", body = ErrorBody),
        (status = 507, description = "the server's disk is full", body = ErrorBody),
    )
)]
pub async fn create(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<CreateConversation>,
) -> Result<Response, AppError> {
    let mut request = Prepared::from_body(&state, body)?;
    // The `plugins` form within `--ref-ttl` of the same request: the lock it resolved to.
    if let Some(key) = &request.plan_key
        && let Some(locked) = state.planned(key)
    {
        request.manifest = None;
        request.lock = Some(locked);
    }
    let plan = request
        .plan_key
        .take()
        .filter(|_| request.manifest.is_some());
    let planning_since = std::time::Instant::now();
    // The common start, the same lock again with everything in place: answered on this
    // task, only the commit thread touching the disk.
    if let Some((locked, set, hold)) = state.ready_without_work(&request) {
        let meta = Meta::new(request.metadata);
        let commit = state
            .inner
            .conversations
            .create_async(&meta, locked.clone())
            .ok_or_else(|| AppError::internal("a quick start on object storage"))?;
        commit.await.map_err(|e| AppError::from_data_store(&e))?;
        drop(hold);
        tracing::info!(
            "conversation {} started with {} plugins",
            meta.id,
            locked.lock.plugins.len()
        );
        return created_answer(&meta, &locked, &set);
    }
    let timeout = state.config().fetch_timeout;
    let work_state = state.clone();
    let deadline = Deadline::default();
    let work_deadline = deadline.clone();
    let mut work = tokio::task::spawn_blocking(move || work_state.start(request, &work_deadline));
    let (meta, locked, set_json) = match tokio::time::timeout(timeout, &mut work).await {
        Ok(joined) => joined.map_err(AppError::internal)??,
        Err(_) => {
            // Stop the fetches, and make sure no conversation the client will never hear
            // of is stored: either the work has not stored it yet (it now never will), or
            // it already has, and the client gets it after all.
            let abandoning = deadline.clone();
            let abandoned = tokio::task::spawn_blocking(move || abandoning.abandon())
                .await
                .map_err(AppError::internal)?;
            if abandoned {
                return Err(AppError::new(
                    StatusCode::GATEWAY_TIMEOUT,
                    "upstream_timeout",
                    format!(
                        "locking and fetching the plugins took longer than {} s",
                        timeout.as_secs()
                    ),
                ));
            }
            work.await.map_err(AppError::internal)??
        }
    };
    if let Some(key) = plan {
        state.remember_plan(key, planning_since, &locked);
    }
    created_answer(&meta, &locked, &set_json)
}

/// The 201 answer of a start: spliced together from its id, the fields every start of its
/// lock shares (serialised once) and the plugin set (the runtime's exact bytes).
fn created_answer(meta: &Meta, locked: &LockedText, set_json: &str) -> Result<Response, AppError> {
    let fields = match locked.answer_fields.get() {
        Some(fields) => fields,
        None => {
            let mut fields = serde_json::json!({
                "lockfile": locked.text,
                "plugins": locked_plugins(&locked.lock),
            });
            // `agent` only when the conversation has one: SPEC section 7's answer is unchanged.
            if let Some(agent) = locked_agent(&locked.lock) {
                fields["agent"] = serde_json::to_value(agent).map_err(AppError::internal)?;
            }
            let text = serde_json::to_string(&fields).map_err(AppError::internal)?;
            locked
                .answer_fields
                .get_or_init(|| text[1..text.len() - 1].to_owned())
        }
    };
    let body = format!(
        "{{\"id\":\"{}\",{fields},\"plugin_set\":{}}}",
        meta.id,
        set_json.trim_end()
    );
    Ok((
        StatusCode::CREATED,
        [(header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response())
}

/// The source policy for an agent package: a git or archive source is a plugin source; a
/// requirement comes from the server's own index, and is only checked for credentials.
fn check_agent_source(
    policy: &crate::policy::Policy,
    written: &str,
    origin: &AgentOrigin,
) -> Result<(), AppError> {
    match origin {
        AgentOrigin::Tree(request) => policy
            .check(written, request.parsed_source())
            .map_err(|e| AppError::new(e.status, e.code, format!("agent: {}", e.message))),
        AgentOrigin::Index { .. } => policy.check_literal(written),
    }
}

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
    manifest: Option<Manifest>,
    lock: Option<Arc<LockedText>>,
    metadata: serde_json::Value,
    /// For the `plugins` form with `--ref-ttl`: the request's plugins and agent, as text,
    /// under which the lock they resolved to is remembered for the TTL.
    plan_key: Option<String>,
}

/// A lockfile from a request, parsed and checked against this server's limits and source
/// policy once for every request that sends the same text.
fn checked_lock(state: &AppState, text: &str) -> Result<Arc<LockedText>, AppError> {
    if let Some(known) = state
        .inner
        .checked
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .get(text)
    {
        return Ok(known.clone());
    }
    let policy = &state.config().policy;
    let lock = parse_lock("lockfile", text).map_err(|e| AppError::bad_request(e.to_string()))?;
    if lock.plugins.len() > MAX_PLUGINS {
        return Err(AppError::bad_request(format!(
            "the lockfile has {} plugins; a conversation may have at most {MAX_PLUGINS}",
            lock.plugins.len()
        )));
    }
    crate::input::check_lock(&lock)?;
    for plugin in &lock.plugins {
        let source = berth_lockfile_schema::Source::parse(&plugin.source)
            .map_err(|e| AppError::bad_request(e.message))?;
        policy.check(&plugin.source, &source)?;
    }
    if let Some(agent) = &lock.agent {
        let request = AgentRequest::new(&agent.source, agent.git_ref.as_deref(), None, None)
            .map_err(|(_, m)| AppError::bad_request(format!("agent: {m}")))?;
        check_agent_source(policy, &agent.source, request.origin())?;
    }
    // Stored as berth writes it, shared with every conversation that has it.
    let written = lock.to_toml();
    let locked = state
        .inner
        .conversations
        .intern(LockedText::new(lock, written));
    if text.len() <= crate::REQUEST_CACHE_MAX_TEXT {
        let mut checked = state
            .inner
            .checked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if checked.len() >= crate::REQUEST_CACHE_ENTRIES {
            checked.clear();
        }
        checked.insert(text.to_owned(), locked.clone());
    }
    Ok(locked)
}

impl Prepared {
    fn from_body(state: &AppState, body: CreateConversation) -> Result<Self, AppError> {
        let policy = &state.config().policy;
        let metadata = body.metadata.unwrap_or(serde_json::Value::Null);
        if body.agent.is_some() && body.lockfile.is_some() {
            return Err(AppError::bad_request(
                "`agent` goes with `plugins`; a lockfile carries its own `[agent]`",
            ));
        }
        match (body.plugins, body.lockfile) {
            (Some(plugins), None) => {
                if plugins.len() > MAX_PLUGINS {
                    return Err(AppError::bad_request(format!(
                        "{} plugins requested; a conversation may have at most {MAX_PLUGINS}",
                        plugins.len()
                    )));
                }
                // Sizes and characters first: nothing is parsed or fetched for a request
                // that carries a huge or deceptive field.
                crate::input::check_plugins(&plugins)?;
                if let Some(agent) = &body.agent {
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
                let agent = match &body.agent {
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
                    .then(|| serde_json::to_string(&(&plugins, &body.agent)).ok())
                    .flatten();
                Ok(Self {
                    plan_key,
                    manifest: Some(Manifest {
                        marketplaces: state
                            .config()
                            .marketplaces
                            .iter()
                            .filter(|m| {
                                requests.iter().any(|r| {
                                    matches!(r.parsed_source(), Source::Marketplace { marketplace, .. } if *marketplace == m.name)
                                })
                            })
                            .cloned()
                            .collect(),
                        plugins: requests,
                        agent,
                    }),
                    lock: None,
                    metadata,
                })
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

impl AppState {
    /// The lock a `plugins` request with this key resolved to, when that began within
    /// `--ref-ttl`.
    fn planned(&self, key: &str) -> Option<Arc<LockedText>> {
        let ttl = self.config().ref_ttl;
        self.inner
            .planned
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(key)
            .filter(|(since, _)| since.elapsed() < ttl)
            .map(|(_, locked)| locked.clone())
    }

    /// Remembers what a `plugins` request resolved to, as of when its resolution began.
    fn remember_plan(&self, key: String, since: std::time::Instant, locked: &Arc<LockedText>) {
        let ttl = self.config().ref_ttl;
        let mut planned = self
            .inner
            .planned
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if key.len() > crate::REQUEST_CACHE_MAX_TEXT {
            return;
        }
        if planned.len() >= crate::REQUEST_CACHE_ENTRIES {
            planned.retain(|_, (at, _)| at.elapsed() < ttl);
            if planned.len() >= crate::REQUEST_CACHE_ENTRIES {
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
    fn ready_without_work(
        &self,
        request: &Prepared,
    ) -> Option<(Arc<LockedText>, Arc<str>, berth_store::SharedUse)> {
        let locked = request.lock.as_ref()?;
        // Object storage's writes block; an agent's environment is checked on disk.
        if locked.lock.agent.is_some() || self.inner.conversations.shared() {
            return None;
        }
        let set = self
            .inner
            .sets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .map
            .get(&locked.text)
            .cloned()?;
        if self.config().push_to.is_some() {
            let pushed = self
                .inner
                .pushed
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let all_pushed = locked.lock.plugins.iter().all(|p| {
                matches!(p.pin, berth_lockfile_schema::Pin::Local { .. })
                    || pushed.contains(&p.hash)
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
    fn lock_and_sync(
        &self,
        request: &Prepared,
        cancel: &Cancel,
    ) -> Result<Arc<LockedText>, AppError> {
        let settings = self.settings(cancel);
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
    fn start(
        &self,
        request: Prepared,
        deadline: &Deadline,
    ) -> Result<(Meta, Arc<LockedText>, Arc<str>), AppError> {
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
                let set = self.build_set(&locked)?;
                (locked, set)
            }
        };
        // The fleet's cache gets the plugins before the conversation exists anywhere.
        self.push_to_cache(&locked.lock)
            .map_err(|errors| AppError::from_entries(&errors))?;
        let meta = Meta::new(request.metadata);
        deadline.commit(|| {
            self.inner
                .conversations
                .create(&meta, locked.clone())
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
    cancel: Cancel,
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
        self.phase
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The handler gives up: stops the work, and says whether it was in time (`false`:
    /// the conversation is already stored, and the handler answers with it).
    fn abandon(&self) -> bool {
        self.cancel.cancel();
        let mut phase = self.phase();
        if *phase == Phase::Working {
            *phase = Phase::Abandoned;
        }
        *phase == Phase::Abandoned
    }

    /// Runs `store` unless the handler gave up, holding off `abandon` meanwhile.
    fn commit<T>(&self, store: impl FnOnce() -> Result<T, AppError>) -> Result<T, AppError> {
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

fn locked_agent(lock: &Lock) -> Option<LockedAgentBody> {
    lock.agent.as_ref().map(|a| LockedAgentBody {
        package: a.package.clone(),
        version: a.version.clone(),
        source: a.source.clone(),
        entry_point: a.entry_point.to_string(),
        python_version: a.python_version.clone(),
        wheels: a.wheels.len(),
    })
}

fn locked_plugins(lock: &Lock) -> Vec<LockedPluginBody> {
    lock.plugins
        .iter()
        .map(|p| {
            let w = LockedPluginWire::from(p);
            LockedPluginBody {
                name: w.name,
                source: w.source,
                git_ref: w.git_ref,
                repo_path: w.repo_path,
                url: w.url,
                rev: w.rev,
                archive_hash: w.archive_hash,
                hash: w.hash,
            }
        })
        .collect()
}

/// Any id that is not a conversation is a 404, malformed or not.
fn conversation_id(raw: &str) -> Result<Uuid, AppError> {
    Uuid::parse_str(raw).map_err(|_| AppError::not_found())
}

/// Runs `work` on the conversations on a blocking thread (a folder's reads, a bucket's
/// requests).
async fn blocking<T: Send + 'static>(
    state: &AppState,
    work: impl FnOnce(&crate::conversations::Conversations) -> std::io::Result<T> + Send + 'static,
) -> Result<T, AppError> {
    let state = state.clone();
    tokio::task::spawn_blocking(move || work(&state.inner.conversations))
        .await
        .map_err(AppError::internal)?
        .map_err(|e| AppError::from_data_store(&e))
}

async fn load(state: &AppState, raw: &str) -> Result<crate::conversations::Stored, AppError> {
    let id = conversation_id(raw)?;
    blocking(state, move |c| c.get(id))
        .await?
        .ok_or_else(AppError::not_found)
}

/// The most conversations one page lists.
pub const MAX_PAGE: usize = 1000;

/// `?limit=&cursor=` of `GET /api/conversations`.
#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
pub struct ListQuery {
    /// At most this many (1 to 1000); without it, every conversation.
    limit: Option<usize>,
    /// The `next_cursor` of the page before.
    cursor: Option<String>,
}

/// The conversations, in id order (oldest first: ids are UUIDv7), a page at a time with
/// `limit`; on object storage, every server's.
#[utoipa::path(
    get,
    path = "/api/conversations",
    params(ListQuery),
    responses((status = 200, body = ConversationList), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody))
)]
pub async fn list(
    State(state): State<AppState>,
    query: Result<axum::extract::Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<axum::Json<ConversationList>, AppError> {
    let axum::extract::Query(query) = query.map_err(|e| AppError::bad_request(e.body_text()))?;
    let cursor = match query.cursor.as_deref().filter(|c| !c.is_empty()) {
        None => None,
        Some(c) => Some(Uuid::parse_str(c).map_err(|_| {
            AppError::bad_request(
                "`cursor` is not a conversation id: pass the `next_cursor` of the page before",
            )
        })?),
    };
    let limit = match query.limit {
        None => usize::MAX,
        Some(n @ 1..=MAX_PAGE) => n,
        Some(n) => {
            return Err(AppError::bad_request(format!(
                "`limit` is {n}; give 1 to {MAX_PAGE}, and follow `next_cursor` for the rest"
            )));
        }
    };
    let page = blocking(&state, move |c| c.list(cursor, limit)).await?;
    Ok(axum::Json(ConversationList {
        conversations: page.conversations,
        next_cursor: page.next_cursor,
    }))
}

/// A conversation's metadata and locked plugins.
#[utoipa::path(
    get,
    path = "/api/conversations/{id}",
    params(("id" = String, Path, description = "the conversation's id")),
    responses((status = 200, body = ConversationDetail), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody))
)]
pub async fn get_one(
    State(state): State<AppState>,
    ConversationPath(id): ConversationPath,
) -> Result<axum::Json<ConversationDetail>, AppError> {
    let stored = load(&state, &id).await?;
    Ok(axum::Json(ConversationDetail {
        id: stored.meta.id,
        created_at: stored.meta.created_at,
        metadata: stored.meta.metadata,
        plugins: locked_plugins(&stored.lock.lock),
        agent: locked_agent(&stored.lock.lock),
    }))
}

/// A conversation's `plugins.lock`.
#[utoipa::path(
    get,
    path = "/api/conversations/{id}/lockfile",
    params(("id" = String, Path, description = "the conversation's id")),
    responses((status = 200, content_type = "application/toml", body = String), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody))
)]
pub async fn lockfile(
    State(state): State<AppState>,
    ConversationPath(id): ConversationPath,
) -> Result<Response, AppError> {
    let stored = load(&state, &id).await?;
    Ok((
        [(header::CONTENT_TYPE, "application/toml")],
        stored.lock.text.clone(),
    )
        .into_response())
}

/// A conversation's merged plugin set, built from its lock and the store only (fetching
/// exactly the locked content again if the store lost it and the server is online).
#[utoipa::path(
    get,
    path = "/api/conversations/{id}/plugin_set",
    params(("id" = String, Path, description = "the conversation's id")),
    responses(
        (status = 200, description = "the plugin set (SPEC section 5)", body = Object),
        (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 502, body = ErrorBody), (status = 503, description = "plugins missing from the store and the server is offline", body = ErrorBody)
    )
)]
pub async fn plugin_set(
    State(state): State<AppState>,
    ConversationPath(id): ConversationPath,
) -> Result<Response, AppError> {
    let id = conversation_id(&id)?;
    // A folder's locks are in memory: no thread hand-off for the common read.
    let locked = if state.inner.conversations.shared() {
        blocking(&state, move |c| c.lock(id)).await?
    } else {
        state
            .inner
            .conversations
            .lock(id)
            .map_err(|e| AppError::from_data_store(&e))?
    }
    .ok_or_else(AppError::not_found)?;
    let json = match state.cached_set(&locked) {
        Some(json) => json,
        None => tokio::task::spawn_blocking(move || state.build_set(&locked))
            .await
            .map_err(AppError::internal)??,
    };
    Ok((
        [(header::CONTENT_TYPE, "application/json")],
        json.to_string(),
    )
        .into_response())
}

/// Removes a conversation; its store entries become collectable.
#[utoipa::path(
    delete,
    path = "/api/conversations/{id}",
    params(("id" = String, Path, description = "the conversation's id")),
    responses((status = 204, description = "removed"), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody))
)]
pub async fn delete(
    State(state): State<AppState>,
    ConversationPath(id): ConversationPath,
) -> Result<StatusCode, AppError> {
    let id = conversation_id(&id)?;
    let removed = blocking(&state, move |c| c.delete(id)).await?;
    if removed {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(AppError::not_found())
    }
}
