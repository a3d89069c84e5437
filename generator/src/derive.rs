//! The second pass, [`Validated`] → one [`Plan`] and its stage list per TP degree: the
//! TP rules, the per-rank shapes and each stage's tile rules.

use crate::diag::{Diagnostics, Loc};
use crate::plan::{self, AbiInput, Plan, TpShape};
use crate::stages::kind::TileCheck;
use crate::stages::{Spec, StagePlan};
use crate::validate::Validated;

pub fn for_tp(
    spec: &Spec,
    base: &Validated,
    &(tp, tp_loc): &(usize, Loc),
    d: &mut Diagnostics,
) -> Option<(Plan, Vec<StagePlan>)> {
    let shape = tp_shape(base, tp, tp_loc, d)?;
    let abi_input = AbiInput {
        model: &base.model,
        rope: &base.rope,
        shape: &shape,
        pools: &base.pools,
        window: base.attention.window,
        compressor: base.compressor.as_ref(),
        indexer: base.indexer.as_ref(),
    };
    let plan = Plan {
        variant: format!("{}_tp{tp}", base.name),
        spec_name: base.name.clone(),
        spec_path: spec.path.clone(),
        spec_hash: spec.hash.clone(),
        layer: base.layer,
        chip: base.chip,
        model: base.model.clone(),
        rope: base.rope.clone(),
        pools: base.pools.clone(),
        compressor: base.compressor.clone(),
        indexer: base.indexer.clone(),
        attention: base.attention.clone(),
        tensors: plan::tensors(&abi_input),
        axes: plan::axes(&abi_input),
        fuse: base.fuse,
        shape,
    };
    let mut stages = Vec::new();
    for st in &base.stages {
        let name = st.params.name();
        // At TP 1 the exchanges are identity: nothing to run or allocate.
        if tp == 1 && st.params.collective() {
            continue;
        }
        st.params
            .check(&mut TileCheck::new(d, &plan, &base.model_locs, name));
        stages.push(StagePlan {
            params: st.params.clone(),
            pad_unaligned: st.pad_unaligned,
        });
    }
    Some((plan, stages))
}

fn tp_shape(base: &Validated, tp: usize, loc: Loc, d: &mut Diagnostics) -> Option<TpShape> {
    let m = &base.model;
    let (batch, seq) = (base.decode_batch, base.decode_seq);
    let tokens = batch * seq;
    let before = d.errors.len();
    if !m.o_groups.is_multiple_of(tp) {
        d.error(
            loc,
            format!("o_groups {} is not divisible by tp {tp}", m.o_groups),
            "each TP degree must divide o_groups: the output projection is sharded by group",
        );
    }
    if tokens % tp != 0 {
        d.error(
            loc,
            format!(
                "token capacity {tokens} (decode_batch x decode_seq) is not divisible by tp {tp}"
            ),
            "each TP degree must divide the token capacity",
        );
    } else if batch % tp != 0 {
        d.error(
            loc,
            format!("decode_batch {batch} is not divisible by tp {tp}"),
            "each TP degree must divide decode_batch: a rank holds whole requests",
        );
    } else if !(tokens / tp).is_multiple_of(8) {
        d.error(
            loc,
            format!(
                "token capacity per rank {} at tp {tp} is not a multiple of 8",
                tokens / tp
            ),
            "the token capacity per rank is a multiple of 8: kernels move tokens in 8-row blocks",
        );
    }
    if d.errors.len() > before {
        return None;
    }
    let local_t = tokens / tp;
    let t_pad = local_t.next_multiple_of(16);
    let local_o_groups = m.o_groups / tp;
    Some(TpShape {
        tp,
        decode_batch: batch,
        decode_seq: seq,
        decode_tokens: tokens,
        b: batch / tp,
        local_t,
        t_pad,
        group_t: tp * local_t,
        group_t_pad: tp * t_pad,
        local_o_groups,
        local_o_width: local_o_groups * m.o_lora_rank,
        attention_window_rows: local_o_groups * tp * t_pad,
        o_window_rows: tp * t_pad,
    })
}
