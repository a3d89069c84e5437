//! KV compressors (hca_csa.md §4): the ratio-128 compressor of HCA and the
//! overlapping ratio-4 compressors of CSA (main and indexer "inner").
//!
//! Per token: project with wkv / wgate, add the APE row of `p mod ratio` to
//! the score, write `[kv | score]` to its state row. Per request (ascending,
//! after all of its writes): at the first boundary `(p+1) mod ratio == 0`,
//! softmax-pool the window's state rows read through the state block table.
//! The ring CSA of PR #1013 (csa_1m.md §4) pools every boundary before it commits:
//! `pool_every_boundary`.

use super::GoldenError;
use super::arith::{mean_square, rsqrt, sum, to_bf16, widen};
use super::cache_insert::insert_rows;
use super::gemm::{Mat, Threads, matmul};
use super::rope::{RopeRows, rotate};
use half::bf16;

/// Shape of one compressor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    pub ratio: usize,
    /// Pooled (output) width.
    pub head_dim: usize,
    /// Ratio-4 compressors also pool the previous window ("front" halves).
    pub overlap: bool,
    /// Rows per state page.
    pub state_block: usize,
}

impl Geometry {
    /// Projected width: (1 + overlap) · head_dim.
    pub fn out_dim(&self) -> usize {
        if self.overlap {
            2 * self.head_dim
        } else {
            self.head_dim
        }
    }
    /// State row width: kv then score.
    pub fn state_width(&self) -> usize {
        2 * self.out_dim()
    }
}

/// wkv / wgate `[out, hidden]`, ape `[ratio, out]`, norm_w `[head_dim]`.
#[derive(Debug, Clone, Copy)]
pub struct Weights<'a> {
    pub wkv: &'a [bf16],
    pub wgate: &'a [bf16],
    pub ape: &'a [f32],
    pub norm_w: &'a [bf16],
}

/// A request's state block table `[requests, width]`.
#[derive(Debug, Clone, Copy)]
pub struct StateTable<'a> {
    pub entries: &'a [i32],
    pub width: usize,
}

/// The pooled row of a request that reached a boundary this step.
#[derive(Debug, Clone, PartialEq)]
pub struct Pooled {
    pub request: usize,
    /// Index within the request's tokens of the boundary token.
    pub boundary: usize,
    pub values: Vec<f32>,
}

/// Projects `x` `[t, hidden]` (f32 of the bf16 x_normed), updates `state`
/// (`[pages, state_block, state_width]` flat) and pools every request that
/// reaches a boundary. `seq` tokens per request.
#[allow(clippy::too_many_arguments)]
pub fn update_and_pool(
    g: Geometry,
    x: &[f32],
    hidden: usize,
    seq: usize,
    w: Weights,
    positions: &[i32],
    state_slots: &[i64],
    table: StateTable,
    state: &mut [f32],
    names: (&str, &str),
) -> Result<Vec<Pooled>, GoldenError> {
    let (out, width) = (g.out_dim(), g.state_width());
    let t = positions.len();
    let (kv, mut score) = project(g, x, hidden, w, t);
    let (slot_name, table_name) = names;
    let mut pooled = Vec::new();
    for b in 0..t / seq {
        let mut boundary = None;
        for s in 0..seq {
            let tok = b * seq + s;
            let pos = position(positions[tok], tok)?;
            let ape = &w.ape[(pos % g.ratio) * out..(pos % g.ratio + 1) * out];
            let sc = &mut score[tok * out..(tok + 1) * out];
            sc.iter_mut().zip(ape).for_each(|(v, &a)| *v += a);
            let kv_row = &kv[tok * out..(tok + 1) * out];
            write_state_row(state, width, (tok, state_slots[tok]), kv_row, sc, slot_name)?;
            if boundary.is_none() && (pos + 1) % g.ratio == 0 {
                boundary = Some((s, pos));
            }
        }
        if let Some((s, e)) = boundary {
            let values = pool(g, e, |q, back| {
                read_state(g, b, q, q, back, table, state, table_name)
            })?;
            pooled.push(Pooled {
                request: b,
                boundary: s,
                values,
            });
        }
    }
    Ok(pooled)
}

/// The kv and score projections `x · wkvᵀ`, `x · wgateᵀ` (`[t, out]` each, f32).
fn project(g: Geometry, x: &[f32], hidden: usize, w: Weights, t: usize) -> (Vec<f32>, Vec<f32>) {
    let (xm, out) = (Mat::rows(x, t, hidden), g.out_dim());
    let by = |wt: &[bf16]| matmul(xm, Mat::transposed(&widen(wt), hidden, out), Threads::All);
    (by(w.wkv), by(w.wgate))
}

/// Token `tok`'s state row `[kv | score]` at its state slot (−1: not written).
fn write_state_row(
    state: &mut [f32],
    width: usize,
    (tok, slot): (usize, i64),
    kv: &[f32],
    score: &[f32],
    slot_name: &str,
) -> Result<(), GoldenError> {
    if slot == -1 {
        return Ok(());
    }
    let state_rows = state.len() / width;
    let r = usize::try_from(slot)
        .ok()
        .filter(|&r| r < state_rows)
        .ok_or_else(|| {
            GoldenError::Contract(format!(
                "{slot_name}[{tok}]={slot}: expected -1 or a row in [0, {state_rows})"
            ))
        })?;
    let row = &mut state[r * width..(r + 1) * width];
    row[..kv.len()].copy_from_slice(kv);
    row[kv.len()..].copy_from_slice(score);
    Ok(())
}

fn position(p: i32, tok: usize) -> Result<usize, GoldenError> {
    usize::try_from(p)
        .map_err(|_| GoldenError::Contract(format!("position_ids[{tok}]={p} is negative")))
}

/// One pooled entry: kv values and score values of `head_dim` channels.
type Entry<'a> = (Option<&'a [f32]>, Option<&'a [f32]>);

/// The column of an entry within a projected row: with overlap, back (current-window)
/// entries use the second halves.
fn half(g: Geometry, back: bool) -> usize {
    if back && g.overlap { g.head_dim } else { 0 }
}

/// Position `q` of request `b` from the state, in the state page `page_of` (the position
/// itself, or its ring slot) through the table: a negative entry is kv 0 / score −inf.
#[allow(clippy::too_many_arguments)]
fn read_state<'a>(
    g: Geometry,
    b: usize,
    q: i64,
    page_of: i64,
    back: bool,
    table: StateTable,
    state: &'a [f32],
    table_name: &str,
) -> Result<Entry<'a>, GoldenError> {
    if q < 0 {
        return Ok((None, None));
    }
    let (hd, out, width) = (g.head_dim, g.out_dim(), g.state_width());
    let state_rows = state.len() / width;
    let page = page_of as usize / g.state_block;
    if page >= table.width {
        return Err(GoldenError::Contract(format!(
            "{table_name}: position {q} of request {b} is past the table's {} pages",
            table.width
        )));
    }
    let entry = table.entries[b * table.width + page];
    let Ok(p) = usize::try_from(entry) else {
        return Ok((None, None));
    };
    let r = p * g.state_block + q as usize % g.state_block;
    if r >= state_rows {
        return Err(GoldenError::Contract(format!(
            "{table_name}[{b}, {page}]={entry} is outside the {state_rows}-row state pool"
        )));
    }
    let row = &state[r * width..(r + 1) * width];
    let h = half(g, back);
    Ok((Some(&row[h..h + hd]), Some(&row[out + h..out + h + hd])))
}

/// Softmax-pools the window ending at boundary `e`, each position read by `read(q, back)`.
fn pool<'a>(
    g: Geometry,
    e: usize,
    read: impl Fn(i64, bool) -> Result<Entry<'a>, GoldenError>,
) -> Result<Vec<f32>, GoldenError> {
    let (e, r) = (e as i64, g.ratio as i64);
    let mut entries: Vec<Entry> = Vec::new();
    if g.overlap {
        for q in e - 2 * r + 1..=e - r {
            entries.push(read(q, false)?);
        }
    }
    for q in e - r + 1..=e {
        entries.push(read(q, true)?);
    }
    // Per channel: softmax over the entries, then the weighted kv sum.
    // Unmapped / pre-sequence entries are kv 0 with score −inf.
    Ok((0..g.head_dim)
        .map(|c| {
            let sc = |en: &Entry| en.1.map_or(f32::NEG_INFINITY, |s| s[c]);
            let max = entries.iter().map(sc).fold(f32::NEG_INFINITY, f32::max);
            let ex: Vec<f32> = entries.iter().map(|en| (sc(en) - max).exp()).collect();
            let total = sum(ex.iter().copied());
            sum(entries
                .iter()
                .zip(&ex)
                .map(|(en, &x)| en.0.map_or(0.0, |kv| kv[c]) * (x / total)))
        })
        .collect())
}

/// The ring compressor of PR #1013 (csa_1m.md §4.2–4.4): projects `x` like
/// `update_and_pool`, pools EVERY boundary of every request against the state as the step
/// found it - a position before the request's first one from its ring slot
/// `table[b, (q mod ring) / state_block]` - plus the request's own projections for the
/// positions of this step, and only then commits every token's row
/// `[kv | score + ape]` at its state slot (in token order). A request's positions must be
/// consecutive.
#[allow(clippy::too_many_arguments)]
pub fn pool_every_boundary(
    g: Geometry,
    x: &[f32],
    hidden: usize,
    seq: usize,
    w: Weights,
    positions: &[i32],
    state_slots: &[i64],
    table: StateTable,
    state: &mut [f32],
    names: (&str, &str),
) -> Result<Vec<Pooled>, GoldenError> {
    let (out, width, hd) = (g.out_dim(), g.state_width(), g.head_dim);
    let t = positions.len();
    let (kv, mut score) = project(g, x, hidden, w, t);
    let pos = positions
        .iter()
        .enumerate()
        .map(|(tok, &p)| position(p, tok))
        .collect::<Result<Vec<_>, _>>()?;
    for (tok, &p) in pos.iter().enumerate() {
        let ape = &w.ape[(p % g.ratio) * out..(p % g.ratio + 1) * out];
        score[tok * out..(tok + 1) * out]
            .iter_mut()
            .zip(ape)
            .for_each(|(v, &a)| *v += a);
    }
    let ring = (table.width * g.state_block) as i64;
    let (slot_name, table_name) = names;
    let mut pooled = Vec::new();
    for b in 0..t / seq {
        let p0 = pos[b * seq];
        if let Some(s) = (1..seq).find(|&s| pos[b * seq + s] != p0 + s) {
            return Err(GoldenError::Contract(format!(
                "position_ids[{}]={} does not follow request {b}'s first position {p0}",
                b * seq + s,
                pos[b * seq + s]
            )));
        }
        for s in (0..seq).filter(|&s| (p0 + s + 1) % g.ratio == 0) {
            let read = |q: i64, back: bool| {
                if q < p0 as i64 {
                    return read_state(g, b, q, q.rem_euclid(ring), back, table, state, table_name);
                }
                let (tok, h) = (b * seq + (q as usize - p0), half(g, back));
                Ok((
                    Some(&kv[tok * out + h..tok * out + h + hd]),
                    Some(&score[tok * out + h..tok * out + h + hd]),
                ))
            };
            let values = pool(g, p0 + s, read)?;
            pooled.push(Pooled {
                request: b,
                boundary: s,
                values,
            });
        }
    }
    for (tok, &slot) in state_slots.iter().enumerate().take(t) {
        let rows = tok * out..(tok + 1) * out;
        write_state_row(
            state,
            width,
            (tok, slot),
            &kv[rows.clone()],
            &score[rows],
            slot_name,
        )?;
    }
    Ok(pooled)
}

/// Which row of the RoPE rows rotates a pooled row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RopeRowOf {
    /// The request's row (the snapshot: one row per request).
    Request,
    /// The boundary token's row (the ring layer's `cmp_freqs_*`, row t at `p_t − 3`).
    Token,
}

impl RopeRowOf {
    pub fn row(self, p: &Pooled, seq: usize) -> usize {
        match self {
            RopeRowOf::Request => p.request,
            RopeRowOf::Token => p.request * seq + p.boundary,
        }
    }
}

/// RMSNorm with `norm_w` (`(x · rsqrt(mean(x²) + eps)) · w`, f32) then the
/// forward rotation of the last `cos.len() · 2` values (hca_csa.md §4.5).
pub fn normalize_rotate(values: &mut [f32], norm_w: &[bf16], eps: f32, cos: &[f32], sin: &[f32]) {
    let inv = rsqrt(mean_square(values) + eps);
    values
        .iter_mut()
        .zip(norm_w)
        .for_each(|(v, w)| *v = (*v * inv) * w.to_f32());
    let n = values.len();
    rotate(&mut values[n - 2 * cos.len()..], cos, sin);
}

/// Writes the step's pooled rows into `cmp_kv` (`[rows, head_dim]`, head_dim =
/// `norm_w.len()`) as the layers do (hca_csa.md §4.5): RMSNorm with `norm_w`, rotation of
/// the rope dims with the compressed RoPE row `of` the pooled row, one bf16 rounding, at
/// the `cmp_slot_mapping` slot of the boundary token (`seq` tokens per request; −1 drops it).
#[allow(clippy::too_many_arguments)]
pub fn insert_pooled(
    pooled: Vec<Pooled>,
    norm_w: &[bf16],
    eps: f32,
    rope: &RopeRows,
    of: RopeRowOf,
    seq: usize,
    cmp_kv: &mut [bf16],
    cmp_slots: &[i64],
) -> Result<(), GoldenError> {
    for mut p in pooled {
        let r = of.row(&p, seq);
        normalize_rotate(&mut p.values, norm_w, eps, rope.cos(r), rope.sin(r));
        let row: Vec<bf16> = p.values.iter().map(|&v| to_bf16(v)).collect();
        let tok = p.request * seq + p.boundary;
        insert_rows(
            cmp_kv,
            norm_w.len(),
            &row,
            &cmp_slots[tok..=tok],
            "cmp_slot_mapping",
        )?;
    }
    Ok(())
}
