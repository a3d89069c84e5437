//! The TP collectives around the sharded output projection (swa.md §3.8),
//! modelled as the data movement they perform between ranks' buffers.

use super::arith::to_bf16;
use super::dims::Dims;
use half::bf16;

/// o_group_a2a: every rank sends each group's first `local_t` packed rows to
/// the rank owning that group. Input per rank: packed heads
/// `[o_groups, t_pad, o_group_in]`. Output per rank: its `local_o_groups`
/// slabs `[local_o_groups, tp · local_t, o_group_in]`, tokens rank-major
/// (`src · local_t + t`, compact stride).
pub fn all_to_all_groups(
    d: &Dims,
    packed: &[Vec<bf16>],
    t_pad: usize,
    local_t: usize,
) -> Vec<Vec<bf16>> {
    let (tp, lg, group_in) = (d.tp, d.local_o_groups(), d.o_group_in());
    let group_t = tp * local_t;
    (0..tp)
        .map(|dst| {
            let mut window = vec![bf16::ZERO; lg * group_t * group_in];
            for l in 0..lg {
                let g = dst * lg + l;
                for (src, rank_packed) in packed.iter().enumerate() {
                    let from = &rank_packed[g * t_pad * group_in..(g * t_pad + local_t) * group_in];
                    let at = (l * group_t + src * local_t) * group_in;
                    window[at..at + local_t * group_in].copy_from_slice(from);
                }
            }
            window
        })
        .collect()
}

/// o_proj_reduce_scatter: owner `o` receives rows `[o · local_t, (o+1) · local_t)`
/// of every rank's f32 partial `[tp · local_t, width]` and sums them over
/// source ranks in ascending order, then rounds to bf16 once.
pub fn reduce_scatter(partials: &[Vec<f32>], local_t: usize, width: usize) -> Vec<Vec<bf16>> {
    let tp = partials.len();
    (0..tp)
        .map(|owner| {
            let rows = owner * local_t * width..(owner + 1) * local_t * width;
            let mut sum = partials[0][rows.clone()].to_vec();
            for p in &partials[1..] {
                sum.iter_mut()
                    .zip(&p[rows.clone()])
                    .for_each(|(s, &v)| *s += v);
            }
            sum.iter().map(|&v| to_bf16(v)).collect()
        })
        .collect()
}
