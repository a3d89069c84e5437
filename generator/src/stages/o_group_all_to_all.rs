//! Stage o_group_all_to_all (swa.md §3.8 step 1), present only at TP > 1: a data-movement
//! step (the runtime moves rows between ranks) from every rank's `o_packed_heads` to the
//! owner's `attention_local`, rank-major with compact stride t. `attention_local` stands
//! in for the reference's symmetric `attention_window` (same shape); its signal arrays
//! have no counterpart (the runtime's steps are barriers).

use abi::{DType, Dim};

use super::kind::{Data, Kind, Tile, TileCheck, Tiled, tiling};
use crate::diag::Diagnostics;
use crate::kernel_plan::{Builder, Step};

pub struct OGroupAllToAll;

tiling! {
    /// `rows` token rows × `cols` columns per transfer.
    rows, cols
}

impl Kind for OGroupAllToAll {
    const NAME: &'static str = abi::plan::GROUP_ALL_TO_ALL;
    const NEEDS: &'static [Data] = &[Data::Attention];
    const PRODUCES: &'static [Data] = &[Data::Grouped];
    const COLLECTIVE: bool = true;
    type Spec = Tiled<Tiling>;
    type Params = Tiling<Tile>;

    fn read(spec: &Tiled<Tiling>, d: &mut Diagnostics) -> Tiling<Tile> {
        spec.tiling.value.read(d)
    }

    fn check(t: &Tiling<Tile>, c: &mut TileCheck) {
        c.tokens(t.rows);
        c.divides(t.cols, "cols", c.plan.model.o_group_in, "o_group_in");
    }

    fn plan(_: &Tiling<Tile>, b: &mut Builder) {
        let (m, sh) = (&b.plan.model, &b.plan.shape);
        let (src, dst) = ("o_packed_heads", "attention_local");
        let step = Step::GroupAllToAll {
            src,
            dst,
            local_groups: sh.local_o_groups,
            src_slab_rows: sh.t_pad,
            dst_slab_rows: sh.group_t_pad,
        };
        let (src_rows, dst_rows) = (m.o_groups * sh.t_pad, sh.attention_window_rows);
        let width = m.o_group_in;
        b.workspace(
            src,
            vec![Dim::Const(src_rows), Dim::Const(width)],
            DType::Bf16,
        );
        b.workspace(
            dst,
            vec![Dim::Const(dst_rows), Dim::Const(width)],
            DType::Bf16,
        );
        b.step(step);
    }
}
