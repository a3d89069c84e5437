//! One deliberately wrong kernel per trap class: the launch must fail (not abort the
//! process, not hang) with a message naming the kernel, the API call and the buffer.

#[path = "sim_kernels/support.rs"]
mod support;

use harness::kernel_library::{CoreMode, GmArg, SimError};
use support::lib;

fn trap(kernel: &str, mode: CoreMode, block_dim: u32, args: &mut [GmArg<'_>]) -> String {
    match lib().launch(kernel, mode, block_dim, args) {
        Err(SimError::Trap { kernel: k, message }) => {
            assert_eq!(k, kernel);
            assert!(
                message.contains(&format!("kernel `{kernel}`")),
                "message names the kernel: {message}"
            );
            message
        }
        other => panic!("{kernel}: expected a trap, got {other:?}"),
    }
}

fn assert_mentions(message: &str, parts: &[&str]) {
    for p in parts {
        assert!(message.contains(p), "`{p}` missing from: {message}");
    }
}

#[test]
fn gm_out_of_bounds() {
    let mut x = vec![0f32; 64];
    let m = trap(
        "trap_gm_oob",
        CoreMode::Aiv,
        1,
        &mut [GmArg::new("x", &mut x)],
    );
    assert_mentions(
        &m,
        &[
            "DataCopy",
            "GM out of bounds",
            "buffer `x` (256 bytes)",
            "[128, 384)",
        ],
    );
}

#[test]
fn a_data_cache_preload_outside_its_tensor() {
    let mut x = vec![0u64; 8];
    let m = trap(
        "trap_preload_oob",
        CoreMode::Aiv,
        1,
        &mut [GmArg::new("x", &mut x)],
    );
    assert_mentions(
        &m,
        &[
            "DataCachePreload",
            "GM out of bounds",
            "buffer `x` (64 bytes)",
        ],
    );
}

#[test]
fn local_memory_overflow() {
    let m = trap("trap_ub_overflow", CoreMode::Aiv, 1, &mut []);
    assert_mentions(
        &m,
        &[
            "TPipe::InitBuffer",
            "local memory overflow",
            "TBuf<VECCALC>#1",
            "capacity 188416",
        ],
    );
}

#[test]
fn misaligned_data_copy_and_vector_operand() {
    let mut x = vec![0f32; 64];
    let m = trap(
        "trap_misaligned_copy",
        CoreMode::Aiv,
        1,
        &mut [GmArg::new("x", &mut x)],
    );
    assert_mentions(
        &m,
        &[
            "DataCopy",
            "misaligned DataCopy",
            "count 10 x 4 bytes",
            "TQue<VECIN>#0[0]",
        ],
    );
    let m = trap("trap_misaligned_vec", CoreMode::Aiv, 1, &mut []);
    assert_mentions(
        &m,
        &[
            "Adds",
            "misaligned address",
            "not 32-byte aligned",
            "TBuf<VECCALC>#0",
        ],
    );
}

#[test]
fn use_of_freed_local_tensor() {
    let m = trap("trap_use_after_free", CoreMode::Aiv, 1, &mut []);
    assert_mentions(
        &m,
        &["Adds", "use of freed LocalTensor", "TQue<VECIN>#0[0]"],
    );
}

#[test]
fn queue_misuse() {
    let m = trap("trap_deque_empty", CoreMode::Aiv, 1, &mut []);
    assert_mentions(&m, &["TQue::DeQue", "empty queue", "TQue<VECOUT>#0"]);
    let m = trap("trap_queue_depth", CoreMode::Aiv, 1, &mut []);
    assert_mentions(&m, &["TQue::EnQue", "depth exceeded", "TQue<VECIN>#0"]);
}

#[test]
fn reading_never_written_local_memory() {
    let mut y = vec![0f32; 128];
    let m = trap(
        "trap_uninit_read",
        CoreMode::Aiv,
        1,
        &mut [GmArg::new("y", &mut y)],
    );
    assert_mentions(
        &m,
        &["DataCopy", "never-written", "byte 256", "TQue<VECOUT>#0[0]"],
    );
    let mut x = vec![0u16; 256];
    let m = trap(
        "trap_mmad_uninit",
        CoreMode::Aic,
        1,
        &mut [GmArg::new("x", &mut x)],
    );
    assert_mentions(&m, &["Mmad", "fm", "never-written", "L0A", "TBuf<A2>#1"]);
}

#[test]
fn cube_layout_misalignment() {
    let mut x = vec![0u16; 256];
    let m = trap(
        "trap_l0_misaligned",
        CoreMode::Aic,
        1,
        &mut [GmArg::new("x", &mut x)],
    );
    assert_mentions(
        &m,
        &["LoadData", "misaligned address", "512-byte", "TBuf<A2>#1"],
    );
}

#[test]
fn wait_flag_without_set_flag() {
    let m = trap("trap_wait_without_set", CoreMode::Aiv, 1, &mut []);
    assert_mentions(
        &m,
        &[
            "WaitFlag",
            "WaitFlag<HardEvent::MTE2_V>(1)",
            "without a matching SetFlag",
        ],
    );
}

#[test]
fn cast_round_mode_not_supported_by_the_chip() {
    let m = trap("trap_cast_mode", CoreMode::Aiv, 1, &mut []);
    assert_mentions(&m, &["Cast", "CAST_ODD", "not supported"]);
}

#[test]
fn deadlock_is_reported_instead_of_hanging() {
    let m = trap("trap_deadlock", CoreMode::Mix, 2, &mut []);
    assert_mentions(
        &m,
        &[
            "deadlock",
            "CrossCoreWaitFlag(3)",
            "AIV core (block 1, sub 1)",
        ],
    );
}

#[test]
fn a_trap_releases_cores_waiting_in_syncall() {
    let mut x = vec![0f32; 16];
    let m = trap(
        "trap_while_others_wait",
        CoreMode::Aiv,
        4,
        &mut [GmArg::new("x", &mut x)],
    );
    assert_mentions(
        &m,
        &[
            "AIV core (block 1)",
            "GlobalTensor::GetValue",
            "GM out of bounds",
            "buffer `x`",
        ],
    );
}

#[test]
fn kernel_type_must_match_the_launch_mode() {
    let (mut d, mut o) = (vec![0i32; 2], vec![0i32; 3]);
    let m = trap(
        "sim_mix_pingpong",
        CoreMode::Aiv,
        1,
        &mut [GmArg::new("d", &mut d), GmArg::new("o", &mut o)],
    );
    assert_mentions(
        &m,
        &[
            "KERNEL_TASK_TYPE_DEFAULT",
            "KERNEL_TYPE_MIX_AIC_1_2",
            "AIV-only",
        ],
    );
}

#[test]
fn a_kernel_type_marking_must_match_the_launch_mode() {
    let launch = |kernel: &str, mode: CoreMode| {
        let mut x = vec![0f32; 8];
        lib().launch(kernel, mode, 1, &mut [GmArg::new("x", &mut x)])
    };
    for (kernel, marking, mode, wrong, declared) in [
        (
            "marked_vector",
            "__vector__",
            CoreMode::Aiv,
            CoreMode::Mix,
            "KERNEL_TYPE_AIV_ONLY",
        ),
        (
            "marked_cube",
            "__cube__",
            CoreMode::Aic,
            CoreMode::Aiv,
            "KERNEL_TYPE_AIC_ONLY",
        ),
        (
            "marked_mix",
            "__mix__(1, 2)",
            CoreMode::Mix,
            CoreMode::Aic,
            "KERNEL_TYPE_MIX_AIC_1_2",
        ),
    ] {
        launch(kernel, mode).unwrap_or_else(|e| panic!("{kernel}: {e}"));
        let m = trap(kernel, wrong, 1, &mut [GmArg::new("x", &mut [0f32; 8])]);
        assert_mentions(&m, &[marking, declared]);
    }
}

#[test]
fn unknown_kernel_and_invalid_launch_are_errors() {
    let err = lib()
        .launch("no_such_kernel", CoreMode::Aiv, 1, &mut [])
        .unwrap_err();
    assert!(matches!(err, SimError::MissingKernel { .. }), "{err}");
    let err = lib()
        .launch("trap_ub_overflow", CoreMode::Aiv, 0, &mut [])
        .unwrap_err();
    assert!(matches!(err, SimError::InvalidLaunch { .. }), "{err}");
}

#[test]
fn data_copy_block_count_past_its_documented_range() {
    let mut x = vec![0f32; 4096 * 8];
    let m = trap(
        "trap_copy_block_count",
        CoreMode::Aiv,
        1,
        &mut [GmArg::new("x", &mut x)],
    );
    assert_mentions(
        &m,
        &[
            "DataCopy: ",
            "blockCount 4096",
            "documented range [0, 4095]",
        ],
    );
}

#[test]
fn a_value_truncated_by_a_narrow_constructor_field() {
    let mut x = vec![0f32; 8];
    let m = trap(
        "trap_copy_block_len_truncated",
        CoreMode::Aiv,
        1,
        &mut [GmArg::new("x", &mut x)],
    );
    assert_mentions(
        &m,
        &[
            "DataCopyParams: ",
            "blockLen 70000 does not fit its uint16_t [0, 65535]",
            "truncate it to 4464",
        ],
    );
}

#[test]
fn nd2nz_n_value_past_its_documented_range() {
    let mut x = vec![0u16; 256];
    let m = trap(
        "trap_nd2nz_n_value",
        CoreMode::Aic,
        1,
        &mut [GmArg::new("x", &mut x)],
    );
    assert_mentions(
        &m,
        &[
            "DataCopy(Nd2Nz): ",
            "nValue 16385",
            "documented range [0, 16384]",
        ],
    );
}

#[test]
fn load_data_repeat_times_that_do_not_fit_their_field() {
    let mut x = vec![0u16; 256];
    let m = trap(
        "trap_load_data_repeat_times",
        CoreMode::Aic,
        1,
        &mut [GmArg::new("x", &mut x)],
    );
    assert_mentions(
        &m,
        &[
            "LoadData2DParams: ",
            "repeatTimes 256 does not fit its uint8_t [0, 255]",
            "truncate it to 0",
        ],
    );
}

#[test]
fn fixpipe_n_size_past_its_documented_range() {
    let mut x = vec![0f32; 256];
    let m = trap(
        "trap_fixpipe_n_size",
        CoreMode::Aic,
        1,
        &mut [GmArg::new("x", &mut x)],
    );
    assert_mentions(
        &m,
        &["Fixpipe: ", "nSize 4096", "documented range [0, 4095]"],
    );
}

#[test]
fn mmad_k_past_its_documented_range() {
    let mut x = vec![0f32; 8];
    let m = trap(
        "trap_mmad_k",
        CoreMode::Aic,
        1,
        &mut [GmArg::new("x", &mut x)],
    );
    assert_mentions(&m, &["Mmad: ", "k 4096", "documented range [0, 4095]"]);
}

#[test]
fn a_vector_repeat_time_that_does_not_fit_its_parameter() {
    let m = trap("trap_vector_repeat_time", CoreMode::Aiv, 1, &mut []);
    assert_mentions(
        &m,
        &[
            "Adds: ",
            "repeatTime 300 does not fit its uint8_t [0, 255]",
            "truncate it to 44",
        ],
    );
}
