//! `POST /api/conversations/{id}/load_plugin`: the OpenHands agent server's route, on a
//! conversation's lock. The plugin `NAME@MARKETPLACE` (a marketplace the conversation's
//! lock holds, else one the server registers with `--marketplace`) is locked into the
//! conversation's lock, every other pin kept, fetched under the server's source policy
//! exactly as a start is, and the new lock stored: a restart restores it with the rest.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use berth_lockfile_schema::marketplace::MarketplaceRequest;
use berth_lockfile_schema::{AgentRequest, Lock, Manifest, PluginRequest, Source};
use serde::Deserialize;
use utoipa::ToSchema;

use crate::api::{ApiJson, ConversationPath};
use crate::conversations::{LockedText, Replaced};
use crate::error::{AppError, ErrorBody};
use crate::start::Prepared;
use crate::state::AppState;

/// The body of `load_plugin`, as the agent server takes it.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LoadPluginBody {
    /// `NAME@MARKETPLACE`.
    pub plugin_ref: String,
}

/// How often a load is tried again when another load of the same conversation stored its
/// lock first.
const ATTEMPTS: usize = 3;

/// Loads a plugin of a marketplace into a conversation: it is locked into the
/// conversation's lock (every other pin kept) and fetched, and `plugin_set` shows it.
#[utoipa::path(
    post,
    path = "/api/conversations/{id}/load_plugin",
    params(("id" = String, Path, description = "the conversation's id")),
    request_body = LoadPluginBody,
    responses(
        (status = 200, description = "loaded (or already in the conversation's lock)", body = Object),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody),
        (status = 404, description = "no such conversation, marketplace or plugin", body = ErrorBody),
        (status = 501, description = "the conversations are on object storage", body = ErrorBody)
    )
)]
pub async fn load_plugin(
    State(state): State<AppState>,
    ConversationPath(id): ConversationPath,
    ApiJson(body): ApiJson<LoadPluginBody>,
) -> Result<Json<serde_json::Value>, AppError> {
    let id = uuid::Uuid::parse_str(&id).map_err(|_| AppError::not_found())?;
    let request = PluginRequest::new(&body.plugin_ref, None, None, None)
        .ok()
        .filter(|r| matches!(r.parsed_source(), Source::Marketplace { .. }))
        .ok_or_else(|| {
            AppError::bad_request(format!(
                "`{}` is not a plugin reference: give `NAME@MARKETPLACE`",
                body.plugin_ref
            ))
        })?;
    let work = state.clone();
    tokio::task::spawn_blocking(move || work.load_plugin(id, &request))
        .await
        .map_err(AppError::internal)??;
    Ok(Json(serde_json::json!({"success": true})))
}

impl AppState {
    /// Locks `request` into conversation `id`'s lock and stores it (see the module).
    fn load_plugin(&self, id: uuid::Uuid, request: &PluginRequest) -> Result<(), AppError> {
        let _hold = self.hold_store()?;
        let conversations = &self.inner.conversations;
        for _ in 0..ATTEMPTS {
            let previous = conversations
                .lock(id)
                .map_err(|e| AppError::from_data_store(&e))?
                .ok_or_else(AppError::not_found)?;
            let wanted = request.display_source();
            if previous
                .lock
                .plugins
                .iter()
                .any(|p| p.requested.as_deref() == Some(wanted.as_str()))
            {
                return Ok(());
            }
            let locked = self.relock_with(&previous, request)?;
            self.push_to_cache(&locked.lock)
                .map_err(|errors| AppError::from_entries(&errors))?;
            match conversations.replace_lock(id, &previous, locked) {
                Ok(Replaced::Done) => {
                    tracing::info!("conversation {id}: loaded `{wanted}`");
                    return Ok(());
                }
                Ok(Replaced::Gone) => return Err(AppError::not_found()),
                // Another load stored its lock first: again, from that one.
                Ok(Replaced::Moved) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Unsupported => {
                    return Err(AppError::new(
                        StatusCode::NOT_IMPLEMENTED,
                        "not_implemented",
                        e.to_string(),
                    ));
                }
                Err(e) => return Err(AppError::from_data_store(&e)),
            }
        }
        Err(AppError::new(
            StatusCode::CONFLICT,
            "conflict",
            "the conversation's plugins kept changing while this one was loaded; try again",
        ))
    }

    /// `previous` locked again with `request` added: its own requests, each pin kept, the
    /// marketplace `request` names added from the server's when the lock lacks it; synced,
    /// its set built (so what the policy refuses is refused here).
    fn relock_with(
        &self,
        previous: &Arc<LockedText>,
        request: &PluginRequest,
    ) -> Result<Arc<LockedText>, AppError> {
        let Source::Marketplace { marketplace, .. } = request.parsed_source() else {
            unreachable!("checked by the handler");
        };
        let mut manifest = manifest_of(&previous.lock)?;
        if !manifest.marketplaces.iter().any(|m| &m.name == marketplace) {
            let registered = self
                .config()
                .marketplaces
                .iter()
                .find(|m| &m.name == marketplace)
                .ok_or_else(|| {
                    AppError::new(
                        StatusCode::NOT_FOUND,
                        "not_found",
                        format!(
                            "no marketplace `{marketplace}`: neither the conversation's lock nor this server (`--marketplace`) has it"
                        ),
                    )
                })?;
            manifest.marketplaces.push(registered.clone());
        }
        manifest.plugins.push(request.clone());
        let prepared = Prepared {
            manifest: Some(manifest),
            lock: Some(previous.clone()),
            metadata: serde_json::value::RawValue::from_string("null".to_owned())
                .map_err(AppError::internal)?,
            plan_key: None,
        };
        let cancel = berth_resolver::Cancel::new();
        let locked = self
            .lock_and_sync(&prepared, &cancel)
            .map_err(unknown_plugin)?;
        self.build_set(&locked, &cancel)?;
        Ok(locked)
    }
}

/// A catalog that lists no such plugin is the agent server's 404.
fn unknown_plugin(error: AppError) -> AppError {
    if error.message.contains("lists no plugin") {
        AppError::new(StatusCode::NOT_FOUND, "not_found", error.message)
    } else {
        error
    }
}

/// The manifest `lock` answers: its marketplaces, the entries asked for (each pinned to
/// its hash, so locking again keeps exactly them), its agent.
fn manifest_of(lock: &Lock) -> Result<Manifest, AppError> {
    let marketplaces = lock
        .marketplaces
        .iter()
        .map(|m| {
            MarketplaceRequest::new(
                &m.name,
                &m.source,
                m.git_ref.as_deref(),
                m.repo_path.as_deref(),
            )
            .map(|r| r.auto_loading(m.auto_load.clone()))
            .map_err(|(_, why)| AppError::internal(why))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let plugins = lock
        .plugins
        .iter()
        .filter(|p| p.is_requested())
        .map(|p| {
            let made = match &p.requested {
                Some(pick) => PluginRequest::new(pick, None, None, None),
                None => PluginRequest::new(
                    &p.source,
                    p.git_ref.as_deref(),
                    p.version.as_deref(),
                    p.repo_path.as_deref(),
                ),
            };
            made.map(|mut r| {
                r.hash = Some(p.hash);
                r
            })
            .map_err(AppError::internal)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let agent = lock
        .agent
        .as_ref()
        .map(|a| {
            AgentRequest::new(
                &a.source,
                a.git_ref.as_deref(),
                Some(&a.entry_point.name),
                a.python.as_deref(),
            )
            .map_err(|(_, why)| AppError::internal(why))
        })
        .transpose()?;
    Ok(Manifest {
        marketplaces,
        plugins,
        agent,
        ..Manifest::default()
    })
}
