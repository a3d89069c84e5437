//! The C ABI of `harness/sim/src/runtime.cpp`; keep the two in step (and bump
//! `ABI_VERSION` on both sides when it changes).

use std::ffi::{c_char, c_void};

pub(crate) const ABI_VERSION: u32 = 6;

/// Bits of `sim_launch`'s `checks` argument.
pub(crate) const CHECK_HAZARDS: u32 = 1;
pub(crate) const CHECK_AUTO_SYNC: u32 = 2;
pub(crate) const TIMELINE: u32 = 4;
pub(crate) const TRACE: u32 = 8;
pub(crate) const ORDERED: u32 = 16;

#[repr(C)]
pub(crate) struct SimGmArg {
    pub ptr: *mut u8,
    pub len: u64,
    pub name: *const c_char,
    /// L2 lines an earlier launch left warm, one bit each (null: none).
    pub warm: *const u64,
    /// Receives the L2 lines the launch touched (zeroed; null: not wanted).
    pub lines: *mut u64,
}

#[repr(C)]
#[derive(Default)]
pub(crate) struct SimStats {
    pub gm_read_bytes: u64,
    pub gm_write_bytes: u64,
    pub scalar_gm_reads: u64,
    pub scalar_gm_writes: u64,
    pub mac_bf16: u64,
    pub mac_f16: u64,
    pub mac_f32: u64,
    pub mac_i8: u64,
    pub vec_elem_ops: u64,
    pub peak_ub: u64,
    pub peak_l1: u64,
    pub peak_l0a: u64,
    pub peak_l0b: u64,
    pub peak_l0c: u64,
    pub gm_distinct_read_bytes: u64,
    pub gm_distinct_write_bytes: u64,
    pub gm_min_read_bytes: u64,
    pub gm_min_write_bytes: u64,
}

#[repr(C)]
#[derive(Default, Clone, Copy)]
pub(crate) struct SimArgTraffic {
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub distinct_read_bytes: u64,
    pub distinct_write_bytes: u64,
    pub min_read_bytes: u64,
    pub min_write_bytes: u64,
}

#[repr(C)]
#[derive(Default, Clone, Copy)]
pub(crate) struct SimCoreTiming {
    pub aic: u32,
    pub end: u32,
    pub busy: [u64; 7],
    pub hbm_bytes: u64,
    pub l2_bytes: u64,
}

#[repr(C)]
#[derive(Default, Clone, Copy)]
pub(crate) struct SimChipTiming {
    pub clock_hz: f64,
    pub op_head_cycles: f64,
    pub launch_gap_us: f64,
    pub hccs_bytes_per_s: f64,
    pub collective_latency_us: f64,
    pub l2_bytes: f64,
    pub load_a: f64,
    pub load_b: f64,
    pub gm_peak_bytes_per_s: f64,
    pub l2_line_bytes: f64,
}

/// `onCall(ctx, core, pipe, api, start, cycles)`: one call of a traced launch.
pub(crate) type CallFn = unsafe extern "C" fn(*mut c_void, u32, u32, *const c_char, u32, u32);

pub(crate) type AbiVersionFn = unsafe extern "C" fn() -> u32;
pub(crate) type ChipTimingFn = unsafe extern "C" fn(*mut SimChipTiming);

/// `sim_launch(kernel, fn, mode, block_dim, checks, args, nargs, stats, traffic, times,
/// on_call, ctx, err, err_cap)`.
pub(crate) type LaunchFn = unsafe extern "C" fn(
    *const c_char,
    *mut c_void,
    u32,
    u32,
    u32,
    *const SimGmArg,
    u32,
    *mut SimStats,
    *mut SimArgTraffic,
    *mut SimCoreTiming,
    Option<CallFn>,
    *mut c_void,
    *mut c_char,
    u64,
) -> i32;

pub(crate) const LAUNCH_OK: i32 = 0;
pub(crate) const LAUNCH_TRAP: i32 = 1;
