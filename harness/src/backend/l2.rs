//! What earlier launches of a step left in L2, per rank — the timeline's cross-launch L2
//! model (`harness/sim/include/sim/timing.h`): buffers in the order launches last touched
//! them, each with the L2 lines touched; a buffer's lines are still warm when they and the
//! lines of everything touched after fit in the L2. Simple and stated: the lines a buffer
//! was ever touched at age together, least recently used buffer first out.

/// One rank's L2 within a step.
#[derive(Debug, Default)]
pub(crate) struct L2 {
    capacity: u64,
    line_bytes: u64,
    /// (buffer, its lines touched: bit i of word i / 64, their bytes), least recent first.
    recent: Vec<(usize, Vec<u64>, u64)>,
}

impl L2 {
    pub fn new(capacity: u64, line_bytes: u64) -> L2 {
        L2 {
            capacity,
            line_bytes,
            recent: Vec::new(),
        }
    }

    /// The lines of `buffer` an earlier launch left in L2, if any.
    pub fn warm(&self, buffer: usize) -> Option<&[u64]> {
        let mut since = 0u64;
        for (b, lines, bytes) in self.recent.iter().rev() {
            since += bytes;
            if *b == buffer {
                return (since <= self.capacity).then_some(lines.as_slice());
            }
        }
        None
    }

    /// A launch touched `lines` of `buffer` (one bit per line, as the sim reports them).
    pub fn touch(&mut self, buffer: usize, mut lines: Vec<u64>) {
        if lines.iter().all(|&w| w == 0) {
            return;
        }
        if let Some(i) = self.recent.iter().position(|(b, ..)| *b == buffer) {
            let (_, before, _) = self.recent.remove(i);
            for (w, b) in lines.iter_mut().zip(before) {
                *w |= b;
            }
        }
        let bytes = lines.iter().map(|w| u64::from(w.count_ones())).sum::<u64>() * self.line_bytes;
        self.recent.push((buffer, lines, bytes));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_stay_warm_while_they_and_what_followed_fit() {
        // 10-byte lines, 100 bytes of L2.
        let mut l2 = L2::new(100, 10);
        assert!(l2.warm(0).is_none());
        l2.touch(0, vec![0b1111]); // 40 bytes
        l2.touch(1, vec![0b11111, 0]); // 50
        assert_eq!(l2.warm(0), Some(&[0b1111][..]));
        assert_eq!(l2.warm(1), Some(&[0b11111, 0][..]));
        l2.touch(2, vec![0b11]); // 40 + 50 + 20 > 100: buffer 0 is out
        assert!(l2.warm(0).is_none() && l2.warm(1).is_some() && l2.warm(2).is_some());
        // Touched again at other lines: the most recent, with the lines of both touches.
        l2.touch(0, vec![0b10000]);
        assert_eq!(l2.warm(0), Some(&[0b11111][..]));
        assert!(l2.warm(1).is_none(), "50 + 20 + 50 > 100");
        l2.touch(3, vec![0, 0]);
        assert!(l2.warm(3).is_none());
    }
}
