//! SWA: a sliding window over the paged KV cache (swa.md).

use super::Family;
use crate::compare::Check;
use crate::dims::{Dims, LayerSpec, SwaDims};
use crate::error::GoldenError;
use crate::fixtures::start_pos::LONG_START;
use crate::fixtures::{self, Fixture, FixtureError, FixtureOptions};
use crate::layer;
use crate::signature::Sig;
use crate::signature::entry::{Role::In, pool, sig};
use crate::tensor::TensorMap;
use abi::DType::*;

impl Family for SwaDims {
    fn tensors(&self, d: &Dims, t: usize) -> Vec<Sig> {
        let (rope_rows, rope) = (d.rope_table_rows(t), d.rope_dim);
        vec![
            sig("freqs_cos", Bf16, &[rope_rows, rope], In),
            sig("freqs_sin", Bf16, &[rope_rows, rope], In),
            pool("kv_cache", Bf16, d.block_size, &[1, d.head_dim]),
            sig("swa_slot_mapping", I64, &[t], In),
            sig("swa_indices", I32, &[t, d.window], In),
            sig("swa_lens", I32, &[t], In),
            sig("position_ids", I32, &[t], In),
        ]
    }

    fn pool_mapping(&self, d: &Dims, pool: &str) -> Option<(&'static str, usize)> {
        (pool == "kv_cache").then_some(("swa_slot_mapping", d.block_size))
    }

    fn start_set(&self, d: &Dims) -> Vec<i64> {
        vec![LONG_START, d.window as i64 - 1, 31]
    }

    fn fixture(
        &self,
        spec: &LayerSpec,
        opts: &FixtureOptions,
        batch: usize,
    ) -> Result<Fixture, FixtureError> {
        fixtures::swa::build(spec, opts, batch)
    }

    fn run(
        &self,
        d: &Dims,
        inputs: &TensorMap,
        t: usize,
    ) -> Result<(TensorMap, TensorMap), GoldenError> {
        Ok((layer::swa::run(d, inputs, t)?, TensorMap::new()))
    }

    fn checks(&self) -> Vec<Check> {
        vec![
            Check::reldiff("x_out", 3e-3),
            Check::all_close("kv_cache", 1e-4, 1.0 / 128.0, 0.005),
        ]
    }
}
