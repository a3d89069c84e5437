//! Stage cache_insert (swa.md §3.4) on the CPU model against
//! `golden::cache_insert::insert_rows`. The stage is a bit copy, so the
//! whole pool must match bit for bit: mapped rows hold their token's kv row, every
//! other row keeps its initial value. Slot mappings: the fixture's (the default
//! start set, whose long start wraps into the physical pool), the same with tokens
//! skipped by −1, and a run of rows that wraps past the end of the pool. kv rows and
//! slots past the runtime count are poison and slot 0, so reading them shows up.

mod stage_checks;
mod support;

use std::collections::BTreeMap;

use golden::arith::narrow;
use golden::cache_insert::insert_rows;
use golden::fixtures::block_table::BlockTable;
use golden::fixtures::metadata::{positions, slot_mapping};
use golden::fixtures::random::Draws;
use half::bf16;
use harness::runtime::Runtime;
use kernelgen::plan::Plan;
use stage_checks::{check_launches, tensor, tiling};

const SEED: u64 = 20_260_819;
const STAGE: &str = "cache_insert";

/// The reference's default SWA start positions (swa.md §4.1: long, window − 1, short)
/// on the fixture's interleaved table for the rank's full batch, so each request keeps
/// its private ring of pages when fewer requests run.
fn fixture_slots(p: &Plan, t: usize) -> Vec<i64> {
    let (seq, bs) = (p.shape.decode_seq, p.pools.block_size);
    let pattern = [8192, p.attention.window as i32 - 1, 31];
    let starts: Vec<i32> = (0..t / seq).map(|b| pattern[b % 3]).collect();
    let table = BlockTable::interleaved(
        p.shape.b,
        p.pools.max_positions.div_ceil(bs),
        p.pools.kv_pool_blocks,
    );
    slot_mapping(&positions(&starts, seq), seq, &table, bs)
}

/// Consecutive rows starting `3 · seq` rows before the end of the pool, so the run
/// wraps to row 0; every fifth token skipped.
fn ring_slots(p: &Plan, t: usize) -> Vec<i64> {
    let rows = p.pools.kv_pool_rows as i64;
    (0..t as i64)
        .map(|i| {
            if i % 5 == 4 {
                -1
            } else {
                (rows - 3 * p.shape.decode_seq as i64 + i) % rows
            }
        })
        .collect()
}

fn check(p: &Plan, rt: &Runtime, draws: &Draws, t: usize, slots: &[i64], what: &str) {
    let (cap, hd) = (p.shape.local_t, p.model.head_dim);
    let (blocks, bs) = (p.pools.kv_pool_blocks, p.pools.block_size);
    let mut unique: Vec<i64> = slots.iter().copied().filter(|&s| s >= 0).collect();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(
        unique.len(),
        slots.iter().filter(|&&s| s >= 0).count(),
        "{what}: the test mapping writes a row twice"
    );
    let mut kv = narrow(&draws.normal("kv", cap * hd, 1.0));
    kv[t * hd..].fill(bf16::NAN);
    let pool = narrow(&draws.normal("kv_cache", blocks * bs * hd, 1.0));
    let mut mapping = slots.to_vec();
    mapping.resize(cap, 0);
    let mut tensors = BTreeMap::from([
        ("kv".to_string(), tensor(vec![cap, hd], kv.clone())),
        ("swa_slot_mapping".to_string(), tensor(vec![cap], mapping)),
        (
            "kv_cache".to_string(),
            tensor(vec![blocks, bs, 1, hd], pool.clone()),
        ),
    ]);
    let stats = support::run(rt, &mut tensors, tiling(p, t));
    check_launches(p, &stats);
    let mut want = pool;
    insert_rows(&mut want, hd, &kv[..t * hd], slots, "swa_slot_mapping").expect("valid mapping");
    let got = tensors["kv_cache"].values::<bf16>().expect("bf16 pool");
    if let Some(i) = (0..want.len()).find(|&i| got[i].to_bits() != want[i].to_bits()) {
        let row = (i / hd) as i64;
        let token = slots.iter().position(|&s| s == row);
        panic!(
            "{} t={t} {what}: kv_cache row {row} col {} = {}, want {} ({})",
            p.variant,
            i % hd,
            got[i],
            want[i],
            match token {
                Some(tok) => format!("mapped by token {tok}"),
                None => "unmapped: must keep its initial value".into(),
            }
        );
    }
}

fn variant(name: &str) {
    let p = support::plan(name);
    let rt = support::stages(name, &[STAGE]);
    let draws = Draws::new(SEED + p.shape.tp as u64);
    for t in [p.shape.local_t, p.shape.local_t - 8] {
        let fixture = fixture_slots(p, t);
        check(p, rt, &draws, t, &fixture, "fixture mapping");
        let skipped: Vec<i64> = fixture
            .iter()
            .enumerate()
            .map(|(i, &s)| if i % 3 == 1 { -1 } else { s })
            .collect();
        check(p, rt, &draws, t, &skipped, "every third token skipped");
        check(
            p,
            rt,
            &draws,
            t,
            &ring_slots(p, t),
            "run wrapping past the pool end",
        );
    }
}

// With fusion on, KvFinish's launch inserts the rows itself (KvFinishInsert, checked by
// stage_qkv_proj_rope): cache_insert's own launch runs in the plans without fusion.
#[test]
fn swa_small_unfused_tp1_copies_exactly_the_mapped_rows() {
    variant("swa_small_unfused_tp1");
}

#[test]
fn swa_small_unfused_tp2_copies_exactly_the_mapped_rows() {
    variant("swa_small_unfused_tp2");
}
