//! Checks and cases shared by the attention stage tests (SWA window, HCA window +
//! compressed rows, CSA window + indexed rows).

#![allow(dead_code)] // each test binary uses part of this module

use std::collections::BTreeMap;

use golden::LayerSpec;
use golden::attention::{KvSources, pack_heads, sparse_attention};
use golden::candidates::Tiles;
use golden::compare::ratio_allclose;
use golden::fixtures::random::Draws;
use golden::rope::RopeRows;
use golden::tensor::{Element, Tensor, TensorMap};
use half::bf16;
use harness::backend::Tiling;
use kernelgen::plan::Plan;

use crate::support;

/// One rank's inputs of the attention stage of a layer with compressed rows (HCA, CSA) for
/// `starts` ([`support::rank_fixture`]), and seeded normal q and attn_sink.
pub struct CompressedCase {
    pub spec: LayerSpec,
    pub t: usize,
    pub inputs: TensorMap,
    pub q: Vec<bf16>,
    pub sink: Vec<f32>,
}

impl CompressedCase {
    /// The fixture from `seed`, q and attn_sink from `seed + 1`.
    pub fn new(variant_name: &str, starts: &[i32], seed: u64) -> CompressedCase {
        let (spec, inputs) = support::rank_fixture(support::plan(variant_name), starts, seed);
        let d = &spec.dims;
        let t = starts.len() * d.seq;
        let draws = Draws::new(seed + 1);
        let q = draws
            .normal("q", t * d.heads * d.head_dim, 1.0)
            .into_iter()
            .map(bf16::from_f32)
            .collect();
        let sink = draws.normal("attn_sink", d.heads, 1.0);
        CompressedCase {
            t,
            inputs,
            q,
            sink,
            spec,
        }
    }

    pub fn get<T: Element>(&self, name: &str) -> &[T] {
        self.inputs.values::<T>(name).unwrap()
    }

    pub fn width(&self, name: &str) -> usize {
        self.inputs.get(name).unwrap().shape()[1]
    }

    pub fn cmp_pool_blocks(&self) -> usize {
        self.inputs.get("cmp_kv").unwrap().shape()[0]
    }

    /// The golden o_packed_heads `[o_groups · t_pad, o_group_in]` (padding rows zero) of
    /// the candidate `tiles` over the raw and compressed pools, de-rotated with `rope`.
    pub fn attend(&self, tiles: &[Tiles], rope: &RopeRows, t_pad: usize) -> Vec<bf16> {
        let d = &self.spec.dims;
        let kv = KvSources {
            raw: self.get("kv_cache"),
            compressed: self.get("cmp_kv"),
            width: d.head_dim,
        };
        let o = sparse_attention(d, &self.q, tiles, kv, &self.sink, rope);
        pack_heads(d, &o, t_pad)
    }

    /// Kernel inputs by name: q at capacity with NaN rows past t (never to be read),
    /// attn_sink, and the fixture's window inputs, compressed pool and `more`.
    pub fn tensors(&self, p: &Plan, more: &[&str]) -> BTreeMap<String, Tensor> {
        let d = &self.spec.dims;
        let (h, hd, cap) = (d.heads, d.head_dim, p.shape.local_t);
        let mut q = self.q.clone();
        q.resize(cap * h * hd, bf16::NAN);
        let mut out = BTreeMap::new();
        out.insert(
            "q".to_string(),
            Tensor::from_vec(vec![cap, h, hd], q).unwrap(),
        );
        out.insert(
            "attn_sink".to_string(),
            Tensor::from_vec(vec![h], self.sink.clone()).unwrap(),
        );
        let window = [
            "kv_cache",
            "window_swa_indices",
            "window_swa_lens",
            "freqs_cos",
            "freqs_sin",
            "cmp_kv",
            "cmp_block_table",
            "position_ids",
        ];
        for &name in window.iter().chain(more) {
            out.insert(name.to_string(), self.inputs.get(name).unwrap().clone());
        }
        out
    }

    pub fn tiling(&self) -> Tiling {
        let d = &self.spec.dims;
        support::tiling(&[
            ("t", self.t),
            ("b", self.t / d.seq),
            ("nb", d.kv_pool_blocks),
            ("group_t", self.t),
            ("cmp_nb", self.cmp_pool_blocks()),
            ("cmp_tw", self.width("cmp_block_table")),
        ])
    }
}

/// o_packed_heads `[group, t_pad, width]`: the first `t` rows of every group within
/// ratio_allclose(1e-4, 1/128, max_error_ratio) of `want`, the padding rows still
/// poisoned. Returns the largest absolute difference.
pub fn packed_heads(
    variant: &str,
    p: &Plan,
    got: &[bf16],
    want: &[bf16],
    t: usize,
    max_error_ratio: f64,
) -> f32 {
    let (t_pad, width) = (p.shape.t_pad, p.model.o_group_in);
    assert_eq!(got.len(), want.len());
    let mut worst = 0.0f32;
    for g in 0..p.model.o_groups {
        let valid = (g * t_pad) * width..(g * t_pad + t) * width;
        let slab =
            |v: &[bf16]| Tensor::from_vec(vec![t, width], v[valid.clone()].to_vec()).unwrap();
        let report = ratio_allclose(
            &format!("o_packed_heads group {g}"),
            &slab(got),
            &slab(want),
            1e-4,
            1.0 / 128.0,
            max_error_ratio,
        );
        assert!(report.pass, "{variant}, t = {t}: {}", report.detail());
        for (a, e) in got[valid.clone()].iter().zip(&want[valid]) {
            worst = worst.max((a.to_f32() - e.to_f32()).abs());
        }
        let padding = &got[(g * t_pad + t) * width..(g + 1) * t_pad * width];
        assert!(
            padding.iter().all(|v| v.to_bits() == 0xFFFF),
            "{variant}: group {g} padding rows >= {t} were written"
        );
    }
    worst
}
