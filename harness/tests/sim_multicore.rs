//! Multi-core execution: core indices per launch mode, cross-core flags, SyncAll, atomic
//! accumulation, and concurrent launches from several Rust threads.

#[path = "sim_kernels/support.rs"]
mod support;

use harness::kernel_library::{CoreMode, GmArg, SimError, poison};
use rand::RngExt;
use support::{lib, rng};

/// int32 per core slot in the kernels' scalar-written GM: one 64-byte cache line, so no
/// two cores write back the same line (GlobalTensor/SetValue.md).
const SLOT: usize = 16;

fn ids(mode: CoreMode, block_dim: u32) -> (Vec<i32>, Vec<i32>) {
    let mut aiv = vec![0i32; SLOT * 2 * block_dim as usize];
    let mut aic = vec![0i32; SLOT * block_dim as usize];
    poison(&mut aiv);
    poison(&mut aic);
    lib()
        .launch(
            "sim_core_ids",
            mode,
            block_dim,
            &mut [GmArg::new("aiv", &mut aiv), GmArg::new("aic", &mut aic)],
        )
        .unwrap();
    (aiv, aic)
}

#[test]
fn block_and_sub_block_indices_follow_the_dav_c220_topology() {
    // AIV-only: blockDim vector cores, sub-block 0, one sub-block per block
    let (aiv, aic) = ids(CoreMode::Aiv, 3);
    for b in 0..3 {
        assert_eq!(&aiv[SLOT * b..SLOT * b + 4], &[b as i32, 3, 0, 1]);
    }
    let written = |i: usize| i < 3 * SLOT && i % SLOT < 4;
    assert!(
        aiv.iter()
            .enumerate()
            .filter(|&(i, _)| !written(i))
            .chain(aic.iter().enumerate())
            .all(|(_, &v)| v == -1),
        "no other core wrote"
    );
    // AIC-only
    let (aiv, aic) = ids(CoreMode::Aic, 2);
    assert!(aiv.iter().all(|&v| v == -1));
    for b in 0..2 {
        assert_eq!(&aic[SLOT * b..SLOT * b + 4], &[b as i32, 2, 0, 1]);
    }
    // MIX 1:2: AIV GetBlockIdx = block * 2 + sub, GetBlockNum = blockDim
    let (aiv, aic) = ids(CoreMode::Mix, 2);
    for v in 0..4 {
        assert_eq!(
            &aiv[SLOT * v..SLOT * v + 4],
            &[v as i32, 2, (v % 2) as i32, 2]
        );
    }
    for b in 0..2 {
        assert_eq!(&aic[SLOT * b..SLOT * b + 4], &[b as i32, 2, 0, 1]);
    }
}

#[test]
fn mixed_kernel_hands_off_through_cross_core_flags() {
    let blocks = 3;
    let mut data = vec![0i32; SLOT * 2 * blocks];
    let mut out = vec![0i32; SLOT * blocks];
    poison(&mut out);
    let stats = lib()
        .launch(
            "sim_mix_pingpong",
            CoreMode::Mix,
            blocks as u32,
            &mut [GmArg::new("data", &mut data), GmArg::new("out", &mut out)],
        )
        .unwrap();
    for b in 0..blocks as i32 {
        for r in 0..3 {
            assert_eq!(
                out[b as usize * SLOT + r as usize],
                (2 * b + 1) * 100 + r + (2 * b + 2) * 100 + r,
                "block {b} round {r}"
            );
        }
    }
    assert_eq!(stats.scalar_gm_writes, (blocks * 3 * (2 + 1)) as u64);
    assert_eq!(stats.scalar_gm_reads, (blocks * 3 * 2) as u64);
}

#[test]
fn syncall_orders_all_vector_cores() {
    let cores = 6;
    let mut partial = vec![0i32; SLOT * cores];
    let mut out = vec![0i32; 2];
    lib()
        .launch(
            "sim_syncall",
            CoreMode::Aiv,
            cores as u32,
            &mut [
                GmArg::new("partial", &mut partial),
                GmArg::new("out", &mut out),
            ],
        )
        .unwrap();
    let s: i32 = (1..=cores as i32).sum();
    assert_eq!(out, vec![s, 10 * s]);
}

#[test]
fn atomic_add_accumulates_every_core() {
    let cores = 5;
    let mut r = rng(100);
    let mut x: Vec<f32> = (0..64)
        .map(|_| r.random_range(-100i32..100) as f32)
        .collect();
    let base: Vec<f32> = (0..64)
        .map(|_| r.random_range(-100i32..100) as f32)
        .collect();
    let mut out = base.clone();
    let stats = lib()
        .launch(
            "sim_atomic_add",
            CoreMode::Aiv,
            cores,
            &mut [GmArg::new("x", &mut x), GmArg::new("out", &mut out)],
        )
        .unwrap();
    for i in 0..64 {
        assert_eq!(out[i], base[i] + cores as f32 * x[i], "out[{i}]");
    }
    assert_eq!(stats.gm_write_bytes, 64 * 4 * cores as u64);
}

#[test]
fn concurrent_launches_keep_their_state_and_errors_apart() {
    std::thread::scope(|s| {
        let good: Vec<_> = (0..3)
            .map(|t| {
                s.spawn(move || {
                    let mut r = rng(200 + t);
                    let mut x: Vec<f32> =
                        (0..2 * 2048).map(|_| r.random_range(-1.0..1.0)).collect();
                    let mut y = vec![0f32; x.len()];
                    for _ in 0..5 {
                        poison(&mut y);
                        lib()
                            .launch(
                                "sim_copy_f32",
                                CoreMode::Aiv,
                                2,
                                &mut [GmArg::new("x", &mut x), GmArg::new("y", &mut y)],
                            )
                            .unwrap();
                        assert_eq!(y, x);
                    }
                })
            })
            .collect();
        let bad = s.spawn(|| {
            for _ in 0..5 {
                let mut x = vec![0f32; 64];
                let err = lib()
                    .launch(
                        "trap_gm_oob",
                        CoreMode::Aiv,
                        1,
                        &mut [GmArg::new("x", &mut x)],
                    )
                    .unwrap_err();
                assert!(matches!(err, SimError::Trap { .. }), "{err}");
            }
        });
        for h in good {
            h.join().unwrap();
        }
        bad.join().unwrap();
    });
}
