//! The cycle costs the planners time a launch with: hicann/ge's A2 fits
//! (`att/gen_model_info/api_perf_register/v1/perf_param_v1.cpp`), the same rows
//! `harness/sim/src/timing.cpp` times the calls with (README "Modeled time").

use crate::chip::Chip;

pub(super) struct Rate;

impl Rate {
    /// `Load`: bytes per cycle of one of `cores` cores loading from GM at once.
    pub(super) fn load(cores: usize) -> f64 {
        Self::LOAD.0 + Self::LOAD.1 / cores as f64
    }

    /// An L2 hit: one core's full `Load` rate (the cores' together at most [`Rate::peak`]).
    pub(super) fn l2() -> f64 {
        Self::LOAD.0 + Self::LOAD.1
    }

    /// What all cores' GM traffic, L2 hits included, moves per cycle at most: 1.6 TB/s (an
    /// assumption, the timing model's: no public figure).
    pub(super) fn peak(chip: &Chip) -> f64 {
        1.6e12 / (f64::from(chip.clock_mhz) * 1e6)
    }

    /// `Store`: bytes per cycle of one of `cores` cores storing to GM at once.
    pub(super) fn store(cores: usize) -> f64 {
        Self::STORE.0 + Self::STORE.1 / cores as f64
    }

    /// What one launch more costs: the op head ([ge] `GetOpHeadCost`, 300 cycles) and the
    /// gap between stream-ordered kernels (2 µs, the timing model's assumption:
    /// `harness/sim/src/timing.cpp`).
    pub(super) fn launch(chip: &Chip) -> f64 {
        300.0 + 2.0 * f64::from(chip.clock_mhz)
    }

    /// A vector call over `elems` elements: `k·elems + b`.
    pub(super) fn call((k, b): (f64, f64), elems: usize) -> f64 {
        k * elems as f64 + b
    }

    /// `Load` and `Store`: `a + b / cores` bytes per cycle.
    const LOAD: (f64, f64) = (9.9074, 15.896);
    const STORE: (f64, f64) = (9.96, 3.79);
    /// `Cast` f16 → f32 (bf16 → f32 borrows it), `uint8tofloat16` (int8 → f16 borrows
    /// it), `MulAddDst` f32 (none in ge: `Mul`'s at half its rate, as asc-devkit's
    /// theoretical figures have it, 32 vs 64 per cycle), `BlockReduceMax` f32
    /// (`BlockReduceSum` borrows it).
    pub(super) const WIDEN: (f64, f64) = (0.0147, 20.1204);
    pub(super) const WIDEN_I8: (f64, f64) = (0.0102, 46.512);
    pub(super) const MUL_ADD: (f64, f64) = (0.0412, 23.23);
    pub(super) const BLOCK_SUM: (f64, f64) = (0.0198, 16.7401);
    /// `Brcb` f32.
    pub(super) const BRCB: (f64, f64) = (0.0146, 13.07);
    /// GM read latency, cycles (hicann/pypto `arch/PipeSimulatorFast.cpp` `rGmLatency`, as
    /// the timing model has it): what a load's data waits before it arrives.
    pub(super) const GM_LATENCY: f64 = 1400.0;
    /// `Load`'s head `h`, cycles.
    pub(super) const LOAD_HEAD: f64 = 27.01;
    /// L1 → L0B (MTE1): bytes per cycle and head, cycles (hicann/pypto
    /// `arch/A2A3/PostSimulatorA2A3.h` `L1_TO_L0B`, 2.05893 µs per 10⁶ B and 0.012 µs, at
    /// its 2000 cycles per µs).
    pub(super) const L1_TO_L0B: (f64, f64) = (1e6 / (2.05893 * 2000.0), 0.012 * 2000.0);
    /// `Duplicate` f32, `Add` f32.
    pub(super) const DUPLICATE: (f64, f64) = (0.0156, 17.00);
    pub(super) const ADD: (f64, f64) = (0.0206, 23.22);
}
