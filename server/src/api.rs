//! The request and response bodies, and the JSON extractor whose rejections use the
//! server's error shape.

use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, FromRequestParts, Path, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::error::AppError;

/// The largest request body accepted.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// The most plugins one conversation may have.
pub const MAX_PLUGINS: usize = 64;

/// One plugin, with the OpenHands `PluginSource` fields.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PluginSourceBody {
    /// `github:OWNER/REPO[/PATH]`, an https git or archive URL, or (when the server allows
    /// local sources) a path or `file://` URL.
    pub source: String,
    /// A branch, tag or full commit.
    #[serde(default, rename = "ref")]
    pub git_ref: Option<String>,
    /// The plugin's folder inside the repository or archive.
    #[serde(default)]
    pub repo_path: Option<String>,
}

/// The conversation's custom agent package (docs/spec.md section 8), as the manifest's `[agent]`.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentSourceBody {
    /// `name==1.0.0` (from the server's index), `git+https://…` or an https `.zip` URL.
    pub source: String,
    /// A branch, tag or full commit (`git+` sources).
    #[serde(default, rename = "ref")]
    pub git_ref: Option<String>,
    /// Which name of the package's `openhands.agents` entry points to use.
    #[serde(default)]
    pub entry_point: Option<String>,
    /// A Python version requirement.
    #[serde(default)]
    pub python: Option<String>,
}

/// The locked agent package of a conversation.
#[derive(Debug, Serialize, ToSchema)]
pub struct LockedAgentBody {
    pub package: String,
    pub version: String,
    pub source: String,
    /// `name = module:attr`.
    pub entry_point: String,
    pub python_version: String,
    /// How many wheels its closure has.
    pub wheels: usize,
}

/// Start a conversation from plugin sources (locked now) or from a lockfile.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateConversation {
    /// The plugins, in merge order. Give this or `lockfile`.
    #[serde(default)]
    pub plugins: Option<Vec<PluginSourceBody>>,
    /// The text of a `plugins.lock`. Give this or `plugins`.
    #[serde(default)]
    pub lockfile: Option<String>,
    /// A custom agent package, locked with the plugins (only with `plugins`: a lockfile
    /// carries its own `[agent]`).
    #[serde(default)]
    pub agent: Option<AgentSourceBody>,
    /// Anything the caller wants kept with the conversation.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub metadata: Option<serde_json::Value>,
}

/// A locked plugin, as `berth plugins list --json` shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct LockedPluginBody {
    pub name: String,
    pub source: String,
    #[serde(rename = "ref", skip_serializing_if = "Option::is_none")]
    pub git_ref: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repo_path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rev: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub archive_hash: Option<String>,
    pub hash: String,
}

/// The answer to a new conversation. `plugin_set` holds exactly the bytes
/// `GET /api/conversations/{id}/plugin_set` (and `berth plugins show --json`) returns.
#[derive(Debug, ToSchema)]
#[allow(dead_code)]
pub struct ConversationCreated {
    #[schema(value_type = String, format = Uuid)]
    pub id: uuid::Uuid,
    /// The conversation's `plugins.lock`.
    pub lockfile: String,
    pub plugins: Vec<LockedPluginBody>,
    /// The locked agent package, if any.
    pub agent: Option<LockedAgentBody>,
    /// The merged plugin set (docs/spec.md section 5).
    #[schema(value_type = Object)]
    pub plugin_set: serde_json::Value,
}

/// A conversation in the list.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ConversationSummary {
    #[schema(value_type = String, format = Uuid)]
    pub id: uuid::Uuid,
    /// Seconds since the Unix epoch.
    pub created_at: u64,
    /// The plugins' names, in lock order.
    pub plugins: Vec<String>,
}

/// `GET /api/conversations`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ConversationList {
    pub conversations: Vec<ConversationSummary>,
    /// Pass as `cursor` for the next page; `null` on the last.
    #[schema(value_type = Option<String>, format = Uuid)]
    pub next_cursor: Option<uuid::Uuid>,
}

/// `GET /api/conversations/{id}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ConversationDetail {
    #[schema(value_type = String, format = Uuid)]
    pub id: uuid::Uuid,
    pub created_at: u64,
    #[schema(value_type = Object)]
    pub metadata: Box<serde_json::value::RawValue>,
    pub plugins: Vec<LockedPluginBody>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<LockedAgentBody>,
}

/// `GET /health`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    pub status: String,
    pub conversations: usize,
}

/// `Json<T>`, but a rejection answers in the server's error shape: 413 past the body
/// limit, 400 for anything else.
#[derive(Debug)]
pub struct ApiJson<T>(pub T);

impl<S, T> FromRequest<S> for ApiJson<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = AppError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        // A client sending its body slowly gets the connection's body timeout, not the
        // server's patience (handler tests, without a connection, have none).
        let deadline = req
            .extensions()
            .get::<crate::connections::BodyDeadline>()
            .copied();
        let read = axum::Json::<T>::from_request(req, state);
        let read = match deadline {
            None => read.await,
            Some(deadline) => match tokio::time::timeout_at(deadline.at, read).await {
                Ok(read) => read,
                Err(_) => return Err(AppError::body_timeout(deadline.after)),
            },
        };
        match read {
            Ok(axum::Json(value)) => Ok(Self(value)),
            Err(rejection) => Err(match &rejection {
                JsonRejection::BytesRejection(_)
                    if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE =>
                {
                    AppError::new(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        "too_large",
                        format!("the request body is larger than {} bytes", MAX_BODY_BYTES),
                    )
                }
                _ => AppError::bad_request(rejection.body_text()),
            }),
        }
    }
}

/// The `{id}` of a conversation's route. An id that cannot be read (not UTF-8 once
/// percent-decoded) is the same 404, in the same error shape, as any other id that names
/// no conversation; axum's own rejection would be plain text.
#[derive(Debug)]
pub struct ConversationPath(pub String);

impl<S> FromRequestParts<S> for ConversationPath
where
    S: Send + Sync,
{
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match Path::<String>::from_request_parts(parts, state).await {
            Ok(Path(id)) => Ok(Self(id)),
            Err(rejection) if rejection.status().is_client_error() => Err(AppError::not_found()),
            Err(rejection) => Err(AppError::internal(rejection.body_text())),
        }
    }
}
