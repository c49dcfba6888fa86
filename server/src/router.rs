//! The router of docs/spec.md section 7 and serving it: the routes, the layers every request
//! passes (request id, tracing, draining, the host check, the API key), and the graceful
//! stop on SIGTERM.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::Request;
use axum::routing::get;
use tower_http::trace::{DefaultOnResponse, TraceLayer};

use crate::api::MAX_BODY_BYTES;
use crate::state::AppState;
use crate::{fleet, handlers, host};

/// The router of docs/spec.md section 7, for a server whose listening address is not known (the
/// handler tests): without an API key it answers `localhost`, `127.0.0.1`, `[::1]` and the
/// `--allowed-host-header` names.
pub fn app(state: AppState) -> Router {
    router(state, None)
}

/// The router, answering `Host` values that name `bound` too.
fn router(state: AppState, bound: Option<SocketAddr>) -> Router {
    let api = Router::new()
        .route(
            "/api/conversations",
            get(handlers::list).post(handlers::create),
        )
        .route(
            "/api/conversations/{id}",
            get(handlers::get_one).delete(handlers::delete),
        )
        .route("/api/conversations/{id}/lockfile", get(handlers::lockfile))
        .route(
            "/api/conversations/{id}/plugin_set",
            get(handlers::plugin_set),
        )
        .route(
            "/api/conversations/{id}/load_plugin",
            axum::routing::post(crate::load_plugin::load_plugin),
        )
        .route("/openapi.json", get(handlers::openapi))
        .route("/metrics", get(fleet::metrics))
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            handlers::require_key,
        ));
    let mut router = Router::new()
        .route("/health", get(handlers::health))
        .route("/ready", get(fleet::ready))
        .merge(api)
        .fallback(handlers::not_found)
        .method_not_allowed_fallback(handlers::method_not_allowed)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES));
    // With an API key the key protects every route; without one, only requests that name
    // this server are answered (DNS rebinding).
    if state.config().api_key.is_none() {
        let rule = Arc::new(host::HostRule::new(
            bound,
            &state.config().allowed_host_headers,
        ));
        router = router.layer(axum::middleware::from_fn(
            move |request: axum::extract::Request, next: axum::middleware::Next| {
                host::check_host(rule.clone(), request, next)
            },
        ));
    }
    router
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            fleet::refuse_while_draining,
        ))
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(request_span)
                .on_response(DefaultOnResponse::new().level(tracing::Level::INFO)),
        )
        .layer(axum::middleware::from_fn(fleet::request_id))
        .with_state(state)
}

/// The span each request is logged in: method and path, never the query string, which
/// may carry a key or token a client put there.
fn request_span<B>(request: &Request<B>) -> tracing::Span {
    tracing::info_span!(
        "request",
        method = %request.method(),
        path = %request.uri().path(),
        version = ?request.version(),
    )
}

/// Serves on `addr` until SIGINT or SIGTERM; then drains (new requests answered 503 for
/// `Config::drain`), stops accepting, and finishes the requests in flight.
pub async fn serve(state: AppState, listener: tokio::net::TcpListener) -> std::io::Result<()> {
    let bound = listener.local_addr()?;
    let draining = state.clone();
    // Registered before the first request is answered: a SIGTERM sent as soon as the
    // server answers is a graceful stop, never the default kill.
    let terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let interrupt = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
    let limits = state.config().connections;
    let stop = async move {
        shutdown_signal(terminate, interrupt).await;
        draining
            .inner
            .draining
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let drain = draining.config().drain;
        if !drain.is_zero() {
            tracing::info!("draining for {}s before closing", drain.as_secs_f64());
            tokio::time::sleep(drain).await;
        }
    };
    crate::connections::serve(listener, router(state, Some(bound)), limits, stop).await;
    Ok(())
}

/// Binds `addr` (port 0 picks a free port).
pub async fn bind(addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    tokio::net::TcpListener::bind(addr).await
}

async fn shutdown_signal(
    mut terminate: tokio::signal::unix::Signal,
    mut interrupt: tokio::signal::unix::Signal,
) {
    tokio::select! {
        _ = terminate.recv() => {},
        _ = interrupt.recv() => {},
    }
    tracing::info!("shutting down: finishing requests in flight");
}
