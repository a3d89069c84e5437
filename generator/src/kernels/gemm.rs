//! The cube matmul the projection stages share (`dsv4/matmul.h`): C = A·B for `batch`
//! problems, bf16 × bf16 → f32 or int8 × int8 → i32, A row-major, B stored `[K, N]` or
//! `[N, K]`, M a runtime row count ([`Rows`]: the rank's tokens, the TP group's, or r
//! rows per token). Stages describe a product with [`Matmul`] and call [`launch`]; this
//! module picks the Mmad tiles and the work split and names the kernel after them.
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
//! splits; the cheaper wins. K slices combine as [`KSum`] says: int8 ones add their
//! partial sums atomically into a C a [`zero`] launch cleared (i32 adds are exact in any
//! order); bf16 ones write theirs to the `k_partials` workspace and a [`slice_sum`]
//! launch adds them in slice order, since f32 atomics would make C depend on the order
//! the cores finish in (a run must repeat bit for bit). That costs the partials once
//! more (read back) plus C once. The Mmad tiles are the stage's spec tiles or,
//! when that moves fewer bytes, some of m, n, k halved: narrower B tiles leave more L1
//! to the panel, narrower A tiles more L0A to its tail, narrower columns a taller strip.
//! N ranges then spread the work over the cube cores while the traffic stays within
//! 1.25× the minimum (or within 5 % of the split's own traffic when the on-chip room
//! already forces more).
//!
//! Where 1.25× is out of reach. C accumulates only in L0C and A, B reach the cube only
//! through L1, so an item holding R rows × S k-columns of A on chip (R·S·bytes ≤ L1 + L0A
//! ≈ 576 KiB) reads its S rows of B and, when K is split, writes its R rows of partial
//! products (f32) that the slice sum reads back: covering bf16 A costs B and partial
//! traffic of at least N·(8R + 2S) per R·S elements, least at S = 4R (R ≈ 272, S ≈ 1086),
//! plus A once and C once. For M × N × K = 512 × 1024 × 4096 (wo_a per group, wq_a at
//! TP 1) that is ≥ 2.58× the minimum (planned: 2.71×, two row ranges × four 1024-k
//! slices), for 512 × 512 × 4096 (wkv at TP 1) ≥ 2.23× (2.33×). 256 × 1024 × 4096 (wq_a
//! at TP 2) holds at most 1152 k of its 256 rows, so four slices: 1.73×, as planned
//! (256 × 512 × 4096, wkv: 1.62×). Adding the slices atomically would save the read-back
//! (2.0×, 1.78×, 1.27×) but leave C to the order the cores finish in. (Keeping B on chip
//! and streaming A instead is no better for these shapes; keeping C in L0C for all of K
//! re-reads A or B per 32768-element C tile: ≥ 3×.)
//!
//! Usage (a stage module):
//! ```ignore
//! let mm = Matmul::new(Operands::Bf16, BLayout::Kn, Rows::Tokens, sh.local_t, n, k);
//! gemm::launch(b, [tile.m, tile.n, tile.k], &mm, ["x_normed", "wq_a", "q_latent"]);
//! ```

use abi::DType;

use super::{Builder, Cores, Kernel, Value};
use crate::budget::{self, Buffer, row};
use crate::chip::{Chip, Mem};

/// Operand types: bf16 × bf16 → f32, or int8 × int8 → i32.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operands {
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
pub enum BLayout {
    /// `[K, N]` row-major: weights stored in × out (wq_a, wkv, wq_b).
    Kn,
    /// `[N, K]` row-major: weights stored out × in (wo_a, wo_b).
    Nk,
}

/// Which runtime extent the rows of A and C are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rows {
    /// `TilingData::t`: the rank's tokens.
    Tokens,
    /// `TilingData::group_t`: the tokens of the TP group.
    GroupTokens,
    /// `t · r` (r ≥ 2): r rows per token of the rank, a token-major `[t, r, w]` tensor
    /// read as `[t · r, w]`. r problems that share B become one product whose B is read
    /// once per row range, not once per problem (the index queries' Hadamard product, r
    /// the heads). [`Matmul::max_rows`] is then the token capacity × r.
    TokensTimes(usize),
}

impl Rows {
    /// The kernels' row knobs: M = (GROUP_ROWS ? group_t : t) · ROWS_PER_TOKEN.
    fn params(self) -> [(&'static str, Value); 2] {
        let per_token = match self {
            Rows::TokensTimes(r) => r,
            Rows::Tokens | Rows::GroupTokens => 1,
        };
        [
            ("GROUP_ROWS", Value::Bool(self == Rows::GroupTokens)),
            ("ROWS_PER_TOKEN", Value::u32(per_token)),
        ]
    }

    /// The kernel-name suffix (none for the rank's tokens).
    fn tag(self) -> String {
        match self {
            Rows::Tokens => String::new(),
            Rows::GroupTokens => "_grouprows".into(),
            Rows::TokensTimes(r) => format!("_tokx{r}"),
        }
    }
}

/// One matmul: `batch` problems C[b] = A[b] · B[b], strides in elements.
#[derive(Debug, Clone, PartialEq)]
pub struct Matmul {
    pub operands: Operands,
    pub b_layout: BLayout,
    pub rows: Rows,
    /// Capacity of the runtime rows (`TokensTimes(r)`: the token capacity × r): the split
    /// is planned for it.
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

/// The matmul's on-chip regions in bytes for a stage's spec tiles `m × n × k` of bf16 (an
/// int8 matmul keeps the byte sizes: its tiles hold twice the k values): L1 for the A panel
/// and the double-buffered B tiles (the panel takes the rest of L1), L0A for the
/// double-buffered A tiles and the panel's tail (the rest of L0A), L0C for one `n`-column
/// strip of C over as many `m`-row Mmad tiles as fit (at least one). A launch divides each
/// region as its tiles need (narrower tiles give what they free to the panel and tail);
/// what its `InitBuffer` calls then receive are its own rows ([`buffers`]), checked per
/// launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Room {
    l1: usize,
    l0a: usize,
    l0c: usize,
}

impl Room {
    fn for_tiles(m: usize, n: usize, k: usize, chip: &Chip) -> Room {
        let (bf16, f32) = (DType::Bf16.size(), DType::F32.size());
        let pair =
            |elems: usize, mem: Mem| 2 * (elems * bf16).next_multiple_of(chip.alignment(mem));
        let b_tiles = 2 * k * n * bf16;
        let panel = chip.l1_bytes.saturating_sub(pair(k * n, Mem::L1)) / 32 * 32;
        let a_tiles = 2 * m * k * bf16;
        let tail = chip.l0a_bytes.saturating_sub(pair(m * k, Mem::L0a)) / bf16 * bf16;
        let strip_rows = (chip.l0c_bytes / (m * n * f32)).max(1) * m;
        Room {
            l1: panel + b_tiles,
            l0a: a_tiles + tail,
            l0c: strip_rows * n * f32,
        }
    }
}

/// Mmad tiles m × n × k (elements of the operand type).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tiles {
    pub m: usize,
    pub n: usize,
    pub k: usize,
}

impl Tiles {
    /// The stage's spec tiles `[m, n, k]` for `mm`: int8 keeps the byte sizes with twice
    /// the k values, or twice the n values when int8 B stored `[K, N]` needs 32-column
    /// squares; a tile wider than the product covers it whole.
    fn spec(mm: &Matmul, [m, mut n, mut k]: [usize; 3]) -> Tiles {
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

/// How the k slices of a split make C.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KSum {
    /// One slice: C written once.
    Whole,
    /// int8: the slices add into a zeroed C with atomic adds (exact in i32, any order).
    Atomic,
    /// bf16: each slice writes its partial product to `k_partials`, then
    /// `dsv4/k_slice_sum.h` adds them in slice order into C.
    Partials,
}

impl KSum {
    fn of(operands: Operands, slices: usize) -> KSum {
        match (slices, operands) {
            (1, _) => KSum::Whole,
            (_, Operands::I8) => KSum::Atomic,
            (_, Operands::Bf16) => KSum::Partials,
        }
    }

    /// GM bytes C costs at `slices` k slices of `c` bytes each: the slices' writes, and
    /// the zero fill or the partials read back and C written.
    fn c_bytes(self, c: usize, slices: usize) -> usize {
        match self {
            KSum::Whole => c,
            KSum::Atomic => c * slices + c,
            KSum::Partials => 2 * c * slices + c,
        }
    }
}

/// How a launch divides the work: rows into ranges, K into slices, N into ranges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Split {
    pub tiles: Tiles,
    pub range_m: usize,
    pub slice_k: usize,
    pub range_n: usize,
    /// Columns at the end of a k slice held in L0A instead of the L1 panel (0: none).
    pub tail_k: usize,
    /// How the k slices make C.
    pub sum: KSum,
}

impl Split {
    fn items(&self, mm: &Matmul, rows: usize) -> usize {
        mm.batch
            * rows.div_ceil(self.range_m)
            * mm.k.div_ceil(self.slice_k)
            * mm.n.div_ceil(self.range_n)
    }
}

/// GM bytes of the product at `rows` rows, its zero fill or slice sum included:
/// (moved, minimum).
pub fn traffic(mm: &Matmul, split: &Split, rows: usize) -> (usize, usize) {
    let (a, b, c) = sizes(mm, rows);
    let moved = a * mm.n.div_ceil(split.range_n)
        + b * rows.div_ceil(split.range_m)
        + split.sum.c_bytes(c, mm.k.div_ceil(split.slice_k));
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
            let sum = KSum::of(mm.operands, slices);
            let cost = b * rows.div_ceil(range_m) + sum.c_bytes(c, slices);
            let split = Split {
                tiles: t,
                range_m,
                slice_k,
                range_n: mm.n,
                tail_k: slice_k.saturating_sub(panel_k),
                sum,
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

/// Launches `mm` with args `[a, b, c]` (tensor or workspace names) on the stage's spec
/// tiles `[m, n, k]`, with its zero fill or slice sum when K is split. Returns the split,
/// or marks the stage missing, saying why, when its tiles or the product's shape cannot
/// run on this kernel (see [`unfit`]).
pub fn launch(
    b: &mut Builder,
    tiles: [usize; 3],
    mm: &Matmul,
    [a, w, c]: [&str; 3],
) -> Option<Split> {
    let (chip, cores) = (b.plan.chip, b.plan.chip.aic_cores);
    let spec = Tiles::spec(mm, tiles);
    if let Some(why) = unfit(mm, &spec) {
        b.missing(format!("{w}: {why}"));
        return None;
    }
    let [m, n, k] = tiles;
    let room = Room::for_tiles(m, n, k, chip);
    let Some(split) = plan_split(mm, &room, spec, cores) else {
        b.missing(format!(
            "{w}: no Mmad tile's C strip of 16 rows fits the stage's L0C rows"
        ));
        return None;
    };
    let cube_blocks = cores.min(split.items(mm, mm.max_rows)).max(1) as u32;
    let vector_blocks = b.plan.chip.aiv_cores.min(mm.batch * mm.max_rows / 8).max(1) as u32;
    match split.sum {
        KSum::Whole => b.launch(kernel(mm, &split), cube_blocks, &[a, w, c]),
        KSum::Atomic => {
            b.launch(zero(mm), vector_blocks, &[c]);
            b.launch(kernel(mm, &split), cube_blocks, &[a, w, c]);
        }
        KSum::Partials => {
            // The partials are dense: [slice][batch][row capacity][N].
            let parts = Matmul {
                ldc: mm.n,
                stride_c: mm.max_rows * mm.n,
                ..mm.clone()
            };
            let slices = mm.k.div_ceil(split.slice_k);
            let elems = slices * mm.batch * mm.max_rows * mm.n;
            if elems > u32::MAX as usize {
                b.missing(format!(
                    "{w}: its {slices} k slices' partials do not fit 32-bit offsets"
                ));
                return None;
            }
            b.scratch(K_PARTIALS, elems, DType::F32);
            b.launch(kernel(&parts, &split), cube_blocks, &[a, w, K_PARTIALS]);
            b.launch(slice_sum(mm, slices), vector_blocks, &[K_PARTIALS, c]);
        }
    }
    Some(split)
}

/// The workspace bf16 k slices write their partial products to: one per rank, sized for
/// the largest product (launches run one after another).
const K_PARTIALS: &str = "k_partials";

/// Why `mm` cannot run on this kernel with tiles `t`, if it cannot: it needs whole
/// fractals along K and N, C rows in whole 32-byte blocks, leading dimensions the ND2NZ
/// parameters (16 bits) can express - except B [K, N]'s, copied row by row past that -,
/// at most 65,535 runtime rows (the bound the split search is planned and tested for) and
/// offsets in 32 bits. (Halved tiles stay whole fractals.)
fn unfit(mm: &Matmul, t: &Tiles) -> Option<String> {
    let c0 = 32 / mm.operands.bytes();
    let u16_max = usize::from(u16::MAX);
    let extent = |stride: usize, rows: usize, ld: usize| (mm.batch - 1) * stride + rows * ld;
    let b_rows = match mm.b_layout {
        BLayout::Kn => mm.k,
        BLayout::Nk => mm.n,
    };
    super::unmet([
        (
            mm.k.is_multiple_of(c0),
            format!("K {} is not a multiple of {c0} (whole fractals)", mm.k),
        ),
        (
            t.k.is_multiple_of(c0),
            format!("tile k {} is not a multiple of {c0} (whole fractals)", t.k),
        ),
        (
            mm.n.is_multiple_of(16),
            format!("N {} is not a multiple of 16 (whole fractals)", mm.n),
        ),
        (
            t.n.is_multiple_of(16),
            format!("tile n {} is not a multiple of 16 (whole fractals)", t.n),
        ),
        (
            mm.ldc.is_multiple_of(8),
            format!("C row {} is not whole 32-byte blocks", mm.ldc),
        ),
        (
            mm.lda <= u16_max,
            format!(
                "A's leading dimension {} does not fit the 16-bit ND2NZ stride",
                mm.lda
            ),
        ),
        (
            mm.ldb <= u16_max || mm.b_layout == BLayout::Kn,
            format!(
                "B [N, K]'s leading dimension {} does not fit the 16-bit ND2NZ stride",
                mm.ldb
            ),
        ),
        (
            mm.max_rows <= u16_max,
            format!(
                "{} rows are more than the 65,535 a matmul's split is planned for",
                mm.max_rows
            ),
        ),
        (
            [
                extent(mm.stride_a, mm.max_rows, mm.lda),
                extent(mm.stride_b, b_rows, mm.ldb),
                extent(mm.stride_c, mm.max_rows, mm.ldc),
            ]
            .iter()
            .all(|&e| e <= u32::MAX as usize),
            "its operands do not fit 32-bit element offsets".into(),
        ),
    ])
}

fn kernel(mm: &Matmul, split: &Split) -> Kernel {
    let t = &split.tiles;
    let u = Value::u32;
    let layout = match mm.b_layout {
        BLayout::Kn => "kn",
        BLayout::Nk => "nk",
    };
    let mut name = format!(
        "matmul_{}_{layout}_n{}_k{}{}",
        mm.operands.name(),
        mm.n,
        mm.k,
        mm.rows.tag()
    );
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
    match split.sum {
        KSum::Whole => {}
        KSum::Atomic => name.push_str("_acc"),
        // the partials' layout depends on the row capacity
        KSum::Partials => name.push_str(&format!("_parts_r{}", mm.max_rows)),
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
            match split.sum {
                KSum::Whole => "",
                KSum::Atomic => ", k slices added atomically",
                KSum::Partials => ", k slices' partial products apart",
            }
        ),
        block: "matmul.h",
        class: "Matmul",
        cores: Cores::Aic,
        params: [
            ("INT8", Value::Bool(mm.operands == Operands::I8)),
            ("B_NK", Value::Bool(mm.b_layout == BLayout::Nk)),
        ]
        .into_iter()
        .chain(mm.rows.params())
        .chain([
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
            ("ATOMIC", Value::Bool(split.sum == KSum::Atomic)),
            (
                "SLICE_STRIDE_C",
                u(match split.sum {
                    KSum::Partials => mm.batch * mm.stride_c,
                    _ => 0,
                }),
            ),
        ])
        .collect(),
        args: vec!["a", "b", "c"],
        buffers: buffers(mm, split),
    }
}

/// `dsv4/matmul.h`'s buffers for one launch, in operand elements (bf16 or int8; C in f32
/// or i32): the item's A panel, its rows padded to whole fractals × the slice's columns
/// before the tail, in L1 beside the B tiles; the A tiles in L0A beside the tail (when
/// the slice has one); the B tiles in L0B; the C strip, the range's Mmad tiles of one
/// column tile, in L0C. Tiles rotate in pairs.
pub fn buffers(mm: &Matmul, split: &Split) -> Vec<Buffer> {
    use Mem::*;
    let (input, acc) = match mm.operands {
        Operands::Bf16 => (DType::Bf16, DType::F32),
        Operands::I8 => (DType::I8, DType::I32),
    };
    let t = &split.tiles;
    let rows = split.range_m.next_multiple_of(16);
    let strips = split.range_m.div_ceil(t.m);
    let panel_k = split.slice_k - split.tail_k;
    let mut v = vec![
        row("a_panel", L1, input, rows * panel_k, 1, None),
        row("b_l1", L1, input, t.k * t.n, 2, None),
        row("a_l0", L0a, input, t.m * t.k, 2, None),
    ];
    if split.tail_k > 0 {
        v.push(row("a_tail", L0a, input, rows * split.tail_k, 1, None));
    }
    v.extend([
        row("b_l0", L0b, input, t.k * t.n, 2, None),
        row("c_strip", L0c, acc, strips * t.m * t.n, 1, None),
    ]);
    v
}

/// C as the vector launches around a split-K matmul see it: the kernel name's suffix and
/// the parameters GROUP_ROWS, ROWS_PER_TOKEN, N, LD, BATCH, STRIDE.
fn c_rows(mm: &Matmul) -> (String, Vec<(&'static str, Value)>) {
    let u = Value::u32;
    let mut suffix = String::new();
    if mm.ldc != mm.n {
        suffix.push_str(&format!("_ld{}", mm.ldc));
    }
    if mm.batch > 1 {
        suffix.push_str(&format!("_b{}_s{}", mm.batch, mm.stride_c));
    }
    suffix.push_str(&mm.rows.tag());
    let mut params = mm.rows.params().to_vec();
    params.extend([
        ("N", u(mm.n)),
        ("LD", u(mm.ldc)),
        ("BATCH", u(mm.batch)),
        ("STRIDE", u(mm.stride_c)),
    ]);
    (suffix, params)
}

/// Elements per copy for `n`-wide rows and a UB tile of `tile` elements: whole rows when
/// they fit, else the largest piece of 8-element blocks that divides `n`.
fn row_tile(n: usize, tile: usize) -> usize {
    if n <= tile {
        tile / n * n
    } else {
        (8..=tile)
            .rev()
            .step_by(8)
            .find(|d| n.is_multiple_of(*d))
            .unwrap_or(8)
    }
}

/// `dsv4/zero_rows.h`: zeroes the runtime rows of C before an int8 split-K matmul adds
/// into it.
fn zero(mm: &Matmul) -> Kernel {
    let (suffix, mut params) = c_rows(mm);
    let tile = row_tile(mm.n, budget::ZERO_FILL_TILE);
    params.push(("TILE", Value::U32(tile as u32)));
    Kernel {
        name: format!("zero_rows_n{}{suffix}", mm.n),
        doc: format!(
            "zeroes the runtime rows of a [M, {}] 4-byte accumulator",
            mm.n
        ),
        block: "zero_rows.h",
        class: "ZeroRows",
        cores: Cores::Aiv,
        params,
        args: vec!["out"],
        buffers: zero_buffers(tile),
    }
}

/// `zero_rows.h`'s UB: one tile of `tile` zeroes, f32 or i32 (the same bits).
pub fn zero_buffers(tile: usize) -> Vec<Buffer> {
    vec![row("zero_tile", Mem::Ub, DType::F32, tile, 1, None)]
}

/// `dsv4/k_slice_sum.h`: adds the `slices` partial products of `mm` from `k_partials`
/// into its C, in slice order.
fn slice_sum(mm: &Matmul, slices: usize) -> Kernel {
    let (suffix, mut params) = c_rows(mm);
    let u = Value::u32;
    let tile = row_tile(mm.n, budget::K_SUM_TILE);
    params.extend([
        ("SLICES", u(slices)),
        ("ROWS", u(mm.max_rows)),
        ("TILE", u(tile)),
    ]);
    Kernel {
        name: format!("k_slice_sum_n{}_s{slices}_r{}{suffix}", mm.n, mm.max_rows),
        doc: format!(
            "C[M, {}] = the sum of {slices} k slices' partial products, in slice order",
            mm.n
        ),
        block: "k_slice_sum.h",
        class: "KSliceSum",
        cores: Cores::Aiv,
        params,
        args: vec!["parts", "out"],
        buffers: slice_sum_buffers(tile),
    }
}

/// `k_slice_sum.h`'s UB: partials in and sums out, tiles of `tile` f32 in pairs.
pub fn slice_sum_buffers(tile: usize) -> Vec<Buffer> {
    vec![
        row("parts_in", Mem::Ub, DType::F32, tile, 2, None),
        row("sums", Mem::Ub, DType::F32, tile, 2, None),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chip;

    /// The split of `mm` for a stage with spec tiles m × n × k on the 910B (24 cube cores).
    fn plan(mm: &Matmul, [m, n, k]: [usize; 3]) -> Split {
        let chip = chip::find("910b").unwrap();
        let room = Room::for_tiles(m, n, k, chip);
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
            (s.range_m, s.slice_k, s.tail_k, s.sum),
            (256, 1024, 0, KSum::Whole)
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
        assert_eq!((s.range_m, s.slice_k, s.sum), (512, 1024, KSum::Whole));
        assert!(s.tail_k > 0 && s.tail_k <= s.tiles.k);
        assert_eq!(s.items(&mm, 512), 24);
        assert!(ratio(&mm, &s) <= 1.25, "{}", ratio(&mm, &s));
    }

    #[test]
    fn flash_wkv_at_tp2_slices_k_in_four() {
        // 256 rows x 1024 bf16 k = 512 KiB per slice: four slices, their partial products
        // written and read back once each.
        let mm = Matmul::new(Operands::Bf16, BLayout::Kn, Rows::Tokens, 256, 512, 4096);
        let s = plan(&mm, QKV_TILES);
        assert_eq!((s.range_m, s.slice_k, s.sum), (256, 1024, KSum::Partials));
        assert!(s.tail_k > 0);
        let r = ratio(&mm, &s);
        assert!((1.61..1.62).contains(&r), "{r}");
    }

    #[test]
    fn flash_wq_a_at_tp2_stays_above_the_target() {
        // Four k slices at least (L1 + L0A < 3 x 683 KiB); C (1 MiB) twice per slice.
        let mm = Matmul::new(Operands::Bf16, BLayout::Kn, Rows::Tokens, 256, 1024, 4096);
        let s = plan(&mm, QKV_TILES);
        assert_eq!((s.range_m, s.slice_k, s.sum), (256, 1024, KSum::Partials));
        let r = ratio(&mm, &s);
        assert!((1.72..1.73).contains(&r), "{r}");
    }

    #[test]
    fn int8_slices_add_atomically() {
        // 512 rows x 4096 int8 k (2 MiB) needs k slices; i32 adds are exact in any order.
        let mm = Matmul::new(Operands::I8, BLayout::Nk, Rows::Tokens, 512, 1024, 4096);
        let s = plan(&mm, O_PROJ_TILES);
        assert!(s.slice_k < 4096);
        assert_eq!(s.sum, KSum::Atomic);
        let (moved, _) = traffic(&mm, &s, 512);
        let (a, b, c) = sizes(&mm, 512);
        let slices = 4096usize.div_ceil(s.slice_k);
        assert_eq!(
            moved,
            a * 1024usize.div_ceil(s.range_n) + b * 512usize.div_ceil(s.range_m) + c * (slices + 1),
            "each slice adds C once, the zero fill writes it once"
        );
    }

    #[test]
    fn flash_wo_b_keeps_a_group_whole() {
        let mm = Matmul {
            ldb: 4096,
            stride_b: 1024,
            ..flash_wo(Operands::I8, 4096, 1024)
        };
        let s = plan(&mm, O_PROJ_TILES);
        assert_eq!((s.range_m, s.slice_k, s.sum), (512, 1024, KSum::Whole));
        // a 512-row strip of C needs 64-column tiles in L0C
        assert_eq!(s.tiles.n, 64);
        assert!(s.tail_k > 0);
        assert_eq!(s.items(&mm, 512), 24);
        assert!(ratio(&mm, &s) <= 1.25, "{}", ratio(&mm, &s));
    }

    #[test]
    fn flash_wo_a_stays_near_its_bound() {
        // Two row ranges read B (8 MiB a group) twice; four 1024-k slices write and read
        // back C (2 MiB) each; C once more: 38 MiB against 14: 2.71x, see the module doc.
        let mm = flash_wo(Operands::Bf16, 1024, 4096);
        let s = plan(&mm, O_PROJ_TILES);
        assert_eq!((s.range_m, s.slice_k, s.sum), (256, 1024, KSum::Partials));
        assert!(
            (ratio(&mm, &s) - 38.0 / 14.0).abs() < 1e-9,
            "{}",
            ratio(&mm, &s)
        );
    }

    #[test]
    fn small_products_keep_the_spec_tiles_and_the_whole_panel() {
        let mm = Matmul::new(Operands::Bf16, BLayout::Nk, Rows::Tokens, 128, 512, 512);
        let s = plan(&mm, QKV_TILES);
        assert_eq!(
            (s.range_m, s.slice_k, s.tail_k, s.sum),
            (128, 512, 0, KSum::Whole)
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
    fn rows_per_token_read_the_shared_matrix_once_per_row_range() {
        // Pro's index queries at TP 1: 8 tokens x 64 heads of 128 against one 128 x 128
        // Hadamard matrix, as 512 rows: B once (a batch of 64 heads read it 64 times).
        let mm = Matmul::new(
            Operands::Bf16,
            BLayout::Kn,
            Rows::TokensTimes(64),
            8 * 64,
            128,
            128,
        );
        let s = plan(&mm, [16, 128, 128]);
        assert_eq!((s.range_m, s.slice_k, s.sum), (512, 128, KSum::Whole));
        assert!(ratio(&mm, &s) <= 1.25, "{}", ratio(&mm, &s));
        let k = kernel(&mm, &s);
        assert!(k.name.contains("_tokx64_"), "{}", k.name);
        for knob in [
            ("GROUP_ROWS", Value::Bool(false)),
            ("ROWS_PER_TOKEN", Value::U32(64)),
        ] {
            assert!(k.params.contains(&knob), "{knob:?}");
        }
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
