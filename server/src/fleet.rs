//! Running as one server of a fleet behind a load balancer: a request id on every request
//! (echoed, logged, and in every error body), readiness (`/ready`), draining on SIGTERM
//! (new requests answered 503 with `Retry-After` while started ones finish), and
//! Prometheus metrics (`/metrics`).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::AppState;
use crate::error::AppError;

tokio::task_local! {
    static REQUEST_ID: String;
}

/// The id of the request being answered on this task, if any.
pub(crate) fn current_request_id() -> Option<String> {
    REQUEST_ID.try_with(Clone::clone).ok()
}

/// A client's `X-Request-Id` is kept when it is short and plain; otherwise one is made.
fn usable(id: &HeaderValue) -> Option<String> {
    let id = id.to_str().ok()?;
    (!id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.')))
    .then(|| id.to_owned())
}

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

/// A request's method as a metrics label: one of the standard methods, else `other`. A
/// client chooses the method, and a label value per method it sends would grow `/metrics`
/// and the server's memory without bound.
fn method_label(method: &axum::http::Method) -> &'static str {
    const STANDARD: [&str; 9] = [
        "GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "TRACE", "CONNECT",
    ];
    STANDARD
        .into_iter()
        .find(|known| *known == method.as_str())
        .unwrap_or("other")
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

/// `GET /ready`: 200 when this server takes new conversations (its store and data folder
/// are there, and it is not draining), else 503 naming why.
pub async fn ready(State(state): State<AppState>) -> Response {
    let config = state.config();
    let problem = if state.draining() {
        Some("draining: shutting down".to_owned())
    } else if !config.store.root().is_dir() && std::fs::create_dir_all(config.store.root()).is_err()
    {
        Some(format!(
            "the store `{}` is not reachable",
            config.store.root().display()
        ))
    } else {
        let conversations = state.clone();
        tokio::task::spawn_blocking(move || conversations.inner.conversations.reachable())
            .await
            .unwrap_or_else(|e| Err(e.to_string()))
            .err()
    };
    match problem {
        None => axum::Json(serde_json::json!({"status": "ready"})).into_response(),
        Some(why) => {
            AppError::new(StatusCode::SERVICE_UNAVAILABLE, "not_ready", why).into_response()
        }
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

/// The route a path belongs to, as a metrics label (ids and unknown paths folded).
fn route_of(path: &str) -> &'static str {
    let parts: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    match parts.as_slice() {
        ["", "api", "conversations"] => "/api/conversations",
        ["", "api", "conversations", _] => "/api/conversations/{id}",
        ["", "api", "conversations", _, "lockfile"] => "/api/conversations/{id}/lockfile",
        ["", "api", "conversations", _, "plugin_set"] => "/api/conversations/{id}/plugin_set",
        ["", "health"] => "/health",
        ["", "ready"] => "/ready",
        ["", "metrics"] => "/metrics",
        ["", "openapi.json"] => "/openapi.json",
        _ => "other",
    }
}

/// Upper bounds of the latency histogram's buckets, in seconds.
const BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0,
];

#[derive(Default)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

/// Counters of one server process.
pub(crate) struct Metrics {
    requests: Mutex<BTreeMap<(&'static str, &'static str, u16), u64>>,
    latency: Mutex<BTreeMap<&'static str, Histogram>>,
    /// Plugins added to the store (from a binary cache or upstream).
    pub(crate) added: AtomicU64,
    /// Of those, plugins taken from a binary cache.
    pub(crate) cache_hits: AtomicU64,
}

pub(crate) static METRICS: Metrics = Metrics {
    requests: Mutex::new(BTreeMap::new()),
    latency: Mutex::new(BTreeMap::new()),
    added: AtomicU64::new(0),
    cache_hits: AtomicU64::new(0),
};

impl Metrics {
    fn observe(&self, route: &'static str, method: &'static str, status: u16, took: Duration) {
        *self
            .requests
            .lock()
            .expect("metrics are never poisoned")
            .entry((route, method, status))
            .or_default() += 1;
        let seconds = took.as_secs_f64();
        let mut latency = self.latency.lock().expect("metrics are never poisoned");
        let histogram = latency.entry(route).or_default();
        for (i, bound) in BUCKETS.iter().enumerate() {
            if seconds <= *bound {
                histogram.counts[i] += 1;
            }
        }
        histogram.count += 1;
        histogram.sum += seconds;
    }

    /// `caching`: whether substituters are set (then every fetch from upstream is a miss).
    fn render(&self, store_entries: usize, conversations: usize, caching: bool) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        out.push_str(
            "# HELP berth_http_requests_total Requests answered, by route, method and status.\n",
        );
        out.push_str("# TYPE berth_http_requests_total counter\n");
        for ((route, method, status), n) in self
            .requests
            .lock()
            .expect("metrics are never poisoned")
            .iter()
        {
            let _ = writeln!(
                out,
                "berth_http_requests_total{{route=\"{route}\",method=\"{method}\",status=\"{status}\"}} {n}"
            );
        }
        out.push_str(
            "# HELP berth_http_request_duration_seconds Time to answer a request, by route.\n",
        );
        out.push_str("# TYPE berth_http_request_duration_seconds histogram\n");
        for (route, h) in self
            .latency
            .lock()
            .expect("metrics are never poisoned")
            .iter()
        {
            for (bound, n) in BUCKETS.iter().zip(h.counts) {
                let _ = writeln!(
                    out,
                    "berth_http_request_duration_seconds_bucket{{route=\"{route}\",le=\"{bound}\"}} {n}"
                );
            }
            let _ = writeln!(
                out,
                "berth_http_request_duration_seconds_bucket{{route=\"{route}\",le=\"+Inf\"}} {}",
                h.count
            );
            let _ = writeln!(
                out,
                "berth_http_request_duration_seconds_sum{{route=\"{route}\"}} {}",
                h.sum
            );
            let _ = writeln!(
                out,
                "berth_http_request_duration_seconds_count{{route=\"{route}\"}} {}",
                h.count
            );
        }
        let hits = self.cache_hits.load(Ordering::Relaxed);
        let fetched = self.added.load(Ordering::Relaxed).saturating_sub(hits);
        for (name, help, value) in [
            (
                "berth_plugins_fetched_total",
                "Plugins fetched from upstream into the store.",
                fetched,
            ),
            (
                "berth_cache_hits_total",
                "Plugins taken from a binary cache.",
                hits,
            ),
            (
                "berth_cache_misses_total",
                "Plugins no binary cache had, fetched from upstream.",
                if caching { fetched } else { 0 },
            ),
        ] {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}"
            );
        }
        for (name, help, value) in [
            (
                "berth_store_entries",
                "Plugin entries in the store.",
                store_entries,
            ),
            (
                "berth_conversations",
                "Conversations this server keeps.",
                conversations,
            ),
        ] {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}"
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_fold_ids_and_unknown_paths() {
        assert_eq!(
            route_of("/api/conversations/abc/plugin_set"),
            "/api/conversations/{id}/plugin_set"
        );
        assert_eq!(
            route_of("/api/conversations/abc"),
            "/api/conversations/{id}"
        );
        assert_eq!(route_of("/api/conversations/"), "/api/conversations");
        assert_eq!(route_of("/etc/passwd"), "other");
    }

    #[test]
    fn client_ids_are_kept_only_when_plain() {
        assert_eq!(
            usable(&HeaderValue::from_static("abc-123_x.y")),
            Some("abc-123_x.y".into())
        );
        assert_eq!(usable(&HeaderValue::from_static("has space")), None);
        assert_eq!(usable(&HeaderValue::from_static("")), None);
        let long = "a".repeat(129);
        assert_eq!(usable(&HeaderValue::from_str(&long).expect("header")), None);
    }

    #[test]
    fn the_histogram_counts_each_request_in_every_bucket_above_it() {
        let metrics = Metrics {
            requests: Mutex::new(BTreeMap::new()),
            latency: Mutex::new(BTreeMap::new()),
            added: AtomicU64::new(0),
            cache_hits: AtomicU64::new(0),
        };
        metrics.observe("/health", "GET", 200, Duration::from_millis(3));
        metrics.observe("/health", "GET", 200, Duration::from_millis(30));
        metrics.added.fetch_add(3, Ordering::Relaxed);
        metrics.cache_hits.fetch_add(1, Ordering::Relaxed);
        let text = metrics.render(7, 2, true);
        assert!(
            text.contains(
                "berth_http_requests_total{route=\"/health\",method=\"GET\",status=\"200\"} 2"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "berth_http_request_duration_seconds_bucket{route=\"/health\",le=\"0.0025\"} 0"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "berth_http_request_duration_seconds_bucket{route=\"/health\",le=\"0.005\"} 1"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "berth_http_request_duration_seconds_bucket{route=\"/health\",le=\"0.05\"} 2"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "berth_http_request_duration_seconds_bucket{route=\"/health\",le=\"+Inf\"} 2"
            ),
            "{text}"
        );
        assert!(
            text.contains("berth_store_entries 7") && text.contains("berth_conversations 2"),
            "{text}"
        );
        assert!(
            text.contains("berth_plugins_fetched_total 2")
                && text.contains("berth_cache_hits_total 1")
                && text.contains("berth_cache_misses_total 2"),
            "{text}"
        );
    }
}
