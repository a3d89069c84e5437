//! Progress of long steps (building kernels, the launches of a run), told to an
//! [`Observer`] that the command line draws: bars in a terminal, plain lines in a log.
//! Silent unless one is given (tests).

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;

/// What the runtime and the backends report while they work; every report is ignored
/// unless an observer says otherwise. Rank threads call it concurrently.
pub trait Observer: Send + Sync {
    /// A line for people (a cache entry rebuilt, a toolkit step).
    fn note(&self, _message: &str) {}
    /// `kernels` kernels start building for `backend`.
    fn building(&self, _kernels: usize, _backend: &str) {}
    /// They are ready.
    fn built(&self, _elapsed: Duration) {}
    /// A run of `launches` kernel launches (every rank's) starts.
    fn run_started(&self, _launches: usize) {}
    /// `rank` starts launch `nth` of the `of` launches of `stage`.
    fn launch(&self, _rank: usize, _stage: &str, _nth: usize, _of: usize, _kernel: &str) {}
    /// The run's launches are done (or it failed).
    fn run_finished(&self) {}
}

/// The observer that ignores everything.
struct Quiet;

impl Observer for Quiet {}

/// Where progress goes: an [`Observer`], shared by the runtime, the backend and its ranks.
#[derive(Clone)]
pub struct Progress(Arc<dyn Observer>);

impl Progress {
    pub fn to(observer: Arc<dyn Observer>) -> Progress {
        Progress(observer)
    }

    pub fn quiet() -> Progress {
        Progress(Arc::new(Quiet))
    }
}

impl Deref for Progress {
    type Target = dyn Observer;

    fn deref(&self) -> &Self::Target {
        &*self.0
    }
}

impl fmt::Debug for Progress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Progress")
    }
}
