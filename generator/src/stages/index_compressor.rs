//! Stage index_compressor: the lightning indexer's own ratio-4 overlapping compressor
//! (hca_csa.md §4.4, §4.5 end, §5.3), the main compressor's building block with the
//! geometry of the layer's indexer (`IndexerPlan.inner`): its pooled row rotates at the
//! step's first position p0_b, is rounded to bf16, multiplied by the Hadamard matrix and
//! quantised to int8 on its write into `idx_kv_cache` / `idx_kv_scale`.
//! Not planned yet: the stage is marked missing.

use super::compressor::Tiling;
use super::kind::{Data, Kind, Tile, TileCheck, Tiled};
use crate::diag::Diagnostics;
use crate::kernels::Builder;

pub struct IndexCompressor;

impl Kind for IndexCompressor {
    const NAME: &'static str = "index_compressor";
    const NEEDS: &'static [Data] = &[Data::XNormed];
    const PRODUCES: &'static [Data] = &[Data::IndexKeys];
    type Spec = Tiled<Tiling>;
    type Params = Tiling<Tile>;

    fn read(spec: &Tiled<Tiling>, d: &mut Diagnostics) -> Tiling<Tile> {
        spec.tiling.value.read(d)
    }

    fn check(t: &Tiling<Tile>, c: &mut TileCheck) {
        c.matmul(t.m, t.n, t.k, t.tokens);
    }

    fn plan(_: &Tiling<Tile>, b: &mut Builder) {
        b.missing("the index-key compressor has no kernels yet");
    }
}
