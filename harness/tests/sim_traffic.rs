//! Per-launch and per-argument DMA traffic: bytes moved, distinct bytes touched (what a
//! launch warms in L2) and the minimum (each value read once and written once), the
//! counters `cargo xtask cost` compares (moved / minimum > 1 means a re-read).

#[path = "sim_kernels/support.rs"]
mod support;

use std::sync::OnceLock;

use harness::kernel_library::{BuildSpec, CoreMode, GmArg, Launched, SimLibrary, poison};

/// Only this test's kernels (traffic.cpp): a small library that builds quickly.
fn lib() -> &'static SimLibrary {
    static LIB: OnceLock<SimLibrary> = OnceLock::new();
    LIB.get_or_init(|| {
        let src = support::kernel_dir().join("traffic.cpp");
        SimLibrary::build(&BuildSpec::new([src]).include_dir(support::kernel_include_dir()))
            .unwrap_or_else(|e| panic!("{e}"))
    })
}

#[test]
fn a_reread_input_moves_twice_its_distinct_bytes() {
    let mut x: Vec<f32> = (0..512).map(|i| i as f32).collect();
    let mut y = vec![0f32; 512];
    poison(&mut y);
    let Launched { stats, args, .. } = lib()
        .launch_measured(
            "sim_traffic_reread",
            CoreMode::Aiv,
            1,
            &mut [GmArg::new("x", &mut x), GmArg::new("y", &mut y)],
        )
        .unwrap();
    assert!(y.iter().enumerate().all(|(i, &v)| v == 2.0 * i as f32));
    assert_eq!(args.len(), 2);
    assert_eq!(args[0].name, "x");
    assert_eq!(
        (args[0].read_bytes, args[0].distinct_read_bytes),
        (2 * 2048, 2048)
    );
    assert_eq!((args[0].write_bytes, args[0].distinct_write_bytes), (0, 0));
    assert_eq!(
        (args[1].write_bytes, args[1].distinct_write_bytes),
        (2048, 2048)
    );
    assert_eq!(
        (stats.gm_read_bytes, stats.gm_distinct_read_bytes),
        (4096, 2048)
    );
    assert_eq!(
        (stats.gm_write_bytes, stats.gm_distinct_write_bytes),
        (2048, 2048)
    );
    assert_eq!(stats.gm_distinct_bytes(), 4096);
    assert_eq!((args[0].min_read_bytes, stats.gm_min_bytes()), (2048, 4096));
}

#[test]
fn strided_reads_count_only_the_rows_touched() {
    let mut x: Vec<f32> = (0..8 * 64).map(|i| i as f32).collect();
    let mut y = vec![0f32; 4 * 64];
    poison(&mut y);
    let Launched { stats, args, .. } = lib()
        .launch_measured(
            "sim_traffic_strided",
            CoreMode::Aiv,
            1,
            &mut [GmArg::new("x", &mut x), GmArg::new("y", &mut y)],
        )
        .unwrap();
    for r in 0..4 {
        for c in 0..64 {
            assert_eq!(y[r * 64 + c], (2 * r * 64 + c) as f32);
        }
    }
    // rows 0, 2, 4, 6 of x: 4 × 256 bytes, once
    assert_eq!(
        (args[0].read_bytes, args[0].distinct_read_bytes),
        (1024, 1024)
    );
    // y written whole once, row 0 twice
    assert_eq!(
        (args[1].write_bytes, args[1].distinct_write_bytes),
        (1024 + 256, 1024)
    );
    assert_eq!(stats.gm_distinct_write_bytes, 1024);
    // row 0's second write overwrites a value nobody read
    assert_eq!(stats.gm_min_write_bytes, 1024);
}

#[test]
fn a_hand_off_through_a_reused_buffer_counts_each_value_once_in_the_minimum() {
    let mut x: Vec<f32> = (0..4 * 64).map(|i| i as f32).collect();
    let mut s = vec![0f32; 64];
    let mut y = vec![0f32; 4 * 64];
    poison(&mut s);
    poison(&mut y);
    let Launched { stats, args, .. } = lib()
        .launch_measured(
            "sim_traffic_handoff",
            CoreMode::Aiv,
            1,
            &mut [
                GmArg::new("x", &mut x),
                GmArg::new("s", &mut s),
                GmArg::new("y", &mut y),
            ],
        )
        .unwrap();
    assert_eq!(y, x);
    let s = &args[1];
    // four rows through one 256-byte row: touched once, but four values each way count;
    // row 0's second read and the last row's unread overwrite do not
    assert_eq!(
        (s.write_bytes, s.distinct_write_bytes, s.min_write_bytes),
        (6 * 256, 256, 5 * 256)
    );
    assert_eq!(
        (s.read_bytes, s.distinct_read_bytes, s.min_read_bytes),
        (5 * 256, 256, 4 * 256)
    );
    // an input read once and an output written once: their minimum is their bytes
    assert_eq!(
        (args[0].min_read_bytes, args[2].min_write_bytes),
        (1024, 1024)
    );
    assert_eq!(stats.gm_min_read_bytes, 1024 + 4 * 256);
    assert_eq!(stats.gm_min_write_bytes, 5 * 256 + 1024);
    assert_eq!(stats.gm_min_bytes(), 2 * 1024 + 9 * 256);
}
