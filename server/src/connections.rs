//! Serving connections under limits: how long a client may take to send a request's
//! headers and its body, how long a connection may stay open with no request, and how
//! many connections are open at once.
//!
//! Each connection is hyper's HTTP/1 connection with a watchdog beside it. The watchdog
//! sees what the connection's reader reads and when its requests start and end: a
//! request's headers must be in within `header_timeout` of their first byte (else the
//! connection is dropped), and a connection that waits for a request longer than
//! `idle_timeout` (since it opened, or since its last answer) is closed. hyper's own
//! `header_read_timeout` counts from when the server starts waiting for a request, so it
//! would close a kept-alive connection at the header timeout; a load balancer keeps
//! connections to its backends longer than that. The body's deadline is the request's
//! ([`BodyDeadline`]), which the JSON extractor reads under. Past `max_connections` no
//! connection is accepted until one closes (new ones wait in the listening socket's
//! queue).

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, Semaphore, watch};
use tokio::time::Instant;

/// How long a client may take, and how many may be connected (`berth serve`'s
/// `--header-timeout`, `--body-timeout`, `--idle-timeout`, `--max-connections`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// A request's line and headers must be in within this of their first byte.
    pub header_timeout: Duration,
    /// A request's body must be in within this of its headers.
    pub body_timeout: Duration,
    /// A connection with no request in progress is closed after this long (since it
    /// opened, or since its last answer).
    pub idle_timeout: Duration,
    /// At most this many connections are open at once.
    pub max_connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            header_timeout: Duration::from_secs(DEFAULT_HEADER_TIMEOUT_SECS),
            body_timeout: Duration::from_secs(DEFAULT_BODY_TIMEOUT_SECS),
            idle_timeout: Duration::from_secs(DEFAULT_IDLE_TIMEOUT_SECS),
            max_connections: DEFAULT_MAX_CONNECTIONS,
        }
    }
}

/// The defaults of [`Limits`], for the command line's help.
pub const DEFAULT_HEADER_TIMEOUT_SECS: u64 = 10;
pub const DEFAULT_BODY_TIMEOUT_SECS: u64 = 30;
pub const DEFAULT_IDLE_TIMEOUT_SECS: u64 = 75;
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;

/// When a request's body must be in: set when its headers are, read by the JSON
/// extractor, which answers 408 past it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BodyDeadline {
    pub(crate) at: Instant,
    pub(crate) after: Duration,
}

/// How long a closed-for-idleness connection may take to finish writing before it is
/// dropped.
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// Serves `router` on `listener` until `shutdown` completes; then stops accepting, asks
/// every connection to close once its request is answered, and waits for them.
pub(crate) async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    shutdown: impl std::future::Future<Output = ()>,
) {
    let cap = limits.max_connections.clamp(1, Semaphore::MAX_PERMITS);
    let permits = Arc::new(Semaphore::new(cap));
    let (stop, stopping) = watch::channel(());
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            permit = permits.clone().acquire_owned() => permit.expect("the semaphore stays open"),
            () = &mut shutdown => break,
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    accept_failed(e).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let (router, stopping) = (router.clone(), stopping.clone());
        tokio::spawn(async move {
            connection(stream, router, limits, stopping).await;
            drop(permit);
        });
    }
    drop(listener);
    drop(stop);
    // Every connection holds a permit until it is closed.
    let all = u32::try_from(cap).unwrap_or(u32::MAX);
    let _closed = permits.acquire_many(all).await;
}

/// A failed `accept`: one connection's problem goes unremarked; anything else (too many
/// open files, say) is logged and the loop pauses, as axum's does.
async fn accept_failed(e: std::io::Error) {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(
        e.kind(),
        ConnectionAborted | ConnectionRefused | ConnectionReset
    ) {
        return;
    }
    tracing::error!("accepting a connection failed: {e}");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

/// One connection: hyper serves it while the watchdog enforces `limits`.
async fn connection(
    stream: TcpStream,
    router: Router,
    limits: Limits,
    mut stopping: watch::Receiver<()>,
) {
    let activity = Arc::new(Activity::new());
    let io = TokioIo::new(Watched {
        inner: stream,
        activity: activity.clone(),
    });
    let requests = activity.clone();
    let service = hyper::service::service_fn(move |mut request: hyper::Request<_>| {
        let started = Started::new(requests.clone());
        request.extensions_mut().insert(BodyDeadline {
            at: Instant::now() + limits.body_timeout,
            after: limits.body_timeout,
        });
        let answer = tower::ServiceExt::oneshot(router.clone(), request.map(axum::body::Body::new));
        async move {
            let response = answer.await;
            drop(started);
            response
        }
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .keep_alive(true)
        .serve_connection(io, service);
    tokio::pin!(conn);
    let mut closing: Option<Instant> = None;
    let mut stop_asked = false;
    loop {
        let deadline = match (activity.next(&limits), closing) {
            (_, Some(grace)) => Some(grace),
            (Next::Request, None) => None,
            (Next::Idle(at) | Next::Headers(at), None) => Some(at),
        };
        tokio::select! {
            result = conn.as_mut() => {
                if let Err(e) = result {
                    tracing::debug!("connection closed: {e}");
                }
                return;
            }
            _ = stopping.changed(), if !stop_asked => {
                // Stopping waits for the answers in progress, not for idle clients; the
                // watchdog still holds the rest to their time.
                stop_asked = true;
                conn.as_mut().graceful_shutdown();
            }
            () = activity.changed.notified() => {}
            () = sleep_until(deadline) => {
                if closing.is_some() {
                    // Still open a moment after it was asked to close while idle: dropped,
                    // unless a request came in meanwhile (hyper closes after answering it).
                    if !matches!(activity.next(&limits), Next::Request) {
                        return;
                    }
                    closing = None;
                    continue;
                }
                match activity.next(&limits) {
                    Next::Headers(at) if at <= Instant::now() => {
                        tracing::info!(
                            "closed a connection whose request headers took longer than {} s (`--header-timeout`)",
                            limits.header_timeout.as_secs_f64()
                        );
                        return;
                    }
                    Next::Idle(at) if at <= Instant::now() => {
                        conn.as_mut().graceful_shutdown();
                        closing = Some(Instant::now() + CLOSE_GRACE);
                    }
                    _ => {}
                }
            }
        }
    }
}

/// Sleeps until `deadline`, or forever.
async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// What the watchdog waits for next.
enum Next {
    /// A request is being answered: nothing.
    Request,
    /// The connection waits for a request: it is idle past this.
    Idle(Instant),
    /// A request's first bytes are in: its headers are late past this.
    Headers(Instant),
}

/// What a connection's reader and its requests tell its watchdog, as milliseconds since
/// the connection opened.
struct Activity {
    opened: Instant,
    requests: AtomicUsize,
    /// When the connection last started waiting for a request.
    waiting_since: AtomicU64,
    /// When the first byte of the next request came, plus one; 0 when none has.
    first_byte: AtomicU64,
    changed: Notify,
}

impl Activity {
    fn new() -> Self {
        Self {
            opened: Instant::now(),
            requests: AtomicUsize::new(0),
            waiting_since: AtomicU64::new(0),
            first_byte: AtomicU64::new(0),
            changed: Notify::new(),
        }
    }

    fn now(&self) -> u64 {
        u64::try_from(self.opened.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn at(&self, millis: u64) -> Instant {
        self.opened + Duration::from_millis(millis)
    }

    fn next(&self, limits: &Limits) -> Next {
        if self.requests.load(Ordering::SeqCst) > 0 {
            return Next::Request;
        }
        match self.first_byte.load(Ordering::SeqCst) {
            0 => {
                Next::Idle(self.at(self.waiting_since.load(Ordering::SeqCst)) + limits.idle_timeout)
            }
            first => Next::Headers(self.at(first - 1) + limits.header_timeout),
        }
    }

    /// Bytes came in: the first of a request, when none is being answered.
    fn read(&self) {
        if self.requests.load(Ordering::SeqCst) == 0 && self.first_byte.load(Ordering::SeqCst) == 0
        {
            self.first_byte.store(self.now() + 1, Ordering::SeqCst);
            self.changed.notify_one();
        }
    }
}

/// A request being answered, from its headers to its answer (or until hyper drops it).
struct Started(Arc<Activity>);

impl Started {
    fn new(activity: Arc<Activity>) -> Self {
        activity.requests.fetch_add(1, Ordering::SeqCst);
        activity.first_byte.store(0, Ordering::SeqCst);
        activity.changed.notify_one();
        Self(activity)
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        let activity = &self.0;
        activity
            .waiting_since
            .store(activity.now(), Ordering::SeqCst);
        activity.requests.fetch_sub(1, Ordering::SeqCst);
        activity.changed.notify_one();
    }
}

/// A connection's socket, telling its [`Activity`] when bytes come in.
struct Watched {
    inner: TcpStream,
    activity: Arc<Activity>,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.read();
        }
        polled
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}
