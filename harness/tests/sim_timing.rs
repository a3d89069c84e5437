//! The modeled device time on micro-kernels whose time follows by hand from the published
//! figures (sim_kernels/timing.cpp). The expected values restate the sources here, not the
//! sim's table: hicann/ge's A2 fits (Load: bytes / (9.9074 + 15.896 / N) + 27.01 cycles, plus
//! 0.07 · (pitch mod 256) per strided burst; Store:
//! bytes / (9.96 + 3.79 / N) + 12.09; Muls f32: 0.0142 per element + 23.0966; op head 300),
//! hicann/pypto's GM latencies (read 1400, write 300 cycles) and Mmad head (0.0107 µs · 2000),
//! one b16 16×16×16 fractal step per cube cycle.

#[path = "sim_kernels/support.rs"]
mod support;

use std::sync::OnceLock;

use harness::kernel_library::{
    BuildSpec, Checks, CoreMode, GmArg, GmElem, KernelTime, Pipe, SimLibrary, poison,
};

fn lib() -> &'static SimLibrary {
    static LIB: OnceLock<SimLibrary> = OnceLock::new();
    LIB.get_or_init(|| {
        let src = support::kernel_dir().join("timing.cpp");
        SimLibrary::build(&BuildSpec::new([src]).include_dir(support::kernel_include_dir()))
            .unwrap_or_else(|e| panic!("{e}"))
    })
}

fn traced() -> SimLibrary {
    SimLibrary::load(lib().path()).unwrap().with_checks(Checks {
        trace: true,
        ..Checks::default()
    })
}

fn load_cycles(bytes: f64, cores: f64) -> f64 {
    (27.01 + bytes / (9.9074 + 15.896 / cores)).ceil()
}
fn store_cycles(bytes: f64, cores: f64) -> f64 {
    (12.09 + bytes / (9.96 + 3.79 / cores)).ceil()
}
const GM_READ_LATENCY: f64 = 1400.0;
const GM_WRITE_LATENCY: f64 = 300.0;
const L2_HIT_LATENCY: f64 = 50.0; // hicann/pypto CacheConfig.toml l2HitLatency
const OP_HEAD: f64 = 300.0;

fn time(launched: harness::kernel_library::Launched) -> KernelTime {
    launched.time.expect("the timeline is on by default")
}

fn run_copy(blocks: u32) -> KernelTime {
    let mut x = vec![1f32; 16384 * blocks as usize];
    time(
        lib()
            .launch_measured(
                "tm_one_copy",
                CoreMode::Aiv,
                blocks,
                &mut [GmArg::new("x", &mut x)],
            )
            .unwrap(),
    )
}

fn within(got: f64, want: f64, tol: f64) -> bool {
    (got - want).abs() <= tol * want
}

#[test]
fn one_data_copy_costs_its_bytes_at_the_load_rate_plus_the_read_latency() {
    let t = run_copy(1);
    let want = load_cycles(65536.0, 1.0) + GM_READ_LATENCY;
    assert_eq!(t.cores.len(), 1);
    assert!(
        (t.cores[0].end as f64 - want).abs() <= 2.0,
        "end {} cycles, want {want}",
        t.cores[0].end
    );
    assert_eq!(t.cores[0].busy[4] as f64, load_cycles(65536.0, 1.0));
    assert!((t.cycles() - (want + OP_HEAD)).abs() <= 2.0);
    assert_eq!(t.bound(), "GM read"); // MTE2 busy 2567 of 3967 cycles
}

#[test]
fn a_strided_copy_pays_the_block_shape_term() {
    let mut x = vec![1f32; 64 * 96 / 4];
    let t = time(
        lib()
            .launch_measured(
                "tm_strided_copy",
                CoreMode::Aiv,
                1,
                &mut [GmArg::new("x", &mut x)],
            )
            .unwrap(),
    );
    // hicann/ge LoadStride: 0.07 · (pitch mod 256) per burst after the first
    let want = (27.01_f64 + 4096.0 / (9.9074 + 15.896) + 0.07 * 96.0 * 63.0).ceil();
    assert_eq!(t.cores[0].busy[4] as f64, want);
}

#[test]
fn twenty_four_blocks_share_the_bandwidth_and_a_launch_uses_only_its_cores() {
    let one = run_copy(1);
    let many = run_copy(24);
    assert_eq!(many.cores.len(), 24);
    let want = load_cycles(65536.0, 24.0) + GM_READ_LATENCY;
    for c in &many.cores {
        assert!((c.end as f64 - want).abs() <= 2.0, "{} vs {want}", c.end);
    }
    // 24× the bytes in (24 · 10.57) / 25.80 = 9.8× the single core's throughput
    let transfer = |t: &KernelTime| t.cores[0].busy[4] as f64;
    let gain = 24.0 * transfer(&one) / transfer(&many);
    assert!(
        within(gain, (24.0 * 9.9074 + 15.896) / (9.9074 + 15.896), 0.02),
        "24 blocks move {gain:.2}× the bytes per cycle of one"
    );
    assert!(many.duration() > one.duration());
}

/// Bytes an earlier launch left in L2 load at one core's full rate t(1) whatever the
/// launch's core count; all cores' hits together are bounded over the launch (the shared
/// floor at the 1.6 TB/s peak), not by a 1/N share of it per core, which would charge a
/// launch's idle cores' share to its busy ones.
#[test]
fn warm_reads_run_at_one_cores_rate_and_together_at_the_peak() {
    let blocks = 48;
    let mut x = vec![1f32; 16384 * blocks];
    let every_line = vec![!0u64; (x.len() * 4).div_ceil(512 * 64)];
    let t = time(
        lib()
            .launch_measured(
                "tm_one_copy",
                CoreMode::Aiv,
                blocks as u32,
                &mut [GmArg::new("x", &mut x).warm(Some(&every_line))],
            )
            .unwrap(),
    );
    assert_eq!(t.cores.len(), blocks);
    for c in &t.cores {
        assert_eq!((c.hbm_bytes, c.l2_bytes), (0, 65536));
        assert_eq!(c.busy[4] as f64, load_cycles(65536.0, 1.0));
    }
    // 48 · 64 KiB at 1.6 TB/s (888.9 bytes per cycle at 1.8 GHz): 3539 cycles, more than a
    // core's 2567 + 50
    let floor = blocks as f64 * 65536.0 / (1.6e12 / 1.8e9);
    assert!(
        (t.cycles() - (OP_HEAD + floor)).abs() <= 2.0,
        "{} cycles, want {}",
        t.cycles(),
        OP_HEAD + floor
    );
}

/// A launch reports the L2 lines (512 bytes, asc-devkit's SIMT atomics page) it touched, and
/// a later launch reads warm only those: 24 blocks read the first half of a buffer, then 48
/// read all of it, the second half from HBM.
#[test]
fn only_the_lines_an_earlier_launch_touched_are_warm() {
    let slice = 16384 * 4usize; // bytes per block
    let mut x = vec![1f32; 16384 * 48];
    let first = lib()
        .launch_measured(
            "tm_one_copy",
            CoreMode::Aiv,
            24,
            &mut [GmArg::new("x", &mut x)],
        )
        .unwrap();
    let lines = &first.lines[0];
    assert_eq!(lines.len(), (48 * slice).div_ceil(512 * 64));
    let ones: u32 = lines.iter().map(|w| w.count_ones()).sum();
    assert_eq!(ones as usize, 24 * slice / 512);
    assert!(lines[..ones as usize / 64].iter().all(|&w| w == !0));
    let second = time(
        lib()
            .launch_measured(
                "tm_one_copy",
                CoreMode::Aiv,
                48,
                &mut [GmArg::new("x", &mut x).warm(Some(lines))],
            )
            .unwrap(),
    );
    for (b, c) in second.cores.iter().enumerate() {
        let hbm = if b < 24 { 0 } else { slice as u64 };
        assert_eq!(
            (c.hbm_bytes, c.l2_bytes),
            (hbm, slice as u64 - hbm),
            "block {b}"
        );
    }
}

/// Every block reads the same bytes: the first to touch them pays the HBM read, the others
/// hit L2 (timing.h). With `ordered` that is always block 0 (the cores run one at a time,
/// the lowest-numbered first), so the modeled time is the same on every run; cores racing
/// on threads would make it whichever thread came first.
#[test]
fn ordered_cores_read_shared_bytes_in_a_fixed_order() {
    let ordered = SimLibrary::load(lib().path()).unwrap().with_checks(Checks {
        ordered: true,
        ..Checks::default()
    });
    let bytes = 16384 * 4;
    let run = || {
        let mut x = vec![1f32; 16384];
        let launched = ordered.launch_measured(
            "tm_same_copy",
            CoreMode::Aiv,
            24,
            &mut [GmArg::new("x", &mut x)],
        );
        time(launched.unwrap())
    };
    let first = run();
    for c in 0..24 {
        let core = &first.cores[c];
        let want = if c == 0 { (bytes, 0) } else { (0, bytes) };
        assert_eq!((core.hbm_bytes, core.l2_bytes), want, "core {c}");
    }
    for _ in 0..4 {
        let again = run();
        let ends = |t: &KernelTime| t.cores.iter().map(|c| c.end).collect::<Vec<_>>();
        assert_eq!(
            ends(&again),
            ends(&first),
            "the same modeled time on every run"
        );
    }
}

/// One block of `kernel(x, y)`, y poisoned first.
fn run_xy<T: GmElem>(kernel: &str, x: &mut [T], y: &mut [T]) -> KernelTime {
    poison(y);
    time(
        lib()
            .launch_measured(
                kernel,
                CoreMode::Aiv,
                1,
                &mut [GmArg::new("x", x), GmArg::new("y", y)],
            )
            .unwrap(),
    )
}

fn run_pipeline(kernel: &str) -> (KernelTime, Vec<f32>) {
    let mut x: Vec<f32> = (0..16 * 8192).map(|i| (i % 1000) as f32).collect();
    let mut y = vec![0f32; x.len()];
    let t = run_xy(kernel, &mut x, &mut y);
    assert!(y.iter().zip(&x).all(|(y, x)| *y == 2.0 * x));
    (t, y)
}

#[test]
fn double_buffering_runs_at_the_slowest_pipe_and_one_buffer_at_the_sum() {
    let bytes = 8192.0 * 4.0;
    let (mte2, mte3) = (load_cycles(bytes, 1.0), store_cycles(bytes, 1.0));
    let v = (23.0966 + 0.0142 * 8192.0_f64).ceil();
    let tiles = 16.0;

    let (single, _) = run_pipeline("tm_pipeline_single");
    let per_tile = mte2 + GM_READ_LATENCY + v + mte3 + GM_WRITE_LATENCY;
    let end = single.cores[0].end as f64;
    assert!(
        within(end, tiles * per_tile, 0.01),
        "single-buffered: {end} cycles, want ≈ {} (the sum of the stages per tile)",
        tiles * per_tile
    );

    let (double, _) = run_pipeline("tm_pipeline_double");
    let busy = double.cores[0].busy;
    assert_eq!(busy[5] as f64, tiles * mte3); // MTE3, the slowest pipe
    assert_eq!(busy[4] as f64, tiles * mte2);
    let end = double.cores[0].end as f64;
    let fill_drain = mte2 + GM_READ_LATENCY + v + GM_WRITE_LATENCY;
    assert!(
        within(end, tiles * mte3 + fill_drain, 0.01),
        "double-buffered: {end} cycles, want ≈ {} (MTE3 busy + one tile's fill and drain)",
        tiles * mte3 + fill_drain
    );
    assert_eq!(double.bound(), "GM write");
    assert!(double.duration().as_secs_f64() < 0.5 * single.duration().as_secs_f64());
}

#[test]
fn a_large_mmad_runs_near_the_cube_peak() {
    let mut c = vec![0f32; 128 * 128];
    poison(&mut c);
    let t = time(
        lib()
            .launch_measured("tm_mmad", CoreMode::Aic, 1, &mut [GmArg::new("c", &mut c)])
            .unwrap(),
    );
    assert!(c.iter().all(|&v| v == 512.0));
    let fractal_steps = 8.0 * 8.0 * 16.0;
    let m = t.cores[0].busy[2] as f64;
    assert_eq!(m, (0.0107_f64 * 2000.0 + fractal_steps).ceil());
    let macs_per_cycle = 128.0 * 128.0 * 256.0 / m;
    assert!(
        macs_per_cycle > 0.97 * 4096.0,
        "{macs_per_cycle} MACs per cycle"
    );
}

#[test]
fn a_cross_core_wait_adds_the_producers_time() {
    let mut c = vec![0f32; 128 * 128];
    poison(&mut c);
    let t = time(
        traced()
            .launch_measured(
                "tm_handoff",
                CoreMode::Mix,
                1,
                &mut [GmArg::new("c", &mut c)],
            )
            .unwrap(),
    );
    assert_eq!(t.cores.len(), 3);
    let aic = t.cores[0];
    assert!(aic.aic && !t.cores[1].aic && !t.cores[2].aic);
    // the flag fires once Fixpipe's write is done (its latency included): the AIC's end;
    // the AIV then reads bytes this launch wrote: an L2 hit, at one core's full rate
    let read = load_cycles(128.0 * 64.0 * 4.0, 1.0) + L2_HIT_LATENCY;
    for aiv in &t.cores[1..] {
        assert!(
            (aiv.end as f64 - (aic.end as f64 + read)).abs() <= 3.0,
            "AIV end {} want {} + {read}",
            aiv.end,
            aic.end
        );
    }
    // the trace has every call on its pipe, without overlaps per (core, pipe)
    let fix = t
        .calls
        .iter()
        .find(|c| c.core == 0 && c.pipe == Pipe::Fix)
        .expect("Fixpipe traced");
    assert_eq!(fix.api, "Fixpipe");
    let aiv_copy = t
        .calls
        .iter()
        .find(|c| c.core == 1 && c.pipe == Pipe::Mte2)
        .expect("the AIV's DataCopy traced");
    assert!(aiv_copy.start >= fix.start + fix.cycles);
}

fn run_scalar_reads(kernel: &str) -> (KernelTime, i32) {
    let mut x = vec![1i32; 80];
    let mut y = vec![0i32; 16];
    let t = run_xy(kernel, &mut x, &mut y);
    (t, y[0])
}

#[test]
fn preloaded_lines_turn_scalar_misses_into_one_latency() {
    // A scalar read costs 4 cycles (a data-cache hit, assumed), plus the GM read latency the
    // first time the core reads a 64-byte line; the write of the sum is one more hit.
    let (plain, sum) = run_scalar_reads("tm_scalar_reads");
    assert_eq!(sum, 64);
    let s = |t: &KernelTime| t.cores[0].busy[0] as f64;
    assert_eq!(s(&plain), 4.0 * (GM_READ_LATENCY + 4.0) + 60.0 * 4.0 + 4.0);
    // Four DataCachePreload calls (4 cycles each) ask for the lines; the first read waits
    // for the first line (a GM read latency after its preload started), the later lines
    // arrived meanwhile: the four latencies overlap.
    let (preloaded, sum) = run_scalar_reads("tm_preloaded_reads");
    assert_eq!(sum, 64);
    assert_eq!(
        s(&preloaded),
        4.0 * 4.0 + (GM_READ_LATENCY - 16.0) + 64.0 * 4.0 + 4.0
    );
}

#[test]
fn the_timeline_changes_no_value() {
    let run = |checks: Checks| {
        let lib = SimLibrary::load(lib().path()).unwrap().with_checks(checks);
        let mut x: Vec<f32> = (0..16 * 8192).map(|i| i as f32 * 0.25).collect();
        let mut y = vec![0f32; x.len()];
        poison(&mut y);
        let l = lib
            .launch_measured(
                "tm_pipeline_double",
                CoreMode::Aiv,
                1,
                &mut [GmArg::new("x", &mut x), GmArg::new("y", &mut y)],
            )
            .unwrap();
        (y, l.time.is_some())
    };
    let (on, timed) = run(Checks::default());
    let (off, untimed) = run(Checks {
        timeline: false,
        ..Checks::default()
    });
    assert!(timed && !untimed);
    assert_eq!(
        on.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        off.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
    );
}
