//! The ordering sanitizer (harness/sim/include/sim/hazard.h): one deliberately wrong kernel
//! per hazard class must trap with a message naming the kernel, both calls (API, pipe and
//! `#seq`), the memory and byte range, and the kind; its corrected twin must run clean and
//! compute the right values. Kernels: sim_kernels/hazards.cpp.

#[path = "sim_kernels/support.rs"]
mod support;

use half::f16;
use harness::kernel_library::{Checks, CoreMode, GmArg, SimError, SimLibrary};
use rand::RngExt;
use support::{assert_same, lib, rng};

/// The device as built without `--cce-auto-sync` (every sync written by hand).
const NO_AUTO_SYNC: Checks = Checks {
    hazards: true,
    auto_sync: false,
    timeline: true,
    trace: false,
    ordered: false,
};

/// The shared test library launched with other checks (a second handle on the same build).
fn lib_with(checks: Checks) -> SimLibrary {
    SimLibrary::load(lib().path())
        .expect("the test library loads again")
        .with_checks(checks)
}

/// Launches `kernel`, which must trap; returns the message after checking that it names the
/// kernel and contains every one of `parts`.
fn trap_in(
    lib: &SimLibrary,
    kernel: &str,
    mode: CoreMode,
    block_dim: u32,
    args: &mut [GmArg<'_>],
    parts: &[&str],
) -> String {
    let message = match lib.launch(kernel, mode, block_dim, args) {
        Err(SimError::Trap { kernel: k, message }) => {
            assert_eq!(k, kernel);
            message
        }
        other => panic!("{kernel}: expected a trap, got {other:?}"),
    };
    assert!(
        message.contains(&format!("kernel `{kernel}`")),
        "the message names the kernel: {message}"
    );
    for p in parts {
        assert!(message.contains(p), "`{p}` missing from: {message}");
    }
    message
}

fn trap(
    kernel: &str,
    mode: CoreMode,
    block_dim: u32,
    args: &mut [GmArg<'_>],
    parts: &[&str],
) -> String {
    trap_in(lib(), kernel, mode, block_dim, args, parts)
}

/// Launches `kernel`, which must run without any trap.
fn clean_in(
    lib: &SimLibrary,
    kernel: &str,
    mode: CoreMode,
    block_dim: u32,
    args: &mut [GmArg<'_>],
) {
    if let Err(e) = lib.launch(kernel, mode, block_dim, args) {
        panic!("{kernel} (checks {:?}) must run clean: {e}", lib.checks());
    }
}

fn clean(kernel: &str, mode: CoreMode, block_dim: u32, args: &mut [GmArg<'_>]) {
    clean_in(lib(), kernel, mode, block_dim, args)
}

/// The wrong kernel `bad` traps with `parts`; its corrected twin `good` runs clean on the
/// same arguments (whose values the caller then checks).
fn twins(
    bad: &str,
    good: &str,
    mode: CoreMode,
    block_dim: u32,
    args: &mut [GmArg<'_>],
    parts: &[&str],
) {
    trap(bad, mode, block_dim, args, parts);
    clean(good, mode, block_dim, args);
}

/// Small integers as f32, so every sum and product below is exact.
fn ints(seed: u64, n: usize, lo: i32, hi: i32) -> Vec<f32> {
    let mut r = rng(seed);
    (0..n).map(|_| r.random_range(lo..=hi) as f32).collect()
}

fn halves(v: &[f32]) -> Vec<f16> {
    v.iter().map(|&x| f16::from_f32(x)).collect()
}

/// Row-major (m x k) * (k x n).
fn matmul(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
    let mut c = vec![0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            c[i * n + j] = (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum();
        }
    }
    c
}

fn map(v: &[f32], f: impl Fn(f32) -> f32) -> Vec<f32> {
    v.iter().map(|&x| f(x)).collect()
}

// ---------------------------------------------------------------- class 1

#[test]
fn mte2_to_v_raw_needs_mte2_v() {
    let x = ints(1, 64, -50, 50);
    let (mut xa, mut y) = (x.clone(), vec![0f32; 64]);
    // DataCopy GM->UB, then Adds reads the buffer with no MTE2_V flag.
    twins(
        "hz_mte2_v_bad",
        "hz_copy_add_ok",
        CoreMode::Aiv,
        1,
        &mut [GmArg::new("x", &mut xa), GmArg::new("y", &mut y)],
        &[
            "pipe hazard (RAW) on UB [0x0, 0x20) (byte 0 of buffer `TBuf<VECCALC>#0`",
            "Adds (V #1) reads what DataCopy (MTE2 #1) wrote",
            "SetFlag/WaitFlag<HardEvent::MTE2_V>",
        ],
    );
    assert_same("y = x + 1", &y, &map(&x, |v| v + 1.0));
}

// ---------------------------------------------------------------- class 2

#[test]
fn v_to_mte3_raw_needs_v_mte3() {
    let (mut x, mut y) = (ints(2, 64, -50, 50), vec![0f32; 64]);
    // Adds writes yl, DataCopy UB->GM reads it with no V_MTE3 flag.
    trap(
        "hz_v_mte3_bad",
        CoreMode::Aiv,
        1,
        &mut [GmArg::new("x", &mut x), GmArg::new("y", &mut y)],
        &[
            "pipe hazard (RAW) on UB [0x100, 0x120) (byte 0 of buffer `TBuf<VECCALC>#1`",
            "DataCopy (MTE3 #1) reads what Adds (V #1) wrote",
            "SetFlag/WaitFlag<HardEvent::V_MTE3>",
        ],
    );
    // the twin is class 1's hz_copy_add_ok
}

// ---------------------------------------------------------------- class 3

#[test]
fn v_to_mte2_war_on_buffer_reuse_needs_v_mte2() {
    let x = ints(3, 128, -50, 50);
    let (mut xa, mut y) = (x.clone(), vec![0f32; 128]);
    // Adds reads xl, then the next DataCopy GM->UB overwrites xl with no V_MTE2 flag (a
    // PipeBarrier<PIPE_MTE2> orders the two copies, not the read).
    twins(
        "hz_v_mte2_bad",
        "hz_v_mte2_ok",
        CoreMode::Aiv,
        1,
        &mut [GmArg::new("x", &mut xa), GmArg::new("y", &mut y)],
        &[
            "pipe hazard (WAR) on UB [0x0, 0x20) (byte 0 of buffer `TBuf<VECCALC>#0`",
            "DataCopy (MTE2 #2) writes what Adds (V #1) reads",
            "SetFlag/WaitFlag<HardEvent::V_MTE2>",
        ],
    );
    let want: Vec<f32> = x[..64]
        .iter()
        .map(|v| v + 1.0)
        .chain(x[64..].iter().map(|v| v + 2.0))
        .collect();
    assert_same("y", &y, &want);
}

// ---------------------------------------------------------------- class 4

#[test]
fn mte3_to_v_war_needs_mte3_v() {
    let x = ints(4, 64, -50, 50);
    let (mut xa, mut y) = (x.clone(), vec![0f32; 128]);
    // yl is copied out, then overwritten by the next Adds with no MTE3_V flag.
    twins(
        "hz_mte3_v_bad",
        "hz_mte3_v_ok",
        CoreMode::Aiv,
        1,
        &mut [GmArg::new("x", &mut xa), GmArg::new("y", &mut y)],
        &[
            "pipe hazard (WAR) on UB [0x100, 0x120) (byte 0 of buffer `TBuf<VECCALC>#1`",
            "Adds (V #2) writes what DataCopy (MTE3 #1) reads",
            "SetFlag/WaitFlag<HardEvent::MTE3_V>",
        ],
    );
    let want: Vec<f32> = map(&x, |v| v + 1.0)
        .into_iter()
        .chain(map(&x, |v| v + 2.0))
        .collect();
    assert_same("y", &y, &want);
}

// ---------------------------------------------------------------- classes 5, 6, 7

/// A 16 x 16 x 16 half tile: a, b and the f32 reference c = a * b.
fn one_tile(seed: u64) -> (Vec<f16>, Vec<f16>, Vec<f32>) {
    let (a, b) = (ints(seed, 256, -3, 3), ints(seed + 100, 256, -3, 3));
    (halves(&a), halves(&b), matmul(&a, &b, 16, 16, 16))
}

fn cube_tile_trap(kernel: &str, parts: &[&str]) {
    let (mut a, mut b, _) = one_tile(5);
    let mut c = vec![0f32; 256];
    trap(
        kernel,
        CoreMode::Aic,
        1,
        &mut [
            GmArg::new("a", &mut a),
            GmArg::new("b", &mut b),
            GmArg::new("c", &mut c),
        ],
        parts,
    );
}

#[test]
fn mte2_to_mte1_raw_on_l1_needs_mte2_mte1() {
    // DataCopy GM->L1 (ND2NZ), then LoadData L1->L0A with no MTE2_MTE1 flag.
    cube_tile_trap(
        "hz_mte2_mte1_bad",
        &[
            "pipe hazard (RAW) on L1 [0x0, 0x20) (byte 0 of buffer `TBuf<A1>#0`",
            "LoadData (MTE1 #1) reads what DataCopy(Nd2Nz) (MTE2 #1) wrote",
            "SetFlag/WaitFlag<HardEvent::MTE2_MTE1>",
        ],
    );
}

#[test]
fn mte1_to_m_raw_on_l0a_needs_mte1_m() {
    // LoadData L1->L0A/L0B, then Mmad with no MTE1_M flag.
    cube_tile_trap(
        "hz_mte1_m_bad",
        &[
            "pipe hazard (RAW) on L0A [0x0, 0x20) (byte 0 of buffer `TBuf<A2>#2`",
            "Mmad (M #1) reads what LoadData (MTE1 #1) wrote",
            "SetFlag/WaitFlag<HardEvent::MTE1_M>",
        ],
    );
}

#[test]
fn m_to_fix_raw_on_l0c_needs_m_fix() {
    // Mmad, then Fixpipe L0C->GM with no M_FIX flag.
    cube_tile_trap(
        "hz_m_fix_bad",
        &[
            "pipe hazard (RAW) on L0C [0x0, 0x20) (byte 0 of buffer `TBuf<CO1>#4`",
            "Fixpipe (FIX #1) reads what Mmad (M #1) wrote",
            "SetFlag/WaitFlag<HardEvent::M_FIX>",
        ],
    );
}

#[test]
fn cube_tile_with_all_flags_is_clean() {
    let (mut a, mut b, want) = one_tile(5);
    let mut c = vec![0f32; 256];
    clean(
        "hz_cube_tile_ok",
        CoreMode::Aic,
        1,
        &mut [
            GmArg::new("a", &mut a),
            GmArg::new("b", &mut b),
            GmArg::new("c", &mut c),
        ],
    );
    assert_same("c = a * b", &c, &want);
}

// ---------------------------------------------------------------- class 8

#[test]
fn fix_to_mte2_raw_through_gm_needs_fix_mte2() {
    let (mut a, mut b, ab) = one_tile(8);
    let bf: Vec<f32> = b.iter().map(|v| v.to_f32()).collect();
    let want = matmul(&ab, &bf, 16, 16, 16); // |a * b| <= 144: exact in half
    let (mut ws, mut c) = (vec![f16::ZERO; 256], vec![0f32; 256]);
    // Fixpipe writes ws, DataCopy GM->L1 reads it back with no FIX_MTE2 flag.
    twins(
        "hz_fix_mte2_bad",
        "hz_fix_mte2_ok",
        CoreMode::Aic,
        1,
        &mut [
            GmArg::new("a", &mut a),
            GmArg::new("b", &mut b),
            GmArg::new("ws", &mut ws),
            GmArg::new("c", &mut c),
        ],
        &[
            "pipe hazard (RAW) on GM buffer `ws` bytes [0, 32)",
            "DataCopy(Nd2Nz) (MTE2 #3) reads what Fixpipe (FIX #1) wrote",
            "SetFlag/WaitFlag<HardEvent::FIX_MTE2>",
        ],
    );
    assert_same("c = (a * b) * b", &c, &want);
}

// ---------------------------------------------------------------- class 9

#[test]
fn s_to_mte3_raw_is_covered_by_auto_sync_only() {
    let want: Vec<f32> = (0..8).map(|i| i as f32 * 0.5).collect();
    let mut y = vec![0f32; 8];
    // LocalTensor::SetValue, then DataCopy UB->GM: without --cce-auto-sync nothing orders
    // the scalar stores before the DMA.
    trap_in(
        &lib_with(NO_AUTO_SYNC),
        "hz_s_mte3_implicit",
        CoreMode::Aiv,
        1,
        &mut [GmArg::new("y", &mut y)],
        &[
            "pipe hazard (RAW) on UB [0x0, 0x20) (byte 0 of buffer `TBuf<VECCALC>#0`",
            "DataCopy (MTE3 #1) reads what LocalTensor::SetValue (S #8) wrote",
            "SetFlag/WaitFlag<HardEvent::S_MTE3>",
        ],
    );
    // the default models the compiler inserting S_MTE3 there
    clean(
        "hz_s_mte3_implicit",
        CoreMode::Aiv,
        1,
        &mut [GmArg::new("y", &mut y)],
    );
    assert_same("y (auto-sync)", &y, &want);
    for checks in [Checks::default(), NO_AUTO_SYNC] {
        y.fill(0.0);
        clean_in(
            &lib_with(checks),
            "hz_s_mte3_ok",
            CoreMode::Aiv,
            1,
            &mut [GmArg::new("y", &mut y)],
        );
        assert_same("y (explicit S_MTE3)", &y, &want);
    }
}

// ---------------------------------------------------------------- class 10

#[test]
fn v_to_v_raw_is_covered_by_auto_sync_only() {
    let mut y = vec![0f32; 64];
    // Duplicate, then Adds reads its result: without auto-sync it needs PipeBarrier<PIPE_V>.
    trap_in(
        &lib_with(NO_AUTO_SYNC),
        "hz_v_v_implicit",
        CoreMode::Aiv,
        1,
        &mut [GmArg::new("y", &mut y)],
        &[
            "pipe hazard (RAW) on UB [0x0, 0x20) (byte 0 of buffer `TBuf<VECCALC>#0`",
            "Adds (V #2) reads what Duplicate (V #1) wrote",
            "needs PipeBarrier<PIPE_V>() between them",
        ],
    );
    clean(
        "hz_v_v_implicit",
        CoreMode::Aiv,
        1,
        &mut [GmArg::new("y", &mut y)],
    );
    assert_same("y (auto-sync)", &y, &[2.0; 64]);
    for checks in [Checks::default(), NO_AUTO_SYNC] {
        y.fill(0.0);
        clean_in(
            &lib_with(checks),
            "hz_v_v_ok",
            CoreMode::Aiv,
            1,
            &mut [GmArg::new("y", &mut y)],
        );
        assert_same("y (PipeBarrier<PIPE_V>)", &y, &[2.0; 64]);
    }
}

// ---------------------------------------------------------------- class 11

/// Launches an AccumulateK kernel (K = 32 in two Mmads of k = 16) on random m x n data;
/// returns the launch result and the f32 reference.
fn accumulate_k(
    kernel: &str,
    m: usize,
    n: usize,
) -> (
    Result<harness::kernel_library::LaunchStats, SimError>,
    Vec<f32>,
    Vec<f32>,
) {
    let (a, b) = (ints(11, m * 32, -3, 3), ints(12, 32 * n, -3, 3));
    let want = matmul(&a, &b, m, 32, n);
    let (mut ah, mut bh, mut c) = (halves(&a), halves(&b), vec![0f32; m * n]);
    let r = lib().launch(
        kernel,
        CoreMode::Aic,
        1,
        &mut [
            GmArg::new("a", &mut ah),
            GmArg::new("b", &mut bh),
            GmArg::new("c", &mut c),
        ],
    );
    (r, c, want)
}

#[test]
fn k_accumulating_mmads_on_a_small_tile_need_pipe_barrier_m() {
    // Two Mmads accumulating into one 16 x 16 L0C tile ((16/16)*(16/16) = 1 < 10) with no
    // PipeBarrier<PIPE_M> between them.
    let (mut a, mut b, mut c) = (
        vec![f16::ZERO; 16 * 32],
        vec![f16::ZERO; 32 * 16],
        vec![0f32; 256],
    );
    trap(
        "hz_mmad_acc_small_bad",
        CoreMode::Aic,
        1,
        &mut [
            GmArg::new("a", &mut a),
            GmArg::new("b", &mut b),
            GmArg::new("c", &mut c),
        ],
        &[
            "pipe hazard (RAW) on L0C [0x0, 0x20) (byte 0 of buffer `TBuf<CO1>#4`",
            "Mmad (M #2) reads what Mmad (M #1) wrote",
            "needs PipeBarrier<PIPE_M>() between them",
        ],
    );
    // with the barrier
    let (r, c, want) = accumulate_k("hz_mmad_acc_small_ok", 16, 16);
    r.unwrap_or_else(|e| panic!("hz_mmad_acc_small_ok must run clean: {e}"));
    assert_same("c (16 x 16)", &c, &want);
    // a 64 x 64 tile ((64/16)*(64/16) = 16 >= 10): the hardware orders them, no barrier
    let (r, c, want) = accumulate_k("hz_mmad_acc_large_ok", 64, 64);
    r.unwrap_or_else(|e| panic!("hz_mmad_acc_large_ok must run clean: {e}"));
    assert_same("c (64 x 64)", &c, &want);
}

// ---------------------------------------------------------------- class 12

#[test]
fn overlapping_mte2_copies_need_pipe_barrier_mte2() {
    let x = ints(12, 192, -50, 50);
    let (mut xa, mut y) = (x.clone(), vec![0f32; 128]);
    // DataCopy x[0:128] -> xl, then x[128:192] -> xl[64:128] with no PipeBarrier<PIPE_MTE2>.
    twins(
        "hz_mte2_waw_bad",
        "hz_mte2_waw_ok",
        CoreMode::Aiv,
        1,
        &mut [GmArg::new("x", &mut xa), GmArg::new("y", &mut y)],
        &[
            "pipe hazard (WAW) on UB [0x100, 0x120) (byte 256 of buffer `TBuf<VECCALC>#0`",
            "DataCopy (MTE2 #2) writes what DataCopy (MTE2 #1) wrote",
            "needs PipeBarrier<PIPE_MTE2>() between them",
        ],
    );
    let want: Vec<f32> = x[..64].iter().chain(&x[128..]).copied().collect();
    assert_same("y = x[0:64] ++ x[128:192]", &y, &want);
}

// ---------------------------------------------------------------- class 13

#[test]
fn wrong_event_id_or_direction() {
    // SetFlag<MTE2_V>(1) / WaitFlag<MTE2_V>(0): the wait can never be satisfied.
    trap(
        "hz_wait_wrong_id",
        CoreMode::Aiv,
        1,
        &mut [],
        &[
            "WaitFlag: WaitFlag<HardEvent::MTE2_V>(0) without a matching SetFlag",
            "hang",
        ],
    );
    // SetFlag/WaitFlag<V_MTE2> where the read needs MTE2_V: the RAW is still caught.
    let (mut x, mut y) = (ints(13, 64, -50, 50), vec![0f32; 64]);
    trap(
        "hz_wrong_direction",
        CoreMode::Aiv,
        1,
        &mut [GmArg::new("x", &mut x), GmArg::new("y", &mut y)],
        &[
            "pipe hazard (RAW) on UB [0x0, 0x20) (byte 0 of buffer `TBuf<VECCALC>#0`",
            "Adds (V #1) reads what DataCopy (MTE2 #1) wrote",
            "SetFlag/WaitFlag<HardEvent::MTE2_V>",
        ],
    );
    // the twin with the right event and ids is class 1's hz_copy_add_ok
    clean(
        "hz_copy_add_ok",
        CoreMode::Aiv,
        1,
        &mut [GmArg::new("x", &mut x), GmArg::new("y", &mut y)],
    );
}

// ---------------------------------------------------------------- class 14

#[test]
fn setting_a_set_flag_traps() {
    trap(
        "hz_double_set",
        CoreMode::Aiv,
        1,
        &mut [],
        &[
            "SetFlag: SetFlag<HardEvent::MTE2_V>(0) while the flag is still set by SetFlag and not yet waited for",
        ],
    );
    // A manual SetFlag<V_MTE2>(EVENT_ID0) while the VECIN queue's freed slot holds V_MTE2
    // id 0 (FreeTensor set it; the slot's next AllocTensor waits for it).
    let (x, bias) = (ints(14, 128, -50, 50), ints(15, 128, -50, 50));
    let (mut xa, mut ba, mut y) = (x.clone(), bias.clone(), vec![0f32; 128]);
    trap(
        "hz_queue_id_collision",
        CoreMode::Aiv,
        1,
        &mut [
            GmArg::new("x", &mut xa),
            GmArg::new("bias", &mut ba),
            GmArg::new("y", &mut y),
        ],
        &[
            "SetFlag: SetFlag<HardEvent::V_MTE2>(0) while the flag is still set by TQue::FreeTensor of `TQue<VECIN>#0[0]`",
            "AllocEventID / FetchEventID",
        ],
    );
    // the twins take their id from GetTPipePtr()->FetchEventID<HardEvent::V_MTE2>(), or
    // AllocEventID / ReleaseEventID
    let want: Vec<f32> = x.iter().zip(&bias).map(|(a, b)| a + b).collect();
    for kernel in ["hz_queue_id_fetched", "hz_queue_id_allocated"] {
        y.fill(0.0);
        clean(
            kernel,
            CoreMode::Aiv,
            1,
            &mut [
                GmArg::new("x", &mut xa),
                GmArg::new("bias", &mut ba),
                GmArg::new("y", &mut y),
            ],
        );
        assert_same(&format!("{kernel}: y = x + bias"), &y, &want);
    }
}

// ---------------------------------------------------------------- class 15

#[test]
fn flag_left_set_at_kernel_end_traps() {
    let x = ints(16, 64, -50, 50);
    let (mut xa, mut y) = (x.clone(), vec![0f32; 128]);
    // A ping-pong loop sets MTE3_V after each copy-out for the next iteration; the last set
    // is never waited for.
    twins(
        "hz_dangling_flag",
        "hz_drained_flag",
        CoreMode::Aiv,
        1,
        &mut [GmArg::new("x", &mut xa), GmArg::new("y", &mut y)],
        &[
            "AIV core (block 0): kernel end: flag HardEvent::MTE3_V id 0 set by SetFlag is still set when the kernel returns",
        ],
    );
    let want: Vec<f32> = map(&x, |v| v + 1.0)
        .into_iter()
        .chain(map(&x, |v| v + 2.0))
        .collect();
    assert_same("y", &y, &want);
}

// ---------------------------------------------------------------- class 16

#[test]
fn events_and_barriers_the_core_does_not_have() {
    trap(
        "hz_cube_event_on_aiv",
        CoreMode::Aiv,
        1,
        &mut [],
        &["SetFlag<HardEvent::M_FIX>(0): this event does not exist on AIV core (block 0)"],
    );
    trap(
        "hz_vector_event_on_aic",
        CoreMode::Aic,
        1,
        &mut [],
        &["SetFlag<HardEvent::MTE2_V>(0): this event does not exist on AIC core (block 0)"],
    );
    trap(
        "hz_barrier_pipe_s",
        CoreMode::Aiv,
        1,
        &mut [],
        &["PipeBarrier: PipeBarrier<PIPE_S> is not supported"],
    );
    trap(
        "hz_barrier_pipe_v_on_aic",
        CoreMode::Aic,
        1,
        &mut [],
        &["PipeBarrier: PipeBarrier<PIPE_V>: AIC core (block 0) has no such pipe"],
    );
    clean("hz_events_on_their_core", CoreMode::Aiv, 2, &mut []);
    clean("hz_events_on_their_core", CoreMode::Aic, 2, &mut []);
}

// ---------------------------------------------------------------- class 17

#[test]
fn illegal_cross_core_sync() {
    trap(
        "hz_cross_set_pipe_s",
        CoreMode::Aiv,
        2,
        &mut [],
        &["CrossCoreSetFlag: pipe PIPE_S is not allowed"],
    );
    trap(
        "hz_cross_set_pipe_all",
        CoreMode::Aiv,
        2,
        &mut [],
        &["CrossCoreSetFlag: pipe PIPE_ALL is not allowed"],
    );
    trap(
        "hz_cross_in_aiv_only",
        CoreMode::Aiv,
        2,
        &mut [],
        &["CrossCoreSetFlag: cross-core synchronisation in a kernel declared KERNEL_TYPE_AIV_ONLY"],
    );
    twins(
        "hz_syncall_in_aiv_only",
        "hz_cross_ok",
        CoreMode::Aiv,
        2,
        &mut [],
        &["SyncAll: cross-core synchronisation in a kernel declared KERNEL_TYPE_AIV_ONLY"],
    );
}

// ---------------------------------------------------------------- class 18

/// The byte range an AIV of the 1:2 group reads first: sub s copies rows 8s..8s+8 of ws.
fn first_granule_of_sub(message: &str) -> &'static str {
    if message.contains("AIV core (block 0, sub 0)") {
        "GM buffer `ws` bytes [0, 32)"
    } else if message.contains("AIV core (block 0, sub 1)") {
        "GM buffer `ws` bytes [512, 544)"
    } else {
        panic!("no AIV named in: {message}")
    }
}

#[test]
fn cube_to_vector_handoff_needs_a_cross_core_flag_on_pipe_fix() {
    let (mut a, mut b, ab) = one_tile(18);
    let (mut ws, mut y) = (vec![0f32; 256], vec![0f32; 256]);
    // No flag at all: the AIVs read ws whenever they run; which side of the race comes
    // first depends on the threads, the race is reported either way.
    let m = trap(
        "hz_cube_to_vec_no_flag",
        CoreMode::Mix,
        1,
        &mut [
            GmArg::new("a", &mut a),
            GmArg::new("b", &mut b),
            GmArg::new("ws", &mut ws),
            GmArg::new("y", &mut y),
        ],
        &[
            "cross-core race (",
            "Fixpipe (FIX #1) on AIC core (block 0)",
            "DataCopy (MTE2 #1) on AIV core (block 0, sub ",
        ],
    );
    assert!(m.contains(first_granule_of_sub(&m)), "byte range: {m}");
    assert!(
        (m.contains("race (RAW)") && m.contains("reads what Fixpipe"))
            || (m.contains("race (WAR)") && m.contains("writes what DataCopy")),
        "kind: {m}"
    );
    // CrossCoreSetFlag<2, PIPE_MTE2> after the Fixpipe: the AIVs wait, but the flag fires
    // when MTE2 is done, which says nothing about FIX.
    let m = trap(
        "hz_cube_to_vec_wrong_pipe",
        CoreMode::Mix,
        1,
        &mut [
            GmArg::new("a", &mut a),
            GmArg::new("b", &mut b),
            GmArg::new("ws", &mut ws),
            GmArg::new("y", &mut y),
        ],
        &[
            "cross-core race (RAW)",
            "DataCopy (MTE2 #1) on AIV core (block 0, sub ",
            "reads what Fixpipe (FIX #1) on AIC core (block 0) wrote",
        ],
    );
    assert!(m.contains(first_granule_of_sub(&m)), "byte range: {m}");
    // CrossCoreSetFlag<2, PIPE_FIX> / CrossCoreWaitFlag
    clean(
        "hz_cube_to_vec_ok",
        CoreMode::Mix,
        1,
        &mut [
            GmArg::new("a", &mut a),
            GmArg::new("b", &mut b),
            GmArg::new("ws", &mut ws),
            GmArg::new("y", &mut y),
        ],
    );
    assert_same("ws = a * b", &ws, &ab);
    assert_same("y = a * b + 1", &y, &map(&ab, |v| v + 1.0));
}

// ---------------------------------------------------------------- class 19

#[test]
fn gm_race_between_aiv_cores_is_caught_every_time() {
    const ROW: usize = 256;
    let x = ints(19, 4 * ROW, -50, 50);
    // Core 1 reads the row core 0 writes, with no SyncAll: whichever runs first, the race is
    // reported, naming both cores (the slow-writer variant makes the reader usually first).
    for (run, kernel) in ["hz_handoff_race", "hz_handoff_race_slow_writer"]
        .iter()
        .cycle()
        .take(40)
        .enumerate()
    {
        let (mut xa, mut out) = (x[..ROW].to_vec(), vec![0f32; 2 * ROW]);
        let m = trap(
            kernel,
            CoreMode::Aiv,
            2,
            &mut [GmArg::new("x", &mut xa), GmArg::new("out", &mut out)],
            &["cross-core race (", "GM buffer `out` bytes [0, 32)"],
        );
        let raw = "race (RAW) on GM buffer `out` bytes [0, 32): DataCopy (MTE2 #1) on AIV core (block 1) reads what DataCopy (MTE3 #1) on AIV core (block 0) wrote";
        let war = "race (WAR) on GM buffer `out` bytes [0, 32): DataCopy (MTE3 #1) on AIV core (block 0) writes what DataCopy (MTE2 #1) on AIV core (block 1) read";
        assert!(m.contains(raw) || m.contains(war), "run {run}: {m}");
    }
    // with SyncAll between the write and the read (KERNEL_TYPE_MIX_AIV_1_0)
    let (mut xa, mut out) = (x[..ROW].to_vec(), vec![0f32; 2 * ROW]);
    clean(
        "hz_handoff_syncall",
        CoreMode::Aiv,
        2,
        &mut [GmArg::new("x", &mut xa), GmArg::new("out", &mut out)],
    );
    let twice = map(&x[..ROW], |v| 2.0 * v);
    let want: Vec<f32> = twice
        .iter()
        .copied()
        .chain(map(&twice, |v| v + 1.0))
        .collect();
    assert_same("out", &out, &want);
    // every core on its own rows
    let (mut xa, mut out) = (x[..2 * ROW].to_vec(), vec![0f32; 2 * ROW]);
    clean(
        "hz_own_rows",
        CoreMode::Aiv,
        2,
        &mut [GmArg::new("x", &mut xa), GmArg::new("out", &mut out)],
    );
    assert_same("out = 2 x", &out, &map(&x[..2 * ROW], |v| 2.0 * v));
    // four cores adding into the same row atomically do not race
    let init = ints(20, ROW, -50, 50);
    let (mut xa, mut out) = (x.clone(), init.clone());
    clean(
        "hz_atomic_rows",
        CoreMode::Aiv,
        4,
        &mut [GmArg::new("x", &mut xa), GmArg::new("out", &mut out)],
    );
    let want: Vec<f32> = (0..ROW)
        .map(|i| init[i] + (0..4).map(|c| x[c * ROW + i]).sum::<f32>())
        .collect();
    assert_same("out = init + sum of rows", &out, &want);
}

// ---------------------------------------------------------------- class 20

#[test]
fn reduce_max_scratch_size_and_aliasing() {
    // 1024 floats = 16 repeats, each with a distinct maximum 100 + r somewhere inside.
    let mut x = ints(21, 1024, -50, 50);
    for r in 0..16 {
        x[r * 64 + (r * 7) % 64] = 100.0 + r as f32;
    }
    let (mut xa, mut y) = (x.clone(), vec![0f32; 8]);
    // sharedTmpBuffer of one value per repeat (16); ReduceMax.md asks alignUp(2 x 16, 8) = 32
    twins(
        "hz_reduce_max_tmp_small",
        "hz_reduce_max_tmp_ok",
        CoreMode::Aiv,
        1,
        &mut [GmArg::new("x", &mut xa), GmArg::new("y", &mut y)],
        &["ReduceMax: sharedTmpBuffer holds 16 elements, this call needs 32"],
    );
    assert_eq!(y[0], 115.0, "max");
    // The scratch aliases a buffer still holding live data: its first 32 values come back
    // as the per-repeat (max, index) pairs of the first round, the rest intact.
    let keep = ints(22, 64, -50, 50);
    let (mut ka, mut keep_out) = (keep.clone(), vec![0f32; 64]);
    y.fill(0.0);
    clean(
        "hz_reduce_max_tmp_aliased",
        CoreMode::Aiv,
        1,
        &mut [
            GmArg::new("x", &mut xa),
            GmArg::new("keep", &mut ka),
            GmArg::new("y", &mut y),
            GmArg::new("keepOut", &mut keep_out),
        ],
    );
    assert_eq!(y[0], 115.0, "max");
    assert_same("keep[32..64] untouched", &keep_out[32..], &keep[32..]);
    assert_ne!(&keep_out[..32], &keep[..32], "keep[0..32] is corrupted");
    for r in 1..16 {
        assert_eq!(
            keep_out[2 * r],
            100.0 + r as f32,
            "keepOut[{}]: repeat {r}'s max",
            2 * r
        );
    }
}

// ---------------------------------------------------------------- class 21

#[test]
fn mask_register_persists_between_level0_calls() {
    let mut y = vec![0f32; 4 * 64];
    clean(
        "hz_mask_persistence",
        CoreMode::Aiv,
        1,
        &mut [GmArg::new("y", &mut y)],
    );
    let lanes16 = |v: f32| -> Vec<f32> { (0..64).map(|l| if l < 16 { v } else { 0.0 }).collect() };
    // a: mask 16 with isSetMask = true
    assert_same("a", &y[..64], &lanes16(11.0));
    // b: isSetMask = false right after: the same 16 lanes
    assert_same("b", &y[64..128], &lanes16(21.0));
    // c: count form, d: isSetMask = false after it: all lanes
    assert_same("c", &y[128..192], &[31.0; 64]);
    assert_same("d", &y[192..], &[41.0; 64]);

    let x = ints(23, 1024, -50, 50);
    let (mut xa, mut y) = (x.clone(), vec![0f32; 64]);
    // ReduceMax (count form) leaves an internal pattern: isSetMask = false traps...
    trap(
        "hz_mask_after_reduce_max_bad",
        CoreMode::Aiv,
        1,
        &mut [GmArg::new("x", &mut xa), GmArg::new("y", &mut y)],
        &[
            "Adds: isSetMask = false uses the mask register, which ReduceMax left holding an internal pattern",
        ],
    );
    // ...until SetVectorMask sets it
    clean(
        "hz_mask_after_reduce_max_ok",
        CoreMode::Aiv,
        1,
        &mut [GmArg::new("x", &mut xa), GmArg::new("y", &mut y)],
    );
    assert_same("y = x + 1", &y, &map(&x[..64], |v| v + 1.0));
}

// ---------------------------------------------------------------- class 22

#[test]
fn documented_queue_pipelines_need_no_manual_sync() {
    // (a) vector add: VECIN x 2 / VECOUT, BUFFER_NUM = 2, CopyIn/Compute/CopyOut, 4 blocks
    const TOTAL: usize = 8 * 2048;
    let (x, y) = (ints(24, TOTAL, -1000, 1000), ints(25, TOTAL, -1000, 1000));
    let (mut xa, mut ya, mut z) = (x.clone(), y.clone(), vec![0f32; TOTAL]);
    for checks in [Checks::default(), NO_AUTO_SYNC] {
        z.fill(0.0);
        clean_in(
            &lib_with(checks),
            "hz_paradigm_add",
            CoreMode::Aiv,
            4,
            &mut [
                GmArg::new("x", &mut xa),
                GmArg::new("y", &mut ya),
                GmArg::new("z", &mut z),
            ],
        );
        let want: Vec<f32> = x.iter().zip(&y).map(|(a, b)| a + b).collect();
        assert_same("z = x + y", &z, &want);
    }
    // (b) cube matmul: A1/B1 (ND2NZ), A2/B2 (LoadData), CO1 (Mmad, K accumulated over two
    // tiles), Fixpipe out; 2 blocks of 32 rows
    const M: usize = 64;
    const N: usize = 48;
    const K: usize = 64;
    let (a, b) = (ints(26, M * K, -3, 3), ints(27, K * N, -3, 3));
    let want = matmul(&a, &b, M, K, N);
    let (mut ah, mut bh, mut c) = (halves(&a), halves(&b), vec![0f32; M * N]);
    clean(
        "hz_paradigm_matmul",
        CoreMode::Aic,
        2,
        &mut [
            GmArg::new("a", &mut ah),
            GmArg::new("b", &mut bh),
            GmArg::new("c", &mut c),
        ],
    );
    assert_same("c = a * b", &c, &want);
}
