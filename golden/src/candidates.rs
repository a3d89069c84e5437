//! The KV rows each token attends to, in the reference golden's tiling
//! (swa.md §3.6, hca_csa.md §6.2–6.3). A token's candidates are a list of K
//! tiles; the attention merges tiles with an online softmax.

use super::GoldenError;
use super::dims::{CsaDims, Dims, HcaDims};

/// K-tile width of the reference attention.
pub const ATTN_K_TILE: usize = 128;

/// One attention lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Candidate {
    /// Flat row of the raw KV pool.
    Raw(usize),
    /// Flat row of the compressed KV pool.
    Compressed(usize),
    /// An invalid lane (masked to −1e20, contributes nothing).
    Masked,
}

/// A token's tiles.
pub type Tiles = Vec<Vec<Candidate>>;

fn window_lane(index: i32) -> Candidate {
    usize::try_from(index).map_or(Candidate::Masked, Candidate::Raw)
}

/// SWA: the window lanes, valid iff the additive mask is 0 (k < lens) and the
/// index is ≥ 0, tiled by 128 and padded with masked lanes.
pub fn swa(indices: &[i32], bias: &[f32], window: usize) -> Vec<Tiles> {
    indices
        .chunks_exact(window)
        .zip(bias.chunks_exact(window))
        .map(|(idx, bias)| {
            let lanes: Vec<Candidate> = idx
                .iter()
                .zip(bias)
                .map(|(&i, &b)| {
                    if b == 0.0 {
                        window_lane(i)
                    } else {
                        Candidate::Masked
                    }
                })
                .collect();
            lanes
                .chunks(ATTN_K_TILE)
                .map(|c| {
                    let mut tile = c.to_vec();
                    tile.resize(ATTN_K_TILE, Candidate::Masked);
                    tile
                })
                .collect()
        })
        .collect()
}

/// Compressed rows visible to an HCA token:
/// `min((p+1) / ratio, kv_seq_len / ratio, max_seq_len / ratio)`.
pub fn hca_visible_rows(d: &Dims, h: &HcaDims, position: i32, kv_seq_len: i32) -> usize {
    let by_pos = (i64::from(position) + 1).max(0) as usize / h.ratio;
    let by_len = i64::from(kv_seq_len).max(0) as usize / h.ratio;
    by_pos.min(by_len).min(h.max_compressed_rows(d))
}

/// HCA: the window lanes (valid iff index ≥ 0) in 128-lane tiles, then every
/// visible compressed row in 128-lane tiles, read through `cmp_block_table`
/// (a row whose page is unmapped or outside the pool is masked).
#[allow(clippy::too_many_arguments)]
pub fn hca(
    d: &Dims,
    h: &HcaDims,
    indices: &[i32],
    positions: &[i32],
    kv_seq_lens: &[i32],
    cmp_table: &[i32],
    cmp_table_width: usize,
    cmp_pool_blocks: usize,
) -> Vec<Tiles> {
    let bs = d.block_size;
    indices
        .chunks_exact(d.window)
        .enumerate()
        .map(|(t, idx)| {
            let b = t / d.seq;
            let mut tiles: Tiles = idx
                .chunks(ATTN_K_TILE)
                .map(|c| c.iter().map(|&i| window_lane(i)).collect())
                .collect();
            let visible = hca_visible_rows(d, h, positions[t], kv_seq_lens[b]);
            let table = &cmp_table[b * cmp_table_width..(b + 1) * cmp_table_width];
            for begin in (0..visible).step_by(ATTN_K_TILE) {
                let tile = (begin..begin + ATTN_K_TILE)
                    .map(|r| {
                        let page = table.get(r / bs).copied().unwrap_or(-1);
                        match usize::try_from(page) {
                            Ok(p) if r < visible && p < cmp_pool_blocks => {
                                Candidate::Compressed(p * bs + r % bs)
                            }
                            _ => Candidate::Masked,
                        }
                    })
                    .collect();
                tiles.push(tile);
            }
            tiles
        })
        .collect()
}

/// CSA: the window lanes (valid iff index ≥ 0) followed by the indexer's
/// top-k slots, each kept iff `0 ≤ slot < (p+1) / ratio` and read through
/// `cmp_block_table`; padded to at least two 128-lane tiles.
#[allow(clippy::too_many_arguments)]
pub fn csa(
    d: &Dims,
    c: &CsaDims,
    indices: &[i32],
    positions: &[i32],
    topk: &[i32],
    cmp_table: &[i32],
    cmp_table_width: usize,
    cmp_pool_blocks: usize,
) -> Result<Vec<Tiles>, GoldenError> {
    let bs = d.block_size;
    let total = c.topk(d);
    let padded = total.div_ceil(ATTN_K_TILE).max(2) * ATTN_K_TILE;
    indices
        .chunks_exact(d.window)
        .zip(topk.chunks_exact(c.index_topk))
        .enumerate()
        .map(|(t, (idx, sel))| {
            let b = t / d.seq;
            let bound = (i64::from(positions[t]) + 1).max(0) / c.ratio as i64;
            let mut lanes: Vec<Candidate> = idx.iter().map(|&i| window_lane(i)).collect();
            for &slot in sel {
                let slot = i64::from(slot);
                if slot < 0 || slot >= bound {
                    lanes.push(Candidate::Masked);
                    continue;
                }
                let slot = slot as usize;
                let page = if slot / bs < cmp_table_width { cmp_table[b * cmp_table_width + slot / bs] } else { -1 };
                let page = usize::try_from(page).ok().filter(|&p| p < cmp_pool_blocks).ok_or_else(|| {
                    GoldenError::Contract(format!(
                        "cmp_block_table[{b}, {}]={page} is not a page of the {cmp_pool_blocks}-page cmp_kv pool \
                         (token {t} selects compressed row {slot})",
                        slot / bs
                    ))
                })?;
                lanes.push(Candidate::Compressed(page * bs + slot % bs));
            }
            lanes.resize(padded, Candidate::Masked);
            Ok(lanes.chunks(ATTN_K_TILE).map(<[Candidate]>::to_vec).collect())
        })
        .collect()
}
