//! The cube matmul the projection stages share (`dsv4/matmul.h`): C = A·B for `batch`
//! problems, bf16 × bf16 → f32 or int8 × int8 → i32, A row-major, B stored `[K, N]` or
//! `[N, K]`, M the runtime token count. Stages describe a product with [`Matmul`] and
//! call [`launch`]; this module picks the Mmad tiles and the work split and names the
//! kernel after them.
//!
//! The split is planned for the row capacity so that GM traffic stays near the minimum
//! (A, B and C each moved once). A work item keeps an A panel (a range of rows × a slice
//! of K) on chip and streams B once; so A is read once per N range, B once per row range
//! and C written once per K slice. The panel lives in L1 beside the double-buffered B
//! tiles, and its last columns (at most one Mmad k step) may live in L0A beside the
//! double-buffered A tiles: a 512-row int8 panel of K = 1024 (512 KiB) fits only that
//! way. C accumulates in L0C, one strip of all the range's rows × one tile of columns,
//! so the rows per range are bounded by L0C / (4 · tile n). With the row capacity × K
//! of A larger than the panel, either the rows split (B read again per range) or K
//! splits (C partial sums added atomically into a zeroed output: one more write of C by
//! a [`zero`] launch); the cheaper wins. The Mmad tiles are the stage's spec tiles or,
//! when that moves fewer bytes, some of m, n, k halved: narrower B tiles leave more L1
//! to the panel, narrower A tiles more L0A to its tail, narrower columns a taller strip.
//! N ranges then spread the work over the cube cores while the traffic stays within
//! 1.25× the minimum (or within 5 % of the split's own traffic when the on-chip room
//! already forces more).
//!
//! Where 1.25× is out of reach. C accumulates only in L0C and A, B reach the cube only
//! through L1, so an item holding R rows × S k-columns of A on chip (R·S·bytes ≤ L1 + L0A
//! ≈ 576 KiB) writes its R rows of C (f32) and reads its S rows of B once each: covering
//! A costs B and C traffic of at least N·(4R + 2S) per R·S elements of bf16 A, least at
//! S = 2R (R = 384, S = 768). For M × N × K = 512 × 1024 × 4096 bf16 (wo_a per group,
//! wq_a at TP 1) that is ≥ 1.81× the minimum (planned: 2.0×, eight 512-k slices), for
//! 512 × 512 × 4096 (wkv at TP 1) ≥ 1.63× (1.78×). 256 × 1024 × 4096 (wq_a at TP 2)
//! must read B once (a second read alone is +0.73×), so its 256-row panel needs four k
//! slices (three would take 683 KiB): ≥ 1.27×, as planned. (Keeping B on chip and
//! streaming A instead is no better for these shapes; keeping C in L0C for all of K
//! re-reads A or B per 32768-element C tile: ≥ 3×.)
//!
//! Usage (a stage module):
//! ```ignore
//! let mm = Matmul::new(Operands::Bf16, BLayout::Kn, Rows::Tokens, sh.local_t, n, k);
//! gemm::launch(b, s, &mm, ["x_normed", "wq_a", "q_latent"]);
//! ```

use super::{Builder, Cores, Kernel, Value};
use crate::plan::StagePlan;
use crate::plan::budget::{self, Buffer};

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

/// The matmul's on-chip regions in bytes, from the stage budget rows (`budget::matmul`):
/// L1 for the A panel and the B tiles, L0A for the A tiles and the panel's tail, L0C for
/// the C strip. A launch divides each region as its tiles need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Room {
    l1: usize,
    l0a: usize,
    l0c: usize,
}

impl Room {
    fn of(buffers: &[Buffer]) -> Room {
        let bytes = |name: &str| {
            buffers
                .iter()
                .find(|b| b.name == name)
                .map(|b| b.bytes() * b.count)
                .unwrap_or_else(|| unreachable!("a matmul stage's budget has no {name} row"))
        };
        Room {
            l1: bytes("mm_a_panel") + bytes("mm_b_l1"),
            l0a: bytes("mm_a_l0") + bytes("mm_a_tail"),
            l0c: bytes("mm_c_strip"),
        }
    }
}

/// Mmad tiles m × n × k (elements of the operand type).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Tiles {
    pub m: usize,
    pub n: usize,
    pub k: usize,
}

impl Tiles {
    /// The stage's spec tiles for `mm`: int8 keeps the byte sizes with twice the k values,
    /// or twice the n values when int8 B stored `[K, N]` needs 32-column squares; a tile
    /// wider than the product covers it whole.
    fn spec(mm: &Matmul, s: &StagePlan) -> Tiles {
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
        Tiles {
            m,
            n: n.min(mm.n),
            k: k.min(mm.k),
        }
    }

    /// `self` and its variants with some of m, n, k halved once (where the half is still
    /// whole fractals), largest first.
    fn candidates(self, mm: &Matmul) -> Vec<Tiles> {
        let n_unit = if mm.operands == Operands::I8 && mm.b_layout == BLayout::Kn {
            32
        } else {
            16
        };
        let c0 = 32 / mm.operands.bytes();
        let halves = |v: usize, unit: usize| {
            let mut h = vec![v];
            if v.is_multiple_of(2 * unit) {
                h.push(v / 2);
            }
            h
        };
        let mut all = Vec::new();
        for &m in &halves(self.m, 16) {
            for &n in &halves(self.n, n_unit) {
                for &k in &halves(self.k, c0) {
                    all.push(Tiles { m, n, k });
                }
            }
        }
        // stable: among equal volumes, halving k comes before n, and n before m
        all.sort_by_key(|t| std::cmp::Reverse(t.m * t.n * t.k));
        all
    }
}

/// How a launch divides the work: rows into ranges, K into slices, N into ranges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Split {
    pub tiles: Tiles,
    pub range_m: usize,
    pub slice_k: usize,
    pub range_n: usize,
    /// Columns at the end of a k slice held in L0A instead of the L1 panel (0: none).
    pub tail_k: usize,
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

/// The least-traffic split at the row capacity on at most `cores` cube cores, with the
/// largest tiles among the equally good; None if no tile's C strip holds 16 rows.
fn plan_split(mm: &Matmul, room: &Room, spec: Tiles, cores: usize) -> Option<Split> {
    let rows = mm.max_rows;
    let (a, b, c) = sizes(mm, rows);
    let e = mm.operands.bytes();
    let c0 = 32 / e;
    let mut best: Option<(usize, Split)> = None;
    for t in spec.candidates(mm) {
        let strip_rows = room.l0c / (t.m * t.n * 4) * t.m;
        let panel_bytes = room.l1.saturating_sub(2 * t.k * t.n * e);
        let tail_bytes = room.l0a.saturating_sub(2 * t.m * t.k * e);
        for parts in 1..=rows.div_ceil(16) {
            let range_m = rows.div_ceil(parts).next_multiple_of(16);
            if range_m > strip_rows {
                continue;
            }
            let panel_k = panel_bytes / (range_m * e) / c0 * c0;
            if panel_k == 0 {
                continue;
            }
            // One Mmad k step at most, and no more than the panel's buffer can stage.
            let tail_k = (tail_bytes / (range_m * e) / c0 * c0).min(t.k).min(panel_k);
            let fit = panel_k + tail_k;
            let slices = mm.k.div_ceil(fit);
            // Even slices, in whole k tiles where that still fits: no more room than needed.
            let even = mm.k.div_ceil(slices);
            let slice_k = [even.next_multiple_of(t.k), even.next_multiple_of(c0)]
                .into_iter()
                .find(|&k| k <= fit)
                .unwrap_or(fit)
                .min(mm.k);
            let atomic = slices > 1;
            let zero_fill = if atomic { c } else { 0 };
            let cost = b * rows.div_ceil(range_m) + c * slices + zero_fill;
            let split = Split {
                tiles: t,
                range_m,
                slice_k,
                range_n: mm.n,
                tail_k: slice_k.saturating_sub(panel_k),
                atomic,
            };
            if best.is_none_or(|(least, _)| cost < least) {
                best = Some((cost, split));
            }
        }
    }
    let (_, mut split) = best?;
    // N ranges: more parallel items while A's re-reads stay within the target.
    let (moved, least) = traffic(mm, &split, rows);
    let target = (least * 5 / 4).max(moved * 21 / 20);
    let extra = target.saturating_sub(moved) / a.max(1);
    let slots = (cores / split.items(mm, rows)).max(1);
    let tn = split.tiles.n;
    let n_tiles = mm.n.div_ceil(tn);
    let parts = (1 + extra).min(slots).min(n_tiles);
    split.range_n = n_tiles.div_ceil(parts) * tn;
    Some(split)
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
    let cores = b.plan.chip.aic_cores;
    let spec = Tiles::spec(mm, s);
    let Some(split) = fits(mm, &spec)
        .then(|| plan_split(mm, &Room::of(&s.buffers), spec, cores))
        .flatten()
    else {
        b.missing(s.kind);
        return None;
    };
    if split.atomic {
        let blocks = b.plan.chip.aiv_cores.min(mm.batch * mm.max_rows / 8).max(1);
        b.launch(s.kind, zero(mm), blocks as u32, &[args[2]]);
    }
    let blocks = cores.min(split.items(mm, mm.max_rows)).max(1);
    b.launch(s.kind, kernel(mm, &split), blocks as u32, &args);
    Some(split)
}

/// Whole fractals along K and N, C rows in whole 32-byte blocks, and leading dimensions
/// the ND2NZ and DataCopy parameters (16 bits) can express. (Halved tiles stay whole
/// fractals.)
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

fn kernel(mm: &Matmul, split: &Split) -> Kernel {
    let t = &split.tiles;
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
    if split.tail_k > 0 {
        name.push_str(&format!("_tail{}", split.tail_k));
    }
    if split.atomic {
        name.push_str("_acc");
    }
    Kernel {
        name,
        doc: format!(
            "{} matmul C[M, {}] = A[M, {}] · B ({layout}), A panels of {} rows × {} k{}, N ranges of {}{}",
            mm.operands.name(),
            mm.n,
            mm.k,
            split.range_m,
            split.slice_k,
            if split.tail_k > 0 {
                format!(" (the last {} in L0A)", split.tail_k)
            } else {
                String::new()
            },
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
            ("TAIL_K", u(split.tail_k)),
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

    /// The split of `mm` for a stage with spec tiles m × n × k on the 910B (24 cube cores).
    fn plan(mm: &Matmul, [m, n, k]: [usize; 3]) -> Split {
        let chip = chip::find("910b").unwrap();
        let room = Room::of(&budget::matmul(m, n, k, chip));
        let mut spec = Tiles { m, n, k };
        if mm.operands == Operands::I8 {
            spec.k *= 2;
        }
        plan_split(mm, &room, spec, chip.aic_cores).unwrap()
    }

    fn ratio(mm: &Matmul, s: &Split) -> f64 {
        let (moved, least) = traffic(mm, s, mm.max_rows);
        moved as f64 / least as f64
    }

    /// o_proj's grouped products at FLASH dims, TP 2: 4 groups of 512 rows.
    fn flash_wo(operands: Operands, n: usize, k: usize) -> Matmul {
        let mm = Matmul::new(operands, BLayout::Nk, Rows::GroupTokens, 512, n, k);
        Matmul {
            batch: 4,
            stride_a: 512 * k,
            stride_b: n * k,
            stride_c: 512 * n,
            ..mm
        }
    }

    const QKV_TILES: [usize; 3] = [128, 64, 128];
    const O_PROJ_TILES: [usize; 3] = [64, 128, 128];

    #[test]
    fn flash_wq_b_splits_n_only_at_tp2() {
        let mm = Matmul::new(Operands::I8, BLayout::Kn, Rows::Tokens, 256, 32768, 1024);
        let s = plan(&mm, QKV_TILES);
        assert_eq!(
            (s.range_m, s.slice_k, s.tail_k, s.atomic),
            (256, 1024, 0, false)
        );
        assert_eq!(
            s.tiles,
            Tiles {
                m: 128,
                n: 64,
                k: 256
            },
            "the spec tiles suffice"
        );
        assert_eq!(s.items(&mm, 256), 24);
        assert!(ratio(&mm, &s) <= 1.25, "{}", ratio(&mm, &s));
    }

    #[test]
    fn flash_wq_b_at_tp1_reads_b_once_through_an_l0a_tail() {
        // 512 rows x 1024 int8 k = 512 KiB: L1 holds 960 k beside the B tiles, L0A the rest.
        let mm = Matmul::new(Operands::I8, BLayout::Kn, Rows::Tokens, 512, 32768, 1024);
        let s = plan(&mm, QKV_TILES);
        assert_eq!((s.range_m, s.slice_k, s.atomic), (512, 1024, false));
        assert!(s.tail_k > 0 && s.tail_k <= s.tiles.k);
        assert_eq!(s.items(&mm, 512), 24);
        assert!(ratio(&mm, &s) <= 1.25, "{}", ratio(&mm, &s));
    }

    #[test]
    fn flash_wkv_at_tp2_slices_k_in_four() {
        // 256 rows x 1024 bf16 k = 512 KiB per slice: four slices, C written four times.
        let mm = Matmul::new(Operands::Bf16, BLayout::Kn, Rows::Tokens, 256, 512, 4096);
        let s = plan(&mm, QKV_TILES);
        assert_eq!((s.range_m, s.slice_k, s.atomic), (256, 1024, true));
        assert!(s.tail_k > 0);
        assert!(ratio(&mm, &s) <= 1.25, "{}", ratio(&mm, &s));
    }

    #[test]
    fn flash_wq_a_at_tp2_stays_above_the_target() {
        // Four k slices at least (L1 + L0A < 3 x 683 KiB); one write of C (1 MiB) per slice.
        let mm = Matmul::new(Operands::Bf16, BLayout::Kn, Rows::Tokens, 256, 1024, 4096);
        let s = plan(&mm, QKV_TILES);
        assert_eq!((s.range_m, s.slice_k, s.atomic), (256, 1024, true));
        let r = ratio(&mm, &s);
        assert!((1.27..1.28).contains(&r), "{r}");
    }

    #[test]
    fn flash_wo_b_keeps_a_group_whole() {
        let mm = Matmul {
            ldb: 4096,
            stride_b: 1024,
            ..flash_wo(Operands::I8, 4096, 1024)
        };
        let s = plan(&mm, O_PROJ_TILES);
        assert_eq!((s.range_m, s.slice_k, s.atomic), (512, 1024, false));
        // a 512-row strip of C needs 64-column tiles in L0C
        assert_eq!(s.tiles.n, 64);
        assert!(s.tail_k > 0);
        assert_eq!(s.items(&mm, 512), 24);
        assert!(ratio(&mm, &s) <= 1.25, "{}", ratio(&mm, &s));
    }

    #[test]
    fn flash_wo_a_moves_twice_its_minimum() {
        // B (8 MiB a group) once and C (2 MiB) per 512-k slice: 2.0x, see the module doc.
        let mm = flash_wo(Operands::Bf16, 1024, 4096);
        let s = plan(&mm, O_PROJ_TILES);
        assert_eq!((s.range_m, s.slice_k, s.atomic), (512, 512, true));
        assert!((ratio(&mm, &s) - 2.0).abs() < 1e-9, "{}", ratio(&mm, &s));
    }

    #[test]
    fn small_products_keep_the_spec_tiles_and_the_whole_panel() {
        let mm = Matmul::new(Operands::Bf16, BLayout::Nk, Rows::Tokens, 128, 512, 512);
        let s = plan(&mm, QKV_TILES);
        assert_eq!(
            (s.range_m, s.slice_k, s.tail_k, s.atomic),
            (128, 512, 0, false)
        );
        assert_eq!(
            s.tiles,
            Tiles {
                m: 128,
                n: 64,
                k: 128
            }
        );
        assert!(ratio(&mm, &s) <= 1.25);
    }

    #[test]
    fn candidates_halve_whole_fractals_only() {
        let i8_kn = Matmul::new(Operands::I8, BLayout::Kn, Rows::Tokens, 64, 64, 256);
        let c = Tiles {
            m: 16,
            n: 32,
            k: 64,
        }
        .candidates(&i8_kn);
        // m 16 and int8 [K, N] n 32 cannot halve; k 64 can (32 = one int8 fractal row)
        assert_eq!(
            c,
            vec![
                Tiles {
                    m: 16,
                    n: 32,
                    k: 64
                },
                Tiles {
                    m: 16,
                    n: 32,
                    k: 32
                }
            ]
        );
    }
}
