//! Running as one server of a fleet behind a load balancer: a request id on every request
//! (echoed, logged, and in every error body), readiness (`/ready`), draining on SIGTERM
//! (new requests answered 503 with `Retry-After` while started ones finish), and
//! Prometheus metrics (`/metrics`).

use std::time::Instant;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::AppError;
use crate::metrics::{METRICS, method_label, route_of};
use crate::readiness::NotReady;
use crate::request_id::{REQUEST_ID, usable};
use crate::state::AppState;

/// Gives the request an id (the client's `X-Request-Id`, or a new one), runs it with the
/// id in scope and in its log span, answers it in `X-Request-Id`, and counts it.
pub(crate) async fn request_id(request: Request, next: Next) -> Response {
    let id = request
        .headers()
        .get("x-request-id")
        .and_then(usable)
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let route = route_of(request.uri().path());
    let method = method_label(request.method());
    let started = Instant::now();
    let span = tracing::info_span!("id", request_id = %id);
    let mut response = {
        use tracing::Instrument as _;
        REQUEST_ID
            .scope(id.clone(), next.run(request).instrument(span))
            .await
    };
    METRICS.observe(route, method, response.status().as_u16(), started.elapsed());
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert("x-request-id", value);
    }
    response
}

/// While draining, everything but `/health`, `/ready` and `/metrics` is answered 503 with
/// `Retry-After`, so the load balancer sends it elsewhere.
pub(crate) async fn refuse_while_draining(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let path = request.uri().path();
    if state.draining() && !matches!(path, "/health" | "/ready" | "/metrics") {
        let mut response = AppError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "draining",
            "this server is shutting down; retry on another",
        )
        .into_response();
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        return response;
    }
    next.run(request).await
}

/// Looks at the store and the data store, logging what is wrong.
fn probe(state: &AppState) -> Option<NotReady> {
    let root = state.config().store.root();
    if !root.is_dir()
        && let Err(e) = std::fs::create_dir_all(root)
    {
        tracing::warn!(
            "not ready: the store `{}` is not reachable: {e}",
            root.display()
        );
        return Some(NotReady::StoreUnreachable);
    }
    if let Err(why) = state.inner.conversations.reachable() {
        tracing::warn!("not ready: {why}");
        return Some(NotReady::DataStoreUnreachable);
    }
    None
}

/// `GET /ready`: 200 when this server takes new conversations (its store and data folder
/// are there, and it is not draining), else 503 `not_ready` with a fixed reason code.
pub async fn ready(State(state): State<AppState>) -> Response {
    let problem = if state.draining() {
        Some(NotReady::Draining)
    } else {
        let probing = state.clone();
        state
            .inner
            .ready
            .look(|| async move {
                tokio::task::spawn_blocking(move || probe(&probing))
                    .await
                    .unwrap_or(Some(NotReady::StoreUnreachable))
            })
            .await
    };
    match problem {
        None => axum::Json(serde_json::json!({"status": "ready"})).into_response(),
        Some(why) => AppError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "not_ready",
            format!("not ready: `{}`; the server's log says more", why.code()),
        )
        .into_response(),
    }
}

/// `GET /metrics`: Prometheus' text format.
pub async fn metrics(State(state): State<AppState>) -> Response {
    let store = state.config().store.root().to_owned();
    let entries = tokio::task::spawn_blocking(move || {
        std::fs::read_dir(store.join(berth_store::ENTRIES_DIR)).map_or(0, Iterator::count)
    })
    .await
    .unwrap_or(0);
    let caching = !state.config().substituters.is_empty();
    let body = METRICS.render(entries, state.inner.conversations.len(), caching);
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        body,
    )
        .into_response()
}
