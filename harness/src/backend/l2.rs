//! What earlier launches of a step left in L2, per rank — the timeline's cross-launch L2
//! model (`harness/sim/include/sim/timing.h`): buffers in the order launches last touched
//! them, each with the bytes touched; a buffer is still warm when it and everything touched
//! after it fit in the L2. Simple and stated: whole buffers, least recently used first out.

/// One rank's L2 within a step.
#[derive(Debug, Default)]
pub(crate) struct L2 {
    capacity: u64,
    /// (buffer, bytes touched), least recent first.
    recent: Vec<(usize, u64)>,
}

impl L2 {
    pub fn new(capacity: u64) -> L2 {
        L2 {
            capacity,
            recent: Vec::new(),
        }
    }

    /// Whether an earlier launch left `buffer` in L2.
    pub fn warm(&self, buffer: usize) -> bool {
        let mut since = 0u64;
        for &(b, bytes) in self.recent.iter().rev() {
            since += bytes;
            if b == buffer {
                return since <= self.capacity;
            }
        }
        false
    }

    /// A launch touched `bytes` of `buffer` (0: not at all).
    pub fn touch(&mut self, buffer: usize, bytes: u64) {
        if bytes == 0 {
            return;
        }
        let before = self
            .recent
            .iter()
            .position(|&(b, _)| b == buffer)
            .map(|i| self.recent.remove(i).1)
            .unwrap_or(0);
        self.recent.push((buffer, bytes.max(before)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_stays_warm_while_it_and_what_followed_fit() {
        let mut l2 = L2::new(100);
        assert!(!l2.warm(0));
        l2.touch(0, 40);
        l2.touch(1, 50);
        assert!(l2.warm(0) && l2.warm(1));
        l2.touch(2, 20); // 40 + 50 + 20 > 100: buffer 0 is out
        assert!(!l2.warm(0) && l2.warm(1) && l2.warm(2));
        l2.touch(0, 10); // touched again: the most recent, with the larger of its sizes
        assert!(l2.warm(0) && !l2.warm(1));
        l2.touch(3, 0);
        assert!(!l2.warm(3));
    }
}
