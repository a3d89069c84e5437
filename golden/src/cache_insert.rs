//! Paged-pool writes through a slot mapping (swa.md §3.4, hca_csa.md §4.2):
//! row `slot` of the flat `[blocks · block_size, width]` pool is overwritten,
//! tokens in ascending order; −1 skips.

use super::GoldenError;

/// Writes `rows[i]` (`width` values each) to pool row `slots[i]` for every
/// `slots[i] ≥ 0`. Values below −1 or rows outside the pool break the mapping
/// contract and are reported, never written.
pub fn insert_rows<T: Copy>(
    pool: &mut [T],
    width: usize,
    rows: &[T],
    slots: &[i64],
    mapping: &str,
) -> Result<(), GoldenError> {
    let pool_rows = pool.len() / width;
    for (i, (&slot, row)) in slots.iter().zip(rows.chunks_exact(width)).enumerate() {
        if slot == -1 {
            continue;
        }
        let r = usize::try_from(slot)
            .ok()
            .filter(|&r| r < pool_rows)
            .ok_or_else(|| {
                GoldenError::Contract(format!(
                    "{mapping}[{i}]={slot}: expected -1 or a row in [0, {pool_rows})"
                ))
            })?;
        pool[r * width..(r + 1) * width].copy_from_slice(row);
    }
    Ok(())
}
