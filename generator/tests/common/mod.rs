//! Small valid specs the tests edit, and helpers to locate text in them.
#![allow(dead_code)] // each test binary uses a subset

use kernelgen::diag::SpecError;
use kernelgen::spec;
use kernelgen::variant::{self, Variant};

/// A small SWA layer (tp 1, 2, 4; o_groups 8 also allows tp 8).
pub const SWA: &str = "\
name: t
layer: swa
target: 910b
tp: [1, 2, 4]
model:
  hidden: 512
  heads: 16
  head_dim: 128
  rope_dim: 64
  q_lora_rank: 128
  o_lora_rank: 128
  o_groups: 8
  hc_mult: 4
  hc_sinkhorn_iters: 20
  hc_eps: 1.0e-6
  rms_eps: 1.0e-6
  rope:
    theta: 10000.0
    table: per_token
deployment:
  decode_batch: 16
  decode_seq: 8
  block_size: 32
  kv_pool_blocks: 64
  max_positions: 1048576
stages:
  - hc_pre:
      tiling: { m: 16, k: 128, tokens: 8, cols: 256 }
  - rms_norm:
      tiling: { tokens: 8, cols: 256 }
  - qkv_proj_rope:
      tiling: { m: 32, n: 128, k: 128, tokens: 8 }
  - cache_insert:
      tiling: { tokens: 8 }
  - sparse_attention:
      window: 128
      sources: [window]
      tiling: { heads: 8, kv_rows: 128, d: 64 }
  - o_group_all_to_all:
      tiling: { rows: 8, cols: 256 }
  - o_proj:
      tiling: { m: 32, n: 128, k: 128, tokens: 8 }
  - o_reduce_scatter:
      tiling: { rows: 8, cols: 256 }
  - hc_post:
      tiling: { tokens: 8, cols: 128 }
";

/// The compressor stage an HCA layer adds after cache_insert.
pub const HCA_COMPRESSOR: &str = "  - compressor:
      ratio: 128
      overlap: false
      state_block_size: 8
      state_pool_blocks: 64
      cmp_pool_blocks: 16
      tiling: { m: 32, n: 128, k: 128, tokens: 8, channels: 32 }
";

/// Compressors and indexer stages a CSA layer adds after cache_insert.
pub const CSA_STAGES: &str = "  - compressor:
      ratio: 4
      overlap: true
      state_block_size: 2
      state_pool_blocks: 64
      cmp_pool_blocks: 16
      tiling: { m: 32, n: 128, k: 128, tokens: 8, channels: 64 }
  - index_compressor:
      tiling: { m: 32, n: 128, k: 128, tokens: 8, channels: 64 }
  - index_query:
      tiling: { m: 32, n: 128, k: 128, tokens: 2 }
  - indexer:
      heads: 4
      head_dim: 128
      topk: 64
      state_block_size: 2
      state_pool_blocks: 64
      key_pool_blocks: 16
      tiling: { m: 32, n: 128, k: 128, key_rows: 128 }
      unaligned_rows: data_copy_pad
";

const YARN: &str = "    theta: 160000.0
    yarn: { factor: 16.0, beta_fast: 32.0, beta_slow: 1.0, original_max_positions: 65536 }
";

fn insert_after_cache_insert(text: &str, stages: &str) -> String {
    let anchor = "  - cache_insert:\n      tiling: { tokens: 8 }\n";
    replace(text, anchor, &format!("{anchor}{stages}"))
}

pub fn hca() -> String {
    let t = replace(SWA, "layer: swa", "layer: hca");
    let t = replace(&t, "    theta: 10000.0\n", YARN);
    let t = replace(&t, "sources: [window]", "sources: [window, compressed]");
    insert_after_cache_insert(&t, HCA_COMPRESSOR)
}

/// The snapshot CSA (paged state, the whole RoPE table), knowingly incomplete (`draft:
/// true`): index_query's kernels take whole blocks of 8 index heads, it has 4.
pub fn csa() -> String {
    let t = replace(SWA, "layer: swa", "layer: csa\ndraft: true");
    let t = replace(&t, "    theta: 10000.0\n", YARN);
    let t = replace(&t, "table: per_token", "table: positions");
    let t = replace(&t, "sources: [window]", "sources: [window, indexed]");
    // The reference snapshot's CSA ceiling.
    let t = replace(&t, "max_positions: 1048576", "max_positions: 16384");
    insert_after_cache_insert(&t, CSA_STAGES)
}

/// The ring CSA (pypto-lib PR #1013): csa() with the compressor state in rings and
/// token-local RoPE rows, at 1M positions.
pub fn csa_ring() -> String {
    let t = replace(&csa(), "table: positions", "table: per_token");
    let t = replace(&t, "max_positions: 16384", "max_positions: 1048576");
    replace(
        &t,
        "      state_block_size: 2\n      state_pool_blocks: 64\n      cmp_pool_blocks",
        "      state_block_size: 2\n      state: ring\n      state_pool_blocks: 64\n      cmp_pool_blocks",
    )
}

/// Replaces the first occurrence of `from`, which must be present.
pub fn replace(text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from), "edit target not found: {from:?}");
    text.replacen(from, to, 1)
}

/// Parses and plans `text` as `specs/test/bad.yaml`.
pub fn check(text: &str) -> Result<Vec<Variant>, Vec<SpecError>> {
    let spec = spec::parse("specs/test/bad.yaml", text).map_err(|e| vec![e])?;
    variant::build(&spec)
}

/// The spec's TP 1 variant.
pub fn tp1(text: &str) -> Variant {
    let variants = check(text).unwrap_or_else(|e| panic!("{}", e[0]));
    variants
        .into_iter()
        .find(|v| v.plan.shape.tp == 1)
        .expect("a TP 1 variant")
}

/// The launches of `stage` in the spec's TP 1 plan, in launch order: (kernel, blocks).
pub fn tp1_launches(text: &str, stage: &str) -> Vec<(String, u32)> {
    tp1(text)
        .kernels
        .steps
        .iter()
        .filter_map(|s| match s {
            abi::plan::Step::Launch(l) if l.stage == stage => {
                Some((l.kernel.to_string(), l.block_dim))
            }
            _ => None,
        })
        .collect()
}

/// 1-based (line, column) of `token` inside the only line containing `line_needle`.
pub fn locate(text: &str, line_needle: &str, token: &str) -> (u64, u64) {
    let hits: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains(line_needle))
        .collect();
    assert_eq!(hits.len(), 1, "needle {line_needle:?} must pick one line");
    let (n, line) = hits[0];
    let col = line
        .find(token)
        .unwrap_or_else(|| panic!("{token:?} not in {line:?}"));
    (n as u64 + 1, col as u64 + 1)
}
