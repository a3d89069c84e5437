//! Scalar arithmetic at the reference's rounding points (swa.md §3.10).
//!
//! Everything here is f32 unless a name says otherwise; Rust never contracts
//! `a * b + c` into an FMA, so every product and sum is rounded separately,
//! as torch's elementwise ops do.

use half::bf16;

/// Round-to-nearest-even to bfloat16 (torch `.to(bfloat16)`, kernel "rint").
pub fn to_bf16(x: f32) -> bf16 {
    bf16::from_f32(x)
}

/// `x` rounded through bfloat16 and widened back.
pub fn bf16_round(x: f32) -> f32 {
    bf16::from_f32(x).to_f32()
}

/// Round to the nearest integer, ties to even (torch.round, kernel rint).
pub fn round_half_even(x: f32) -> f32 {
    // Adding 1.5·2^23 leaves no fraction bits, so the FPU's own RNE does the
    // rounding (|x| < 2^22); larger magnitudes are already integers. This
    // avoids a libm call per element on baseline x86-64.
    const SHIFT: f32 = 12_582_912.0;
    if x.abs() < 4_194_304.0 {
        (x + SHIFT) - SHIFT
    } else {
        x
    }
}

/// torch.rsqrt on CPU: one square root and one division, each rounded.
pub fn rsqrt(x: f32) -> f32 {
    1.0 / x.sqrt()
}

/// torch.sigmoid as 1 / (1 + exp(-z)).
pub fn sigmoid(z: f32) -> f32 {
    1.0 / (1.0 + (-z).exp())
}

/// Sum of f32 values whose order the reference leaves to torch's reduction.
/// torch reduces in a cascade that is close to exact; accumulating in f64 and
/// rounding once is the order-free stand-in.
pub fn sum(values: impl IntoIterator<Item = f32>) -> f32 {
    values.into_iter().map(f64::from).sum::<f64>() as f32
}

/// torch `x.square().mean(-1)`: squares rounded to f32, summed, divided by n in f32.
pub fn mean_square(values: &[f32]) -> f32 {
    sum(values.iter().map(|&x| x * x)) / values.len() as f32
}

/// `values · rsqrt(mean(values²) + eps)`, in place (RMSNorm without weight).
pub fn rms_normalize(values: &mut [f32], eps: f32) {
    let inv = rsqrt(mean_square(values) + eps);
    values.iter_mut().for_each(|x| *x *= inv);
}

/// Widens bf16 values to f32.
pub fn widen(values: &[bf16]) -> Vec<f32> {
    values.iter().map(|x| x.to_f32()).collect()
}

/// Narrows f32 values to bf16 with round-to-nearest-even.
pub fn narrow(values: &[f32]) -> Vec<bf16> {
    values.iter().map(|&x| to_bf16(x)).collect()
}
