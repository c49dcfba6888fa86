//! The route handlers. Anything that touches git, the network or many files runs on a
//! blocking thread.

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use berth_lockfile_schema::{Lock, LockedPluginWire};
use serde_json::value::{RawValue, to_raw_value};
use utoipa::OpenApi;
use uuid::Uuid;

use crate::api::{
    AgentSourceBody, ApiJson, ConversationCreated, ConversationDetail, ConversationList,
    ConversationPath, ConversationSummary, CreateConversation, Health, LockedAgentBody,
    LockedPluginBody, PluginSourceBody,
};
use crate::state::AppState;

use crate::conversations::{AnswerFields, LockedText, Meta, SetJson};
use crate::error::{AppError, ErrorBody, ErrorDetail};
use crate::start::{Deadline, Prepared};

/// The OpenAPI description, generated from the handlers and their types.
#[derive(OpenApi)]
#[openapi(
    info(title = "berth", description = "Conversations that keep exactly their locked plugin set."),
    paths(health, create, list, get_one, lockfile, plugin_set, delete, crate::load_plugin::load_plugin),
    components(schemas(
        crate::load_plugin::LoadPluginBody, CreateConversation, PluginSourceBody, ConversationCreated, ConversationList,
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
        let mut meta = Meta::new(request.metadata);
        let commit = state
            .inner
            .conversations
            .create_async(&mut meta, locked.clone())
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

/// The 201 answer of a start: its id, the fields every start of its lock shares
/// (serialised once) and the plugin set (the runtime's exact text), each written as the
/// JSON it already is.
fn created_answer(meta: &Meta, locked: &LockedText, set: &SetJson) -> Result<Response, AppError> {
    #[derive(serde::Serialize)]
    struct Created<'a> {
        id: &'a Uuid,
        lockfile: &'a RawValue,
        plugins: &'a RawValue,
        // Only when the conversation has one: docs/spec.md section 7's answer is unchanged.
        #[serde(skip_serializing_if = "Option::is_none")]
        agent: Option<&'a RawValue>,
        plugin_set: &'a RawValue,
    }
    let fields = match locked.answer_fields.get() {
        Some(fields) => fields,
        None => {
            let fields = AnswerFields {
                lockfile: to_raw_value(&locked.text).map_err(AppError::internal)?,
                plugins: to_raw_value(&locked_plugins(&locked.lock)).map_err(AppError::internal)?,
                agent: locked_agent(&locked.lock)
                    .map(|agent| to_raw_value(&agent))
                    .transpose()
                    .map_err(AppError::internal)?,
            };
            locked.answer_fields.get_or_init(|| fields)
        }
    };
    let body = serde_json::to_string(&Created {
        id: &meta.id,
        lockfile: &fields.lockfile,
        plugins: &fields.plugins,
        agent: fields.agent.as_deref(),
        plugin_set: set.raw(),
    })
    .map_err(AppError::internal)?;
    Ok((
        StatusCode::CREATED,
        [(header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response())
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
        (status = 200, description = "the plugin set (docs/spec.md section 5)", body = Object),
        (status = 401, body = ErrorBody), (status = 403, description = "the server's policy refuses the lock", body = ErrorBody), (status = 404, body = ErrorBody),
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
        None => {
            // Bounded like a start: building may fetch a missing entry again.
            let timeout = state.config().fetch_timeout;
            let cancel = berth_resolver::Cancel::new();
            let work_cancel = cancel.clone();
            let work = tokio::task::spawn_blocking(move || state.build_set(&locked, &work_cancel));
            match tokio::time::timeout(timeout, work).await {
                Ok(joined) => joined.map_err(AppError::internal)??,
                Err(_) => {
                    cancel.cancel();
                    return Err(AppError::new(
                        StatusCode::GATEWAY_TIMEOUT,
                        "upstream_timeout",
                        format!(
                            "building the plugin set took longer than {} s",
                            timeout.as_secs()
                        ),
                    ));
                }
            }
        }
    };
    Ok(([(header::CONTENT_TYPE, "application/json")], json.text()).into_response())
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
