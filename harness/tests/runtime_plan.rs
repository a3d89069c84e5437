//! The runtime on a hand-written plan with test kernels (tests/runtime_kernels): TP ranks
//! as threads, tiling words, poisoned outputs, both collectives' row movement and byte
//! counts, stray writes, a trap on one rank releasing the others, clear errors, and runs
//! of single stages on one rank with the caller's buffers.

use abi::plan::{
    ChipProfile, Cores, Deployment, Kernel, Launch, Model, SpecSource, Step, VariantPlan,
};
use abi::{AxisBound, DType, Dim, Dir, Placement, TensorDecl, VariantAbi};
use harness::backend::KernelSources;
use harness::backend::Tiling;
use harness::backend::sim::Sim;
use harness::runtime::{Runtime, RuntimeError, RuntimeOptions, StepKind};
use std::path::Path;
use tensor::{Tensor, TensorMap};

const TP: usize = 2;
const CAP: usize = 16;
const W: usize = 64;

const TENSORS: &[TensorDecl] = &[
    TensorDecl {
        name: "x",
        shape: &[Dim::Var("t"), Dim::Const(W)],
        dtype: DType::F32,
        dir: Dir::In,
        placement: Placement::PerRank,
    },
    // the a2a lands straight in an output: 2 local groups × (TP · CAP) rows
    TensorDecl {
        name: "gathered",
        shape: &[Dim::Const(2 * TP * CAP), Dim::Const(W)],
        dtype: DType::F32,
        dir: Dir::Out,
        placement: Placement::PerRank,
    },
    TensorDecl {
        name: "window",
        shape: &[Dim::Const(TP * CAP), Dim::Const(W)],
        dtype: DType::F32,
        dir: Dir::Out,
        placement: Placement::PerRank,
    },
    TensorDecl {
        name: "words",
        shape: &[Dim::Const(16)],
        dtype: DType::I32,
        dir: Dir::Out,
        placement: Placement::PerRank,
    },
    TensorDecl {
        name: "y",
        shape: &[Dim::Var("t"), Dim::Const(W)],
        dtype: DType::F32,
        dir: Dir::Out,
        placement: Placement::PerRank,
    },
];

const WORKSPACES: &[TensorDecl] = &[TensorDecl {
    name: "groups",
    shape: &[Dim::Const(4 * CAP), Dim::Const(W)],
    dtype: DType::F32,
    dir: Dir::Out,
    placement: Placement::PerRank,
}];

const FILL: Step = Step::Launch(Launch {
    stage: "fill",
    kernel: "rt_fill",
    cores: Cores::Aiv,
    block_dim: 1,
    args: &["x", "groups", "words"],
    also: &[],
});
const A2A: Step = Step::GroupAllToAll {
    src: "groups",
    dst: "gathered",
    local_groups: 2,
    src_slab_rows: CAP,
    dst_slab_rows: TP * CAP,
};
const SCATTER: Step = Step::TokenScatter {
    src: "groups",
    dst: "window",
};

const PLAN: VariantPlan = VariantPlan {
    abi: VariantAbi {
        name: "runtime_test_tp2",
        layer: "swa",
        tp: TP,
        tensors: TENSORS,
        axes: &[AxisBound {
            name: "t",
            max: CAP,
        }],
    },
    spec: SpecSource {
        path: "tests/runtime_plan.rs",
        name: "runtime_test",
        hash: "-",
    },
    model: Model {
        hidden: W,
        heads: 1,
        head_dim: W,
        rope_dim: 2,
        q_lora_rank: W,
        o_lora_rank: W,
        o_groups: 4,
        hc_mult: 4,
        hc_sinkhorn_iters: 1,
        hc_eps: 1e-6,
        rms_eps: 1e-6,
        softmax_scale: 0.125,
        window: 8,
        rope_theta: 10000.0,
        yarn: None,
    },
    deployment: Deployment {
        tp: TP,
        decode_batch: 4,
        decode_seq: 8,
        b: 2,
        local_t: CAP,
        t_pad: CAP,
        group_t_pad: TP * CAP,
        local_o_groups: 2,
        block_size: 32,
        kv_pool_blocks: 1,
        max_positions: 1024,
    },
    compressor: None,
    indexer: None,
    chip: ChipProfile {
        name: "test",
        aic_cores: 1,
        aiv_cores: 1,
        cube_bf16_flops: 1.0,
        cube_int8_ops: 1.0,
        cube_f32_flops: 1.0,
        vector_elem_ops: 1.0,
        hbm_bytes_per_s: 1.0,
    },
    kernels: &[
        Kernel {
            name: "rt_fill",
            cores: Cores::Aiv,
            args: &["x", "groups", "words"],
        },
        Kernel {
            name: "rt_overread",
            cores: Cores::Aiv,
            args: &["x"],
        },
        Kernel {
            name: "rt_overwrite",
            cores: Cores::Aiv,
            args: &["y"],
        },
    ],
    steps: &[FILL, A2A, SCATTER],
    workspaces: WORKSPACES,
    missing: &[],
};

fn sources() -> KernelSources {
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    KernelSources {
        kernels_dirs: vec![tests.join("runtime_kernels")],
        include_dir: tests.join("kernel_include"),
    }
}

fn runtime(plan: &'static VariantPlan) -> Result<Runtime, RuntimeError> {
    Runtime::prepare(plan, &Sim::default(), &sources(), RuntimeOptions::default())
}

fn leak(plan: VariantPlan) -> &'static VariantPlan {
    Box::leak(Box::new(plan))
}

/// `[TP, t, W]` inputs: rank r row i column c = r·10 + i + c / 64.
fn inputs(t: usize) -> TensorMap {
    let x: Vec<f32> = (0..TP * t * W)
        .map(|k| {
            let (r, i, c) = (k / (t * W), (k / W) % t, k % W);
            (r * 10 + i) as f32 + c as f32 / 64.0
        })
        .collect();
    let mut m = TensorMap::new();
    m.insert("x", Tensor::from_vec(vec![TP, t, W], x).unwrap());
    m
}

fn x(rank: usize, i: usize, c: usize) -> f32 {
    (rank * 10 + i) as f32 + c as f32 / 64.0
}

/// groups[g·CAP + i] on `rank`, or None where it stays poisoned.
fn group_row(rank: usize, row: usize, c: usize, t: usize) -> Option<f32> {
    let (g, i) = (row / CAP, row % CAP);
    (i < t).then(|| x(rank, i, c) + (1000 * g) as f32)
}

#[test]
fn ranks_run_as_threads_and_collectives_move_rows_between_their_workspaces() {
    let rt = runtime(&PLAN).unwrap_or_else(|e| panic!("{e}"));
    for t in [CAP, 8] {
        let out = rt.run(&inputs(t)).unwrap_or_else(|e| panic!("{e}"));
        assert!(out.stray.is_empty(), "{:?}", out.stray);
        let words = out.outputs.values::<i32>("words").unwrap();
        let gathered = out.outputs.values::<f32>("gathered").unwrap();
        let window = out.outputs.values::<f32>("window").unwrap();
        for rank in 0..TP {
            // tiling: t, b = t / 8, nb unbound, group_t, zeros
            let w = &words[rank * 16..rank * 16 + 16];
            assert_eq!(&w[..4], &[t as i32, (t / 8) as i32, 0, (TP * t) as i32]);
            assert!(w[4..].iter().all(|&v| v == 0));
            // GroupAllToAll: rank d owns groups 2d, 2d+1; source s's rows at lg·32 + s·t
            let g = &gathered[rank * 2 * TP * CAP * W..(rank + 1) * 2 * TP * CAP * W];
            for lg in 0..2 {
                for row in 0..TP * CAP {
                    for c in [0, 63] {
                        let got = g[(lg * TP * CAP + row) * W + c];
                        let (s, i) = (row / t, row % t);
                        if row < TP * t {
                            let want = group_row(s, (rank * 2 + lg) * CAP + i, c, t).unwrap();
                            assert_eq!(got, want, "t={t} rank {rank} lg {lg} row {row}");
                        } else {
                            assert!(got.is_nan(), "t={t} rank {rank} lg {lg} row {row}: {got}");
                        }
                    }
                }
            }
            // TokenScatter: owner o gets rows [o·t, o·t + t) of every source at s·t
            let win = &window[rank * TP * CAP * W..(rank + 1) * TP * CAP * W];
            for row in 0..TP * CAP {
                let got = win[row * W + 5];
                if row < TP * t {
                    let (s, i) = (row / t, row % t);
                    match group_row(s, rank * t + i, 5, t) {
                        Some(want) => assert_eq!(got, want, "t={t} rank {rank} row {row}"),
                        None => assert!(got.is_nan()),
                    }
                } else {
                    assert!(got.is_nan(), "t={t} rank {rank} window row {row}");
                }
            }
        }
        // the output with a runtime axis comes back at extent t, still poisoned (unwritten)
        assert_eq!(out.outputs.get("y").unwrap().shape(), &[TP, t, W]);
        assert!(
            out.outputs
                .values::<f32>("y")
                .unwrap()
                .iter()
                .all(|v| v.is_nan())
        );
        // records: one launch and two exchanges per rank, counted bytes
        let rec = &out.record;
        assert_eq!(rec.steps.len(), 3 * TP);
        for s in rec.rank(1) {
            match &s.kind {
                StepKind::Launch {
                    kernel, counters, ..
                } => {
                    assert_eq!(*kernel, "rt_fill");
                    let c = counters.as_ref().expect("the sim counts");
                    assert_eq!(c.stats.gm_read_bytes, (4 * t * W * 4 + 64) as u64);
                    assert_eq!(c.args[0].distinct_read_bytes, (t * W * 4) as u64);
                }
                StepKind::Exchange {
                    bytes,
                    cross_rank_bytes,
                } => {
                    let per_source = if s.stage == "o_group_all_to_all" {
                        2 * t
                    } else {
                        t
                    };
                    assert_eq!(*bytes, (TP * per_source * W * 4) as u64, "{}", s.stage);
                    assert_eq!(*cross_rank_bytes, ((TP - 1) * per_source * W * 4) as u64);
                }
            }
        }
        let stages: Vec<&str> = rec.stage_times().iter().map(|s| s.stage).collect();
        assert_eq!(stages, ["fill", "o_group_all_to_all", "o_reduce_scatter"]);
    }
}

#[test]
fn rows_written_beyond_the_runtime_extent_are_reported() {
    let plan = leak(VariantPlan {
        steps: Box::leak(Box::new([Step::Launch(Launch {
            stage: "overwrite",
            kernel: "rt_overwrite",
            cores: Cores::Aiv,
            block_dim: 1,
            args: &["y"],
            also: &[],
        })])),
        ..PLAN
    });
    let rt = runtime(plan).unwrap();
    let at_capacity = rt.run(&inputs(CAP)).unwrap();
    assert!(at_capacity.stray.is_empty());
    let below = rt.run(&inputs(8)).unwrap();
    assert_eq!(below.stray.len(), TP, "{:?}", below.stray);
    assert!(
        below.stray[0].starts_with("y on rank 0: 2048 byte(s)"),
        "{}",
        below.stray[0]
    );
    assert!(
        below
            .outputs
            .values::<f32>("y")
            .unwrap()
            .iter()
            .all(|&v| v == 1.0)
    );
}

#[test]
fn a_trap_on_one_rank_fails_the_run_and_releases_the_others() {
    let plan = leak(VariantPlan {
        steps: Box::leak(Box::new([
            Step::Launch(Launch {
                stage: "overread",
                kernel: "rt_overread",
                cores: Cores::Aiv,
                block_dim: 1,
                args: &["x"],
                also: &[],
            }),
            FILL,
            A2A,
        ])),
        ..PLAN
    });
    let e = runtime(plan).unwrap().run(&inputs(8)).unwrap_err();
    let text = e.to_string();
    assert!(
        text.starts_with("rank 1, step 0 (overread rt_overread):")
            && text.contains("out of bounds"),
        "{text}"
    );
    assert_eq!(e.exit_code(), 1);
}

#[test]
fn plans_that_cannot_run_and_inputs_that_do_not_fit_are_refused() {
    let missing = leak(VariantPlan {
        missing: &["o_proj", "hc_post"],
        ..PLAN
    });
    let e = runtime(missing).err().unwrap();
    assert_eq!(
        e.to_string(),
        "runtime_test_tp2: stage o_proj has no kernels yet (missing: o_proj, hc_post)"
    );
    assert_eq!(e.exit_code(), 2);

    let unbound = leak(VariantPlan {
        steps: Box::leak(Box::new([Step::Launch(Launch {
            stage: "fill",
            kernel: "rt_fill",
            cores: Cores::Aiv,
            block_dim: 1,
            args: &["x", "nowhere", "words"],
            also: &[],
        })])),
        ..PLAN
    });
    let e = runtime(unbound).err().unwrap().to_string();
    assert!(e.contains("binds `nowhere`"), "{e}");

    let absent = leak(VariantPlan {
        kernels: &[Kernel {
            name: "rt_absent",
            cores: Cores::Aiv,
            args: &[],
        }],
        steps: &[],
        ..PLAN
    });
    let e = runtime(absent).err().unwrap();
    assert!(
        e.to_string().contains("rt_absent.cpp does not exist"),
        "{e}"
    );
    assert_eq!(e.exit_code(), 2);

    let rt = runtime(&PLAN).unwrap();
    let mut wrong = TensorMap::new();
    wrong.insert(
        "x",
        Tensor::from_vec(vec![TP, 12, W], vec![0f32; TP * 12 * W]).unwrap(),
    );
    let e = rt.run(&wrong).unwrap_err().to_string();
    assert!(e.contains("multiple of 8"), "{e}");
    let mut over = TensorMap::new();
    over.insert(
        "x",
        Tensor::from_vec(vec![TP, 24, W], vec![0f32; TP * 24 * W]).unwrap(),
    );
    let e = rt.run(&over).unwrap_err().to_string();
    assert!(e.contains("outside the plan's capacity [1, 16]"), "{e}");
    let mut flat = TensorMap::new();
    flat.insert(
        "x",
        Tensor::from_vec(vec![8, W], vec![0f32; 8 * W]).unwrap(),
    );
    let e = rt.run(&flat).unwrap_err().to_string();
    assert!(e.contains("lacks the leading [tp = 2] rank axis"), "{e}");
}

fn stages(plan: &'static VariantPlan, names: &[&str]) -> Result<Runtime, RuntimeError> {
    Runtime::prepare_stages(
        plan,
        &Sim::default(),
        &sources(),
        names,
        RuntimeOptions::default(),
    )
}

/// `[t, W]` rows of rank 0 of [`inputs`].
fn rank0_x(t: usize) -> Tensor {
    let x: Vec<f32> = (0..t * W).map(|k| x(0, k / W, k % W)).collect();
    Tensor::from_vec(vec![t, W], x).unwrap()
}

#[test]
fn a_stage_runs_on_one_rank_with_the_callers_buffers_and_tiling_words() {
    // rt_absent is a kernel no step launches: a stage run builds only what it launches.
    let plan = leak(VariantPlan {
        kernels: &[
            Kernel {
                name: "rt_fill",
                cores: Cores::Aiv,
                args: &["x", "groups", "words"],
            },
            Kernel {
                name: "rt_absent",
                cores: Cores::Aiv,
                args: &[],
            },
        ],
        ..PLAN
    });
    assert!(runtime(plan).is_err(), "the layer needs rt_absent");
    let rt = stages(plan, &["fill"]).unwrap_or_else(|e| panic!("{e}"));
    let t = 8;
    let mut given = TensorMap::new();
    given.insert("x", rank0_x(t));
    let tiling = Tiling::from_fields(&[("t", t), ("nb", 1), ("cmp_nb", 7)]).unwrap();
    let out = rt
        .run_stages(&given, &tiling)
        .unwrap_or_else(|e| panic!("{e}"));
    // the words exactly as given, every other word 0
    let mut want = [0i32; 16];
    (want[0], want[2], want[5]) = (t as i32, 1, 7);
    assert_eq!(out.tensors.values::<i32>("words").unwrap(), want);
    // groups is a workspace no tensor gave: capacity, poisoned where unwritten
    let groups = out.tensors.get("groups").unwrap();
    assert_eq!(groups.shape(), &[4 * CAP, W]);
    let g = groups.values::<f32>().unwrap();
    for row in 0..4 * CAP {
        let got = g[row * W + 3];
        let (gi, i) = (row / CAP, row % CAP);
        if i < t {
            assert_eq!(got, x(0, i, 3) + (1000 * gi) as f32, "row {row}");
        } else {
            assert!(got.is_nan(), "row {row} was written: {got}");
        }
    }
    // the caller's tensor comes back at its shape; nothing the stage does not bind
    assert_eq!(out.tensors.get("x").unwrap(), &rank0_x(t));
    assert_eq!(
        out.tensors.names().collect::<Vec<_>>(),
        ["groups", "words", "x"]
    );
    match &out.steps[..] {
        [s] => match &s.kind {
            StepKind::Launch {
                kernel, counters, ..
            } => {
                assert_eq!((s.stage, *kernel), ("fill", "rt_fill"));
                let c = counters.as_ref().expect("the sim counts");
                assert_eq!(c.args[0].distinct_read_bytes, (t * W * 4) as u64);
            }
            other => panic!("not a launch: {other:?}"),
        },
        other => panic!("one launch expected: {other:?}"),
    }
}

#[test]
fn stage_runs_refuse_collectives_and_tensors_that_do_not_fit() {
    let e = stages(&PLAN, &["o_group_all_to_all"]).err().unwrap();
    assert!(
        e.to_string()
            .contains("stage `o_group_all_to_all` launches no kernels"),
        "{e}"
    );
    let e = stages(&PLAN, &["nowhere"]).err().unwrap();
    assert!(
        e.to_string()
            .contains("stage `nowhere` launches no kernels"),
        "{e}"
    );
    let missing = leak(VariantPlan {
        missing: &["fill"],
        ..PLAN
    });
    let e = stages(missing, &["fill"]).err().unwrap();
    assert!(matches!(e, RuntimeError::MissingStages { .. }), "{e}");

    let tiling = Tiling::from_fields(&[("t", 8)]).unwrap();
    let whole = runtime(&PLAN).unwrap();
    let mut given = TensorMap::new();
    given.insert("x", rank0_x(8));
    let e = whole.run_stages(&given, &tiling).unwrap_err().to_string();
    assert!(
        e.contains("step 1 (o_group_all_to_all) is a collective"),
        "{e}"
    );

    let rt = stages(&PLAN, &["fill"]).unwrap();
    let run = |name: &str, tensor: Tensor| {
        let mut m = TensorMap::new();
        m.insert(name, tensor);
        rt.run_stages(&m, &tiling).unwrap_err().to_string()
    };
    let e = run("x", rank0_x(24));
    assert!(
        e.contains("axis t = 24 is outside the plan's capacity [1, 16]"),
        "{e}"
    );
    let e = run(
        "x",
        Tensor::from_vec(vec![8, W], vec![0i32; 8 * W]).unwrap(),
    );
    assert!(e.contains("dtype int32, the plan expects float32"), "{e}");
    let e = run(
        "y",
        Tensor::from_vec(vec![8, W], vec![0f32; 8 * W]).unwrap(),
    );
    assert!(
        e.contains("tensor `y` is no argument of the stages' launches"),
        "{e}"
    );
    let e = Tiling::from_fields(&[("tokens", 8)])
        .unwrap_err()
        .to_string();
    assert!(e.contains("tiling field `tokens`: no such field"), "{e}");
}

#[test]
fn a_probed_workspace_is_read_back_and_a_probe_of_anything_else_is_refused() {
    let with = |probes| {
        let options = RuntimeOptions {
            probes,
            ..RuntimeOptions::default()
        };
        Runtime::prepare(&PLAN, &Sim::default(), &sources(), options).unwrap()
    };
    let t = 8;
    let out = with(vec!["groups"]).run(&inputs(t)).unwrap();
    assert!(
        out.outputs.get("groups").is_err(),
        "a probe is not an output"
    );
    let groups = out.probes.get("groups").unwrap();
    assert_eq!(groups.shape(), &[TP, 4 * CAP, W]);
    let g = groups.values::<f32>().unwrap();
    for rank in 0..TP {
        for row in 0..4 * CAP {
            let got = g[(rank * 4 * CAP + row) * W + 3];
            match group_row(rank, row, 3, t) {
                Some(want) => assert_eq!(got, want, "rank {rank} row {row}"),
                None => assert!(got.is_nan(), "rank {rank} row {row}: {got}"),
            }
        }
    }
    assert!(with(Vec::new()).run(&inputs(t)).unwrap().probes.is_empty());
    let e = with(vec!["x"]).run(&inputs(t)).err().unwrap().to_string();
    assert!(e.contains("probe `x` is not a workspace"), "{e}");
}
