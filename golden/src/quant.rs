//! Symmetric int8 quantisation with the reference's scale formula
//! (swa.md §4.5): amax floored at 1e-4, `sq = 127 / amax`, `q = round(x · sq)`,
//! dequant scale `1 / sq` (not `amax / 127`).

use super::arith::round_half_even;

pub const INT8_SCALE_MAX: f32 = 127.0;
pub const INT8_AMAX_EPS: f32 = 1e-4;

/// How a scaled value is rounded to an integer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rounding {
    /// torch.round (SWA/HCA weights, every activation).
    HalfEven,
    /// sign(x)·floor(|x| + 0.5) (the CSA fixture's weight quantisation).
    HalfAwayFromZero,
}

/// The quantisation multiplier `127 / max(amax, 1e-4)`.
pub fn multiplier(amax: f32) -> f32 {
    INT8_SCALE_MAX / amax.max(INT8_AMAX_EPS)
}

/// Largest magnitude of the values (0 for none).
pub fn amax(values: impl IntoIterator<Item = f32>) -> f32 {
    values.into_iter().fold(0.0f32, |m, x| m.max(x.abs()))
}

/// One value to int8: round `x · sq`, optionally clamp to ±127. The result of
/// an in-range rounding is exact through the reference's i32 → f16 → i8 path.
pub fn quantize_value(x: f32, sq: f32, rounding: Rounding, clamp: bool) -> i8 {
    let scaled = x * sq;
    let r = match rounding {
        Rounding::HalfEven => round_half_even(scaled),
        Rounding::HalfAwayFromZero => scaled.signum() * (scaled.abs() + 0.5).floor(),
    };
    let r = if clamp {
        r.clamp(-INT8_SCALE_MAX, INT8_SCALE_MAX)
    } else {
        r
    };
    r as i8
}

/// Per-row activation quantisation (`int8_quant_per_row`: no clamp, RNE).
/// Writes `out` and returns the dequant scale `1 / sq`.
pub fn quantize_row(row: &[f32], out: &mut [i8]) -> f32 {
    let sq = multiplier(amax(row.iter().copied()));
    for (o, &x) in out.iter_mut().zip(row) {
        *o = quantize_value(x, sq, Rounding::HalfEven, false);
    }
    1.0 / sq
}
