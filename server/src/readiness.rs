//! Readiness as `/ready` reports it: a fixed reason code, and the last probe of the store
//! and the data store, reused for a moment so that unauthenticated probes cost little.

use std::time::Instant;

/// Why a server is not ready, as `/ready` says it: a fixed code, whatever the details
/// (which go to the log: a path or a bucket's name is not for whoever asks `/ready`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NotReady {
    Draining,
    StoreUnreachable,
    DataStoreUnreachable,
}

impl NotReady {
    pub(crate) fn code(self) -> &'static str {
        match self {
            Self::Draining => "draining",
            Self::StoreUnreachable => "store_unreachable",
            Self::DataStoreUnreachable => "data_store_unreachable",
        }
    }
}

/// How long a readiness probe's finding is reused: a load balancer (or anyone, since
/// `/ready` needs no key) asking often costs the store and the bucket one look a period.
const READY_PROBE_FOR: std::time::Duration = std::time::Duration::from_secs(2);

/// The last look at the store and the data store, and when it was taken.
#[derive(Debug, Default)]
pub(crate) struct ReadyProbe(tokio::sync::Mutex<Option<(Instant, Option<NotReady>)>>);

impl ReadyProbe {
    /// What `probe` finds, looked at again when the last look is older than
    /// [`READY_PROBE_FOR`] (one look at a time: others wait for it and take its finding).
    pub(crate) async fn look<F>(&self, probe: impl FnOnce() -> F) -> Option<NotReady>
    where
        F: std::future::Future<Output = Option<NotReady>>,
    {
        let mut last = self.0.lock().await;
        if let Some((at, found)) = *last
            && at.elapsed() < READY_PROBE_FOR
        {
            return found;
        }
        let found = probe().await;
        *last = Some((Instant::now(), found));
        found
    }
}
