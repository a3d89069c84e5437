//! The cube matmul the projection stages share (`dsv4/matmul.h`): C = A·B for `batch`
//! problems, bf16 × bf16 → f32 or int8 × int8 → i32, A row-major, B stored `[K, N]` or
//! `[N, K]`, M the runtime token count. Stages describe a product with [`Matmul`] and
//! call [`launch`]; this module picks the work split and names the kernel after it.
//!
//! The split is planned for the row capacity so that GM traffic stays near the minimum
//! (A, B and C each moved once). A work item keeps an A panel (a range of rows × a slice
//! of K) resident in L1 and streams B once; so A is read once per N range, B once per
//! row range and C written once per K slice. With the row capacity × K of A larger than
//! the L1 panel, either the rows split (B read again per range) or K splits (C partial
//! sums added atomically into a zeroed output: one more write of C by a [`zero`] launch);
//! the cheaper wins. N ranges then spread the work over the cube cores while the traffic
//! stays within 1.25× the minimum (or within 5 % of the split's own traffic when the
//! L1 panel already forces more).
//!
//! Usage (a stage module):
//! ```ignore
//! let mm = Matmul::new(Operands::Bf16, BLayout::Kn, Rows::Tokens, sh.local_t, n, k);
//! gemm::launch(b, s, &mm, ["x_normed", "wq_a", "q_latent"]);
//! ```

use super::{Builder, Cores, Kernel, Value};
use crate::plan::{StagePlan, budget};

/// Operand types: bf16 × bf16 → f32, or int8 × int8 → i32.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Operands {
    Bf16,
    I8,
}

impl Operands {
    fn bytes(self) -> usize {
        match self {
            Operands::Bf16 => 2,
            Operands::I8 => 1,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Operands::Bf16 => "bf16",
            Operands::I8 => "i8",
        }
    }
}

/// How B is stored in GM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum BLayout {
    /// `[K, N]` row-major: weights stored in × out (wq_a, wkv, wq_b).
    Kn,
    /// `[N, K]` row-major: weights stored out × in (wo_a, wo_b).
    Nk,
}

/// Which runtime extent the rows of A and C are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Rows {
    /// `TilingData::t`: the rank's tokens.
    Tokens,
    /// `TilingData::group_t`: the tokens of the TP group.
    GroupTokens,
}

/// One matmul: `batch` problems C[b] = A[b] · B[b], strides in elements.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Matmul {
    pub operands: Operands,
    pub b_layout: BLayout,
    pub rows: Rows,
    /// Capacity of the runtime rows: the split is planned for it.
    pub max_rows: usize,
    pub n: usize,
    pub k: usize,
    pub batch: usize,
    pub lda: usize,
    pub ldb: usize,
    pub ldc: usize,
    pub stride_a: usize,
    pub stride_b: usize,
    pub stride_c: usize,
}

impl Matmul {
    /// One dense problem `[M, K] · B → [M, N]` (leading dimensions K, N or K, N).
    pub fn new(
        operands: Operands,
        b_layout: BLayout,
        rows: Rows,
        max_rows: usize,
        n: usize,
        k: usize,
    ) -> Matmul {
        Matmul {
            operands,
            b_layout,
            rows,
            max_rows,
            n,
            k,
            batch: 1,
            lda: k,
            ldb: match b_layout {
                BLayout::Kn => n,
                BLayout::Nk => k,
            },
            ldc: n,
            stride_a: 0,
            stride_b: 0,
            stride_c: 0,
        }
    }
}

/// Mmad tiles and the on-chip room of one launch, from the stage's budget rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Tiles {
    m: usize,
    n: usize,
    k: usize,
    /// Bytes of the L1 region for the A panel.
    panel_bytes: usize,
    /// Rows of C one `n`-column strip in L0C holds (a multiple of `m`).
    strip_rows: usize,
}

impl Tiles {
    /// The tiles of `mm` within the stage budget `rows` (built by `budget::matmul` from
    /// the spec's m, n, k): int8 keeps the byte sizes with twice the k values, or twice
    /// the n values when int8 B stored `[K, N]` needs 32-column squares. None if the
    /// strip cannot hold one Mmad tile.
    fn of(mm: &Matmul, s: &StagePlan) -> Option<Tiles> {
        let bytes = |name: &str| {
            s.buffers
                .iter()
                .find(|b| b.name == name)
                .map(|b| b.bytes())
                .unwrap_or_else(|| unreachable!("stage {} has no {name} row", s.name()))
        };
        let tile = |name: &str| {
            s.tiles
                .iter()
                .find(|(n, _)| *n == name)
                .map(|&(_, v)| v)
                .unwrap_or_else(|| unreachable!("stage {} has no tile {name}", s.name()))
        };
        let (m, mut n, mut k) = (tile("m"), tile("n"), tile("k"));
        if mm.operands == Operands::I8 {
            if mm.b_layout == BLayout::Kn && !n.is_multiple_of(32) {
                n *= 2;
            } else {
                k *= 2;
            }
        }
        // A tile wider than the product covers it whole.
        let (n, k) = (n.min(mm.n), k.min(mm.k));
        let strip_rows = bytes("mm_c_strip") / (m * n * 4) * m;
        (strip_rows >= m).then_some(Tiles {
            m,
            n,
            k,
            panel_bytes: bytes("mm_a_panel"),
            strip_rows,
        })
    }
}

/// How a launch divides the work: rows into ranges, K into slices, N into ranges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Split {
    pub range_m: usize,
    pub slice_k: usize,
    pub range_n: usize,
    /// K slices add their partial sums atomically into a zeroed C.
    pub atomic: bool,
}

impl Split {
    fn items(&self, mm: &Matmul, rows: usize) -> usize {
        mm.batch
            * rows.div_ceil(self.range_m)
            * mm.k.div_ceil(self.slice_k)
            * mm.n.div_ceil(self.range_n)
    }
}

/// GM bytes of the matmul at `rows` rows: (moved, minimum), the zero fill excluded.
pub(super) fn traffic(mm: &Matmul, split: &Split, rows: usize) -> (usize, usize) {
    let (a, b, c) = sizes(mm, rows);
    let moved = a * mm.n.div_ceil(split.range_n)
        + b * rows.div_ceil(split.range_m)
        + c * mm.k.div_ceil(split.slice_k);
    (moved, a + b + c)
}

/// Bytes of A, B and C at `rows` rows.
fn sizes(mm: &Matmul, rows: usize) -> (usize, usize, usize) {
    let e = mm.operands.bytes();
    (
        mm.batch * rows * mm.k * e,
        mm.batch * mm.k * mm.n * e,
        mm.batch * rows * mm.n * 4,
    )
}

/// The least-traffic split at the row capacity on at most `cores` cube cores.
fn plan_split(mm: &Matmul, t: &Tiles, cores: usize) -> Split {
    let rows = mm.max_rows;
    let (a, b, c) = sizes(mm, rows);
    let e = mm.operands.bytes();
    let mut best: Option<(usize, Split)> = None;
    for parts in 1..=rows.div_ceil(16) {
        let range_m = rows.div_ceil(parts).next_multiple_of(16);
        if range_m > t.strip_rows {
            continue;
        }
        let fit = t.panel_bytes / (range_m * e) / t.k * t.k;
        if fit == 0 {
            continue;
        }
        let slices = mm.k.div_ceil(fit);
        // Even slices: the panel of the largest one is no bigger than needed.
        let slice_k = mm.k.div_ceil(slices).next_multiple_of(t.k).min(mm.k);
        let atomic = slices > 1;
        let zero_fill = if atomic { c } else { 0 };
        let cost = b * rows.div_ceil(range_m) + c * slices + zero_fill;
        let split = Split {
            range_m,
            slice_k,
            range_n: mm.n,
            atomic,
        };
        if best.is_none_or(|(least, _)| cost < least) {
            best = Some((cost, split));
        }
    }
    let (_, mut split) = best
        .unwrap_or_else(|| unreachable!("a 16-row panel of one k tile always fits the L1 budget"));
    // N ranges: more parallel items while A's re-reads stay within the target.
    let (moved, least) = traffic(mm, &split, rows);
    let target = (least * 5 / 4).max(moved * 21 / 20);
    let extra = target.saturating_sub(moved) / a.max(1);
    let slots = (cores / split.items(mm, rows)).max(1);
    let n_tiles = mm.n.div_ceil(t.n);
    let parts = (1 + extra).min(slots).min(n_tiles);
    split.range_n = n_tiles.div_ceil(parts) * t.n;
    split
}

/// Launches `mm` with args `[a, b, c]` (tensor or workspace names) in stage `s`: a zero
/// fill of C first when K is split. Returns the split, or marks the stage missing when
/// its tiles or the product's shape cannot run on this kernel (see [`fits`]).
pub(super) fn launch(
    b: &mut Builder,
    s: &StagePlan,
    mm: &Matmul,
    args: [&str; 3],
) -> Option<Split> {
    let Some(tiles) = Tiles::of(mm, s).filter(|t| fits(mm, t)) else {
        b.missing(s.kind);
        return None;
    };
    let cores = b.plan.chip.aic_cores;
    let split = plan_split(mm, &tiles, cores);
    if split.atomic {
        let blocks = b.plan.chip.aiv_cores.min(mm.batch * mm.max_rows / 8).max(1);
        b.launch(s.kind, zero(mm), blocks as u32, &[args[2]]);
    }
    let blocks = cores.min(split.items(mm, mm.max_rows)).max(1);
    b.launch(s.kind, kernel(mm, &tiles, &split), blocks as u32, &args);
    Some(split)
}

/// Whole fractals along K and N, C rows in whole 32-byte blocks, and leading dimensions
/// the ND2NZ and DataCopy parameters (16 bits) can express.
fn fits(mm: &Matmul, t: &Tiles) -> bool {
    let c0 = 32 / mm.operands.bytes();
    mm.k.is_multiple_of(c0)
        && t.k.is_multiple_of(c0)
        && mm.n.is_multiple_of(16)
        && t.n.is_multiple_of(16)
        && mm.ldc.is_multiple_of(8)
        && [mm.lda, mm.ldb, mm.max_rows]
            .iter()
            .all(|&v| v <= usize::from(u16::MAX))
}

fn kernel(mm: &Matmul, t: &Tiles, split: &Split) -> Kernel {
    let u = |v: usize| Value::U32(u32::try_from(v).expect("matmul sizes fit u32"));
    let layout = match mm.b_layout {
        BLayout::Kn => "kn",
        BLayout::Nk => "nk",
    };
    let mut name = format!("matmul_{}_{layout}_n{}_k{}", mm.operands.name(), mm.n, mm.k);
    if mm.rows == Rows::GroupTokens {
        name.push_str("_grouprows");
    }
    let default_ldb = match mm.b_layout {
        BLayout::Kn => mm.n,
        BLayout::Nk => mm.k,
    };
    for (tag, v, default) in [
        ("lda", mm.lda, mm.k),
        ("ldb", mm.ldb, default_ldb),
        ("ldc", mm.ldc, mm.n),
    ] {
        if v != default {
            name.push_str(&format!("_{tag}{v}"));
        }
    }
    if mm.batch > 1 {
        name.push_str(&format!(
            "_b{}_sa{}_sb{}_sc{}",
            mm.batch, mm.stride_a, mm.stride_b, mm.stride_c
        ));
    }
    name.push_str(&format!(
        "_tile{}x{}x{}_split{}x{}x{}",
        t.m, t.n, t.k, split.range_m, split.slice_k, split.range_n
    ));
    if split.atomic {
        name.push_str("_acc");
    }
    Kernel {
        name,
        doc: format!(
            "{} matmul C[M, {}] = A[M, {}] · B ({layout}), A panels of {} rows × {} k, N ranges of {}{}",
            mm.operands.name(),
            mm.n,
            mm.k,
            split.range_m,
            split.slice_k,
            split.range_n,
            if split.atomic {
                ", k slices added atomically"
            } else {
                ""
            }
        ),
        block: "matmul.h",
        class: "Matmul",
        cores: Cores::Aic,
        params: vec![
            ("INT8", Value::Bool(mm.operands == Operands::I8)),
            ("B_NK", Value::Bool(mm.b_layout == BLayout::Nk)),
            ("GROUP_ROWS", Value::Bool(mm.rows == Rows::GroupTokens)),
            ("N", u(mm.n)),
            ("K", u(mm.k)),
            ("BATCH", u(mm.batch)),
            ("LDA", u(mm.lda)),
            ("LDB", u(mm.ldb)),
            ("LDC", u(mm.ldc)),
            ("STRIDE_A", u(mm.stride_a)),
            ("STRIDE_B", u(mm.stride_b)),
            ("STRIDE_C", u(mm.stride_c)),
            ("TILE_M", u(t.m)),
            ("TILE_N", u(t.n)),
            ("TILE_K", u(t.k)),
            ("RANGE_M", u(split.range_m)),
            ("SLICE_K", u(split.slice_k)),
            ("RANGE_N", u(split.range_n)),
            ("ATOMIC", Value::Bool(split.atomic)),
        ],
        args: vec!["a", "b", "c"],
    }
}

/// `dsv4/zero_rows.h`: zeroes the runtime rows of C before a split-K matmul adds into it.
fn zero(mm: &Matmul) -> Kernel {
    let u = |v: usize| Value::U32(u32::try_from(v).expect("matmul sizes fit u32"));
    // Whole rows per copy when they fit the tile, else row pieces that divide N.
    let z = budget::ZERO_FILL_TILE;
    let tile = if mm.n <= z {
        z / mm.n * mm.n
    } else {
        (8..=z)
            .rev()
            .step_by(8)
            .find(|d| mm.n.is_multiple_of(*d))
            .unwrap_or(8)
    };
    let mut name = format!("zero_rows_n{}", mm.n);
    if mm.ldc != mm.n {
        name.push_str(&format!("_ld{}", mm.ldc));
    }
    if mm.batch > 1 {
        name.push_str(&format!("_b{}_s{}", mm.batch, mm.stride_c));
    }
    if mm.rows == Rows::GroupTokens {
        name.push_str("_grouprows");
    }
    Kernel {
        name,
        doc: format!(
            "zeroes the runtime rows of a [M, {}] 4-byte accumulator",
            mm.n
        ),
        block: "zero_rows.h",
        class: "ZeroRows",
        cores: Cores::Aiv,
        params: vec![
            ("GROUP_ROWS", Value::Bool(mm.rows == Rows::GroupTokens)),
            ("N", u(mm.n)),
            ("LD", u(mm.ldc)),
            ("BATCH", u(mm.batch)),
            ("STRIDE", u(mm.stride_c)),
            ("TILE", u(tile)),
        ],
        args: vec!["out"],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chip;

    fn tiles(m: usize, n: usize, k: usize, op: Operands) -> Tiles {
        let chip = chip::find("910b").unwrap();
        let rows = budget::matmul(m, n, k, chip);
        let bytes = |name: &str| rows.iter().find(|b| b.name == name).unwrap().bytes();
        let k = if op == Operands::I8 { 2 * k } else { k };
        Tiles {
            m,
            n,
            k,
            panel_bytes: bytes("mm_a_panel"),
            strip_rows: bytes("mm_c_strip") / (m * n * 4) * m,
        }
    }

    fn ratio(mm: &Matmul, s: &Split) -> f64 {
        let (moved, least) = traffic(mm, s, mm.max_rows);
        moved as f64 / least as f64
    }

    #[test]
    fn flash_wq_b_splits_n_only_at_tp2() {
        let mm = Matmul::new(Operands::I8, BLayout::Kn, Rows::Tokens, 256, 32768, 1024);
        let s = plan_split(&mm, &tiles(128, 64, 128, Operands::I8), 24);
        assert_eq!((s.range_m, s.slice_k, s.atomic), (256, 1024, false));
        assert_eq!(s.items(&mm, 256), 24);
        assert!(ratio(&mm, &s) <= 1.25, "{}", ratio(&mm, &s));
    }

    #[test]
    fn flash_wq_a_splits_k_when_the_panel_does_not_fit() {
        let mm = Matmul::new(Operands::Bf16, BLayout::Kn, Rows::Tokens, 256, 1024, 4096);
        let s = plan_split(&mm, &tiles(128, 64, 128, Operands::Bf16), 24);
        assert!(s.atomic);
        assert_eq!(s.range_m, 256);
        // 256 rows x 896 k bf16 = 448 KiB of the ~480 KiB panel region
        assert_eq!(s.slice_k, 896);
    }

    #[test]
    fn small_products_keep_the_whole_panel() {
        let mm = Matmul::new(Operands::Bf16, BLayout::Nk, Rows::Tokens, 128, 512, 512);
        let s = plan_split(&mm, &tiles(128, 64, 128, Operands::Bf16), 24);
        assert_eq!((s.range_m, s.slice_k, s.atomic), (128, 512, false));
        assert!(ratio(&mm, &s) <= 1.25);
    }
}
