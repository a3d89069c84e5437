//! The target chips a spec may name, with the on-chip capacities and alignments
//! the budget check uses (ascendc.md §0.4, §A.3, §E), and the clock and HBM
//! bandwidth their roofline profile derives from (the one place these live; the
//! host plan carries the derived peaks to `cargo xtask cost`).

use std::fmt;

const KIB: usize = 1024;

/// An on-chip buffer position.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Mem {
    /// Unified Buffer of one AIV (vector) core.
    Ub,
    /// L1 of one AIC (cube) core.
    L1,
    L0a,
    L0b,
    L0c,
}

impl Mem {
    pub const ALL: [Mem; 5] = [Mem::Ub, Mem::L1, Mem::L0a, Mem::L0b, Mem::L0c];

    pub fn name(self) -> &'static str {
        match self {
            Mem::Ub => "UB",
            Mem::L1 => "L1",
            Mem::L0a => "L0A",
            Mem::L0b => "L0B",
            Mem::L0c => "L0C",
        }
    }
}

impl fmt::Display for Mem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, PartialEq, Eq)]
pub struct Chip {
    pub name: &'static str,
    pub description: &'static str,
    pub aic_cores: usize,
    pub aiv_cores: usize,
    /// Bytes a kernel may allocate in UB (the last 8 KiB are reserved for API temporaries).
    pub ub_bytes: usize,
    /// Bytes a kernel may allocate in L1 (128 B are reserved for the KFC).
    pub l1_bytes: usize,
    pub l0a_bytes: usize,
    pub l0b_bytes: usize,
    pub l0c_bytes: usize,
    /// Cube and vector clock.
    pub clock_mhz: u32,
    /// Nominal HBM bandwidth, GB/s (10^9 bytes).
    pub hbm_gb_per_s: u32,
}

impl Chip {
    pub fn capacity(&self, mem: Mem) -> usize {
        match mem {
            Mem::Ub => self.ub_bytes,
            Mem::L1 => self.l1_bytes,
            Mem::L0a => self.l0a_bytes,
            Mem::L0b => self.l0b_bytes,
            Mem::L0c => self.l0c_bytes,
        }
    }

    /// Dense cube rate, bf16/fp16 inputs: 4096 MACs (one 16³ fractal) per AIC per
    /// cycle, 2 FLOP each (ascendc.md §E: ≈ 354 TFLOPS on the 910B2).
    pub fn cube_bf16_flops(&self) -> f64 {
        self.aic_cores as f64 * 4096.0 * 2.0 * self.hz()
    }

    /// int8 inputs run a 16×32×16 fractal: twice the bf16 rate.
    pub fn cube_int8_ops(&self) -> f64 {
        2.0 * self.cube_bf16_flops()
    }

    /// fp32 inputs: a quarter of the bf16 rate (pto-isa's cost model).
    pub fn cube_f32_flops(&self) -> f64 {
        self.cube_bf16_flops() / 4.0
    }

    /// Vector lanes per second: 128 fp16 lanes per AIV per cycle (≈ 11 T on the 910B2).
    pub fn vector_elem_ops(&self) -> f64 {
        self.aiv_cores as f64 * 128.0 * self.hz()
    }

    pub fn hbm_bytes_per_s(&self) -> f64 {
        f64::from(self.hbm_gb_per_s) * 1e9
    }

    fn hz(&self) -> f64 {
        f64::from(self.clock_mhz) * 1e6
    }

    /// Start-address alignment of a buffer in `mem`, in bytes (same on every chip here).
    pub fn alignment(&self, mem: Mem) -> usize {
        match mem {
            Mem::Ub | Mem::L1 => 32,
            Mem::L0a | Mem::L0b => 512,
            Mem::L0c => 64,
        }
    }
}

/// dav-c220 memory sizes are the same on every 910B-class part; core counts, clock and
/// HBM differ (ascendc.md §E).
const fn c220(
    name: &'static str,
    description: &'static str,
    aic_cores: usize,
    aiv_cores: usize,
    clock_mhz: u32,
    hbm_gb_per_s: u32,
) -> Chip {
    Chip {
        name,
        description,
        aic_cores,
        aiv_cores,
        ub_bytes: 184 * KIB,
        l1_bytes: 512 * KIB - 128,
        l0a_bytes: 64 * KIB,
        l0b_bytes: 64 * KIB,
        l0c_bytes: 128 * KIB,
        clock_mhz,
        hbm_gb_per_s,
    }
}

pub const CHIPS: &[Chip] = &[
    c220("910b", "Ascend 910B1/910B2 (A2)", 24, 48, 1800, 1600),
    c220("910b3", "Ascend 910B3", 20, 40, 1800, 1600),
    c220("910b4", "Ascend 910B4", 20, 40, 1500, 800),
    c220("a3", "Ascend 910C (A3), one die", 24, 48, 1800, 1600),
];

pub fn find(name: &str) -> Option<&'static Chip> {
    CHIPS.iter().find(|c| c.name == name)
}

pub fn known_names() -> String {
    CHIPS.iter().map(|c| c.name).collect::<Vec<_>>().join(", ")
}
