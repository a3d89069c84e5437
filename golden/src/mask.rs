//! The SWA additive window mask (swa.md §3.5).

/// The finite mask value: exp of a masked score is exactly 0, and max/exp never
/// meet −inf − (−inf).
pub const MASK_VALUE: f32 = -1.0e20;

/// `bias[t, k] = 0` for `k < lens[t]`, else −1e20, `window` lanes per token.
pub fn sparse_bias(lens: &[i32], window: usize) -> Vec<f32> {
    lens.iter()
        .flat_map(|&len| {
            (0..window).map(move |k| {
                if (k as i64) < i64::from(len) {
                    0.0
                } else {
                    MASK_VALUE
                }
            })
        })
        .collect()
}
