//! The Mmad tiles and the work split of a product: what fits on chip ([`Room`]), the tile
//! candidates, how K slices combine ([`KSum`]), the least-traffic split ([`plan_split`]),
//! the launch's modeled time ([`launch_cycles`]) and the runs it picks by it
//! ([`with_runs`], [`group_runs`]), and what this kernel cannot run ([`unfit`]).

use abi::DType;

use super::matmul::{BLayout, Matmul, Operands};
use super::prefetch;
use super::rate::Rate;
use crate::chip::{Chip, Mem};

/// The matmul's on-chip regions in bytes for a stage's spec tiles `m × n × k` of bf16 (an
/// int8 matmul keeps the byte sizes: its tiles hold twice the k values): L1 for the A panel
/// and the double-buffered B tiles (the panel takes the rest of L1), L0A for the
/// double-buffered A tiles and the panel's tail (the rest of L0A), L0C for one `n`-column
/// strip of C over as many `m`-row Mmad tiles as fit (at least one). A launch divides each
/// region as its tiles need (narrower tiles give what they free to the panel and tail);
/// what its `InitBuffer` calls then receive are its own rows ([`buffers`]), checked per
/// launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Room {
    l1: usize,
    l0a: usize,
    l0c: usize,
    /// The chip's L0C: a spec tile may ask for a strip larger than it (the budget check
    /// then refuses the stage), never a second one.
    chip_l0c: usize,
    /// The chip's L0A and L0B, which a deeper tile's must fit.
    chip_l0a: usize,
    l0b: usize,
    /// The cube cores, whose shared load rate times a B tile ([`Room::b_tiles_in_flight`]).
    cores: usize,
}

impl Room {
    /// B tiles of `bytes` the panel leaves L1 for: enough that loads back to back never
    /// wait for a buffer. Tile j + b reuses tile j's buffer once MTE1 has moved tile j to
    /// L0B, which starts a GM read latency after tile j's transfer, so b tiles cover
    /// (transfer + latency + MTE1) / transfer of them (hicann/ge `Load`, hicann/pypto
    /// `rGmLatency` and `L1_TO_L0B`); at least two, at most four. Small tiles need three:
    /// CSA's `x_normed` group at 512 tokens loaded 8 KB tiles every 0.66 µs for 0.45 µs of
    /// transfer in two.
    fn b_tiles_in_flight(&self, bytes: usize) -> usize {
        let transfer = bytes as f64 / Rate::load(self.cores) + Rate::LOAD_HEAD;
        let mte1 = bytes as f64 / Rate::L1_TO_L0B.0 + Rate::L1_TO_L0B.1;
        (((transfer + Rate::GM_LATENCY + mte1) / transfer).ceil() as usize).clamp(2, 4)
    }

    pub(super) fn for_tiles(m: usize, n: usize, k: usize, chip: &Chip) -> Room {
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
            chip_l0c: chip.l0c_bytes,
            chip_l0a: chip.l0a_bytes,
            l0b: chip.l0b_bytes,
            cores: chip.aic_cores,
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
    pub(super) fn spec(mm: &Matmul, [m, mut n, mut k]: [usize; 3]) -> Tiles {
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

    /// The narrowest column tile: a fractal, or a 32 × 32 square for int8 B stored [K, N].
    fn n_unit(mm: &Matmul) -> usize {
        if mm.operands == Operands::I8 && mm.b_layout == BLayout::Kn {
            32
        } else {
            16
        }
    }

    /// `self` and its variants with some of m, n, k halved once (where the half is still
    /// whole fractals), largest first.
    pub(super) fn candidates(self, mm: &Matmul, room: &Room) -> Vec<Tiles> {
        let n_unit = Tiles::n_unit(mm);
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
                    let t = Tiles { m, n, k };
                    all.extend(t.deeper(mm, room));
                    all.push(t);
                }
            }
        }
        // stable: among equal volumes, a deeper tile comes first, halving k before n, and n
        // before m
        all.sort_by_key(|t| std::cmp::Reverse(t.m * t.n * t.k));
        let mut unique: Vec<Tiles> = Vec::new();
        for t in all {
            if !unique.contains(&t) {
                unique.push(t);
            }
        }
        unique
    }

    /// Half the rows and twice the k: the same L0A bytes in half the LoadData calls (one
    /// per 16-row fractal row of an A tile), so the A tiles a split reloads for every
    /// column tile cost MTE1 half the call heads (30 cycles each, hicann/pypto). Only for a
    /// tile whose A tiles and C tile fit the chip (a spec asking for more is the budget
    /// check's to refuse as it asked) and whose deeper B tiles fit L0B; None otherwise or
    /// where the rows do not halve into whole fractals or K is shorter.
    fn deeper(self, mm: &Matmul, room: &Room) -> Option<Tiles> {
        let e = mm.operands.bytes();
        let fits = 2 * self.m * self.k * e <= room.chip_l0a
            && self.m * self.n * 4 <= room.chip_l0c
            && 4 * self.k * self.n * e <= room.l0b;
        (fits && self.m.is_multiple_of(32) && 2 * self.k <= mm.k).then_some(Tiles {
            m: self.m / 2,
            n: self.n,
            k: 2 * self.k,
        })
    }
}

/// How the k slices of a split make C.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KSum {
    /// One slice: C written once (int8 always: a half C could not add k slices exactly).
    Whole,
    /// bf16: each slice writes its partial product to the product's `k_partials_<c>`, then
    /// `dsv4/k_slice_sum.h` adds them in slice order into C.
    Partials,
    /// bf16: the slices of a row range × column range run on one core, in slice order;
    /// the first writes C, the later ones add into it atomically. The core's Fixpipe
    /// writes in program order, so C = ((P0 + P1) + P2) + … every run, with no workspace
    /// and no second launch, but a work item holds all of K (fewer items to spread).
    Chained,
}

impl KSum {
    pub(super) fn of(slices: usize) -> KSum {
        match slices {
            1 => KSum::Whole,
            _ => KSum::Partials,
        }
    }

    /// GM bytes C costs at `slices` k slices of `c` bytes each: the slices' writes, and
    /// the partials read back and C written.
    pub(super) fn c_bytes(self, c: usize, slices: usize) -> usize {
        match self {
            KSum::Whole => c,
            KSum::Partials => 2 * c * slices + c,
            KSum::Chained => c * slices,
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
    /// k of an A tile in L0A: the Mmad tile's k, or a part of it for taller A tiles
    /// (the B tile's Mmads then take its k in steps of this).
    pub a_k: usize,
    /// How the k slices make C.
    pub sum: KSum,
    /// B tiles in flight in L1 (2 to 4) and C strips in L0C (1 or 2): more where the
    /// panel and the strip leave room, so B loads overlap their GM latency and a strip's
    /// Fixpipe the next strip's Mmads.
    pub b_buffers: usize,
    pub c_buffers: usize,
    /// How the items are dealt over the cube cores.
    pub deal: Deal,
}

/// How a launch's items are dealt over the cube cores and in what order (`dsv4/matmul.h`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deal {
    /// Round by round, every other round backwards (`BackAndForth`), in the order
    /// (batch, row range, column range, k slice).
    BackAndForth,
    /// In runs of consecutive items per core (`Runs`), the row range innermost: a core's
    /// items that read the same B columns follow each other, so all but the first find
    /// them in L2.
    RowsInner,
    /// In runs, the column range innermost (`COLUMNS_INNER`): a core's items of one A
    /// panel follow each other and share one copy of it ([`Split::dealable`]). A group's
    /// parts so dealt take one A split and share its panels across parts: items (k slice,
    /// row range, part, column range).
    ColumnsInner,
}

impl Deal {
    /// Item `item`'s (batch, row range, column range, k slice item) in this order.
    fn place(self, item: usize, m_ranges: usize, n_ranges: usize, slices: usize) -> [usize; 4] {
        let mut rest = item;
        let mut take = |count: usize| {
            let at = rest % count;
            rest /= count;
            at
        };
        match self {
            Deal::BackAndForth => {
                let (slice, nr, mr) = (take(slices), take(n_ranges), take(m_ranges));
                [rest, mr, nr, slice]
            }
            Deal::RowsInner => {
                let (mr, slice, nr) = (take(m_ranges), take(slices), take(n_ranges));
                [rest, mr, nr, slice]
            }
            Deal::ColumnsInner => {
                let (nr, mr, slice) = (take(n_ranges), take(m_ranges), take(slices));
                [rest, mr, nr, slice]
            }
        }
    }
}

impl Split {
    /// Work items: (batch, row range, column range, k slice), a chained sum's slices
    /// one item.
    pub(super) fn items(&self, mm: &Matmul, rows: usize) -> usize {
        mm.batch
            * rows.div_ceil(self.range_m)
            * (mm.k.div_ceil(self.slice_k) / self.slices_per_item(mm))
            * mm.n.div_ceil(self.range_n)
    }

    /// GM bytes one full work item moves: per k slice its A panel, its B columns of the
    /// slice and its C strip (or partial product) once.
    pub(super) fn item_bytes(&self, mm: &Matmul) -> usize {
        let e = mm.operands.bytes();
        let slice = self.slice_k * (self.range_m + self.range_n) * e
            + self.range_m * self.range_n * mm.c_bytes();
        slice * self.slices_per_item(mm)
    }

    /// Twice the Mmad rows and A tiles of half the k: the same L0A bytes, each A tile
    /// loaded in fewer LoadData calls when its rows outnumber its k blocks ([`a_calls`]).
    /// Only where the half k is whole fractals, the rows stay within the range and the
    /// range's strip of the taller tiles fits L0C as often as before.
    fn taller(&self, mm: &Matmul, room: &Room) -> Option<Split> {
        let c0 = 32 / mm.operands.bytes();
        let t = Tiles {
            m: 2 * self.tiles.m,
            ..self.tiles
        };
        let strip = |t: &Tiles| self.range_m.div_ceil(t.m) * t.m * t.n * 4;
        let l0c = room.l0c.min(room.chip_l0c);
        let fits = self.a_k.is_multiple_of(2 * c0)
            && t.m <= self.range_m.next_multiple_of(16)
            && strip(&t) <= strip(&self.tiles).max(l0c / 2)
            && t.m * t.n * 4 <= room.chip_l0c;
        fits.then_some(Split {
            tiles: t,
            a_k: self.a_k / 2,
            ..*self
        })
    }

    /// Whether the kernel can deal the items so: columns innermost not with chained k
    /// slices (an item's slices are panels of their own).
    fn dealable(&self) -> bool {
        self.deal != Deal::ColumnsInner || self.sum != KSum::Chained
    }

    fn slices_per_item(&self, mm: &Matmul) -> usize {
        match self.sum {
            KSum::Chained => mm.k.div_ceil(self.slice_k),
            _ => 1,
        }
    }

    /// Modeled cycles of the product's launch at `rows` rows ([`launch_cycles`]).
    pub(super) fn cycles(&self, mm: &Matmul, rows: usize, chip: &Chip) -> f64 {
        launch_cycles(&[(mm, *self)], rows, chip)
    }

    /// As [`Split::cycles`], the cube side of a mixed launch whose vector cores run a kernel
    /// of their own beside (`overlap`): nothing read ahead, every core of the launch loading.
    pub(super) fn beside_cycles(&self, mm: &Matmul, rows: usize, chip: &Chip) -> f64 {
        cube_cycles(&[(mm, *self)], rows, chip, true)
    }

    /// Bytes the busiest of `chip`'s cores moves: the cube cores' items dealt evenly,
    /// and a slice sum's partials read and C written, spread over the vector cores.
    fn busiest_bytes(&self, mm: &Matmul, chip: &Chip) -> usize {
        let cube = self.items(mm, mm.max_rows).div_ceil(chip.aic_cores) * self.item_bytes(mm);
        let sum = match self.sum {
            KSum::Partials => {
                let (_, _, c) = sizes(mm, mm.max_rows);
                (mm.k.div_ceil(self.slice_k) + 1) * c / chip.aiv_cores
            }
            _ => 0,
        };
        cube + sum
    }
}

/// Modeled cycles of one launch of `parts` (one product, or a group's products of one A
/// whose items are one sequence, dealt alike) at `rows` rows: the busiest cube core's
/// items as the splits deal them (A from L2, where the launch before that wrote it left it,
/// or a panel no core read yet from GM where a collective received it; once per run of
/// one panel's items where the column range is innermost;
/// the B columns the core has not read yet from GM, the ones it has from L2; C or its
/// partials stored; loads and stores overlapping; [`Rate`]'s fits), or the time all cores'
/// GM loads and stores take at the fit's rate for that many cores, or all their GM bytes at
/// the peak, where longer; then the slice sums' on the vector cores (the partials read
/// from L2, C stored). Where the fusion pass will have the launch's B read ahead
/// (`gemm::prefetch`: items of one panel's columns, strips enough), the block's vector
/// cores load the B its cube core has not read yet from GM, and the cube finds it in L2.
pub(super) fn launch_cycles(parts: &[(&Matmul, Split)], rows: usize, chip: &Chip) -> f64 {
    cube_cycles(parts, rows, chip, false)
}

fn cube_cycles(parts: &[(&Matmul, Split)], rows: usize, chip: &Chip, beside: bool) -> f64 {
    let runs = parts[0].1.deal != Deal::BackAndForth;
    let count = |rows: usize| -> usize { parts.iter().map(|(mm, s)| s.items(mm, rows)).sum() };
    let items = count(rows);
    // (a core is a bit of a B slice's readers)
    let blocks = chip.aic_cores.min(count(parts[0].0.max_rows)).clamp(1, 64);
    // the block whose run holds item g (runs [b·items/blocks, (b+1)·items/blocks)), or the
    // back-and-forth deal's
    let dealt = |g: usize| match runs {
        true => ((g + 1) * blocks - 1) / items,
        false => {
            let (round, at) = (g / blocks, g % blocks);
            if round % 2 == 0 { at } else { blocks - 1 - at }
        }
    };
    // per core its loads and stores; per B slice (a part's batch, N range and k slice) the
    // cores that read it
    let mut cores = vec![CoreLoad::default(); blocks];
    // per core the (part, batch, row range, slice) of the A panel it holds (a group
    // sharing its panels: part 0 for all)
    let mut held = vec![None; blocks];
    // the A panels some core read (A received from HBM: the first read of each loads it)
    let mut panels_read = std::collections::HashSet::new();
    let shared = shares_panels(parts);
    let mut first_slice = Vec::new();
    let mut read_by = Vec::new();
    for (mm, split) in parts {
        first_slice.push(read_by.len());
        let slices = mm.k.div_ceil(split.slice_k);
        read_by.resize(
            read_by.len() + mm.batch * mm.n.div_ceil(split.range_n) * slices,
            0u64,
        );
    }
    for (g, (part, [batch, mr, nr, slice])) in dealt_items(parts, rows).into_iter().enumerate() {
        let (mm, split) = &parts[part];
        let e = mm.operands.bytes();
        let n_ranges = mm.n.div_ceil(split.range_n);
        let slices = mm.k.div_ceil(split.slice_k);
        let per_item = split.slices_per_item(mm);
        let m_len = split.range_m.min(rows - mr * split.range_m);
        let n_len = split.range_n.min(mm.n - nr * split.range_n);
        let k_len = match split.sum {
            KSum::Chained => mm.k,
            _ => split.slice_k.min(mm.k - slice * split.slice_k),
        };
        let core = dealt(g);
        let c = &mut cores[core];
        c.items += 1.0;
        let panel = Some((if shared { 0 } else { part }, batch, mr, slice));
        if split.deal != Deal::ColumnsInner || held[core] != panel {
            let a = (m_len * k_len * e) as f64;
            match mm.a_from_hbm && panels_read.insert(panel) {
                true => c.a_gm += a,
                false => c.l2 += a,
            }
        }
        held[core] = panel;
        let b = (n_len * k_len * e) as f64;
        let readers = &mut read_by[first_slice[part] + (batch * n_ranges + nr) * slices + slice];
        if *readers & (1 << core) == 0 {
            c.b_gm += b;
            *readers |= 1 << core;
        } else {
            c.l2 += b;
        }
        c.stored += (m_len * n_len * mm.c_bytes() * per_item) as f64;
    }
    let mut sum = 0.0;
    for (mm, split) in parts {
        if split.sum == KSum::Partials {
            let slices = mm.k.div_ceil(split.slice_k);
            let aiv = chip.aiv_cores.min(mm.batch * rows / 8).max(1);
            let c = (mm.batch * rows * mm.n * 4 / aiv) as f64;
            let core = slices as f64 * c / Rate::l2() + c / Rate::store(aiv);
            sum += core.max((slices + 1) as f64 * c * aiv as f64 / Rate::peak(chip));
        }
    }
    let strips: usize = (parts.iter())
        .map(|(mm, s)| mm.batch * mm.n.div_ceil(s.tiles.n) * mm.k.div_ceil(s.slice_k))
        .sum();
    let ahead = !beside
        && parts.iter().all(|(_, s)| s.deal != Deal::ColumnsInner)
        && prefetch::enough_strips(strips, blocks);
    // the launch's cores: with B read ahead or a vector kernel beside, a block's vector
    // cores too
    let n = if ahead || beside { 3 * blocks } else { blocks };
    // with B read ahead, the cube reads a strip from L2 after its readers have loaded it:
    // the last strip's read follows the readers' end
    let last_strip = (parts.iter())
        .map(|(mm, s)| (s.tiles.n.min(mm.n) * s.slice_k.min(mm.k) * mm.operands.bytes()) as f64)
        .fold(0.0, f64::max)
        / Rate::l2();
    let busiest = cores
        .iter()
        .map(|c| {
            let (from_gm, from_l2, readers) = match ahead {
                true => (
                    c.a_gm,
                    c.b_gm + c.l2,
                    c.b_gm / (2.0 * Rate::load(n)) + last_strip,
                ),
                false => (c.a_gm + c.b_gm, c.l2, 0.0),
            };
            let loads = from_gm / Rate::load(n) + from_l2 / Rate::l2();
            (c.items * Rate::GM_LATENCY + loads.max(c.stored / Rate::store(n))).max(readers)
        })
        .fold(0.0, f64::max);
    // the cores' GM loads and stores together at most what the fit gives all of them, and
    // all their GM bytes (L2 hits, and B read twice ahead, too) at most the peak
    let total = |f: fn(&CoreLoad) -> f64| cores.iter().map(f).sum::<f64>();
    let (gm, b_gm) = (total(|c| c.a_gm + c.b_gm), total(|c| c.b_gm));
    let (l2, stored) = (total(|c| c.l2), total(|c| c.stored));
    let all = gm + if ahead { b_gm } else { 0.0 } + l2 + stored;
    (busiest.max((gm + stored) / (n as f64 * Rate::load(n)))).max(all / Rate::peak(chip)) + sum
}

/// One cube core's share of a launch ([`launch_cycles`]): bytes of A and of B loaded from
/// GM, read as L2 hits and stored, and its items.
#[derive(Debug, Default, Clone, Copy)]
struct CoreLoad {
    a_gm: f64,
    b_gm: f64,
    l2: f64,
    stored: f64,
    items: f64,
}

/// Whether `parts` are a group sharing its A panels: dealt with the column ranges
/// innermost (`dsv4/matmul_group.h` `Matmul::RunPanels`).
fn shares_panels(parts: &[(&Matmul, Split)]) -> bool {
    parts.len() > 1 && parts[0].1.deal == Deal::ColumnsInner
}

/// A launch's items at `rows` rows in the order its blocks are dealt them, each as (part,
/// [batch, row range, column range, k slice item]): part by part, each in its deal's
/// order, or for a group sharing its A panels (its parts dealt with the column ranges
/// innermost, one A split) panel by panel, each panel's parts in turn
/// (`dsv4/matmul_group.h`).
fn dealt_items(parts: &[(&Matmul, Split)], rows: usize) -> Vec<(usize, [usize; 4])> {
    let ranges = |(mm, s): &(&Matmul, Split)| {
        let slices = mm.k.div_ceil(s.slice_k) / s.slices_per_item(mm);
        (rows.div_ceil(s.range_m), mm.n.div_ceil(s.range_n), slices)
    };
    if shares_panels(parts) {
        let (m_ranges, _, slices) = ranges(&parts[0]);
        let mut items = Vec::new();
        for slice in 0..slices {
            for mr in 0..m_ranges {
                for (part, p) in parts.iter().enumerate() {
                    items.extend((0..ranges(p).1).map(|nr| (part, [0, mr, nr, slice])));
                }
            }
        }
        return items;
    }
    let mut items = Vec::new();
    for (part, p) in parts.iter().enumerate() {
        let (m_ranges, n_ranges, slices) = ranges(p);
        let placed = (0..p.1.items(p.0, rows))
            .map(|i| (part, p.1.deal.place(i, m_ranges, n_ranges, slices)));
        items.extend(placed);
    }
    items
}

/// `splits` (a group's, of `products` in the order they are dealt) dealt in runs where
/// the model times the launch quicker that way at the row capacity plus at a few rows (a
/// decode step runs at either) and no slower at a few rows ([`launch_cycles`]): a core's
/// row ranges of one part's B slice then follow each other, or (the quicker, tried with
/// each part's A split for all: [`sharing_panels`]) its column ranges of one A panel, of
/// every part. Runs take
/// consecutive items, so the parts' N ranges are chosen together: every combination of
/// distinct range widths where that is little work (HCA's four `x_normed` projections:
/// 7 × 5 × 5 × 5), else the one width for all parts that times the launch quickest (items
/// of like sizes), then each part in turn the width that does given the others'.
pub(super) fn group_runs(products: &[Matmul], splits: &[Split], chip: &Chip) -> Vec<Split> {
    let dealt = |deal| -> Vec<Split> { splits.iter().map(|s| Split { deal, ..*s }).collect() };
    let cycles = |splits: &[Split], rows: usize| {
        let parts: Vec<(&Matmul, Split)> = products.iter().zip(splits.iter().copied()).collect();
        launch_cycles(&parts, rows, chip)
    };
    let apart = dealt(Deal::BackAndForth);
    let (rows, few) = (products[0].max_rows, products[0].max_rows.min(16));
    let few_apart = cycles(&apart, few);
    let mut candidates = vec![dealt(Deal::RowsInner)];
    for a in splits {
        let sharing = sharing_panels(products, splits, a);
        if sharing.as_ref().is_some_and(|s| !candidates.contains(s)) {
            candidates.extend(sharing);
        }
    }
    let quickest = candidates
        .into_iter()
        .filter(|runs| runs.iter().all(Split::dealable))
        .map(|runs| runs_in(products, runs, few_apart, &cycles))
        .min_by(|a, b| a.0.total_cmp(&b.0));
    match quickest {
        Some((least, runs))
            if least < cycles(&apart, rows) + few_apart && cycles(&runs, few) <= few_apart =>
        {
            runs
        }
        _ => apart,
    }
}

/// `splits` (of `products`, a group's) dealt with the column ranges innermost and all
/// sharing one A split, `a`'s (tiles, row ranges, tail, buffers), each part its own column
/// ranges in whole tiles: the group's items of one A panel, of any part, share one copy of
/// it (`dsv4/matmul_group.h`). None where a part cannot take `a`'s tiles or has k slices
/// of its own: a part's slices are its own launch's, so its slice sum after the group and
/// the bits of its C are those of the part launched alone; or where the parts write C
/// differently (half or int32: one panel's Fixpipe writes all their columns).
fn sharing_panels(products: &[Matmul], splits: &[Split], a: &Split) -> Option<Vec<Split>> {
    let t = a.tiles;
    (products.iter().zip(splits))
        .map(|(mm, s)| {
            let fits = unfit(mm, &t).is_none()
                && t.n.is_multiple_of(Tiles::n_unit(mm))
                && (s.slice_k, s.sum) == (a.slice_k, a.sum)
                && mm.c_shift() == products[0].c_shift();
            fits.then(|| Split {
                range_n: s.range_n.min(mm.n).next_multiple_of(t.n),
                deal: Deal::ColumnsInner,
                ..*a
            })
        })
        .collect()
}

/// The N ranges of `runs` (a group's splits, dealt in runs in one order) the model times
/// the launch quickest with at the row capacity plus at a few rows, no slower than
/// `few_apart` at a few rows, and that time.
fn runs_in(
    products: &[Matmul],
    mut runs: Vec<Split>,
    few_apart: f64,
    cycles: &dyn Fn(&[Split], usize) -> f64,
) -> (f64, Vec<Split>) {
    let (rows, few) = (products[0].max_rows, products[0].max_rows.min(16));
    let mut least = cycles(&runs, rows) + cycles(&runs, few);
    let work = std::cell::Cell::new(0);
    let consider = |tried: Vec<Split>, least: &mut f64, runs: &mut Vec<Split>| -> bool {
        let items: usize = (products.iter().zip(&tried))
            .map(|(m, s)| s.items(m, rows))
            .sum();
        work.set(work.get() + items);
        if work.get() > SEARCH_WORK {
            return false;
        }
        let few_c = cycles(&tried, few);
        let c = cycles(&tried, rows) + few_c;
        let better = c < *least && few_c <= few_apart;
        if better {
            (*least, *runs) = (c, tried);
        }
        better
    };
    // each part's distinct range widths, in column tiles (t tiles in r ranges: ⌈t / r⌉)
    let widths: Vec<Vec<usize>> = (products.iter().zip(&runs))
        .map(|(mm, s)| {
            let t = mm.n.div_ceil(s.tiles.n);
            let mut w: Vec<usize> = (1..=t).map(|r| t.div_ceil(r)).collect();
            w.dedup();
            w
        })
        .collect();
    let combos: usize = widths.iter().map(Vec::len).product();
    let most_items: usize = (products.iter().zip(&runs))
        .map(|(mm, s)| {
            let narrowest = Split {
                range_n: s.tiles.n,
                ..*s
            };
            narrowest.items(mm, rows)
        })
        .sum();
    if combos.saturating_mul(most_items) <= SEARCH_WORK {
        let base = runs.clone();
        for code in 0..combos {
            let mut rest = code;
            let mut tried = base.clone();
            for (s, w) in tried.iter_mut().zip(&widths) {
                s.range_n = w[rest % w.len()] * s.tiles.n;
                rest /= w.len();
            }
            consider(tried, &mut least, &mut runs);
        }
    } else {
        // else every part in N ranges of one width (items of like sizes: the parts share
        // K), then each part in turn, passes repeated while one helps
        let widest = products.iter().map(|mm| mm.n).max().unwrap_or(0);
        for width in (16..=widest).step_by(16) {
            let tried: Vec<Split> = (products.iter().zip(&runs))
                .map(|(mm, s)| Split {
                    range_n: width.min(mm.n).next_multiple_of(s.tiles.n),
                    ..*s
                })
                .collect();
            consider(tried, &mut least, &mut runs);
        }
        loop {
            let mut better = false;
            for (i, w) in widths.iter().enumerate() {
                for &tiles in w {
                    let mut tried = runs.clone();
                    tried[i].range_n = tiles * tried[i].tiles.n;
                    better |= consider(tried, &mut least, &mut runs);
                }
            }
            if !better {
                break;
            }
        }
    }
    (least, runs)
}

/// Items one search for runs may walk timing its candidates ([`launch_cycles`] walks every
/// item): past it (a spec far beyond the FLASH and Pro dims) the search keeps the quickest
/// found so far.
const SEARCH_WORK: usize = 1 << 20;

/// `split` (dealt back and forth), or the covering dealt in runs that the model times
/// shorter at the row capacity plus at a few rows ([`Split::cycles`]: a decode step runs at
/// either) and no longer at a few rows: over the
/// spec's tile candidates, up to 8 row ranges, the fewest k slices that fit and up to 4
/// more (apart), and 1 to 4 column ranges, each with the row ranges innermost or the column
/// ranges (not with chained slices). Runs let the row ranges of one B slice share a core,
/// which reads that B from GM once and from L2 after, or the column ranges of one A panel
/// share one copy of it; more slices or
/// column ranges even out the items per core (FLASH `wo_a` at TP 1: 64 items of one
/// 1024-k slice on 24 cores left 16 cores three and their B loads to whichever core came
/// first).
pub(super) fn with_runs(split: Split, mm: &Matmul, room: &Room, spec: Tiles, chip: &Chip) -> Split {
    let (rows, few) = (mm.max_rows, mm.max_rows.min(16));
    let few_apart = split.cycles(mm, few, chip);
    let mut best = (split.cycles(mm, rows, chip) + few_apart, split);
    let mut work = 0;
    for t in spec.candidates(mm, room) {
        for parts in 1..=rows.div_ceil(16).min(8) {
            let Some(least) = cover(mm, room, t, parts, None) else {
                continue;
            };
            let fewest = mm.k.div_ceil(least.slice_k);
            for slices in fewest..=fewest + 4 {
                let Some(covering) = cover(mm, room, t, parts, Some(slices)) else {
                    continue;
                };
                let shape = shaped(
                    Split {
                        deal: Deal::RowsInner,
                        ..covering
                    },
                    mm,
                    room,
                );
                for n_parts in 1..=mm.n.div_ceil(shape.tiles.n).min(4) {
                    let rows_inner = in_ranges(shape, mm, room, n_parts);
                    let columns_inner = Split {
                        deal: Deal::ColumnsInner,
                        ..rows_inner
                    };
                    for s in [rows_inner, columns_inner]
                        .into_iter()
                        .filter(Split::dealable)
                    {
                        work += s.items(mm, rows);
                        if work > SEARCH_WORK {
                            return best.1;
                        }
                        let few_c = s.cycles(mm, few, chip);
                        let c = s.cycles(mm, rows, chip) + few_c;
                        if c < best.0 && few_c <= few_apart {
                            best = (c, s);
                        }
                    }
                }
            }
        }
    }
    best.1
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
pub(super) fn sizes(mm: &Matmul, rows: usize) -> (usize, usize, usize) {
    let e = mm.operands.bytes();
    (
        mm.batch * rows * mm.k * e,
        mm.batch * mm.k * mm.n * e,
        mm.batch * rows * mm.n * mm.c_bytes(),
    )
}

/// The least-traffic split at the row capacity on `chip`'s cube cores, with the largest
/// tiles among the equally good; None if no tile's C strip holds 16 rows (or, int8, no
/// panel of 16 rows holds all of K on chip). bf16 k slices
/// chain on one core where the busiest core then moves no more bytes than with a slice
/// sum (its partials counted on the vector cores): one launch and no workspace.
pub(super) fn plan_split(mm: &Matmul, room: &Room, spec: Tiles, chip: &Chip) -> Option<Split> {
    let split = plan_covering(mm, room, spec)?;
    let apart = spread(split, mm, room, chip);
    if split.sum != KSum::Partials {
        return Some(apart);
    }
    let chained = spread(
        Split {
            sum: KSum::Chained,
            ..split
        },
        mm,
        room,
        chip,
    );
    Some(
        if chained.busiest_bytes(mm, chip) <= apart.busiest_bytes(mm, chip) {
            chained
        } else {
            apart
        },
    )
}

/// The least-traffic covering of A's rows and K by on-chip panels, with the largest tiles
/// among the equally good; one column range for now.
fn plan_covering(mm: &Matmul, room: &Room, spec: Tiles) -> Option<Split> {
    let rows = mm.max_rows;
    let (_, b, c) = sizes(mm, rows);
    let mut best: Option<(usize, Split)> = None;
    for t in spec.candidates(mm, room) {
        for parts in 1..=rows.div_ceil(16) {
            let Some(split) = cover(mm, room, t, parts, None) else {
                continue;
            };
            let slices = mm.k.div_ceil(split.slice_k);
            let cost = b * rows.div_ceil(split.range_m) + split.sum.c_bytes(c, slices);
            if best.is_none_or(|(least, _)| cost < least) {
                best = Some((cost, split));
            }
        }
    }
    best.map(|(_, split)| shaped(split, mm, room))
}

/// Tiles `t` over the row capacity in `parts` ranges and K in `slices` slices (None: the
/// fewest the panel, beside the B tiles in L1, and its tail in L0A hold), one column
/// range, the slices apart when more than one; None where a range's C strip does not fit
/// L0C, the panel holds no k block, int8 would need slices, or K does not cut into
/// `slices`.
fn cover(mm: &Matmul, room: &Room, t: Tiles, parts: usize, slices: Option<usize>) -> Option<Split> {
    let e = mm.operands.bytes();
    let c0 = 32 / e;
    let strip_rows = room.l0c / (t.m * t.n * 4) * t.m;
    let range_m = mm.max_rows.div_ceil(parts).next_multiple_of(16);
    let b_tile = t.k * t.n * e;
    let panel_bytes = room
        .l1
        .saturating_sub(room.b_tiles_in_flight(b_tile) * b_tile);
    let tail_bytes = room.l0a.saturating_sub(2 * t.m * t.k * e);
    let panel_k = panel_bytes / (range_m * e) / c0 * c0;
    if range_m > strip_rows || panel_k == 0 {
        return None;
    }
    // One Mmad k step at most, and no more than the panel's buffer can stage.
    let tail_k = (tail_bytes / (range_m * e) / c0 * c0).min(t.k).min(panel_k);
    let fit = panel_k + tail_k;
    let slices = slices.unwrap_or(mm.k.div_ceil(fit));
    if slices > 1 && mm.operands == Operands::I8 {
        return None;
    }
    // Even slices, in whole k tiles where that still fits: no more room than needed.
    let even = mm.k.div_ceil(slices);
    let slice_k = [even.next_multiple_of(t.k), even.next_multiple_of(c0)]
        .into_iter()
        .find(|&k| k <= fit)?
        .min(mm.k);
    (mm.k.div_ceil(slice_k) == slices).then_some(Split {
        tiles: t,
        range_m,
        slice_k,
        range_n: mm.n,
        tail_k: slice_k.saturating_sub(panel_k),
        a_k: t.k,
        sum: KSum::of(slices),
        b_buffers: 2,
        c_buffers: 1,
        deal: Deal::BackAndForth,
    })
}

/// `split`'s tiles shaped for its ranges: two C strips where narrower columns make room,
/// deeper tiles where that frees L1, then the A tiles that load in the fewest calls.
fn shaped(mut split: Split, mm: &Matmul, room: &Room) -> Split {
    let e = mm.operands.bytes();
    // Two C strips let a strip's Fixpipe run under the next strip's Mmads: narrower column
    // tiles where one strip of the range's rows fills L0C (the traffic stays the same; a
    // strip L0C cannot hold at all is the budget check's to refuse).
    let l0c = room.l0c.min(room.chip_l0c);
    let strip = |t: &Tiles| split.range_m.div_ceil(t.m) * t.m * t.n * 4;
    while strip(&split.tiles) <= l0c
        && 2 * strip(&split.tiles) > l0c
        && split.tiles.n.is_multiple_of(2 * Tiles::n_unit(mm))
    {
        split.tiles.n /= 2;
    }
    // Narrower columns leave L0B and L1 room for deeper tiles of the same split.
    let panel_bytes = split.range_m.next_multiple_of(16) * (split.slice_k - split.tail_k) * e;
    if let Some(t) = split.tiles.deeper(mm, room)
        && panel_bytes + 2 * t.k * t.n * e <= room.l1
    {
        split.tiles = t;
    }
    split.a_k = split.tiles.k;
    // Or taller A tiles (twice the rows, half the k: the same L0A bytes; the B tiles stay,
    // their Mmads take k in steps), as often as the C strip and the range allow: the ones
    // loading A in the fewest LoadData calls.
    let taller = std::iter::successors(Some(split), |s| s.taller(mm, room));
    taller
        .min_by_key(|s| a_calls(s, mm))
        .expect("the split itself")
}

/// LoadData calls that bring one k slice of a row range's A panel to L0A once, tile by
/// tile, as `dsv4/matmul.h` ToL0A issues them: per tile one call per 16-row fractal row
/// or, for a tile taller than deep, one per k block (at most 255 fractal rows a call).
/// The call head (30 cycles, hicann/pypto) is what a split reloading its A tiles for
/// every column tile pays most for (FLASH `wq_b` at 512 tokens: 6912 calls, 112 of 143 µs
/// of MTE1).
fn a_calls(split: &Split, mm: &Matmul) -> usize {
    let c0 = 32 / mm.operands.bytes();
    let m = split.tiles.m;
    let (m_blocks, k_blocks) = (m / 16, split.a_k / c0);
    let per_tile = if m_blocks > k_blocks && m_blocks <= 255 {
        k_blocks
    } else {
        m_blocks
    };
    split.range_m.div_ceil(m) * split.slice_k.div_ceil(split.a_k) * per_tile
}

/// `split` (one column range) with N ranges over `chip`'s cube cores, and the L1 and L0C
/// buffers its panel and strip leave. A core's DMA, not HBM, bounds a stream (hicann/ge's
/// Load fit: 24 cores together move at most 457 GB/s of the 1.6 TB/s), so the range count
/// is the one whose busiest core moves the fewest bytes, though each range reads A once
/// more; the fewest ranges among equals.
fn spread(split: Split, mm: &Matmul, room: &Room, chip: &Chip) -> Split {
    let n_tiles = mm.n.div_ceil(split.tiles.n);
    let parts = (1..=n_tiles)
        .min_by_key(|&p| (in_ranges(split, mm, room, p).busiest_bytes(mm, chip), p))
        .expect("a product has a column tile");
    in_ranges(split, mm, room, parts)
}

/// `split` with N in `parts` ranges of whole column tiles, and the L1 and L0C buffers its
/// panel and strip leave.
fn in_ranges(mut split: Split, mm: &Matmul, room: &Room, parts: usize) -> Split {
    let e = mm.operands.bytes();
    let t = split.tiles;
    split.range_n = mm.n.div_ceil(t.n).div_ceil(parts) * t.n;
    let panel = split.range_m.next_multiple_of(16) * (split.slice_k - split.tail_k) * e;
    split.b_buffers = (room.l1.saturating_sub(panel) / (t.k * t.n * e)).clamp(2, 4);
    let l0c = room.l0c.min(room.chip_l0c);
    let strip = split.range_m.div_ceil(t.m) * t.m * t.n * 4;
    split.c_buffers = if 2 * strip <= l0c { 2 } else { 1 };
    split
}

/// The N ranges of a group's parts (products of one A, each with its own covering and
/// spread, in the order the group deals them) chosen together: `dsv4/matmul_group.h`
/// deals all the parts' items over the cube cores back and forth, so a part spread for a
/// launch of its own may read A once more per range where the other parts' items already
/// fill the cores. Each part in turn takes the range count whose busiest core moves the
/// fewest bytes at the row capacity given the others' (then the fewest bytes in all),
/// passes repeated while one helps; never one whose busiest core moves more at a few rows
/// (one row range, B's bytes alone: a layer may run far below its capacity, e.g. one
/// request at a long context).
pub(super) fn respread(parts: &[(Matmul, Split)], chip: &Chip) -> Vec<Split> {
    // the busiest core's bytes and all bytes at the capacity, or at one row range
    let busiest = |splits: &[Split], few: bool| {
        let items = parts.iter().zip(splits).map(|((mm, _), split)| match few {
            false => (split.items(mm, mm.max_rows), split.item_bytes(mm)),
            true => (
                split.items(mm, 1),
                split.slices_per_item(mm) * split.slice_k * split.range_n * mm.operands.bytes(),
            ),
        });
        let cores = back_and_forth(items, chip.aic_cores);
        let total: usize = cores.iter().sum();
        (cores.into_iter().max().unwrap_or(0), total)
    };
    let mut splits: Vec<Split> = parts.iter().map(|(_, s)| *s).collect();
    let few = busiest(&splits, true).0;
    let mut least = busiest(&splits, false);
    loop {
        let mut better = false;
        for (i, (mm, split)) in parts.iter().enumerate() {
            let tn = split.tiles.n;
            let n_tiles = mm.n.div_ceil(tn);
            for ranges in 1..=n_tiles {
                let mut tried = splits.clone();
                tried[i].range_n = n_tiles.div_ceil(ranges) * tn;
                let k = busiest(&tried, false);
                if k < least && busiest(&tried, true).0 <= few {
                    (least, splits, better) = (k, tried, true);
                }
            }
        }
        if !better {
            return splits;
        }
    }
}

/// The bytes each of `cores` cores moves when runs of items, each `(count, bytes per
/// item)`, are dealt as one sequence as `BackAndForth` in `dsv4/matmul.h` deals them: in
/// rounds over the cores, every other round backwards.
pub(super) fn back_and_forth(
    items: impl IntoIterator<Item = (usize, usize)>,
    cores: usize,
) -> Vec<usize> {
    let mut moved = vec![0usize; cores];
    let mut g = 0;
    for (count, bytes) in items {
        for _ in 0..count {
            let (round, at) = (g / cores, g % cores);
            moved[if round % 2 == 0 { at } else { cores - 1 - at }] += bytes;
            g += 1;
        }
    }
    moved
}

/// Why `mm` cannot run on this kernel with tiles `t`, if it cannot: it needs whole
/// fractals along K and N, C rows in whole 32-byte blocks (a half C only of int8
/// operands), leading dimensions the ND2NZ
/// parameters (16 bits) can express - except B [K, N]'s, copied row by row past that -,
/// at most 65,535 runtime rows (the bound the split search is planned and tested for) and
/// offsets in 32 bits. (Halved tiles stay whole fractals.)
pub(super) fn unfit(mm: &Matmul, t: &Tiles) -> Option<String> {
    let c0 = 32 / mm.operands.bytes();
    let u16_max = usize::from(u16::MAX);
    let extent = |stride: usize, rows: usize, ld: usize| (mm.batch - 1) * stride + rows * ld;
    let b_rows = match mm.b_layout {
        BLayout::Kn => mm.k,
        BLayout::Nk => mm.n,
    };
    crate::kernel_plan::unmet([
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
            !mm.c_half || mm.operands == Operands::I8,
            "a half C is an int8 product's (DEQF16)".into(),
        ),
        (
            mm.ldc.is_multiple_of(32 / mm.c_bytes()),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chip;
    use crate::kernel_plan::Value;
    use crate::kernel_plan::gemm::kernels::kernel;
    use crate::kernel_plan::gemm::matmul::Rows;

    /// The split of `mm` for a stage with spec tiles m × n × k on the 910B (24 cube cores).
    fn plan(mm: &Matmul, [m, n, k]: [usize; 3]) -> Split {
        let chip = chip::find("910b").unwrap();
        let room = Room::for_tiles(m, n, k, chip);
        let mut spec = Tiles { m, n, k };
        if mm.operands == Operands::I8 {
            spec.k *= 2;
        }
        plan_split(mm, &room, spec, chip).unwrap()
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
                m: 64,
                n: 64,
                k: 512
            },
            "the spec tiles' deeper twin: the same traffic, half the A tile loads"
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
        // two 512-row C strips need 32-column tiles, in deeper B tiles (k 256: half the
        // A loads' calls of 128) of which three fit beside the panel; the A tiles then
        // grow tall (all 512 rows of one k block: one LoadData call each, 32 per column
        // tile where 64 x 256 tiles took 128)
        assert_eq!(
            (s.tiles, s.a_k, s.b_buffers, s.c_buffers),
            (
                Tiles {
                    m: 512,
                    n: 32,
                    k: 256
                },
                32,
                3,
                2
            )
        );
        assert_eq!(a_calls(&s, &mm), 32);
        let (m_tiles, k_tiles, per_tile) = (512 / 64, 1024 / 256, 64 / 16);
        assert_eq!(
            a_calls(
                &Split {
                    tiles: Tiles { m: 64, ..s.tiles },
                    a_k: 256,
                    ..s
                },
                &mm
            ),
            m_tiles * k_tiles * per_tile
        );
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
        // Four ranges of two 64-column tiles: 16 items, each core one (ranges of one tile
        // would be two rounds of items half as large, and read A twice as often).
        assert_eq!((s.range_n, s.items(&mm, 256)), (128, 16));
        // A (2 MiB) four times, B (4 MiB) once, the partials (0.5 MiB a slice) twice, C once
        let r = ratio(&mm, &s);
        assert!((r - 16.5 / 6.5).abs() < 1e-9, "{r}");
    }

    #[test]
    fn flash_wq_a_at_tp2_spreads_its_slices_over_every_core() {
        // Four k slices at least (L1 + L0A < 3 x 683 KiB); C (1 MiB) twice per slice. Four
        // items would leave 20 cores idle: six N ranges of 192 make 24.
        let mm = Matmul::new(Operands::Bf16, BLayout::Kn, Rows::Tokens, 256, 1024, 4096);
        let s = plan(&mm, QKV_TILES);
        assert_eq!((s.range_m, s.slice_k, s.sum), (256, 1024, KSum::Partials));
        assert_eq!((s.range_n, s.items(&mm, 256)), (192, 24));
        // A (2 MiB) six times, B (8 MiB) once, the partials twice, C once: 29 MiB of 11
        let r = ratio(&mm, &s);
        assert!((r - 29.0 / 11.0).abs() < 1e-9, "{r}");
    }

    #[test]
    fn a_group_reads_a_fewer_times_where_the_other_parts_fill_the_cores() {
        // CSA's x_normed projections at 256 rows (FLASH, TP 2): each spread for a launch of
        // its own reads A once per N range; dealt together, fewer ranges fill the cores
        let chip = chip::find("910b").unwrap();
        let parts: Vec<(Matmul, Split)> = [1024, 1024, 1024, 512, 256, 256, 64]
            .into_iter()
            .map(|n| {
                let mm = Matmul::new(Operands::Bf16, BLayout::Kn, Rows::Tokens, 256, n, 4096);
                let s = plan(&mm, QKV_TILES);
                (mm, s)
            })
            .collect();
        let together = respread(&parts, chip);
        let moved = |splits: &[Split]| -> usize {
            (parts.iter().zip(splits))
                .map(|((mm, _), s)| traffic(mm, s, 256).0)
                .sum()
        };
        let own: Vec<Split> = parts.iter().map(|(_, s)| *s).collect();
        assert!(moved(&together) < moved(&own));
        for ((mm, s), t) in parts.iter().zip(&together) {
            // only the N ranges change, to whole column tiles
            assert_eq!(
                Split {
                    range_n: s.range_n,
                    ..*t
                },
                *s
            );
            assert!(
                t.range_n.is_multiple_of(t.tiles.n)
                    && t.range_n <= mm.n.next_multiple_of(t.tiles.n)
            );
        }
        // at one row range (a few tokens) the items still cover the cores as before
        let items = |splits: &[Split]| -> usize {
            (parts.iter().zip(splits))
                .map(|((mm, _), s)| s.items(mm, 8))
                .sum()
        };
        assert!(items(&together) >= chip.aic_cores.min(items(&own)));
    }

    /// FLASH `x_normed` projections of `ns` columns at TP 1 (512 rows, bf16 [K, N]) as a
    /// group: the products, their splits respread for a back-and-forth deal, and the
    /// group's modeled cycles at 512 rows for some splits.
    fn x_normed_group(ns: &[usize]) -> (Vec<Matmul>, Vec<Split>, impl Fn(&[Split]) -> f64) {
        x_normed_group_at(ns, 512)
    }

    /// The same at `rows` rows a rank (TP 1: 512, TP 2: 256).
    fn x_normed_group_at(
        ns: &[usize],
        rows: usize,
    ) -> (Vec<Matmul>, Vec<Split>, impl Fn(&[Split]) -> f64) {
        let chip = chip::find("910b").unwrap();
        let parts: Vec<(Matmul, Split)> = (ns.iter())
            .map(|&n| {
                let mm = Matmul::new(Operands::Bf16, BLayout::Kn, Rows::Tokens, rows, n, 4096);
                let s = plan(&mm, QKV_TILES);
                (mm, s)
            })
            .collect();
        let splits = respread(&parts, chip);
        let products: Vec<Matmul> = parts.into_iter().map(|(m, _)| m).collect();
        let timed = products.clone();
        let cycles = move |splits: &[Split]| {
            let launch: Vec<(&Matmul, Split)> = timed.iter().zip(splits.iter().copied()).collect();
            launch_cycles(&launch, rows, chip)
        };
        (products, splits, cycles)
    }

    #[test]
    fn a_group_shares_its_a_panels_where_its_column_ranges_are_innermost() {
        // Two 512-column bf16 products of one A (512 rows, K 1024): 16 strips of B over 24
        // blocks, too few to read ahead (`gemm::prefetch`). With the column ranges
        // innermost the parts take one A split and a core's items of one panel, of any
        // part, load it once; the model times the launch quicker than with the row ranges
        // innermost.
        let chip = chip::find("910b").unwrap();
        let (rows, tiles) = (512, [32, 128, 128]);
        let room = Room::for_tiles(tiles[0], tiles[1], tiles[2], chip);
        let products = [512, 512]
            .map(|n| Matmul::new(Operands::Bf16, BLayout::Kn, Rows::Tokens, rows, n, 1024));
        let splits = products
            .each_ref()
            .map(|mm| plan_split(mm, &room, Tiles::spec(mm, tiles), chip).unwrap());
        let runs = group_runs(&products, &splits, chip);
        let a_side = |s: &Split| Split {
            range_n: 0,
            sum: KSum::Whole,
            ..*s
        };
        assert!(runs.iter().all(|s| s.deal == Deal::ColumnsInner));
        assert!(runs.iter().all(|s| a_side(s) == a_side(&runs[0])));
        let cycles = |splits: &[Split]| {
            let launch: Vec<(&Matmul, Split)> =
                products.iter().zip(splits.iter().copied()).collect();
            launch_cycles(&launch, rows, chip)
        };
        let rows_inner: Vec<Split> = (runs.iter())
            .map(|s| Split {
                deal: Deal::RowsInner,
                ..*s
            })
            .collect();
        assert!(cycles(&runs) < cycles(&rows_inner));
    }

    #[test]
    fn a_group_whose_b_is_read_ahead_takes_the_row_ranges_innermost() {
        // CSA's seven x_normed projections at TP 2 (256 rows, one row range): with the
        // column ranges innermost a core's items of one A panel would load it once, but
        // such items cannot have their B read ahead (`gemm::prefetch`: a strip's B must
        // follow the cube's item order); with the row ranges innermost the blocks' vector
        // cores load B and the cube cores find it in L2, which the model times quicker (the
        // sim: 112.1 -> 85.1 µs), so the group takes them.
        let chip = chip::find("910b").unwrap();
        let (products, splits, cycles) =
            x_normed_group_at(&[1024, 1024, 1024, 512, 256, 256, 64], 256);
        let runs = group_runs(&products, &splits, chip);
        assert!(runs.iter().all(|s| s.deal == Deal::RowsInner));
        let shared = sharing_panels(&products, &splits, &splits[0]).expect("one A split");
        assert!(shared.iter().all(|s| s.deal == Deal::ColumnsInner));
        assert!(cycles(&runs) < cycles(&shared));
    }

    #[test]
    fn a_group_shares_no_a_split_a_part_cannot_take() {
        // int8 B [K, N] transposes in 32 × 32 squares: a split of 16-column tiles is no
        // split of it, so the group's parts share none
        let part = |layout, n| Matmul::new(Operands::I8, layout, Rows::Tokens, 256, n, 1024);
        let products = [part(BLayout::Nk, 1024), part(BLayout::Kn, 1024)];
        let narrow = Split {
            tiles: Tiles {
                m: 64,
                n: 16,
                k: 256,
            },
            ..plan(&products[0], [64, 64, 128])
        };
        let wide = plan(&products[1], [64, 64, 128]);
        assert!(sharing_panels(&products, &[narrow, wide], &narrow).is_none());
        let shared = sharing_panels(&products, &[narrow, wide], &wide).expect("both take it");
        assert!(
            shared
                .iter()
                .all(|s| s.tiles == wide.tiles && s.deal == Deal::ColumnsInner)
        );
        // nor do parts that write C differently (`wq_b`'s half C beside `idx_wq_b`'s int32:
        // one panel's Fixpipe setup for all)
        let half = [
            Matmul {
                c_half: true,
                ..products[1].clone()
            },
            products[1].clone(),
        ];
        assert!(sharing_panels(&half, &[wide, wide], &wide).is_none());
    }

    #[test]
    fn a_group_shares_no_a_split_of_other_k_slices() {
        // CSA's x_normed projections at TP 4 (128 rows): the compressor's [N, K] weights
        // slice K by 1408, wq_a's [K, N] by 2048; a part's slices are its own launch's (its
        // slice sum follows the group, its C keeps the bits of the part alone), so the
        // parts share no A split
        let part = |layout, n| Matmul::new(Operands::Bf16, layout, Rows::Tokens, 128, n, 4096);
        let products = [part(BLayout::Nk, 1024), part(BLayout::Kn, 1024)];
        let splits = [
            Split {
                slice_k: 1408,
                sum: KSum::Partials,
                ..plan(&products[0], QKV_TILES)
            },
            Split {
                slice_k: 2048,
                sum: KSum::Partials,
                ..plan(&products[1], QKV_TILES)
            },
        ];
        for a in &splits {
            assert!(sharing_panels(&products, &splits, a).is_none(), "{a:?}");
        }
        let alike = [
            splits[0],
            Split {
                slice_k: 1408,
                ..splits[1]
            },
        ];
        let shared = sharing_panels(&products, &alike, &alike[1]).expect("one slicing");
        assert!(
            shared
                .iter()
                .all(|s| s.slice_k == 1408 && s.tiles == alike[1].tiles)
        );
    }

    #[test]
    fn flash_wq_a_and_wkv_at_tp1_run_in_ranges_of_one_width() {
        // Respread for a back-and-forth deal their N ranges are 384 and 192: 48 items of two
        // sizes, each B slice's two row ranges on whichever cores. In runs both parts take
        // ranges of 256: 32 + 16 items of one size, two per core, a B slice's row ranges on
        // one core (its second read from L2).
        let (products, splits, cycles) = x_normed_group(&[1024, 512]);
        assert_eq!((splits[0].range_n, splits[1].range_n), (384, 192));
        let runs = group_runs(&products, &splits, chip::find("910b").unwrap());
        assert!(runs.iter().all(|s| s.deal != Deal::BackAndForth));
        assert_eq!((runs[0].range_n, runs[1].range_n), (256, 256));
        let items: usize = (products.iter().zip(&runs))
            .map(|(m, s)| s.items(m, 512))
            .sum();
        assert_eq!(items, 48);
        let (quick, apart) = (cycles(&runs), cycles(&splits));
        assert!(quick < 0.9 * apart, "{quick} {apart}");
    }

    #[test]
    fn flash_hca_x_normed_projections_run_in_every_combination_of_ranges() {
        // wq_a and three 512-column projections at TP 1: one width for all (256: 80 items,
        // runs of 3 and 4 that split some row-range pairs) is beaten by a combination (7 x
        // 5 x 5 x 5 distinct widths tried): 24 + 3 x 8 items, two per core, each a B
        // slice's pair.
        let (products, splits, cycles) = x_normed_group(&[1024, 512, 512, 512]);
        let runs = group_runs(&products, &splits, chip::find("910b").unwrap());
        let ranges: Vec<usize> = runs.iter().map(|s| s.range_n).collect();
        assert_eq!(ranges, vec![384, 512, 512, 512]);
        let items: usize = (products.iter().zip(&runs))
            .map(|(m, s)| s.items(m, 512))
            .sum();
        assert_eq!(items, 48);
        let one_width: Vec<Split> = runs.iter().map(|s| Split { range_n: 256, ..*s }).collect();
        let (quick, even) = (cycles(&runs), cycles(&one_width));
        assert!(quick < 0.9 * even, "{quick} {even}");
    }

    #[test]
    fn a_half_c_is_an_int8_products_in_whole_blocks() {
        let t = Tiles {
            m: 16,
            n: 16,
            k: 32,
        };
        let i8 = |ldc: usize, c_half: bool| Matmul {
            ldc,
            c_half,
            ..Matmul::new(Operands::I8, BLayout::Nk, Rows::Tokens, 16, 16, 64)
        };
        assert_eq!(unfit(&i8(24, false), &t), None, "i32 rows of 24: 3 blocks");
        let half = unfit(&i8(24, true), &t).expect("half rows of 24: 1.5 blocks");
        assert!(half.contains("not whole 32-byte blocks"), "{half}");
        assert_eq!(unfit(&i8(32, true), &t), None);
        let bf16 = Matmul {
            c_half: true,
            ..Matmul::new(Operands::Bf16, BLayout::Nk, Rows::Tokens, 16, 16, 64)
        };
        let why = unfit(&bf16, &t).expect("bf16 has no half C");
        assert!(why.contains("int8"), "{why}");
    }

    #[test]
    fn int8_holds_all_of_k_in_row_ranges() {
        // 512 rows x 4096 int8 k (2 MiB) does not fit on chip; int8 k slices are not
        // summed (a half C could not add up exactly), so the rows split (B read once per
        // range) and K stays whole.
        let mm = Matmul::new(Operands::I8, BLayout::Nk, Rows::Tokens, 512, 1024, 4096);
        let s = plan(&mm, O_PROJ_TILES);
        assert_eq!((s.slice_k, s.sum), (4096, KSum::Whole));
        assert!(s.range_m < 512);
        let (moved, _) = traffic(&mm, &s, 512);
        let (a, b, c) = sizes(&mm, 512);
        assert_eq!(c, 512 * 1024 * 4, "C is i32");
        let half = Matmul {
            c_half: true,
            ..mm.clone()
        };
        assert_eq!(sizes(&half, 512).2, 512 * 1024 * 2, "or half");
        assert_eq!(
            moved,
            a * 1024usize.div_ceil(s.range_n) + b * 512usize.div_ceil(s.range_m) + c,
            "C written once"
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
        // two 512-row strips of C (one filling, one leaving) fit L0C in 32-column tiles
        assert_eq!((s.tiles.n, s.c_buffers), (32, 2));
        assert!(s.tail_k > 0);
        assert_eq!(s.items(&mm, 512), 24);
        // A (2 MiB a group) read once per N range weighs against a half C of 4 MiB
        assert!(ratio(&mm, &s) <= 1.3, "{}", ratio(&mm, &s));
    }

    #[test]
    fn flash_wo_a_chains_its_k_slices_where_the_busiest_core_moves_less() {
        // Two row ranges read B (8 MiB a group) twice; four 1024-k slices. Chained on one
        // core, a group's 2 row ranges × 3 N ranges are 24 items of all four slices, one per
        // core (6.8 MB each): A (4 MiB) read three times, C (2 MiB) written four times:
        // 36 MiB against 14. Apart, 64 items of one slice take three rounds (2.1 MB each)
        // and the slice sum reads the partials back on the vector cores (7.2 MB).
        let mm = flash_wo(Operands::Bf16, 1024, 4096);
        let chip = chip::find("910b").unwrap();
        let s = plan(&mm, O_PROJ_TILES);
        assert_eq!((s.range_m, s.slice_k, s.sum), (256, 1024, KSum::Chained));
        assert_eq!((s.range_n, s.items(&mm, 512)), (384, 24));
        assert_eq!(
            s.busiest_bytes(&mm, chip),
            4 * (1024 * 640 * 2 + 256 * 384 * 4)
        );
        assert!(
            (ratio(&mm, &s) - 36.0 / 14.0).abs() < 1e-9,
            "{}",
            ratio(&mm, &s)
        );
        // At TP 1 (8 groups) the chained items would be 48 of 6.8 MB, two rounds: the
        // slice sum's partials cost the busiest core less, so the slices stay apart.
        let tp1 = Matmul { batch: 8, ..mm };
        let s = plan(&tp1, O_PROJ_TILES);
        assert_eq!(
            (s.sum, s.range_n, s.items(&tp1, 512)),
            (KSum::Partials, 1024, 64)
        );
    }

    /// FLASH wo_a at 512 tokens, TP 1 (8 groups): the product, its split apart and the
    /// split in runs the planner takes.
    fn flash_wo_a_tp1() -> (Matmul, Split, Split) {
        let chip = chip::find("910b").unwrap();
        let mm = Matmul {
            batch: 8,
            ..flash_wo(Operands::Bf16, 1024, 4096)
        };
        let [m, n, k] = O_PROJ_TILES;
        let room = Room::for_tiles(m, n, k, chip);
        let apart = plan(&mm, O_PROJ_TILES);
        let runs = with_runs(apart, &mm, &room, Tiles { m, n, k }, chip);
        (mm, apart, runs)
    }

    #[test]
    fn flash_wo_a_at_tp1_runs_three_row_ranges_of_a_b_slice_on_one_core() {
        // 8 groups x 512 rows x 4096 k -> 1024. Dealt back and forth, 64 items of 256 rows x
        // 1024 k left 16 cores three and 8 cores two; in runs, 72 items of 176 rows x 1376 k
        // are three per core: one B slice's three row ranges, B read from GM once and twice
        // from L2, and three slices' partials where there were four.
        let chip = chip::find("910b").unwrap();
        let (mm, apart, runs) = flash_wo_a_tp1();
        assert_eq!((apart.sum, apart.items(&mm, 512)), (KSum::Partials, 64));
        assert_ne!(runs.deal, Deal::BackAndForth);
        assert_eq!(
            (runs.range_m, runs.slice_k, runs.range_n, runs.sum),
            (176, 1376, 1024, KSum::Partials)
        );
        assert_eq!(runs.items(&mm, 512), 72);
        // quicker at 512 rows, and at a few rows (one row range: 24 items of 1376 k, one
        // a core, where apart 32 of 1024 k leave 8 cores two): a decode step runs either
        let cycles = |s: &Split, rows| s.cycles(&mm, rows, chip);
        assert!(cycles(&runs, 512) < cycles(&apart, 512));
        assert!(cycles(&runs, 16) < 0.8 * cycles(&apart, 16));
    }

    #[test]
    fn a_launch_whose_b_is_read_ahead_loads_it_beyond_the_cube_cores_share() {
        // FLASH wo_a at TP 1 and a few rows (67 MB of B; A and C small). Read ahead
        // (`gemm::prefetch`: items of one panel's columns, two strips a block at least),
        // the blocks' vector cores load the B their cube cores have not read, at the fit's
        // rate for 72 cores, and the cube cores find it in L2: the launch takes less than
        // the cube cores alone need to load B (24 cores at their share, 457 GB/s), though
        // more than all 72 need. Dealt with the column ranges innermost (not read ahead),
        // it takes at least the former.
        let chip = chip::find("910b").unwrap();
        let (mm, _, s) = flash_wo_a_tp1();
        let b = (mm.batch * mm.n * mm.k * 2) as f64;
        let cube_alone = b / (24.0 * Rate::load(24));
        let timed = |deal| Split { deal, ..s }.cycles(&mm, 16, chip);
        let ahead = timed(Deal::RowsInner);
        assert!(
            ahead < 0.7 * cube_alone && ahead > b / (72.0 * Rate::load(72)),
            "{ahead} {cube_alone}"
        );
        assert!(timed(Deal::ColumnsInner) >= cube_alone);
    }

    #[test]
    fn a_received_by_a_collective_loads_from_hbm_and_is_read_once_a_panel() {
        // FLASH wo_a at TP 2: its A, the attention's output, was just received by the group
        // all-to-all, so no launch left it in L2 and a panel's first read loads it from HBM.
        // The model times the same split longer so, and the planner then takes column
        // ranges of all of N, which read each panel once (with A in L2 it would read them
        // in two ranges of 512 columns).
        let chip = chip::find("910b").unwrap();
        let warm = flash_wo(Operands::Bf16, 1024, 4096);
        let cold = Matmul {
            a_from_hbm: true,
            ..warm.clone()
        };
        let [m, n, k] = O_PROJ_TILES;
        let room = Room::for_tiles(m, n, k, chip);
        let spec = Tiles { m, n, k };
        let apart = plan(&warm, O_PROJ_TILES);
        assert!(apart.cycles(&cold, 512, chip) > apart.cycles(&warm, 512, chip));
        let ranges = |mm: &Matmul| with_runs(apart, mm, &room, spec, chip).range_n;
        assert_eq!((ranges(&warm), ranges(&cold)), (512, 1024));
    }

    #[test]
    fn a_split_no_run_beats_stays_back_and_forth() {
        // FLASH wo_b at TP 2: 24 items of all rows, one per core; nothing to share in L2.
        let chip = chip::find("910b").unwrap();
        let mm = Matmul {
            ldb: 4096,
            stride_b: 1024,
            ..flash_wo(Operands::I8, 4096, 1024)
        };
        let [m, n, k] = O_PROJ_TILES;
        let room = Room::for_tiles(m, n, k, chip);
        let s = plan(&mm, O_PROJ_TILES);
        let spec = Tiles { m, n, k: 2 * k };
        assert_eq!(with_runs(s, &mm, &room, spec, chip), s);
    }

    #[test]
    fn small_products_keep_the_whole_panel_in_deeper_tiles() {
        let mm = Matmul::new(Operands::Bf16, BLayout::Nk, Rows::Tokens, 128, 512, 512);
        let s = plan(&mm, QKV_TILES);
        assert_eq!(
            (s.range_m, s.slice_k, s.tail_k, s.sum),
            (128, 512, 0, KSum::Whole)
        );
        // the spec's 128 x 64 x 128 as its deeper twin: 16-row LoadData calls of 256 k
        assert_eq!(
            s.tiles,
            Tiles {
                m: 64,
                n: 64,
                k: 256
            }
        );
        // one item per 64-column tile: A (128 KiB) read 8 times rather than one core
        // streaming all of B
        assert_eq!((s.range_n, s.items(&mm, 128)), (64, 8));
        // the panel leaves L1 to four B tiles in flight, the strip L0C to two strips
        assert_eq!((s.b_buffers, s.c_buffers), (4, 2));
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
        let (moved, _) = traffic(&mm, &s, 512);
        let (a, b, c) = sizes(&mm, 512);
        assert_eq!(moved, a * 128 / s.range_n + b + c, "B once");
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
    fn deeper_tiles_come_first_where_they_fit() {
        let mm = Matmul::new(Operands::I8, BLayout::Nk, Rows::Tokens, 512, 4096, 1024);
        let room = Room::for_tiles(64, 64, 128, chip::find("910b").unwrap());
        let c = Tiles {
            m: 64,
            n: 64,
            k: 256,
        }
        .candidates(&mm, &room);
        // half the rows, twice the k: before the tile itself (equal volume)
        assert_eq!(
            &c[..2],
            &[
                Tiles {
                    m: 32,
                    n: 64,
                    k: 512
                },
                Tiles {
                    m: 64,
                    n: 64,
                    k: 256
                }
            ]
        );
        // 64 x 128 x 256 int8 fills L0B with two B tiles: two 512 x 128 would not fit
        let c = Tiles {
            m: 64,
            n: 128,
            k: 256,
        }
        .candidates(&mm, &room);
        assert_eq!(
            c[0],
            Tiles {
                m: 64,
                n: 128,
                k: 256
            }
        );
        // a spec's A tiles past L0A stay as asked (the budget check refuses them)
        let bf16 = Matmul::new(Operands::Bf16, BLayout::Kn, Rows::Tokens, 128, 128, 512);
        let c = Tiles {
            m: 512,
            n: 16,
            k: 64,
        }
        .candidates(&bf16, &room);
        assert_eq!(
            c[0],
            Tiles {
                m: 512,
                n: 16,
                k: 64
            }
        );
        assert!(
            !c.contains(&Tiles {
                m: 256,
                n: 16,
                k: 128
            }),
            "{c:?}"
        );
    }

    #[test]
    fn candidates_halve_whole_fractals_only() {
        let i8_kn = Matmul::new(Operands::I8, BLayout::Kn, Rows::Tokens, 64, 64, 256);
        let room = Room::for_tiles(16, 32, 32, chip::find("910b").unwrap());
        let c = Tiles {
            m: 16,
            n: 32,
            k: 64,
        }
        .candidates(&i8_kn, &room);
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

    /// A B tile's GM read latency (1400 cycles) outlasts an 8 KB tile's transfer at 24
    /// cores' load rate, so the panel leaves room for three; 16 KB and larger tiles
    /// cover it with two, and the smallest take the most (four).
    #[test]
    fn small_b_tiles_keep_more_in_flight() {
        let chip = chip::find("910b").unwrap();
        let room = Room::for_tiles(256, 64, 64, chip);
        assert_eq!(room.b_tiles_in_flight(8 * 1024), 3);
        assert_eq!(room.b_tiles_in_flight(16 * 1024), 2);
        assert_eq!(room.b_tiles_in_flight(32 * 1024), 2);
        assert_eq!(room.b_tiles_in_flight(2 * 1024), 4);
        // FLASH wq_a at 512 tokens in 64 × 64 tiles: the panel shrinks to leave three B
        // tiles (its k slices moving a k block more into L0A)
        let mm = Matmul::new(Operands::Bf16, BLayout::Kn, Rows::Tokens, 512, 1024, 4096);
        let split = cover(
            &mm,
            &room,
            Tiles {
                m: 256,
                n: 64,
                k: 64,
            },
            2,
            None,
        )
        .expect("a covering");
        let panel = split.range_m * (split.slice_k - split.tail_k) * 2;
        assert!(panel + 3 * 64 * 64 * 2 <= chip.l1_bytes, "{split:?}");
    }
}
