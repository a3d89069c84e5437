//! Where TP rank threads meet around a collective: a reusable barrier that any rank can
//! abort (its kernel trapped), releasing the others with an error instead of a hang.

use std::sync::{Condvar, Mutex, PoisonError};

#[derive(Debug)]
pub struct Rendezvous {
    ranks: usize,
    state: Mutex<State>,
    cv: Condvar,
}

#[derive(Debug, Default)]
struct State {
    arrived: usize,
    generation: u64,
    aborted: bool,
}

/// Another rank failed; its error is the one to report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Aborted;

impl Rendezvous {
    pub fn new(ranks: usize) -> Rendezvous {
        Rendezvous {
            ranks,
            state: Mutex::new(State::default()),
            cv: Condvar::new(),
        }
    }

    /// Blocks until every rank has arrived (or one aborted).
    pub fn wait(&self) -> Result<(), Aborted> {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if s.aborted {
            return Err(Aborted);
        }
        s.arrived += 1;
        if s.arrived == self.ranks {
            s.arrived = 0;
            s.generation += 1;
            self.cv.notify_all();
            return Ok(());
        }
        let generation = s.generation;
        let s = self
            .cv
            .wait_while(s, |s| s.generation == generation && !s.aborted)
            .unwrap_or_else(PoisonError::into_inner);
        if s.generation == generation {
            Err(Aborted)
        } else {
            Ok(())
        }
    }

    /// Releases every waiting rank with [`Aborted`], now and at every later meeting.
    pub fn abort(&self) {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        s.aborted = true;
        self.cv.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_meet_repeatedly_and_an_abort_releases_the_rest() {
        let r = Rendezvous::new(3);
        std::thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| {
                    for _ in 0..5 {
                        r.wait().unwrap();
                    }
                });
            }
        });
        let r = Rendezvous::new(2);
        std::thread::scope(|s| {
            let waiter = s.spawn(|| r.wait());
            std::thread::sleep(std::time::Duration::from_millis(20));
            r.abort();
            assert_eq!(waiter.join().unwrap(), Err(Aborted));
        });
        assert_eq!(r.wait(), Err(Aborted));
    }
}
