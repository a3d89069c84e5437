//! Stage cache_insert (swa.md §3.4, hca_csa.md §4.2), building block
//! `dsv4/cache_insert.h`: each token's kv row into the paged raw pool through the
//! slot mapping (SWA names it `swa_slot_mapping`, compressed layers
//! `ori_slot_mapping`). A launch of its own, so it completes before attention; with fusion
//! on, KvFinish's launch before it writes the rows to their slots itself (KvFinishInsert).

use abi::{DType, Dim};

use super::kind::{Data, Kind, Tile, TileCheck, Tiled, tiling};
use crate::budget::row;
use crate::chip::Mem::Ub;
use crate::diag::Diagnostics;
use crate::kernel_plan::{Builder, Cores, Kernel, Prologue, Value};

pub struct CacheInsert;

tiling! {
    /// `tokens` kv rows staged per DMA.
    tokens
}

impl Kind for CacheInsert {
    const NAME: &'static str = "cache_insert";
    const NEEDS: &'static [Data] = &[Data::Kv];
    const PRODUCES: &'static [Data] = &[Data::KvCache];
    type Spec = Tiled<Tiling>;
    type Params = Tiling<Tile>;

    fn read(spec: &Tiled<Tiling>, d: &mut Diagnostics) -> Tiling<Tile> {
        spec.tiling.value.read(d)
    }

    fn check(t: &Tiling<Tile>, c: &mut TileCheck) {
        c.tokens(t.tokens);
    }

    fn plan(t: &Tiling<Tile>, b: &mut Builder) {
        let p = b.plan;
        let Some(slots) = ["swa_slot_mapping", "ori_slot_mapping"]
            .into_iter()
            .find(|n| p.tensor(n).is_some())
        else {
            b.missing("the ABI has no slot mapping for the window cache");
            return;
        };
        let tokens = t.tokens.value;
        let (hd, bs) = (p.model.head_dim, p.pools.block_size);
        // The kernel moves whole 32-byte blocks (no DataCopyPad path): 16 bf16 per block.
        if hd % 16 != 0 {
            b.missing(format!(
                "head_dim {hd} is not a multiple of 16 (cache_insert.h moves whole 32-byte blocks of bf16)"
            ));
            return;
        }
        b.workspace("kv", vec![Dim::Var("t"), Dim::Const(hd)], DType::Bf16);
        let kernel = Kernel {
            name: format!("cache_insert_d{hd}_bs{bs}_t{tokens}"),
            doc: "kv rows into the paged pool at their slots; -1 skips".into(),
            block: "cache_insert.h",
            class: "CacheInsert",
            cores: Cores::Aiv,
            params: vec![
                ("HEAD_DIM", Value::U32(hd as u32)),
                ("BLOCK_SIZE", Value::U32(bs as u32)),
                ("TOKENS", Value::U32(tokens as u32)),
            ],
            args: vec!["kv", "slots", "kv_cache"],
            // `tokens` kv rows staged per DMA; the slots are scalar GM reads.
            buffers: vec![row("kv_rows", Ub, DType::Bf16, tokens * hd, 2, Some(hd))],
            parts: Vec::new(),
        };
        // The kv rows KvFinish makes can go straight to their slots: it is then this launch's
        // prologue (KvFinishInsert) and kv never reaches GM.
        let offer = match b.last_launch() {
            Some((l, finish)) if p.fuse && finish.class == "KvFinish" => {
                Some(with_finish(finish, l.block_dim, &kernel, bs))
            }
            _ => None,
        };
        let blocks = p.chip.aiv_cores.min(p.shape.local_t);
        b.launch_spreading(kernel, blocks as u32, &["kv", slots, "kv_cache"]);
        if let Some(offer) = offer {
            b.spreads(&offer.fused.name);
            b.prologue(offer);
        }
    }
}

/// `dsv4/qkv_proj_rope.h` KvFinishInsert: `finish` (KvFinish, launched on `blocks`) writing
/// each row to its pool row at the slot, as `insert` would copy it.
fn with_finish(finish: &Kernel, blocks: u32, insert: &Kernel, block_size: usize) -> Prologue {
    let mut params = finish.params.clone();
    params.push(("BLOCK_SIZE", Value::u32(block_size)));
    let mut args: Vec<&'static str> = finish.args.clone();
    args.retain(|a| *a != "kv");
    args.extend(["slots", "kv_cache"]);
    Prologue {
        producer: finish.name.clone(),
        consumer: insert.name.clone(),
        input: "kv",
        block_dim: blocks,
        fused: Kernel {
            name: format!("{}_insert_bs{block_size}", finish.name),
            doc: format!("{}, each row into the paged pool at its slot", finish.doc),
            class: "KvFinishInsert",
            params,
            args,
            ..finish.clone()
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// KvFinishInsert is KvFinish with the pool's page size, its kv argument replaced by the
    /// slots and the pool (position_ids, where it takes them, stay before them), on
    /// KvFinish's blocks.
    #[test]
    fn kv_finish_writes_to_the_slots_in_place_of_kv() {
        let finish = Kernel {
            name: "qkv_kv_finish_positions".into(),
            doc: "kv".into(),
            block: "qkv_proj_rope.h",
            class: "KvFinish",
            cores: Cores::Aiv,
            params: vec![("HD", Value::u32(512))],
            args: vec!["latent", "gamma", "cos", "sin", "positions", "kv"],
            buffers: vec![row("kv_out", Ub, DType::Bf16, 512, 2, Some(512))],
            parts: Vec::new(),
        };
        let insert = Kernel {
            name: "cache_insert".into(),
            ..finish.clone()
        };
        let offer = with_finish(&finish, 8, &insert, 32);
        assert_eq!((offer.input, offer.block_dim), ("kv", 8));
        assert_eq!(
            (offer.producer.as_str(), offer.consumer.as_str()),
            ("qkv_kv_finish_positions", "cache_insert")
        );
        let fused = offer.fused;
        assert_eq!(
            (fused.class, fused.name.as_str()),
            ("KvFinishInsert", "qkv_kv_finish_positions_insert_bs32")
        );
        assert_eq!(
            fused.args,
            [
                "latent",
                "gamma",
                "cos",
                "sin",
                "positions",
                "slots",
                "kv_cache"
            ]
        );
        assert_eq!(fused.params.last(), Some(&("BLOCK_SIZE", Value::u32(32))));
        assert_eq!(fused.buffers, finish.buffers);
    }
}
