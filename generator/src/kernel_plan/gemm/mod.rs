//! The cube matmul the projection stages share (`dsv4/matmul.h`): C = A·B for `batch`
//! problems, bf16 × bf16 → f32 or int8 × int8 → i32 (or half, the exact sums ·
//! 2^-[`deq_shift`], for [`Matmul::c_half`]), A row-major, B stored `[K, N]` or `[N, K]`,
//! M a runtime row count ([`Rows`]: the rank's tokens, the TP group's, or r
//! rows per token). Stages describe a product with [`Matmul`] and call [`launch`]; this
//! module picks the Mmad tiles and the work split and names the kernel after them.
//!
//! The split is planned for the row capacity so that GM traffic stays near the minimum
//! (A, B and C each moved once). A work item keeps an A panel (a range of rows × a slice
//! of K) on chip and streams B once; so A is read once per N range, B once per row range
//! and C written once per K slice. The panel lives in L1 beside the B tiles in flight
//! (two, or three or four where a tile's transfer is shorter than the GM read latency it
//! must cover: FLASH's `x_normed` groups at 512 tokens, 8 KB tiles, CSA's 246 → 221 µs
//! modeled), and its last columns (at most one Mmad k step) may live in L0A beside the
//! double-buffered A tiles: a 512-row int8 panel of K = 1024 (512 KiB) fits only that
//! way. C accumulates in L0C, one strip of all the range's rows × one tile of columns,
//! so the rows per range are bounded by L0C / (4 · tile n). With the row capacity × K
//! of A larger than the panel, either the rows split (B read again per range) or K
//! splits (bf16 only: an int8 product keeps K whole, since a half C could not add k
//! slices exactly); the cheaper wins. K slices combine as [`KSum`] says: each writes its partial
//! product to the product's workspace `k_partials_<c>` and a
//! [`slice_sum`] launch adds them in slice order, since f32 atomics would make C depend
//! on the order the cores finish in (a run must repeat bit for bit). That costs the
//! partials once more (read back) plus C once. Or the slices of a row range × column
//! range chain on one core: the first writes C and the later ones add into it
//! atomically, in slice order (one core's Fixpipe, a barrier between slices), so the same
//! bits with neither workspace nor second launch; but an item then holds all of K, so
//! fewer items spread over the cores and A is read once per narrower N range. The
//! planner chains where the busiest core moves no more bytes that way (the slice sum's
//! reads counted on the vector cores: FLASH `wo_a`'s covering at TP 2 chains, at TP 1
//! it stays apart; launched alone, both give way to runs, below). The Mmad tiles are the
//! stage's spec tiles or, when that moves fewer bytes, some of m, n, k halved: narrower B
//! tiles leave more L1 to the panel, narrower A tiles more L0A to its tail, narrower
//! columns a taller strip.
//! Among tiles of equal traffic a deeper one (half the rows, twice the k) comes first:
//! a split reloads its A tiles into L0A for every column tile, one LoadData call per
//! 16-row fractal row, so deeper tiles halve the calls (FLASH `wo_b` at 512 tokens: MTE1
//! 253 → 221 µs modeled). The A tiles may then grow taller than the Mmad tile's rows and
//! shallower than its k (the B tile's Mmads take its k in steps): a tile of more 16-row
//! fractal rows than k blocks loads in one call per k block (its rows are adjacent in the
//! panel's column block), so the planner takes the shape of the same L0A bytes that loads
//! A in the fewest calls (FLASH `wq_b` at 512 tokens: 512 × 32 A tiles, 6912 → 2668 calls,
//! MTE1 143 → 70 µs, the launch 159 → 147 µs, HBM-bound).
//! N ranges then spread the work over the cube cores: a core's DMA, not HBM, bounds how
//! fast a product streams (hicann/ge's `Load` fit: 24 cores share at most 457 GB/s of the
//! 1.6 TB/s), so the count is the one whose busiest core moves the fewest bytes, each
//! range reading A once more (FLASH `wq_a` at 512 tokens: 8 items of 3.7 MB on 8 cores →
//! 24 of 1.6 MB on every core, 1.40× → 1.80× its minimum, 222 → 96 µs modeled).
//! A product launched alone (no group deals its items with other products') whose
//! vector cores take no share may instead deal its items in runs of consecutive ones per
//! core, the row range innermost, so a core's row ranges of one B slice follow each other
//! and all but the first read that B from L2, or the column range innermost, so a core's
//! items of one A panel share one copy of it ([`Split::deal`]). The planner then times the
//! coverings as the model would ([`split::with_runs`]: each core's GM loads, L2 hits and
//! stores at hicann/ge's per-core rates, all cores' GM traffic at the rate of that many
//! cores, B read ahead where `prefetch` will, at the row capacity plus at a few rows) and
//! takes the quickest when it beats the split above (FLASH `wo_a` at TP
//! 1: 64 items of 256 rows × 1024 k dealt back and forth left 16 cores three, each B
//! slice's first reader paying for GM; 72 items of 176 rows × 1376 k are three per core,
//! one B slice's row ranges in turn: wo_a and its quantisation 414 + 47 → 339 + 36 µs).
//! A group's parts are dealt in runs together where that times quicker, their N ranges
//! chosen for it ([`split::group_runs`], from `group::kernel`).
//!
//! The least traffic of a covering. C accumulates only in L0C and A, B reach the cube only
//! through L1, so an item holding R rows × S k-columns of A on chip (R·S·bytes ≤ L1 + L0A
//! ≈ 576 KiB) reads its S rows of B and, when K is split, writes its R rows of partial
//! products (f32) that the slice sum reads back: covering bf16 A costs B and partial
//! traffic of at least N·(8R + 2S) per R·S elements, least at S = 4R (R ≈ 272, S ≈ 1086),
//! plus A once and C once. For M × N × K = 512 × 1024 × 4096 (wo_a per group, wq_a at
//! TP 1) that is ≥ 2.58× the minimum (two row ranges × four 1024-k slices: 2.71×, before
//! the N ranges read A again), for 512 × 512 × 4096 (wkv at TP 1) ≥ 2.23× (2.33×).
//! 256 × 1024 × 4096 (wq_a at TP 2) holds at most 1152 k of its 256 rows, so four
//! slices: 1.73× (256 × 512 × 4096, wkv: 1.62×). Adding the slices atomically would save
//! the read-back (2.0×, 1.78×, 1.27×) but leave C to the order the cores finish in. (Keeping B on chip
//! and streaming A instead is no better for these shapes; keeping C in L0C for all of K
//! re-reads A or B per 32768-element C tile: ≥ 3×.)
//!
//! Usage (a stage module):
//! ```ignore
//! let mm = Matmul::new(Operands::Bf16, BLayout::Kn, Rows::Tokens, sh.local_t, n, k);
//! gemm::launch(b, [tile.m, tile.n, tile.k], &mm, ["x_normed", "wq_a", "q_latent"]);
//! ```

pub(crate) mod group;
mod kernels;
mod matmul;
pub(crate) mod overlap;
pub mod prefetch;
mod rate;
mod share;
mod split;

pub use kernels::{buffers, slice_sum_buffers};
pub use matmul::{BLayout, Matmul, Operands, Rows, deq_shift};
pub use overlap::Consumer;
pub use prefetch::prefetched;
pub use split::{Deal, KSum, Split, Tiles, traffic};

use abi::DType;

use super::{Builder, ByColumns, Kernel, MatmulOrigin};
use kernels::{kernel, shared, slice_sum};
use split::{Room, plan_split, unfit, with_runs};

/// Launches `mm` with args `[a, b, c]` (tensor or workspace names) on the stage's spec
/// tiles `[m, n, k]`, with its slice sum when K is split apart. Returns the split,
/// or marks the stage missing, saying why, when its tiles or the product's shape cannot
/// run on this kernel (see [`unfit`]).
pub fn launch(b: &mut Builder, tiles: [usize; 3], mm: &Matmul, args: [&str; 3]) -> Option<Split> {
    launch_with(b, tiles, mm, args, false)
}

/// As [`launch`], for a product whose A no other product reads (so the fusion pass has
/// nothing to group it with): the vector cores may take a share of its columns in the
/// same launch ([`share`]: B stored `[N, K]`, few rows, one K slice).
pub fn launch_alone(
    b: &mut Builder,
    tiles: [usize; 3],
    mm: &Matmul,
    args: [&str; 3],
) -> Option<Split> {
    launch_with(b, tiles, mm, args, true)
}

/// `mm`'s least-traffic split on the stage's spec tiles `[m, n, k]`, with the on-chip room
/// and the tiles it was planned in; or the stage marked missing, saying why (`w`: the
/// weights the message names).
fn planned(
    b: &mut Builder,
    tiles: [usize; 3],
    mm: &Matmul,
    w: &str,
) -> Option<(Split, Room, Tiles)> {
    let chip = b.plan.chip;
    let spec = Tiles::spec(mm, tiles);
    if let Some(why) = unfit(mm, &spec) {
        b.missing(format!("{w}: {why}"));
        return None;
    }
    let [m, n, k] = tiles;
    let room = Room::for_tiles(m, n, k, chip);
    let Some(split) = plan_split(mm, &room, spec, chip) else {
        b.missing(format!(
            "{w}: no Mmad tile's C strip of 16 rows fits the stage's L0C rows{}",
            match mm.operands {
                Operands::I8 => ", or no 16-row panel holds all of K on chip (int8: one k slice)",
                Operands::Bf16 => "",
            }
        ));
        return None;
    };
    Some((split, room, spec))
}

/// Launches `mm` ([a, b, c]) and its `consumer`, overlapped in column ranges where
/// `overlap::overlaps` says so, else the product alone ([`launch_alone`]) and the consumer
/// after it on all its columns; None where the product cannot run (the stage is then marked
/// missing, saying why).
pub fn launch_overlapped(
    b: &mut Builder,
    tiles: [usize; 3],
    mm: &Matmul,
    args: [&str; 3],
    consumer: &Consumer,
) -> Option<()> {
    let (plan, chip) = (b.plan, b.plan.chip);
    let (whole, room, spec) = planned(b, tiles, mm, args[1])?;
    let ranges: Option<Vec<(Kernel, u32)>> = column_ranges(mm.n, consumer.unit).map(|rs| {
        rs.into_iter()
            .map(|(first, cols)| (consumer.kernel)(first, cols))
            .collect()
    });
    let part = ranges
        .as_ref()
        .and_then(|_| overlap::range_split(mm, tiles, chip));
    let whole = with_runs(whole, mm, &room, spec, chip);
    let shared = share::plan(mm, tiles, &whole, chip).is_some();
    let blocks = ranges.as_ref().map_or(0, |rs| overlap::most_blocks(rs));
    let product = overlap::Product::of(
        (plan.fuse, shared),
        (mm, &whole),
        part.as_ref(),
        blocks,
        chip,
    );
    let (Some(ranges), Some((part, split))) =
        (ranges, part.filter(|_| overlap::overlaps(&product)))
    else {
        launch_alone(b, tiles, mm, args)?;
        let (k, blocks) = (consumer.kernel)(0, mm.n);
        b.launch_spreading(k, blocks, consumer.args);
        return Some(());
    };
    let launches = overlap::launches(&part, &split, &ranges, chip);
    let both: Vec<&str> = args.iter().chain(consumer.args).copied().collect();
    let last = launches.len() - 1;
    for (i, (kernel, blocks)) in launches.into_iter().enumerate() {
        match i {
            0 => b.launch(kernel, blocks, &args),
            _ if i == last => b.launch_spreading(kernel, blocks, consumer.args),
            _ => b.launch(kernel, blocks, &both),
        }
    }
    Some(())
}

/// C's `n` columns cut into `overlap::RANGES` ranges of whole `unit`s, as (first, columns);
/// None where they do not cut so.
fn column_ranges(n: usize, unit: usize) -> Option<Vec<(usize, usize)>> {
    let w = n / overlap::RANGES;
    overlap::cuts(n, unit).then(|| (0..overlap::RANGES).map(|r| (r * w, w)).collect())
}

/// `consumer`, which reads a product's C (`input`, `n` columns) in whole `unit`s of columns,
/// on each of C's column ranges ([`column_ranges`]), a range of `cols` columns on
/// `blocks(cols)` blocks: what a stage declares so the fusion pass may run it beside the
/// product's next range (`overlap::consumers`). None where C does not cut so.
pub fn by_columns(
    consumer: &Kernel,
    input: &'static str,
    n: usize,
    unit: usize,
    blocks: impl Fn(usize) -> u32,
) -> Option<ByColumns> {
    let ranges = column_ranges(n, unit)?;
    Some(ByColumns {
        kernel: consumer.name.clone(),
        input,
        ranges: (ranges.into_iter())
            .map(|(first, cols)| (consumer.on_columns(first, cols), blocks(cols)))
            .collect(),
    })
}

fn launch_with(
    b: &mut Builder,
    tiles: [usize; 3],
    mm: &Matmul,
    [a, w, c]: [&str; 3],
    alone: bool,
) -> Option<Split> {
    let (chip, cores) = (b.plan.chip, b.plan.chip.aic_cores);
    let mm = &Matmul {
        a_from_hbm: b.just_received(a),
        ..mm.clone()
    };
    let (split, room, spec) = planned(b, tiles, mm, w)?;
    // Alone, its items may run in runs per core (a group of such products is dealt anew,
    // `group::kernel`), or the vector cores may take a share of the columns.
    let split = match alone {
        true => with_runs(split, mm, &room, spec, chip),
        false => split,
    };
    if let Some((cube, cube_split, share)) = alone
        .then(|| share::plan(mm, tiles, &split, chip))
        .flatten()
    {
        b.launch(
            shared(mm, &cube, &cube_split, share),
            cores as u32,
            &[a, w, c],
        );
        // the cube's split: one k slice, C whole (no slice sum follows)
        return Some(cube_split);
    }
    let cube_blocks = cores.min(split.items(mm, mm.max_rows)).max(1) as u32;
    // A cube kernel the fusion pass may group: launched with its product's origin kept, so
    // the group can plan it again (`group::kernel`).
    let groupable = |b: &mut Builder, kernel: Kernel, out: &str| {
        b.matmul_origin(MatmulOrigin {
            kernel: kernel.name.clone(),
            max_rows: mm.max_rows,
            tiles,
            a_from_hbm: mm.a_from_hbm,
        });
        b.launch(kernel, cube_blocks, &[a, w, out]);
    };
    match split.sum {
        KSum::Whole | KSum::Chained => groupable(b, kernel(mm, &split), c),
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
            let partials = partials_of(c);
            b.scratch(partials, elems, DType::F32);
            groupable(b, kernel(&parts, &split), partials);
            let sum = slice_sum_after(mm, &split).expect("a partials split sums its slices");
            let vector_blocks = b.plan.chip.aiv_cores.min(mm.batch * mm.max_rows / 8).max(1) as u32;
            b.launch_spreading(sum, vector_blocks, &[partials, c]);
        }
    }
    Some(split)
}

/// The slice sum [`launch`] runs after `mm` with `split` (its k slices' partials
/// `[slice][batch][row capacity][N]` into C): what a consumer of C may offer to take as its
/// prologue. None where the slices need no sum.
pub fn slice_sum_after(mm: &Matmul, split: &Split) -> Option<Kernel> {
    (split.sum == KSum::Partials).then(|| slice_sum(mm, mm.k.div_ceil(split.slice_k)))
}

/// The workspace the bf16 k slices of the product writing `c` write their partial
/// products to: one per product, so the products of one A run as one group
/// ([`group`]) with every part's slice sum after it.
fn partials_of(c: &str) -> &'static str {
    super::intern(&format!("k_partials_{c}"))
}
