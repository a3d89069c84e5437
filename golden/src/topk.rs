//! Top-k selection with a defined tie order (hca_csa.md §5.5): descending
//! score, equal scores by ascending index. torch.topk and the hardware sort
//! leave ties unspecified; comparators tolerate tie swaps.

/// The indices of the `k` largest scores, best first.
pub fn top_k(scores: &[f32], k: usize) -> Vec<usize> {
    let order = |&a: &usize, &b: &usize| scores[b].total_cmp(&scores[a]).then(a.cmp(&b));
    let mut idx: Vec<usize> = (0..scores.len()).collect();
    let k = k.min(idx.len());
    if k == 0 {
        return Vec::new();
    }
    if k < idx.len() {
        idx.select_nth_unstable_by(k - 1, order);
        idx.truncate(k);
    }
    idx.sort_unstable_by(order);
    idx
}
