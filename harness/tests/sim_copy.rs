//! Data movement through the sim: DataCopy across cores (with exact GM byte counters) and
//! DataCopyPad on rows that are not multiples of 32 bytes.

#[path = "sim_kernels/support.rs"]
mod support;

use half::bf16;
use harness::kernel_library::{CoreMode, GmArg, poison};
use rand::RngExt;
use support::{lib, rng};

#[test]
fn copy_kernel_moves_every_element_and_counts_exact_gm_bytes() {
    const PER_CORE: usize = 2048;
    let cores = 4;
    let mut r = rng(1);
    let mut x: Vec<f32> = (0..PER_CORE * cores)
        .map(|_| r.random_range(-10.0..10.0))
        .collect();
    let mut y = vec![0f32; x.len()];
    poison(&mut y);
    let stats = lib()
        .launch(
            "sim_copy_f32",
            CoreMode::Aiv,
            cores as u32,
            &mut [GmArg::new("x", &mut x), GmArg::new("y", &mut y)],
        )
        .unwrap();
    assert_eq!(y, x);
    let bytes = (x.len() * 4) as u64;
    assert_eq!(stats.gm_read_bytes, bytes);
    assert_eq!(stats.gm_write_bytes, bytes);
    assert_eq!(stats.scalar_gm_reads + stats.scalar_gm_writes, 0);
    assert_eq!(stats.macs(), 0);
    assert_eq!(stats.peak_ub, 2 * 1024 * 4, "two 4 KiB queue buffers");
    assert_eq!(stats.peak_l1, 0);
}

#[test]
fn data_copy_pad_moves_unaligned_rows_with_padding() {
    const ROWS: usize = 5;
    const COLS: usize = 21;
    const PAD: usize = 32;
    let mut r = rng(2);
    let mut x: Vec<bf16> = (0..ROWS * COLS)
        .map(|_| bf16::from_f32(r.random_range(-4.0..4.0)))
        .collect();
    // y has a guard tail: an unaligned write must not spill past the 5 x 21 elements
    let mut y = vec![bf16::ZERO; ROWS * COLS + 16];
    let mut ypad = vec![bf16::ZERO; ROWS * PAD];
    poison(&mut y);
    poison(&mut ypad);
    let stats = lib()
        .launch(
            "sim_copy_pad_bf16",
            CoreMode::Aiv,
            1,
            &mut [
                GmArg::new("x", &mut x),
                GmArg::new("y", &mut y),
                GmArg::new("ypad", &mut ypad),
            ],
        )
        .unwrap();
    for i in 0..ROWS * COLS {
        assert_eq!(y[i], bf16::from_f32(2.0 * x[i].to_f32()), "y[{i}]");
    }
    assert!(
        y[ROWS * COLS..].iter().all(|v| v.to_bits() == 0xFFFF),
        "guard tail untouched"
    );
    for row in 0..ROWS {
        for c in 0..PAD {
            let want = if c < COLS {
                x[row * COLS + c]
            } else {
                bf16::from_f32(7.0)
            };
            assert_eq!(ypad[row * PAD + c], want, "ypad[{row}][{c}]");
        }
    }
    // exactly the bytes moved: x in, y and ypad out
    assert_eq!(stats.gm_read_bytes, (ROWS * COLS * 2) as u64);
    assert_eq!(
        stats.gm_write_bytes,
        (ROWS * COLS * 2 + ROWS * PAD * 2) as u64
    );
}

#[test]
fn data_copy_pad_strides_in_bytes_and_fills_dummy_lanes_with_the_first_element() {
    let mut r = rng(3);
    let mut x: Vec<f32> = (0..4 * 20).map(|_| r.random_range(-1.0..1.0)).collect();
    let mut y = vec![0f32; 48];
    poison(&mut y);
    lib()
        .launch(
            "sim_copy_pad_stride",
            CoreMode::Aiv,
            1,
            &mut [GmArg::new("x", &mut x), GmArg::new("y", &mut y)],
        )
        .unwrap();
    for (k, src_row) in [0usize, 2].into_iter().enumerate() {
        assert_eq!(&y[k * 24..k * 24 + 20], &x[src_row * 20..src_row * 20 + 20]);
        assert!(
            y[k * 24 + 20..k * 24 + 24]
                .iter()
                .all(|&v| v == x[src_row * 20]),
            "dummy lanes of row {k}"
        );
    }
}
