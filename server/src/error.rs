//! The one error type every handler returns, and how library errors map onto HTTP.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use berth_resolver::{EntryError, ErrorKind};
use berth_runtime::RuntimeError;
use serde::Serialize;
use utoipa::ToSchema;

/// `{"error": {"code", "message"}}`, with its status. Messages never carry internals such
/// as file system paths of the server or credentials.
#[derive(Debug)]
pub struct AppError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
}

/// The error body of SPEC section 7.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

/// What went wrong.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorDetail {
    /// A stable machine-readable code, such as `not_found` or `upstream_failed`.
    pub code: String,
    /// A sentence for people.
    pub message: String,
}

impl AppError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
        }
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }

    pub fn not_found() -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", "no such conversation")
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "forbidden", message)
    }

    pub fn internal(error: impl std::fmt::Display) -> Self {
        // Internals go to the log, not to the client.
        tracing::error!("internal error: {error}");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "the server failed; see its log",
        )
    }

    /// A failure to lock or sync the conversation's plugins: upstream trouble is 502 (or 504
    /// for timeouts), anything about the plugins themselves 422.
    pub fn from_entries(errors: &[EntryError]) -> Self {
        let first = errors.first().expect("at least one error");
        let message = errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ");
        match first.error.kind() {
            ErrorKind::Timeout => {
                Self::new(StatusCode::GATEWAY_TIMEOUT, "upstream_timeout", message)
            }
            ErrorKind::Upstream => Self::new(StatusCode::BAD_GATEWAY, "upstream_failed", message),
            ErrorKind::Refused => Self::forbidden(message),
            ErrorKind::InvalidInput => Self::bad_request(message),
            ErrorKind::Internal => Self::internal(message),
            ErrorKind::Integrity => {
                Self::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_plugin", message)
            }
        }
    }

    /// A failure to build the plugin set from the store.
    pub fn from_runtime(error: &RuntimeError) -> Self {
        match error {
            RuntimeError::NotSynced { plugin, .. } => Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "not_in_store",
                format!(
                    "plugin `{plugin}` is not in the store and the server may not fetch it now"
                ),
            ),
            RuntimeError::Io(e) => Self::internal(e),
            other => Self::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_plugin",
                other.to_string(),
            ),
        }
    }
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error: ErrorDetail {
                code: self.code.to_owned(),
                message: self.message,
            },
        };
        (self.status, Json(body)).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_resolver::ResolveError;

    fn status_of(error: ResolveError) -> u16 {
        AppError::from_entries(&[EntryError {
            label: "plugins:0".into(),
            error: Box::new(error),
        }])
        .status
        .as_u16()
    }

    #[test]
    fn statuses_follow_the_error_kind() {
        let timeout = ResolveError::Timeout {
            url: "u".into(),
            cause: berth_resolver::Upstream::from_text("slow".into()),
        };
        assert_eq!(status_of(timeout), 504);
        // A fetch error that merely mentions a time-out is still an upstream failure.
        let fetch = ResolveError::Fetch {
            url: "u".into(),
            cause: berth_resolver::Upstream::from_text("timed out".into()),
        };
        assert_eq!(status_of(fetch), 502);
        let refused = ResolveError::Refused {
            url: "u".into(),
            why: berth_resolver::Refusal::TooManyRedirects,
        };
        assert_eq!(status_of(refused), 403);
        assert_eq!(
            status_of(ResolveError::MissingEnv { name: "X".into() }),
            400
        );
        assert_eq!(
            status_of(ResolveError::UnknownPlugin { name: "x".into() }),
            422
        );
    }
}
