//! Where the resolver's progress and warnings go: the caller's [`Reporter`].

/// Where progress and warnings go. Implementations must be cheap and thread-safe: the
/// resolver reports from several worker threads.
pub trait Reporter: Sync {
    /// A step of work, such as `("Adding", "review")`.
    fn status(&self, verb: &str, message: &str);
    /// Something the user should know that does not stop the work.
    fn warn(&self, message: &str);
    /// A long step starts (a fetch, a download of `total` bytes if known); it runs until the
    /// returned task is dropped. The default reports it as a status line.
    fn task(&self, verb: &str, message: &str, total: Option<u64>) -> Box<dyn Task + '_> {
        let _ = total;
        self.status(verb, message);
        Box::new(NoTask)
    }
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
