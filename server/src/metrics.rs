//! The server's Prometheus metrics: requests by route, method and status, their latency,
//! and the plugins fetched and taken from binary caches, rendered for `GET /metrics`.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A request's method as a metrics label: one of the standard methods, else `other`. A
/// client chooses the method, and a label value per method it sends would grow `/metrics`
/// and the server's memory without bound.
pub(crate) fn method_label(method: &axum::http::Method) -> &'static str {
    const STANDARD: [&str; 9] = [
        "GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "TRACE", "CONNECT",
    ];
    STANDARD
        .into_iter()
        .find(|known| *known == method.as_str())
        .unwrap_or("other")
}

/// The route a path belongs to, as a metrics label (ids and unknown paths folded).
pub(crate) fn route_of(path: &str) -> &'static str {
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
    pub(crate) fn observe(
        &self,
        route: &'static str,
        method: &'static str,
        status: u16,
        took: Duration,
    ) {
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

    /// Requests answered, by route, method and status.
    fn render_requests(&self, out: &mut String) {
        use std::fmt::Write as _;
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
    }

    /// Time to answer a request, by route, as a histogram.
    fn render_latency(&self, out: &mut String) {
        use std::fmt::Write as _;
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
    }

    /// `caching`: whether substituters are set (then every fetch from upstream is a miss).
    pub(crate) fn render(
        &self,
        store_entries: usize,
        conversations: usize,
        caching: bool,
    ) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        self.render_requests(&mut out);
        self.render_latency(&mut out);
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
    use super::{AtomicU64, BTreeMap, Duration, Metrics, Mutex, Ordering, route_of};

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
