//! The ranges every spec value must fall in before any relation between values is
//! checked: dims, counts and tiles up to 65536, positions and pool sizes up to 2^24,
//! beyond what any chip's buffers or the copy instructions' 16-bit fields can use, so
//! that size arithmetic never overflows.

use super::{Int, Sp};
use crate::diag::{Diagnostics, Loc};

const RULE: &str = "dims, counts and tiles are positive integers up to 65536; positions and pool sizes up to 16777216";

/// Dims, counts and tiles.
const MAX_COUNT: usize = 1 << 16;
/// Positions and pool sizes.
const MAX_LARGE: usize = 1 << 24;

/// A dim, count or tile: an integer in 1..=65536 (0 after reporting an error).
pub fn positive(d: &mut Diagnostics, v: &Int, what: &str) -> usize {
    bounded(d, v, what, MAX_COUNT)
}

/// A position count or pool size: an integer in 1..=2^24 (0 after reporting an error).
pub fn positive_large(d: &mut Diagnostics, v: &Int, what: &str) -> usize {
    bounded(d, v, what, MAX_LARGE)
}

fn bounded(d: &mut Diagnostics, v: &Int, what: &str, max: usize) -> usize {
    match usize::try_from(v.value) {
        Ok(n) if n > 0 && n <= max => n,
        _ => {
            d.error(
                Loc::of(v),
                format!(
                    "{what} {} is not a positive integer of at most {max}",
                    v.value
                ),
                RULE,
            );
            0
        }
    }
}

/// A positive finite number (epsilons, thetas, YaRN parameters).
pub fn positive_f(d: &mut Diagnostics, v: &Sp<f64>, what: &str) -> f64 {
    if !(v.value.is_finite() && v.value > 0.0) {
        d.error(
            Loc::of(v),
            format!("{what} {} is not a positive number", v.value),
            "epsilons, thetas and YaRN parameters are positive finite numbers",
        );
    }
    v.value
}
