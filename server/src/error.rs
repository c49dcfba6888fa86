//! The one error type every handler returns, and how library errors map onto HTTP.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use berth_plugin::PluginError;
use berth_resolver::{EntryError, ErrorKind};
use serde::Serialize;

use crate::refused::{Refused, TooLarge};
use utoipa::ToSchema;

/// `{"error": {"code", "message"}}`, with its status. Messages never carry internals such
/// as file system paths of the server or credentials.
#[derive(Debug)]
pub struct AppError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
}

/// The error body of docs/spec.md section 7.
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
    /// The request's id (its `X-Request-Id`), to find it in the server's log.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
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

    /// A request body that did not come in time (`--body-timeout`): 408, and the
    /// connection is closed after the answer.
    pub fn body_timeout(after: std::time::Duration) -> Self {
        Self::new(
            StatusCode::REQUEST_TIMEOUT,
            "request_timeout",
            format!(
                "the request's body did not arrive within {} s of its headers; send it at once",
                after.as_secs_f64()
            ),
        )
    }

    pub fn not_found() -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", "no such conversation")
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "forbidden", message)
    }

    /// A request whose `Host` does not name this server (see `host.rs`).
    pub fn misdirected(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::MISDIRECTED_REQUEST,
            "misdirected_request",
            message,
        )
    }

    /// The data folder's or the store's disk is full: the operator must free space, and
    /// the same request succeeds afterwards.
    pub fn insufficient_storage(error: impl std::fmt::Display) -> Self {
        // The operator needs the path; the client does not.
        tracing::error!("the disk of the data folder or the store is full: {error}");
        Self::new(
            StatusCode::INSUFFICIENT_STORAGE,
            "insufficient_storage",
            "the server's disk is full; try again once its operator has freed space",
        )
    }

    /// A failure of the server's own files (data folder, store): 507 when the disk is
    /// full, else 500.
    pub fn from_own_files(error: &(dyn std::error::Error + 'static)) -> Self {
        if is_out_of_space(error) {
            Self::insufficient_storage(error)
        } else {
            Self::internal(error)
        }
    }

    /// A failure to read or write the conversations (a folder, or a bucket): a full disk
    /// is 507; anything else 503, logged (a bucket that does not answer is a reason to try
    /// another server, or later).
    pub fn from_data_store(error: &std::io::Error) -> Self {
        if is_out_of_space(error) {
            return Self::insufficient_storage(error);
        }
        let inner = error.get_ref();
        if let Some(too_large) = inner.and_then(|e| e.downcast_ref::<TooLarge>()) {
            return Self::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "metadata_too_large",
                too_large.to_string(),
            );
        }
        if let Some(refused) = inner.and_then(|e| e.downcast_ref::<Refused>()) {
            // Names the conversation and the object (a key under the data folder or
            // bucket), never where that is.
            tracing::warn!("conversation store: {refused}");
            return Self::new(
                StatusCode::BAD_GATEWAY,
                "data_store_object_refused",
                refused.to_string(),
            );
        }
        if error.kind() == std::io::ErrorKind::InvalidData {
            // Someone else's object (a bucket is shared): what is wrong goes to the log.
            tracing::warn!("conversation store: {error}");
            return Self::new(
                StatusCode::BAD_GATEWAY,
                "data_store_object_refused",
                "the conversation's objects in the data store are corrupt, over a size limit or refused by this server's source policy; see the server's log",
            );
        }
        tracing::error!("conversation store: {error}");
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "data_store_unavailable",
            "the conversation store could not be read or written; see the server's log",
        )
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
    /// A full disk is 507, whatever else failed.
    pub fn from_entries(errors: &[EntryError]) -> Self {
        let first = errors.first().expect("at least one error");
        if let Some(full) = errors.iter().find(|e| is_out_of_space(*e)) {
            return Self::insufficient_storage(full);
        }
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
            // The run policy's `[sources]`, before the source was contacted: the same answer
            // as its review of a built set gives.
            ErrorKind::PolicyDenied => Self::new(StatusCode::FORBIDDEN, "policy_denied", message),
            ErrorKind::InvalidInput => Self::bad_request(message),
            ErrorKind::Internal => Self::internal(message),
            // This server's own limit: the source is fine, this server will not take it.
            ErrorKind::OverLimit => Self::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "archive_over_size_limit",
                message,
            ),
            ErrorKind::Integrity => {
                Self::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_plugin", message)
            }
        }
    }

    /// A failure to build the plugin set from the store.
    pub fn from_runtime(error: &PluginError) -> Self {
        match error {
            PluginError::NotSynced { plugin, .. } => Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "not_in_store",
                format!(
                    "plugin `{plugin}` is not in the store and the server may not fetch it now"
                ),
            ),
            PluginError::Store(berth_store::StoreError::Tampered { name, .. }) => {
                // The entry's path is the server's business: logged, not answered.
                tracing::error!("{error}");
                Self::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "store_entry_changed",
                    format!(
                        "the store entry of plugin `{name}` was changed after it was added and the server may not fetch it again now; `berth plugins sync` on the server's store repairs it"
                    ),
                )
            }
            PluginError::Io(e) => Self::from_own_files(e),
            PluginError::Cancelled => Self::new(
                StatusCode::GATEWAY_TIMEOUT,
                "upstream_timeout",
                "the request's deadline passed, or the server is shutting down, before the plugin set was built",
            ),
            other => Self::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_plugin",
                other.to_string(),
            ),
        }
    }
}

/// Whether `error` or any of its causes says the disk is full (`ENOSPC`, or a quota).
///
/// `#[error(transparent)]` variants hand `source()` on to what they wrap, so the I/O
/// error inside `ResolveError::Io`, `StoreError::Io` and their kin is looked at directly.
pub(crate) fn is_out_of_space(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut current = Some(error);
    while let Some(e) = current {
        if wrapped_io(e).is_some_and(io_out_of_space) {
            return true;
        }
        current = e.source();
    }
    false
}

fn io_out_of_space(io: &std::io::Error) -> bool {
    use std::io::ErrorKind::{QuotaExceeded, StorageFull};
    matches!(io.kind(), StorageFull | QuotaExceeded)
        || io.get_ref().is_some_and(|inner| is_out_of_space(inner))
}

/// The I/O error that `e` is, or wraps transparently.
fn wrapped_io<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a std::io::Error> {
    use berth_resolver::ResolveError;
    use berth_store::{NarError, StoreError};
    fn of_nar(e: &NarError) -> Option<&std::io::Error> {
        match e {
            NarError::Io(io) => Some(io),
            _ => None,
        }
    }
    fn of_store(e: &StoreError) -> Option<&std::io::Error> {
        match e {
            StoreError::Io(io) => Some(io),
            StoreError::Nar(nar) => of_nar(nar),
            _ => None,
        }
    }
    if let Some(io) = e.downcast_ref::<std::io::Error>() {
        return Some(io);
    }
    let resolve = e
        .downcast_ref::<ResolveError>()
        .or_else(|| e.downcast_ref::<Box<ResolveError>>().map(AsRef::as_ref));
    if let Some(resolve) = resolve {
        return match resolve {
            ResolveError::Io(io) => Some(io),
            ResolveError::Store(store) => of_store(store),
            ResolveError::Nar(nar) => of_nar(nar),
            _ => None,
        };
    }
    if let Some(EntryError { error, .. }) = e.downcast_ref::<EntryError>() {
        return wrapped_io(error.as_ref());
    }
    if let Some(store) = e.downcast_ref::<StoreError>() {
        return of_store(store);
    }
    if let Some(nar) = e.downcast_ref::<NarError>() {
        return of_nar(nar);
    }
    match e.downcast_ref::<PluginError>() {
        Some(PluginError::Io(io)) => Some(io),
        _ => None,
    }
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error: ErrorDetail {
                code: self.code.to_owned(),
                message: self.message,
                request_id: crate::request_id::current_request_id(),
            },
        };
        let mut response = (self.status, Json(body)).into_response();
        if self.status == StatusCode::REQUEST_TIMEOUT {
            // The rest of the body is not read: the connection cannot carry another.
            response.headers_mut().insert(
                axum::http::header::CONNECTION,
                axum::http::HeaderValue::from_static("close"),
            );
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::{AppError, EntryError, PluginError};
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
            cause: berth_transport::http::Upstream::from_text("slow".into()),
        };
        assert_eq!(status_of(timeout), 504);
        // A fetch error that merely mentions a time-out is still an upstream failure.
        let fetch = ResolveError::Fetch {
            url: "u".into(),
            cause: berth_transport::http::Upstream::from_text("timed out".into()),
        };
        assert_eq!(status_of(fetch), 502);
        let refused = ResolveError::Refused {
            url: "u".into(),
            why: berth_transport::policy::Refusal::TooManyRedirects,
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

    #[test]
    fn a_full_disk_anywhere_in_the_chain_is_507() {
        use std::io::{Error, ErrorKind};
        let full = || Error::from(ErrorKind::StorageFull);
        assert_eq!(status_of(ResolveError::Io(full())), 507);
        assert_eq!(
            status_of(ResolveError::Io(Error::from(ErrorKind::QuotaExceeded))),
            507
        );
        assert_eq!(
            status_of(ResolveError::Io(Error::from_raw_os_error(28))),
            507
        );
        assert_eq!(
            status_of(ResolveError::Store(berth_store::StoreError::Io(full()))),
            507
        );
        // Wrapped in another I/O error, as `io::Error::other` and fs-err do.
        assert_eq!(status_of(ResolveError::Io(Error::other(full()))), 507);
        assert_eq!(
            status_of(ResolveError::Io(Error::from(ErrorKind::PermissionDenied))),
            500
        );
        let runtime = PluginError::Io(full());
        assert_eq!(AppError::from_runtime(&runtime).status.as_u16(), 507);
        assert_eq!(
            AppError::from_runtime(&runtime).code,
            "insufficient_storage"
        );
    }
}
