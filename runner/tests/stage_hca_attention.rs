//! Stage sparse_attention of HCA (window + every visible compressed row, hca_csa.md §6.1–6.2)
//! on the CPU model against `golden::{candidates::hca, attention}`: o_packed_heads
//! within the reference's standalone threshold, ratio_allclose(1e-4, 1/128, 0.005), on the
//! valid rows of every group slab, padding rows still poisoned, peak on-chip memory equal to
//! each kernel's planned buffers. (The golden merges compressed rows in the reference's 128-row
//! tiles; the kernel in larger chunks, so the bf16 rounding of its probabilities differs
//! slightly where a request has more than 128 rows: hca_csa.md §6.2 lets a kernel tile
//! freely within tolerance.) Inputs are the HCA
//! fixture's (raw and compressed pools, block tables, window indices, positions, lengths,
//! RoPE rows); q and attn_sink are seeded normals. Requests see 0, 1, a few, a full tile
//! and more than one tile of compressed rows (tokens of one request differing by one row
//! at a tile edge). GM traffic per kernel is printed.

mod attention_checks;
mod support;

use std::time::Instant;

use attention_checks::{CompressedCase, packed_heads};
use golden::LayerKind;
use golden::candidates;
use golden::rope::RopeRows;
use half::bf16;
use support::plan;

const STAGE: &[&str] = &["sparse_attention"];
const SEED: u64 = 20_260_819;

/// Starts per request: 0 compressed rows (< 127), 1 row from the step's own boundary (120)
/// or before it (127, 128), a few (255, 300, 1000), one page (4096), a full tile with the
/// last token one row past the others (16376: rows 127 and 128), two tiles (17000: 132).
const STARTS_TP1: [i32; 16] = [
    0, 7, 120, 127, 128, 255, 300, 1000, 4096, 17000, 16376, 5, 10, 64, 100, 3,
];
const STARTS_TP2: [i32; 8] = [0, 127, 255, 17000, 16376, 5, 1000, 120];

/// The golden o_packed_heads `[o_groups · t_pad, o_group_in]` (padding rows zero); with
/// `window_only` the compressed tiles are left out (to show the case depends on them).
fn expected(case: &CompressedCase, t_pad: usize, window_only: bool) -> Vec<bf16> {
    let d = &case.spec.dims;
    let LayerKind::Hca(h) = &case.spec.kind else {
        unreachable!("an HCA variant")
    };
    let mut tiles = candidates::hca(
        d,
        h,
        case.get("window_swa_indices"),
        case.get("position_ids"),
        case.get("kv_seq_lens"),
        case.get("cmp_block_table"),
        case.width("cmp_block_table"),
        case.cmp_pool_blocks(),
    );
    if window_only {
        tiles.iter_mut().for_each(|t| t.truncate(1));
    }
    let rope = RopeRows::from_tables(
        case.get("freqs_cos"),
        case.get("freqs_sin"),
        d.rope_dim,
        d.half_rope(),
    );
    case.attend(&tiles, &rope, t_pad)
}

/// Runs the stage and checks o_packed_heads, the poisoned padding and the peak memory.
fn check(variant_name: &str, case: &CompressedCase) {
    let p = plan(variant_name);
    let mut tensors = case.tensors(p, &["kv_seq_lens"]);
    let start = Instant::now();
    let stats = support::run(
        support::stages(variant_name, STAGE),
        &mut tensors,
        case.tiling(),
    );
    let elapsed = start.elapsed();

    let (t, t_pad) = (case.t, p.shape.t_pad);
    let want = expected(case, t_pad, false);
    assert_ne!(
        want,
        expected(case, t_pad, true),
        "the case must depend on compressed rows"
    );
    let got = tensors["o_packed_heads"].values::<bf16>().unwrap();
    let worst = packed_heads(variant_name, p, got, &want, t, 0.005);
    support::check_peaks(&p.variant, &stats);
    println!("{variant_name}, t = {t}: stage {elapsed:.2?}, max |d| {worst:.2e}");
    for (kernel, s) in &stats {
        println!(
            "  {kernel}: GM {} B, scalar GM reads {}",
            s.gm_bytes(),
            s.scalar_gm_reads
        );
    }
}

#[test]
fn hca_small_tp1_window_and_compressed_rows_at_capacity_and_below() {
    let case = CompressedCase::new("hca_small_tp1", &STARTS_TP1, SEED);
    assert_eq!(case.t, plan("hca_small_tp1").shape.local_t);
    check("hca_small_tp1", &case);
    let case = CompressedCase::new("hca_small_tp1", &STARTS_TP1[..STARTS_TP1.len() - 1], SEED);
    check("hca_small_tp1", &case);
}

#[test]
fn hca_small_tp2_rank_at_capacity_and_below() {
    let case = CompressedCase::new("hca_small_tp2", &STARTS_TP2, SEED);
    assert_eq!(case.t, plan("hca_small_tp2").shape.local_t);
    check("hca_small_tp2", &case);
    let case = CompressedCase::new("hca_small_tp2", &STARTS_TP2[..STARTS_TP2.len() - 1], SEED);
    check("hca_small_tp2", &case);
}
