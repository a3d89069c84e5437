//! The npu backend end to end on a fake CANN (tests/fake_cann): the backend builds the
//! generated kernels with the fake `cmake` (launchers and all), runs them through the fake
//! ACL, which hands each launch to the CPU model, and moves the collectives' rows with the
//! fake HCCL. The outputs must be the sim backend's bits; the call log must show the
//! runtime's rules kept; injected failures must give one readable error and no hang.
//!
//! What this cannot show: anything of the real device (bisheng, the real runtime's
//! scheduling and timing, HCCL's transport); see README "The npu backend".

mod fake_cann;
mod layer_checks;

use std::time::{Duration, Instant};

use abi::plan::{Cores, Step, VariantPlan};
use golden::fixtures::{self, DEFAULT_SEED, FixtureOptions, StartPositions};
use golden::tensor::TensorMap;
use harness::backend::npu::toolkit::Toolkit;
use harness::backend::npu::{Npu, build};
use harness::backend::{KernelSources, Progress};
use harness::runtime::{Runtime, RuntimeOptions};
use runner::variant;

/// Bounds a rank's wait for a peer that failed.
const TIMEOUT: Duration = Duration::from_secs(4);

fn plan(name: &str) -> &'static VariantPlan {
    variant::by_name(name).unwrap_or_else(|| panic!("no variant {name}"))
}

/// How the npu backend runs a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Stream,
    SyncEach,
    Graph,
}

/// `name` on the fake NPU, devices 0..tp, in stream order.
fn npu_runtime(name: &str) -> Result<Runtime, String> {
    npu_runtime_in(name, Mode::Stream)
}

fn npu_runtime_in(name: &str, mode: Mode) -> Result<Runtime, String> {
    let plan = plan(name);
    let npu = Npu::new((0..plan.abi.tp as u32).collect())
        .with_timeout(TIMEOUT)
        .with_sync_each(mode == Mode::SyncEach)
        .with_graph(mode == Mode::Graph);
    let sources = KernelSources::in_repo(&variant::repo_root());
    Runtime::prepare(plan, &npu, &sources, RuntimeOptions::default()).map_err(|e| e.to_string())
}

/// The default-start inputs of `name` at capacity, drawn with `seed`.
fn inputs_seeded(name: &str, seed: u64) -> TensorMap {
    let spec = variant::layer_spec(plan(name)).unwrap();
    let opts = FixtureOptions {
        seed,
        starts: StartPositions::Default,
        tokens: None,
    };
    fixtures::build(&spec, &opts).unwrap().inputs
}

fn inputs(name: &str) -> TensorMap {
    inputs_seeded(name, DEFAULT_SEED)
}

/// Requires every output of `got` to be `want`'s bytes.
fn same_bits(name: &str, what: &str, got: &TensorMap, want: &TensorMap) {
    let names: Vec<&str> = want.names().collect();
    assert!(!names.is_empty());
    for n in names {
        let (g, w) = (got.get(n).unwrap(), want.get(n).unwrap());
        assert_eq!(g.shape(), w.shape(), "{name} ({what}): {n}");
        assert!(
            g.as_le_bytes() == w.as_le_bytes(),
            "{name} ({what}): {n} differs from the sim backend's"
        );
    }
    assert_eq!(got.len(), want.len());
}

/// Runs `name` on the fake NPU in stream order, and as a captured graph (captured on one
/// case, replayed on a case drawn with another seed), and requires the sim's bytes in
/// every output of each.
fn same_bits_as_the_sim(name: &str) {
    let (kit, _serial) = fake_cann::kit();
    let (first, second) = (inputs(name), inputs_seeded(name, DEFAULT_SEED + 17));
    let sim = layer_checks::runtime(name);
    let want_first = sim.run(&first).unwrap().outputs;
    let want_second = sim.run(&second).unwrap().outputs;
    assert_ne!(want_first, want_second, "{name}: the two cases must differ");

    let stream = npu_runtime(name).unwrap_or_else(|e| panic!("{e}"));
    let got = stream
        .run(&first)
        .unwrap_or_else(|e| panic!("{name} on the fake npu: {e}"));
    same_bits(name, "stream order", &got.outputs, &want_first);
    drop(stream);
    assert_eq!(kit.leaks(), "", "{name}: leaks after the run");

    let graph = npu_runtime_in(name, Mode::Graph).unwrap_or_else(|e| panic!("{e}"));
    let captured = graph
        .run(&first)
        .unwrap_or_else(|e| panic!("{name} captured on the fake npu: {e}"));
    same_bits(name, "graph capture", &captured.outputs, &want_first);
    let before = kit.log().lines().filter(|l| l.contains(" launch ")).count();
    let replayed = graph
        .run(&second)
        .unwrap_or_else(|e| panic!("{name} replayed on the fake npu: {e}"));
    same_bits(name, "graph replay", &replayed.outputs, &want_second);
    let after = kit.log().lines().filter(|l| l.contains(" launch ")).count();
    assert_eq!(before, after, "{name}: a replay launched kernels itself");
    drop(graph);
    assert_eq!(kit.leaks(), "", "{name}: leaks after the graph runs");
}

#[test]
fn swa_small_tp1_matches_the_sim_bit_for_bit() {
    same_bits_as_the_sim("swa_small_tp1");
}

#[test]
fn swa_small_tp2_matches_the_sim_bit_for_bit() {
    same_bits_as_the_sim("swa_small_tp2");
}

#[test]
fn swa_mini_tp4_matches_the_sim_bit_for_bit() {
    same_bits_as_the_sim("swa_mini_tp4");
}

#[test]
fn hca_small_tp1_matches_the_sim_bit_for_bit() {
    same_bits_as_the_sim("hca_small_tp1");
}

#[test]
fn hca_small_tp2_matches_the_sim_bit_for_bit() {
    same_bits_as_the_sim("hca_small_tp2");
}

#[test]
fn hca_small_tp4_matches_the_sim_bit_for_bit() {
    same_bits_as_the_sim("hca_small_tp4");
}

#[test]
fn csa_small_tp1_matches_the_sim_bit_for_bit() {
    same_bits_as_the_sim("csa_small_tp1");
}

#[test]
fn csa_small_tp2_matches_the_sim_bit_for_bit() {
    same_bits_as_the_sim("csa_small_tp2");
}

#[test]
fn csa_small_tp4_matches_the_sim_bit_for_bit() {
    same_bits_as_the_sim("csa_small_tp4");
}

/// A call log line: thread, device, call, the rest.
struct Call<'a> {
    thread: &'a str,
    call: &'a str,
    rest: &'a str,
}

fn calls(log: &str) -> Vec<Call<'_>> {
    log.lines()
        .map(|l| {
            let mut parts = l.splitn(4, ' ');
            let thread = parts.next().unwrap();
            let _device = parts.next().unwrap();
            let call = parts.next().unwrap_or("");
            Call {
                thread,
                call,
                rest: parts.next().unwrap_or(""),
            }
        })
        .collect()
}

/// Calls that need a device bound to the calling thread.
const DEVICE_CALLS: [&str; 7] = [
    "aclrtMalloc",
    "aclrtMemcpy",
    "aclrtCreateStream",
    "launch",
    "aclrtSynchronizeStreamWithTimeout",
    "HcclGetRootInfo",
    "HcclCommInitRootInfo",
];

#[test]
fn the_call_log_keeps_the_runtimes_rules() {
    let (kit, _serial) = fake_cann::kit();
    let name = "swa_small_tp2";
    let inputs = inputs(name);
    let npu = npu_runtime(name).unwrap();
    kit.reset("Ascend910B1", 24, 48);
    npu.run(&inputs).unwrap();
    drop(npu);
    let log = kit.log();
    let calls = calls(&log);
    let threads: Vec<&str> = {
        let mut t: Vec<&str> = calls.iter().map(|c| c.thread).collect();
        t.sort();
        t.dedup();
        t
    };
    let tiling_bytes = 4 * abi::tiling::TILING_WORDS;
    let plan = plan(name);
    let launches_per_rank = plan
        .steps
        .iter()
        .filter(|s| matches!(s, Step::Launch(_)))
        .count();
    // What each rank must hand the device, in order: the plan's kernels with their core
    // type and blockDim (the fake takes the core type from the kernel's marking).
    let expected: Vec<String> = plan
        .steps
        .iter()
        .filter_map(|s| match s {
            Step::Launch(l) => Some(format!(
                "{} blockDim={} {}",
                l.kernel,
                l.block_dim,
                match l.cores {
                    Cores::Aiv => "vector",
                    Cores::Aic => "cube",
                    Cores::Mix => "mix(1, 2)",
                }
            )),
            _ => None,
        })
        .collect();
    let mut launches = 0;
    for t in threads {
        let mine: Vec<&Call> = calls.iter().filter(|c| c.thread == t).collect();
        let handed: Vec<&str> = mine
            .iter()
            .filter(|c| c.call == "launch")
            .map(|c| c.rest.split(" args=").next().unwrap())
            .collect();
        if !handed.is_empty() {
            assert_eq!(handed, expected, "thread {t}");
        }
        let first_set = mine.iter().position(|c| c.call == "aclrtSetDevice");
        for (i, c) in mine.iter().enumerate() {
            if DEVICE_CALLS.contains(&c.call) {
                assert!(
                    first_set.is_some_and(|s| s < i),
                    "thread {t}: {} before aclrtSetDevice:\n{log}",
                    c.call
                );
            }
            if c.call == "launch" {
                launches += 1;
            }
        }
        // Stream order: the run's tiling words go up once, before the rank's first launch,
        // and the rank synchronises once, after its last launch and collective.
        let uploads: Vec<usize> = (0..mine.len())
            .filter(|&i| {
                mine[i].call == "aclrtMemcpy"
                    && mine[i]
                        .rest
                        .starts_with(&format!("H2D {tiling_bytes} bytes"))
            })
            .collect();
        let launched: Vec<usize> = (0..mine.len())
            .filter(|&i| mine[i].call == "launch")
            .collect();
        let enqueued: Vec<usize> = (0..mine.len())
            .filter(|&i| ["launch", "HcclAlltoAllV"].contains(&mine[i].call))
            .collect();
        let syncs: Vec<usize> = (0..mine.len())
            .filter(|&i| mine[i].call == "aclrtSynchronizeStreamWithTimeout")
            .collect();
        if let (Some(&first), Some(&last)) = (launched.first(), enqueued.last()) {
            assert_eq!(
                uploads.len(),
                1,
                "thread {t}: one tiling upload per run:\n{log}"
            );
            assert!(
                uploads[0] < first,
                "thread {t}: tiling after a launch:\n{log}"
            );
            assert_eq!(
                syncs.len(),
                1,
                "thread {t}: one synchronisation per run:\n{log}"
            );
            assert!(
                syncs[0] > last,
                "thread {t}: a step after the synchronisation:\n{log}"
            );
        }
    }
    assert_eq!(launches, 2 * launches_per_rank, "{log}");
    let roots = calls.iter().filter(|c| c.call == "HcclGetRootInfo").count();
    assert_eq!(roots, 1, "one root info per run:\n{log}");
    assert_eq!(
        calls.iter().filter(|c| c.call == "aclInit").count(),
        0,
        "ACL is initialised once per process, not per run"
    );
    assert_eq!(kit.leaks(), "", "leaks after the run");
}

#[test]
fn sync_each_synchronises_after_every_launch_and_collective_with_the_same_bits() {
    let (kit, _serial) = fake_cann::kit();
    let name = "swa_small_tp2";
    let inputs = inputs(name);
    let each = npu_runtime_in(name, Mode::SyncEach).unwrap();
    kit.reset("Ascend910B1", 24, 48);
    let stepwise = each.run(&inputs).unwrap();
    drop(each);
    let log = kit.log();
    let calls = calls(&log);
    let per_rank = plan(name).steps.len(); // launches and collectives
    let mut ranks = 0;
    let mut threads: Vec<&str> = calls.iter().map(|c| c.thread).collect();
    threads.sort();
    threads.dedup();
    for t in threads {
        let mine: Vec<&Call> = calls.iter().filter(|c| c.thread == t).collect();
        if !mine.iter().any(|c| c.call == "launch") {
            continue;
        }
        ranks += 1;
        let syncs = mine
            .iter()
            .filter(|c| c.call == "aclrtSynchronizeStreamWithTimeout")
            .count();
        // one after each step, and the run's own at the end
        assert_eq!(syncs, per_rank + 1, "thread {t}:\n{log}");
    }
    assert_eq!(ranks, 2);
    let ordered = npu_runtime(name).unwrap().run(&inputs).unwrap();
    assert_eq!(stepwise.outputs, ordered.outputs);
}

#[test]
fn the_build_configures_release_with_a_job_count_and_is_cached() {
    let (kit, _serial) = fake_cann::kit();
    let plan = plan("swa_small_tp1");
    let sources = KernelSources::in_repo(&variant::repo_root());
    let toolkit = Toolkit::locate().unwrap();
    assert_eq!(toolkit.root, kit.root);
    let cache = tempfile::tempdir().unwrap();
    let progress = Progress::quiet();
    let before = kit.cmake_log().lines().count();
    let lib = build::build(
        &toolkit,
        plan,
        plan.kernels,
        &sources,
        cache.path(),
        &progress,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let log = kit.cmake_log();
    let calls: Vec<&str> = log.lines().skip(before).collect();
    assert_eq!(calls.len(), 2, "{log}");
    let asc = kit.root.join("compiler/tikcpp/ascendc_kernel_cmake");
    assert!(
        calls[0].starts_with("cmake -S ")
            && calls[0].contains(&format!("-DASC_DIR={}", asc.display()))
            && calls[0].ends_with("-DCMAKE_BUILD_TYPE=Release"),
        "{}",
        calls[0]
    );
    let jobs = calls[1].rsplit(' ').next().unwrap();
    assert!(
        calls[1].contains(" --parallel ") && jobs.parse::<usize>().is_ok_and(|j| j >= 1),
        "{}",
        calls[1]
    );
    // SAFETY: the library just built; only its symbol table is read.
    unsafe {
        let l = libloading::Library::new(&lib).unwrap();
        for k in plan.kernels {
            let symbol = build::launcher_symbol(k.name);
            assert!(l.get::<*const u8>(symbol.as_bytes()).is_ok(), "{symbol}");
        }
    }
    // a second build of the same sources and toolkit is the cached library
    let again = build::build(
        &toolkit,
        plan,
        plan.kernels,
        &sources,
        cache.path(),
        &progress,
    )
    .unwrap();
    assert_eq!(again, lib);
    assert_eq!(kit.cmake_log().lines().count(), before + 2);
}

/// The launches a rank makes before the plan's first collective.
fn launches_before_the_exchange(name: &str) -> usize {
    plan(name)
        .steps
        .iter()
        .take_while(|s| matches!(s, Step::Launch(_)))
        .count()
}

/// Runs swa_small_tp2 with `call`'s `nth` call on `device` failing: the run's one error,
/// which must come within the timeout bound and leave no leak.
fn injected(call: &str, device: Option<i32>, nth: usize, code: i32) -> String {
    let (kit, _serial) = fake_cann::kit();
    let name = "swa_small_tp2";
    let inputs = inputs(name);
    let npu = npu_runtime(name).unwrap();
    kit.fail(call, device, nth as i32, code);
    let started = Instant::now();
    let err = match npu.run(&inputs) {
        Ok(_) => panic!("{call} #{nth} on {device:?}: the run passed"),
        Err(e) => e.to_string(),
    };
    let took = started.elapsed();
    eprintln!("{call} #{nth} on device {device:?} failed the run in {took:.1?}: {err}");
    assert!(took < 4 * TIMEOUT, "{call}: took {took:?}");
    drop(npu);
    assert_eq!(kit.leaks(), "", "{call}: leaks after a failed run");
    err
}

fn assert_mentions(err: &str, parts: &[&str]) {
    for p in parts {
        assert!(err.contains(p), "`{p}` missing from: {err}");
    }
}

#[test]
fn a_failed_malloc_names_the_rank_the_call_and_the_message() {
    let err = injected("aclrtMalloc", Some(1), 3, fake_cann::MEMORY_ALLOCATION);
    assert_mentions(
        &err,
        &[
            "rank 1 (device 1)",
            "aclrtMalloc failed with ACL error 207001",
            "injected failure",
        ],
    );
}

#[test]
fn a_failed_memcpy_names_the_rank_the_call_and_the_message() {
    let err = injected("aclrtMemcpy", Some(0), 10, fake_cann::PARAM_INVALID);
    assert_mentions(
        &err,
        &[
            "rank 0 (device 0)",
            "aclrtMemcpy",
            "ACL error 107000",
            "injected failure",
        ],
    );
}

#[test]
fn a_failed_launch_is_seen_after_the_chevrons() {
    let err = injected("launch", Some(1), 2, fake_cann::PARAM_INVALID);
    assert_mentions(
        &err,
        &[
            "rank 1, step ",
            "device 1: launching",
            "failed with ACL error 107000",
            "injected failure of kernel",
        ],
    );
}

#[test]
fn a_rank_dying_before_the_exchange_stops_the_run_without_a_hang() {
    let n = launches_before_the_exchange("swa_small_tp2");
    let err = injected("launch", Some(1), n, fake_cann::PARAM_INVALID);
    assert_mentions(&err, &["rank 1", "injected failure of kernel"]);
}

#[test]
fn a_rank_dying_in_the_exchange_leaves_its_peer_to_time_out() {
    let err = injected("HcclAlltoAllV", Some(1), 1, fake_cann::HCCL_INTERNAL);
    assert_mentions(
        &err,
        &[
            "rank 1, step ",
            "(o_group_all_to_all): device 1: \
             HcclAlltoAllV failed with HCCL error 4 (internal error)",
            "injected failure",
        ],
    );
}

#[test]
fn a_rank_failing_to_join_leaves_its_peer_to_time_out() {
    // The peer waits HCCL_CONNECT_TIMEOUT (3 s here) in HcclCommInitRootInfo.
    let err = injected("HcclCommInitRootInfo", Some(1), 1, fake_cann::HCCL_INTERNAL);
    assert_mentions(
        &err,
        &[
            "rank 1, step ",
            "(device setup): device 1: \
             HcclCommInitRootInfo failed with HCCL error 4 (internal error)",
            "injected failure",
        ],
    );
}

#[test]
fn a_rank_dying_after_the_exchange_stops_the_run_without_a_hang() {
    let n = launches_before_the_exchange("swa_small_tp2");
    let err = injected("launch", Some(1), n + 1, fake_cann::PARAM_INVALID);
    assert_mentions(&err, &["rank 1", "injected failure of kernel"]);
}

#[test]
fn a_20_aic_chip_refuses_the_24_block_mixed_launch() {
    let (kit, _serial) = fake_cann::kit();
    kit.reset("Ascend910B3", 20, 40);
    let err = match npu_runtime("hca_tp1") {
        Ok(_) => panic!("hca_tp1 was accepted on a 20-AIC chip"),
        Err(e) => e,
    };
    assert_mentions(
        &err,
        &[
            "device 0 is an Ascend910B3 with 20 AI Cores and 40 vector cores",
            "generated for target",
            "the mixed 1:2 kernel attn_compressed_",
            "on 24 blocks needs 24 AI Cores",
        ],
    );
}

/// The runner binary (what `cargo xtask run` starts; it inherits the fake's
/// ASCEND_HOME_PATH and PATH) running SWA small on the npu backend at `tp`.
fn swa_small_on_npu(tp: &str, more: &[&str]) -> std::process::Command {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_runner"));
    c.args([
        "run",
        "--layer",
        "swa",
        "--spec",
        "specs/test/swa_small.yaml",
    ])
    .args(["--tp", tp, "--backend", "npu"])
    .args(more)
    .current_dir(variant::repo_root());
    c
}

#[test]
fn xtask_run_with_the_npu_backend_runs_a_layer_on_the_fake() {
    let (_kit, _serial) = fake_cann::kit();
    // The runner binary is what `cargo xtask run` starts; it inherits the fake's
    // ASCEND_HOME_PATH and PATH. TP 2 runs two cases (capacity and capacity − 8 tokens per
    // rank): with --graph the second replays the first's graph with other tiling words.
    for mode in [None, Some("--graph")] {
        let out = swa_small_on_npu("2", &["-d", "2,3"])
            .args(mode)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{mode:?}: {stdout}\n{stderr}");
        assert!(
            stdout.contains("swa_small_tp2 (specs/test/swa_small.yaml) on npu, run 2/2")
                && stdout.contains("x_out  PASS")
                && stdout.contains("kv_cache  PASS")
                && stdout.contains("measured device time ")
                && stdout.contains("PASS: 2 run(s)"),
            "{mode:?}: {stdout}"
        );
    }
}

#[test]
fn a_failed_teardown_call_is_reported_and_the_leak_shown_at_finalize() {
    let (_kit, _serial) = fake_cann::kit();
    // The first free on device 0 fails: the run's outputs are fine, the failure is reported,
    // the other buffers are still freed, and aclFinalize at exit reports the one leak.
    let out = swa_small_on_npu("1", &[])
        .env("FAKE_CANN_FAIL", "aclrtFree:0:1:107000")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("x_out  PASS"), "{stdout}");
    assert!(
        stderr.contains(
            "backend npu: freeing a run's buffers: rank 0 (device 0): aclrtFree failed with \
             ACL error 107000: EE9999: aclrtFree failed: injected failure"
        ),
        "{stderr}"
    );
    let leaks: Vec<&str> = stderr
        .lines()
        .skip_while(|l| !l.starts_with("fake ACL: leaks at aclFinalize"))
        .skip(1)
        .collect();
    assert_eq!(leaks.len(), 1, "{stderr}");
    assert!(leaks[0].starts_with("allocation of "), "{stderr}");
}

/// The fake's rules, called directly: what the backend passing the tests above kept.
#[test]
fn the_fake_acl_refuses_what_the_runtime_refuses() {
    use fake_cann::c::*;
    unsafe extern "C" fn nothing(_: *mut u8, _: i64, _: *mut u8, _: usize) -> i32 {
        0
    }
    let (kit, _serial) = fake_cann::kit();
    let path = kit.root.join("lib64/libascendcl.so");
    // SAFETY: the fake's own functions, with the signatures of acl.c.
    unsafe {
        let lib = libloading::Library::new(&path).unwrap();
        let init: libloading::Symbol<Init> = lib.get(b"aclInit\0").unwrap();
        let set: libloading::Symbol<Device> = lib.get(b"aclrtSetDevice\0").unwrap();
        let reset: libloading::Symbol<Device> = lib.get(b"aclrtResetDevice\0").unwrap();
        let malloc: libloading::Symbol<Malloc> = lib.get(b"aclrtMalloc\0").unwrap();
        let free: libloading::Symbol<Handle> = lib.get(b"aclrtFree\0").unwrap();
        let memcpy: libloading::Symbol<Memcpy> = lib.get(b"aclrtMemcpy\0").unwrap();
        let create: libloading::Symbol<Create> = lib.get(b"aclrtCreateStream\0").unwrap();
        let sync: libloading::Symbol<Handle> = lib.get(b"aclrtSynchronizeStream\0").unwrap();
        let destroy: libloading::Symbol<Handle> = lib.get(b"aclrtDestroyStream\0").unwrap();
        let enqueue: libloading::Symbol<Enqueue> = lib.get(b"fake_acl_enqueue\0").unwrap();
        let none = c"";
        init(none.as_ptr()); // the backend's, if no earlier test made one
        assert_eq!(init(none.as_ptr()), 100_002, "a second aclInit");
        std::thread::scope(|s| {
            s.spawn(|| {
                let mut p = std::ptr::null_mut();
                assert_eq!(malloc(&mut p, 64, 0), 107_002, "malloc without a device");
                assert_eq!(set(5), 0);
                assert_eq!(malloc(&mut p, 64, 0), 0);
                let host = [7u8; 128];
                assert_eq!(
                    memcpy(p, 128, host.as_ptr(), 128, 1),
                    107_000,
                    "out of bounds"
                );
                assert_eq!(memcpy(p, 64, host.as_ptr(), 64, 1), 0);
                let mut stream = std::ptr::null_mut();
                assert_eq!(create(&mut stream), 0);
                let what = c"test";
                assert_eq!(
                    enqueue(
                        stream,
                        nothing,
                        keep,
                        std::ptr::null_mut(),
                        0,
                        what.as_ptr().cast()
                    ),
                    0
                );
                let mut back = [0u8; 64];
                let read = memcpy(back.as_mut_ptr(), 64, p, 64, 2);
                assert_eq!(read, 107_000, "a read before the stream is synchronised");
                assert_eq!(sync(stream), 0);
                assert_eq!(memcpy(back.as_mut_ptr(), 64, p, 64, 2), 0);
                assert_eq!(back, [7u8; 64]);
                assert_eq!(destroy(stream), 0);
                assert_eq!(free(p), 0);
                assert_eq!(reset(5), 0);
            });
        });
    }
    assert_eq!(kit.leaks(), "");
    let log = kit.log();
    assert!(
        log.contains("read") && log.contains("not synchronised"),
        "{log}"
    );
}

/// The fake HCCL, called directly: an all-to-all moves the bytes, and one whose counts do
/// not pair up fails the rank that sees it, with a message naming both sides.
#[test]
fn the_fake_hccl_moves_bytes_and_rejects_mismatched_counts() {
    use fake_cann::c::*;
    use std::ffi::CStr;
    let (kit, _serial) = fake_cann::kit();
    // SAFETY: the fake's own functions, with the signatures of acl.c and hccl.c.
    unsafe {
        let acl = libloading::Library::new(kit.root.join("lib64/libascendcl.so")).unwrap();
        let hccl = libloading::Library::new(kit.root.join("lib64/libhccl.so")).unwrap();
        let init: libloading::Symbol<Init> = acl.get(b"aclInit\0").unwrap();
        let set: libloading::Symbol<Device> = acl.get(b"aclrtSetDevice\0").unwrap();
        let reset: libloading::Symbol<Device> = acl.get(b"aclrtResetDevice\0").unwrap();
        let malloc: libloading::Symbol<Malloc> = acl.get(b"aclrtMalloc\0").unwrap();
        let free: libloading::Symbol<Handle> = acl.get(b"aclrtFree\0").unwrap();
        let memcpy: libloading::Symbol<Memcpy> = acl.get(b"aclrtMemcpy\0").unwrap();
        let create: libloading::Symbol<Create> = acl.get(b"aclrtCreateStream\0").unwrap();
        let sync: libloading::Symbol<Handle> = acl.get(b"aclrtSynchronizeStream\0").unwrap();
        let destroy: libloading::Symbol<Handle> = acl.get(b"aclrtDestroyStream\0").unwrap();
        let recent: libloading::Symbol<Recent> = acl.get(b"aclGetRecentErrMsg\0").unwrap();
        let root_info: libloading::Symbol<RootInfo> = hccl.get(b"HcclGetRootInfo\0").unwrap();
        let join: libloading::Symbol<Join> = hccl.get(b"HcclCommInitRootInfo\0").unwrap();
        let a2a: libloading::Symbol<AllToAllV> = hccl.get(b"HcclAlltoAllV\0").unwrap();
        let comm_destroy: libloading::Symbol<Handle> = hccl.get(b"HcclCommDestroy\0").unwrap();
        init(c"".as_ptr()); // the backend's, if no earlier test made one
        let mut info = vec![0u8; 4108];
        assert_eq!(set(6), 0);
        assert_eq!(root_info(info.as_mut_ptr()), 0);
        assert_eq!(reset(6), 0);
        let info = &info;
        let results: Vec<(Vec<u8>, i32, String)> = std::thread::scope(|s| {
            let ranks: Vec<_> = (0..2u32)
                .map(|rank| {
                    let (set, reset, malloc, free, memcpy) =
                        (&set, &reset, &malloc, &free, &memcpy);
                    let (create, sync, destroy, recent) = (&create, &sync, &destroy, &recent);
                    let (join, a2a, comm_destroy) = (&join, &a2a, &comm_destroy);
                    s.spawn(move || {
                        assert_eq!(set(6 + rank as i32), 0);
                        let mut stream = std::ptr::null_mut();
                        assert_eq!(create(&mut stream), 0);
                        let (mut send, mut recv) = (std::ptr::null_mut(), std::ptr::null_mut());
                        assert_eq!(malloc(&mut send, 32, 0), 0);
                        assert_eq!(malloc(&mut recv, 32, 0), 0);
                        let mine = [rank as u8 + 1; 32];
                        assert_eq!(memcpy(send, 32, mine.as_ptr(), 32, 1), 0);
                        let mut comm = std::ptr::null_mut();
                        assert_eq!(join(2, info.as_ptr(), rank, &mut comm), 0);
                        let (counts, displs) = ([16u64, 16], [0u64, 16]);
                        let run = |recv_counts: &[u64; 2]| {
                            let e = a2a(
                                send,
                                counts.as_ptr(),
                                displs.as_ptr(),
                                0,
                                recv,
                                recv_counts.as_ptr(),
                                displs.as_ptr(),
                                0,
                                comm,
                                stream,
                            );
                            assert_eq!(e, 0);
                            sync(stream)
                        };
                        assert_eq!(run(&counts), 0);
                        let mut got = vec![0u8; 32];
                        assert_eq!(memcpy(got.as_mut_ptr(), 32, recv, 32, 2), 0);
                        // Rank 1 now expects 8 bytes from rank 0, which still sends 16.
                        let expect = if rank == 1 { [8u64, 16] } else { counts };
                        let status = run(&expect);
                        let p = recent();
                        let message = if p.is_null() {
                            String::new()
                        } else {
                            CStr::from_ptr(p).to_string_lossy().into_owned()
                        };
                        assert_eq!(comm_destroy(comm), 0);
                        assert_eq!(free(send), 0);
                        assert_eq!(free(recv), 0);
                        assert_eq!(destroy(stream), 0);
                        assert_eq!(reset(6 + rank as i32), 0);
                        (got, status, message)
                    })
                })
                .collect();
            ranks.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for (rank, (got, _, _)) in results.iter().enumerate() {
            // 16 bytes from each rank, rank-major, whatever the receiver
            assert!(got[..16].iter().all(|&b| b == 1), "rank {rank}: {got:?}");
            assert!(got[16..].iter().all(|&b| b == 2), "rank {rank}: {got:?}");
        }
        let (_, status, message) = &results[1];
        assert_ne!(*status, 0, "the mismatched all-to-all passed on rank 1");
        assert!(
            message.contains("rank 0 sends 16 bytes but rank 1 expects 8"),
            "{message}"
        );
    }
    assert_eq!(kit.leaks(), "");
}

/// Calls named `call` in `log`.
fn count(log: &str, call: &str) -> usize {
    calls(log).iter().filter(|c| c.call == call).count()
}

#[test]
fn graph_mode_captures_once_and_replays_without_launching() {
    let (kit, _serial) = fake_cann::kit();
    let name = "swa_small_tp2";
    let inputs = inputs(name);
    let graph = npu_runtime_in(name, Mode::Graph).unwrap();
    kit.reset("Ascend910B1", 24, 48);
    let first = graph.run(&inputs).unwrap();
    let captured = kit.log();
    kit.reset("Ascend910B1", 24, 48);
    let second = graph.run(&inputs).unwrap();
    let replayed = kit.log();
    drop(graph);
    assert_eq!(first.outputs, second.outputs);
    let tiling = format!("H2D {} bytes", 4 * abi::tiling::TILING_WORDS);
    let uploads = |log: &str| {
        calls(log)
            .iter()
            .filter(|c| c.call == "aclrtMemcpy" && c.rest.starts_with(&tiling))
            .count()
    };
    let launches = plan(name)
        .steps
        .iter()
        .filter(|s| matches!(s, Step::Launch(_)))
        .count();
    // the first run: every launch captured once per rank, then one replay and one sync each
    assert_eq!(count(&captured, "aclmdlRICaptureBegin"), 2, "{captured}");
    assert_eq!(count(&captured, "aclmdlRICaptureEnd"), 2, "{captured}");
    assert_eq!(count(&captured, "launch"), 2 * launches, "{captured}");
    assert_eq!(count(&captured, "aclmdlRIExecuteAsync"), 2, "{captured}");
    assert_eq!(count(&captured, "aclrtSynchronizeStreamWithTimeout"), 2);
    assert_eq!(uploads(&captured), 2, "{captured}");
    // the replay: no launch, no collective call, no capture, no new communicator; the
    // unchanged tiling words are not uploaded again
    for call in [
        "launch",
        "HcclAlltoAllV",
        "aclmdlRICaptureBegin",
        "HcclGetRootInfo",
        "HcclCommInitRootInfo",
        "aclrtMalloc",
    ] {
        assert_eq!(count(&replayed, call), 0, "{call} in a replay:\n{replayed}");
    }
    assert_eq!(count(&replayed, "aclmdlRIExecuteAsync"), 2, "{replayed}");
    assert_eq!(count(&replayed, "aclrtSynchronizeStreamWithTimeout"), 2);
    assert_eq!(uploads(&replayed), 0, "{replayed}");
    assert!(
        replayed.contains("kernel ") && replayed.contains(" ran rc=0"),
        "the replay ran no kernel:\n{replayed}"
    );
    assert_eq!(kit.leaks(), "");
}

#[test]
fn a_kernel_failing_on_the_device_is_named_by_the_events() {
    let plan = plan("swa_small_tp2");
    let kernels: Vec<(&str, &str)> = plan
        .steps
        .iter()
        .filter_map(|s| match s {
            Step::Launch(l) => Some((l.stage, l.kernel)),
            _ => None,
        })
        .collect();
    for k in [1, 3] {
        // the k-th kernel device 1 runs traps; the stream ran k − 1 steps before it
        let err = injected("kernel", Some(1), k, fake_cann::PARAM_INVALID);
        let (stage, kernel) = kernels[k - 1];
        let last = match k {
            1 => "last completed: none".to_string(),
            _ => format!(
                "last completed: launch {} ({} {})",
                k - 1,
                kernels[k - 2].0,
                kernels[k - 2].1
            ),
        };
        assert_mentions(
            &err,
            &[
                "rank 1, step ",
                "aicore exception in kernel",
                &format!("the stream completed {} of", k - 1),
                &last,
                &format!("failed or not run: launch {k} ({stage} {kernel})"),
            ],
        );
    }
}

#[test]
fn a_toolkit_without_the_capture_api_refuses_graph_mode() {
    let (kit, _serial) = fake_cann::kit();
    let old = kit.without_capture();
    let out = swa_small_on_npu("1", &["--graph"])
        .env("ASCEND_HOME_PATH", old)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_mentions(
        &stderr,
        &[
            "--graph needs ACL's model-capture API",
            "it arrived in CANN 8.1.RC1",
            "is version 8.0.RC3",
        ],
    );
    // without --graph the same toolkit gets past ACL (and fails later only for its missing
    // kernel compiler, which this toolkit does not fake)
    let out = swa_small_on_npu("1", &[])
        .env("ASCEND_HOME_PATH", old)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("model-capture"), "{stderr}");
}

#[test]
fn bench_on_the_npu_prints_a_measured_row_per_launch_next_to_the_model() {
    let (_kit, _serial) = fake_cann::kit();
    let name = "swa_small_tp2";
    let plan = plan(name);
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("measured.json");
    let bench = |more: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_runner"))
            .args([
                "bench",
                "--layer",
                "swa",
                "--spec",
                "specs/test/swa_small.yaml",
            ])
            .args(["--tp", "2", "--backend", "npu", "-d", "0,1"])
            .args(["--warmup", "1", "--reps", "2"])
            .args(more)
            .current_dir(variant::repo_root())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
        stdout
    };
    let stdout = bench(&["--trace", trace.to_str().unwrap()]);
    assert!(
        stdout.contains("on npu (stream order, devices [0, 1])")
            && stdout.contains("1 warm-up + 2 timed step(s)"),
        "{stdout}"
    );
    // one row per step of rank 0 (step, stage, measured, modeled, ratio, kernel): each
    // launch took the fake clock's 20 µs, each collective (one HCCL call here) 10 µs
    let rows: Vec<&str> = stdout
        .lines()
        .filter(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            w.len() == 6 && w[0].parse::<usize>().is_ok()
        })
        .collect();
    assert_eq!(rows.len(), plan.steps.len(), "{stdout}");
    let mut want_total = 0.0;
    for (row, step) in rows.iter().zip(plan.steps) {
        let w: Vec<&str> = row.split_whitespace().collect();
        let measured = match step {
            Step::Launch(l) => {
                assert_eq!(w[5], l.kernel, "{row}");
                fake_cann::KERNEL_US
            }
            _ => {
                assert_eq!(w[5], "collective", "{row}");
                fake_cann::COLLECTIVE_US
            }
        };
        want_total += measured;
        assert_eq!(w[2], format!("{measured:.1}"), "{row}");
        let modeled: f64 = w[3].parse().unwrap_or_else(|_| panic!("{row}"));
        assert!(modeled > 0.0, "{row}");
        let ratio: f64 = w[4].parse().unwrap();
        // the modeled cell is rounded to 0.1 µs; the ratio is of the unrounded time
        assert!((ratio * modeled / measured - 1.0).abs() < 0.1, "{row}");
    }
    assert!(
        stdout.contains(&format!(
            "layer (slowest rank, first event to last): measured {want_total:.1} µs"
        )),
        "{stdout}"
    );
    assert!(stdout.contains("x_out  PASS"), "{stdout}");
    // the trace: per rank a stream track with every launch and collective at the measured times
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
    let slices: Vec<&serde_json::Value> = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .collect();
    assert_eq!(slices.len(), 2 * plan.steps.len());
    let rank0: Vec<f64> = slices
        .iter()
        .filter(|e| e["pid"] == 0)
        .map(|e| e["dur"].as_f64().unwrap())
        .collect();
    assert!(
        (rank0.iter().sum::<f64>() - want_total).abs() < 1e-6,
        "{rank0:?}"
    );
    // a replayed graph is timed as a whole
    let stdout = bench(&["--graph"]);
    assert!(stdout.contains("on npu (graph replay"), "{stdout}");
    assert!(
        stdout.contains(&format!("measured {want_total:.1} µs")),
        "{stdout}"
    );
    assert!(stdout.contains("timed as a whole"), "{stdout}");
}

/// The fake's capture and events, called directly: a captured task does not run until its
/// model is executed, runs again at each execution, and the capturing thread may neither
/// copy nor synchronise the stream; events read the fake clock.
#[test]
fn the_fake_acl_captures_replays_and_times() {
    use fake_cann::c::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    unsafe extern "C" fn count(_: *mut u8, _: i64, _: *mut u8, _: usize) -> i32 {
        RUNS.fetch_add(1, Ordering::SeqCst);
        0
    }
    let (kit, _serial) = fake_cann::kit();
    // SAFETY: the fake's own functions, with the signatures of acl.c.
    unsafe {
        let lib = libloading::Library::new(kit.root.join("lib64/libascendcl.so")).unwrap();
        let init: libloading::Symbol<Init> = lib.get(b"aclInit\0").unwrap();
        let set: libloading::Symbol<Device> = lib.get(b"aclrtSetDevice\0").unwrap();
        let reset: libloading::Symbol<Device> = lib.get(b"aclrtResetDevice\0").unwrap();
        let malloc: libloading::Symbol<Malloc> = lib.get(b"aclrtMalloc\0").unwrap();
        let free: libloading::Symbol<Handle> = lib.get(b"aclrtFree\0").unwrap();
        let memcpy: libloading::Symbol<Memcpy> = lib.get(b"aclrtMemcpy\0").unwrap();
        let stream_new: libloading::Symbol<Create> = lib.get(b"aclrtCreateStream\0").unwrap();
        let stream_end: libloading::Symbol<Handle> = lib.get(b"aclrtDestroyStream\0").unwrap();
        let sync: libloading::Symbol<Handle> = lib.get(b"aclrtSynchronizeStream\0").unwrap();
        let event_new: libloading::Symbol<Create> = lib.get(b"aclrtCreateEvent\0").unwrap();
        let event_end: libloading::Symbol<Handle> = lib.get(b"aclrtDestroyEvent\0").unwrap();
        let record: libloading::Symbol<Pair> = lib.get(b"aclrtRecordEvent\0").unwrap();
        let elapsed: libloading::Symbol<Elapsed> = lib.get(b"aclrtEventElapsedTime\0").unwrap();
        let begin: libloading::Symbol<CaptureBegin> = lib.get(b"aclmdlRICaptureBegin\0").unwrap();
        let end: libloading::Symbol<CaptureEnd> = lib.get(b"aclmdlRICaptureEnd\0").unwrap();
        let execute: libloading::Symbol<Pair> = lib.get(b"aclmdlRIExecuteAsync\0").unwrap();
        let destroy: libloading::Symbol<Handle> = lib.get(b"aclmdlRIDestroy\0").unwrap();
        let enqueue: libloading::Symbol<Enqueue> = lib.get(b"fake_acl_enqueue\0").unwrap();
        init(c"".as_ptr()); // the backend's, if no earlier test made one
        std::thread::scope(|s| {
            s.spawn(|| {
                assert_eq!(set(4), 0);
                let (mut p, mut stream, mut model) = (
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                );
                assert_eq!(malloc(&mut p, 64, 0), 0);
                assert_eq!(stream_new(&mut stream), 0);
                let (mut e0, mut e1) = (std::ptr::null_mut(), std::ptr::null_mut());
                assert_eq!(event_new(&mut e0), 0);
                assert_eq!(event_new(&mut e1), 0);
                RUNS.store(0, Ordering::SeqCst);
                assert_eq!(begin(stream, 1), 0); // THREAD_LOCAL
                let what = c"test";
                let task = enqueue(stream, count, keep, p, 5000, what.as_ptr().cast());
                assert_eq!(task, 0);
                let host = [1u8; 64];
                let copy = memcpy(p, 64, host.as_ptr(), 64, 1);
                assert_eq!(copy, 107_026, "a copy from the capturing thread");
                assert_eq!(sync(stream), 107_026, "a synchronise of a capturing stream");
                assert_eq!(end(stream, &mut model), 0);
                assert_eq!(RUNS.load(Ordering::SeqCst), 0, "a captured task ran");
                assert_eq!(record(e0, stream), 0);
                assert_eq!(execute(model, stream), 0);
                assert_eq!(execute(model, stream), 0);
                assert_eq!(record(e1, stream), 0);
                assert_eq!(sync(stream), 0);
                assert_eq!(RUNS.load(Ordering::SeqCst), 2, "two replays");
                let mut ms = 0f32;
                assert_eq!(elapsed(&mut ms, e0, e1), 0);
                assert!((ms - 0.010).abs() < 1e-6, "{ms} ms for two 5 µs tasks");
                assert_eq!(destroy(model), 0);
                assert_eq!(event_end(e0), 0);
                assert_eq!(event_end(e1), 0);
                assert_eq!(stream_end(stream), 0);
                assert_eq!(free(p), 0);
                assert_eq!(reset(4), 0);
            });
        });
    }
    assert_eq!(kit.leaks(), "");
}
