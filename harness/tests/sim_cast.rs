//! Cast through the sim against a Rust reference that finds the two representable
//! neighbours of each input and picks one per round mode (a different method from the
//! sim's scaling), on ties, out-of-range values, NaN/inf and random values.

#[path = "sim_kernels/support.rs"]
mod support;

use half::{bf16, f16};
use harness::kernel_library::{CoreMode, GmArg, poison};
use rand::RngExt;
use support::{lib, rng};

const N: usize = 64;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    None,
    Rint,
    Floor,
    Ceil,
    Round,
    Trunc,
    Odd,
}
use Mode::*;
const ROUNDING: [Mode; 5] = [Rint, Floor, Ceil, Round, Trunc];

/// Chooses between the neighbours lo <= x <= hi of x (lo == hi when exact).
fn pick(x: f64, lo: f64, hi: f64, lo_is_odd: bool, mode: Mode) -> f64 {
    if lo == hi {
        return lo;
    }
    let (dl, dh) = (x - lo, hi - x);
    match mode {
        Floor => lo,
        Ceil => hi,
        Trunc => {
            if x > 0.0 {
                lo
            } else {
                hi
            }
        }
        Round => {
            if dl < dh || (dl == dh && x < 0.0) {
                lo
            } else {
                hi
            }
        }
        None | Rint => {
            if dl < dh || (dl == dh && !lo_is_odd) {
                lo
            } else {
                hi
            }
        }
        Odd => {
            if lo_is_odd {
                lo
            } else {
                hi
            }
        }
    }
}

/// Narrow float formats through their bit patterns (ordered for finite values).
trait Narrow: Copy {
    fn from_f32_rne(x: f32) -> Self;
    fn to_f64(self) -> f64;
    fn bits(self) -> u16;
    fn from_bits(b: u16) -> Self;
    const MAX: f64;
    /// The spacing of the top binade: MAX + ULP_MAX is the next value with an unbounded
    /// exponent.
    const ULP_MAX: f64;
}
impl Narrow for f16 {
    fn from_f32_rne(x: f32) -> Self {
        f16::from_f32(x)
    }
    fn to_f64(self) -> f64 {
        self.to_f64()
    }
    fn bits(self) -> u16 {
        self.to_bits()
    }
    fn from_bits(b: u16) -> Self {
        f16::from_bits(b)
    }
    const MAX: f64 = 65504.0;
    const ULP_MAX: f64 = 32.0; // 2^(15 - 10)
}
impl Narrow for bf16 {
    fn from_f32_rne(x: f32) -> Self {
        bf16::from_f32(x)
    }
    fn to_f64(self) -> f64 {
        self.to_f64()
    }
    fn bits(self) -> u16 {
        self.to_bits()
    }
    fn from_bits(b: u16) -> Self {
        bf16::from_bits(b)
    }
    const MAX: f64 = 3.3895313892515355e38;
    const ULP_MAX: f64 = 1.329227995784916e36; // 2^(127 - 7)
}

/// The neighbour one ulp away from `v` towards `up` (by magnitude in the sign of v).
fn step<T: Narrow>(v: T, up: bool) -> T {
    let b = v.bits();
    let neg = b & 0x8000 != 0;
    let mag = b & 0x7fff;
    if mag == 0 {
        return T::from_bits(if up { 1 } else { 0x8001 });
    }
    let grow = up != neg;
    T::from_bits(if grow { b + 1 } else { b - 1 })
}

/// Expected float -> narrow float cast. Overflow of finite inputs follows the rounding
/// direction, as IEEE 754 (section 7.4) defines it and the vector unit does in its Inf/NaN
/// mode (the A2 runtime default): RINT / ROUND (and NONE, which is RINT when lossy) give
/// +-inf once the value rounds past MAX, i.e. |x| >= MAX + ULP_MAX / 2 (the tie rounds up:
/// MAX's significand is odd); CEIL gives +inf above the range and -MAX below it, FLOOR +MAX
/// above and -inf below; TRUNC and ODD give +-MAX.
fn narrow<T: Narrow>(x: f32, mode: Mode) -> f64 {
    if x.is_nan() || x.is_infinite() {
        return x as f64;
    }
    let xd = x as f64;
    if xd.abs() > T::MAX {
        let pos = xd > 0.0;
        let to_inf = match mode {
            None | Rint | Round => xd.abs() >= T::MAX + T::ULP_MAX / 2.0,
            Ceil => pos,
            Floor => !pos,
            Trunc | Odd => false,
        };
        let mag = if to_inf { f64::INFINITY } else { T::MAX };
        return if pos { mag } else { -mag };
    }
    let r = T::from_f32_rne(x);
    let rd = r.to_f64();
    let (lo, hi) = if rd == xd {
        (r, r)
    } else if rd < xd {
        (r, step(r, true))
    } else {
        (step(r, false), r)
    };
    let lo_odd = lo.bits() & 1 == 1;
    pick(xd, lo.to_f64(), hi.to_f64(), lo_odd, mode)
}

fn to_int(x: f64, mode: Mode, min: f64, max: f64) -> f64 {
    if x.is_nan() {
        return 0.0;
    }
    let (lo, hi) = (x.floor(), x.ceil());
    pick(x, lo, hi, lo.rem_euclid(2.0) == 1.0, mode).clamp(min, max)
}

fn i32_to_f32(v: i32, mode: Mode) -> f64 {
    let x = v as f64;
    let r = v as f32; // nearest even
    let (lo, hi) = if r as f64 == x {
        (r, r)
    } else if (r as f64) < x {
        (r, r.next_up())
    } else {
        (r.next_down(), r)
    };
    pick(x, lo as f64, hi as f64, lo.to_bits() & 1 == 1, mode)
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}
impl Reader<'_> {
    fn take(&mut self, n: usize) -> &[u8] {
        let s = &self.bytes[self.at..self.at + n];
        self.at += n;
        s
    }
    fn f16s(&mut self) -> Vec<f64> {
        self.take(2 * N)
            .chunks(2)
            .map(|c| f16::from_le_bytes([c[0], c[1]]).to_f64())
            .collect()
    }
    fn bf16s(&mut self) -> Vec<f64> {
        self.take(2 * N)
            .chunks(2)
            .map(|c| bf16::from_le_bytes([c[0], c[1]]).to_f64())
            .collect()
    }
    fn f32s(&mut self) -> Vec<f64> {
        self.take(4 * N)
            .chunks(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64)
            .collect()
    }
    fn i32s(&mut self) -> Vec<f64> {
        self.take(4 * N)
            .chunks(4)
            .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64)
            .collect()
    }
    fn i8s(&mut self) -> Vec<f64> {
        self.take(N).iter().map(|&b| b as i8 as f64).collect()
    }
}

fn check(what: &str, mode: Mode, got: &[f64], want: impl Fn(usize) -> f64) {
    for (i, &g) in got.iter().enumerate() {
        let w = want(i);
        assert!(
            g == w || (g.is_nan() && w.is_nan()),
            "{what} {mode:?} [{i}]: got {g}, want {w}"
        );
    }
}

#[test]
fn every_cast_round_mode_on_ties_out_of_range_and_random_values() {
    let mut r = rng(80);
    let mut special_f = vec![
        1.0 + 2f32.powi(-11), // f16 tie
        -(1.0 + 3.0 * 2f32.powi(-11)),
        1.0 + 2f32.powi(-8), // bf16 tie
        1.0 + 3.0 * 2f32.powi(-8),
        2.5,
        -2.5,
        3.5,
        -0.5,
        0.5,
        1e10,
        -1e10,
        70000.0, // beyond f16
        -65520.0,
        f32::MAX,
        -f32::MAX,
        3e-8, // f16 subnormal range
        -1e-6,
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.0,
        -0.0,
    ];
    special_f.resize_with(N, || r.random_range(-300.0..300.0));
    let mut xf = special_f;
    let mut xh: Vec<f16> = [
        2.5f32,
        -2.5,
        0.5,
        -0.5,
        127.5,
        -128.5,
        200.0,
        -300.0,
        1000.0,
        3.25,
        -7.75,
        f32::NAN,
        f32::INFINITY,
    ]
    .iter()
    .map(|&v| f16::from_f32(v))
    .collect();
    xh.resize_with(N, || f16::from_f32(r.random_range(-150.0..150.0)));
    let mut xb: Vec<bf16> = [2.5f32, -2.5, -0.5, 64.5, 3e9, -3e9, f32::NAN, 1.5]
        .iter()
        .map(|&v| bf16::from_f32(v))
        .collect();
    xb.resize_with(N, || bf16::from_f32(r.random_range(-1e6..1e6)));
    let mut xi32: Vec<i32> = vec![
        (1 << 24) + 1,
        (1 << 25) + 3,
        -((1 << 25) + 3),
        i32::MAX,
        i32::MIN,
        (1 << 24) + 3,
    ];
    xi32.resize_with(N, || r.random_range(i32::MIN..i32::MAX));
    let mut xi8: Vec<i8> = (0..N).map(|_| r.random_range(i8::MIN..=i8::MAX)).collect();
    let mut out = vec![0u8; 9216];
    poison(&mut out);
    lib()
        .launch(
            "sim_vec_cast",
            CoreMode::Aiv,
            1,
            &mut [
                GmArg::new("xf", &mut xf),
                GmArg::new("xh", &mut xh),
                GmArg::new("xb", &mut xb),
                GmArg::new("xi8", &mut xi8),
                GmArg::new("xi32", &mut xi32),
                GmArg::new("out", &mut out),
            ],
        )
        .unwrap();

    let mut rd = Reader { bytes: &out, at: 0 };
    for m in [None, Rint, Floor, Ceil, Round, Trunc, Odd] {
        check("f32->f16", m, &rd.f16s(), |i| narrow::<f16>(xf[i], m));
    }
    for m in ROUNDING {
        check("f32->bf16", m, &rd.bf16s(), |i| narrow::<bf16>(xf[i], m));
    }
    for m in ROUNDING {
        check("f32->i32", m, &rd.i32s(), |i| {
            to_int(xf[i] as f64, m, i32::MIN as f64, i32::MAX as f64)
        });
    }
    for m in ROUNDING {
        check("f32->f32", m, &rd.f32s(), |i| {
            let x = xf[i] as f64;
            if x.is_finite() {
                to_int(x, m, f64::MIN, f64::MAX)
            } else {
                x
            }
        });
    }
    for m in [None, Rint, Floor, Ceil, Round, Trunc] {
        check("f16->i8", m, &rd.i8s(), |i| {
            to_int(xh[i].to_f64(), m, -128.0, 127.0)
        });
    }
    for m in ROUNDING {
        check("f16->i32", m, &rd.i32s(), |i| {
            to_int(xh[i].to_f64(), m, i32::MIN as f64, i32::MAX as f64)
        });
    }
    check("f16->f32", None, &rd.f32s(), |i| xh[i].to_f64());
    for m in ROUNDING {
        check("bf16->i32", m, &rd.i32s(), |i| {
            to_int(xb[i].to_f64(), m, i32::MIN as f64, i32::MAX as f64)
        });
    }
    check("bf16->f32", None, &rd.f32s(), |i| xb[i].to_f64());
    for m in [None, Rint, Floor, Ceil, Round, Trunc] {
        check("i32->f32", m, &rd.f32s(), |i| i32_to_f32(xi32[i], m));
    }
    check("i8->f16", None, &rd.f16s(), |i| xi8[i] as f64);
    assert_eq!(rd.at, out.len());
}
