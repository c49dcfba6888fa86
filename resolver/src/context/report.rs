//! Where the resolver's progress and warnings go: the caller's [`Reporter`].

/// Where progress and warnings go. Implementations must be cheap and thread-safe: the
/// resolver reports from several worker threads.
pub trait Reporter: Sync {
    /// A step of work, such as `("Adding", "review")`.
    fn status(&self, verb: &str, message: &str);
    /// Something the user should know that does not stop the work.
    fn warn(&self, message: &str);
    /// A step only a reader who asked for more (`-v`) sees: what an entry resolved to, a
    /// plugin already in the store. The default ignores it.
    fn detail(&self, verb: &str, message: &str) {
        let _ = (verb, message);
    }
    /// Something the resolver did, for callers that count rather than read (the server's
    /// metrics). Each comes with the status line a reader sees; the default ignores it.
    fn event(&self, event: Event) {
        let _ = event;
    }
    /// A long step starts (a fetch, a download of `total` bytes if known); it runs until the
    /// returned task is dropped. The default reports it as a status line.
    fn task(&self, verb: &str, message: &str, total: Option<u64>) -> Box<dyn Task + '_> {
        let _ = total;
        self.status(verb, message);
        Box::new(NoTask)
    }
    /// A step that can take seconds but is no news when it ends (hashing a large local
    /// folder): a spinner on a terminal while it runs, nothing elsewhere. The default shows
    /// nothing.
    fn progress(&self, verb: &str, message: &str) -> Box<dyn Task + '_> {
        let _ = (verb, message);
        Box::new(NoTask)
    }
}

/// What the resolver did, as [`Reporter::event`] tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event {
    /// A plugin was added to the store, fetched from upstream or taken from a binary cache.
    PluginAdded,
    /// A plugin was taken from a binary cache (and is also [`Event::PluginAdded`]).
    Substituted,
    /// A wheel of the agent package was added to the store.
    WheelAdded,
}

/// A running step's progress handle; dropping it ends the step.
pub trait Task {
    /// `bytes` more are done.
    fn advance(&self, bytes: u64) {
        let _ = bytes;
    }
}

struct NoTask;

impl Task for NoTask {}

/// A reporter that drops everything (for tests and quiet library use).
#[derive(Debug, Default, Clone, Copy)]
pub struct SilentReporter;

impl Reporter for SilentReporter {
    fn status(&self, _verb: &str, _message: &str) {}
    fn warn(&self, _message: &str) {}
}
