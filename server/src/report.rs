//! Where the resolver's progress goes in a server: into the log, and its fetches into the
//! metrics.

use std::sync::atomic::Ordering;

use berth_resolver::{Event, Reporter};

use crate::metrics::METRICS;

/// Logs the resolver's progress instead of printing it, and counts what it adds.
#[derive(Debug)]
pub(crate) struct LogReporter;

impl Reporter for LogReporter {
    fn status(&self, verb: &str, message: &str) {
        tracing::info!("{verb} {message}");
    }

    fn warn(&self, message: &str) {
        tracing::warn!("{message}");
    }

    fn event(&self, event: Event) {
        match event {
            Event::PluginAdded => METRICS.added.fetch_add(1, Ordering::Relaxed),
            Event::Substituted => METRICS.cache_hits.fetch_add(1, Ordering::Relaxed),
            // Wheels are not plugins: `berth_plugins_fetched_total` leaves them out.
            _ => 0,
        };
    }
}
