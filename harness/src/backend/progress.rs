//! Progress of long steps (building kernels, the launches of a run), told to an
//! [`Observer`] that the command line draws: bars in a terminal, plain lines in a log.
//! Silent unless one is given (tests).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// What the runtime and the backends report while they work. Rank threads call it
/// concurrently.
pub trait Observer: Send + Sync {
    /// A line for people (a cache entry rebuilt, a toolkit step).
    fn note(&self, message: &str);
    /// `kernels` kernels start building for `backend`.
    fn building(&self, kernels: usize, backend: &str);
    /// They are ready.
    fn built(&self, elapsed: Duration);
    /// A run of `launches` kernel launches (every rank's) starts.
    fn run_started(&self, launches: usize);
    /// `rank` starts launch `nth` of the `of` launches of `stage`.
    fn launch(&self, rank: usize, stage: &str, nth: usize, of: usize, kernel: &str);
    /// The run's launches are done (or it failed).
    fn run_finished(&self);
}

/// Where progress goes: nowhere, or an [`Observer`].
#[derive(Clone, Default)]
pub struct Progress(Option<Arc<dyn Observer>>);

impl fmt::Debug for Progress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() {
            "Progress(observed)"
        } else {
            "Progress(quiet)"
        })
    }
}

impl Progress {
    pub fn to(observer: Arc<dyn Observer>) -> Progress {
        Progress(Some(observer))
    }

    pub fn quiet() -> Progress {
        Progress(None)
    }

    pub fn note(&self, message: &str) {
        if let Some(o) = &self.0 {
            o.note(message);
        }
    }

    pub fn building(&self, kernels: usize, backend: &str) {
        if let Some(o) = &self.0 {
            o.building(kernels, backend);
        }
    }

    pub fn built(&self, elapsed: Duration) {
        if let Some(o) = &self.0 {
            o.built(elapsed);
        }
    }

    pub fn run_started(&self, launches: usize) {
        if let Some(o) = &self.0 {
            o.run_started(launches);
        }
    }

    pub fn launch(&self, rank: usize, stage: &str, nth: usize, of: usize, kernel: &str) {
        if let Some(o) = &self.0 {
            o.launch(rank, stage, nth, of, kernel);
        }
    }

    pub fn run_finished(&self) {
        if let Some(o) = &self.0 {
            o.run_finished();
        }
    }
}
