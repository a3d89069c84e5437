//! The generated ABI and plan tables compile and say what the specs and references say.

use abi::plan::{Step, VariantPlan};
use abi::{DType, Dim, Dir, Placement, TensorDecl};
use runner::generated::{self, VARIANTS, swa_tp2};

fn tensor(v: &VariantPlan, name: &str) -> &'static TensorDecl {
    v.buffer(name)
        .unwrap_or_else(|| panic!("{}: no tensor {name}", v.name()))
}

#[test]
fn every_variant_is_indexed_once_and_named_after_its_tp() {
    assert_eq!(VARIANTS.len(), 54);
    let mut names: Vec<&str> = VARIANTS.iter().map(|v| v.name()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), VARIANTS.len());
    for v in VARIANTS.iter().map(|p| &p.abi) {
        assert!(v.name.ends_with(&format!("_tp{}", v.tp)), "{}", v.name);
        assert!(["swa", "hca", "csa"].contains(&v.layer), "{}", v.name);
    }
}

#[test]
fn every_variant_has_unique_names_an_x_out_and_bound_axes() {
    for p in VARIANTS {
        let v = &p.abi;
        let mut names: Vec<&str> = v
            .tensors
            .iter()
            .chain(p.workspaces)
            .map(|t| t.name)
            .collect();
        names.sort_unstable();
        let n = names.len();
        names.dedup();
        assert_eq!(names.len(), n, "{}: duplicate tensor names", v.name);

        let x_out = tensor(p, "x_out");
        assert_eq!(x_out.dir, Dir::Out, "{}", v.name);
        assert_eq!(x_out.dtype, DType::F32, "{}", v.name);
        assert_eq!(
            v.tensors.last().map(|t| t.name),
            Some("x_out"),
            "{}",
            v.name
        );

        for t in v.tensors.iter().chain(p.workspaces) {
            if let Placement::Sharded { axis } = t.placement {
                assert!(
                    axis < t.shape.len(),
                    "{}: {} sharded on axis {axis}",
                    v.name,
                    t.name
                );
            }
            for d in t.shape {
                match *d {
                    Dim::Var(name) => assert!(
                        v.axes.iter().any(|a| a.name == name && a.max > 0),
                        "{}: {} uses unbound axis {name}",
                        v.name,
                        t.name
                    ),
                    Dim::Const(n) => assert!(n > 0, "{}: {} has a zero extent", v.name, t.name),
                }
            }
        }
    }
}

#[test]
fn every_plan_binds_declared_buffers_and_exchanges_only_across_ranks() {
    for p in VARIANTS {
        for step in p.steps {
            match step {
                Step::Launch(l) => {
                    let k = p
                        .kernel(l.kernel)
                        .unwrap_or_else(|| panic!("{}: {} is not in KERNELS", p.name(), l.kernel));
                    assert_eq!(k.args.len(), l.args.len(), "{}: {}", p.name(), l.kernel);
                    assert_eq!(k.cores, l.cores, "{}: {}", p.name(), l.kernel);
                    assert!(l.block_dim > 0);
                    for a in l.args {
                        tensor(p, a);
                    }
                }
                Step::GroupAllToAll { src, dst, .. } | Step::TokenScatter { src, dst } => {
                    assert!(p.abi.tp > 1, "{}: a collective at TP 1", p.name());
                    for name in [src, dst] {
                        assert!(
                            p.workspaces.iter().any(|w| w.name == *name),
                            "{}: collective buffer {name} is not a workspace",
                            p.name()
                        );
                    }
                }
            }
        }
        // Every kernel is launched; none is listed twice.
        for k in p.kernels {
            assert_eq!(p.kernels.iter().filter(|o| o.name == k.name).count(), 1);
            assert!(
                p.steps
                    .iter()
                    .any(|s| matches!(s, Step::Launch(l) if l.kernel == k.name)),
                "{}: {} is never launched",
                p.name(),
                k.name
            );
        }
    }
}

#[test]
fn swa_tp2_matches_the_reference_tables() {
    // swa.md §1.2 (TP 2) and §2.1/§2.2, written out by hand.
    let p = &swa_tp2::PLAN;
    let v = &p.abi;
    assert_eq!(
        (swa_tp2::B, swa_tp2::LOCAL_T, swa_tp2::T_PAD),
        (32, 256, 256)
    );
    assert_eq!((swa_tp2::LOCAL_O_GROUPS, swa_tp2::LOCAL_O_WIDTH), (4, 4096));
    assert_eq!(
        (swa_tp2::ATTENTION_WINDOW_ROWS, swa_tp2::O_WINDOW_ROWS),
        (2048, 512)
    );
    assert_eq!(swa_tp2::SOFTMAX_SCALE, 0.044194173824159216_f64 as f32);

    let names: Vec<&str> = v.tensors.iter().map(|t| t.name).collect();
    assert_eq!(
        names,
        [
            "x_hc",
            "hc_attn_fn",
            "hc_attn_scale",
            "hc_attn_base",
            "attn_norm_w",
            "wq_a",
            "wq_b",
            "wq_b_scale",
            "wkv",
            "gamma_cq",
            "gamma_ckv",
            "freqs_cos",
            "freqs_sin",
            "kv_cache",
            "swa_slot_mapping",
            "swa_indices",
            "swa_lens",
            "position_ids",
            "attn_sink",
            "wo_a",
            "wo_b",
            "wo_b_scale",
            "x_out",
        ]
    );
    let t = Dim::Var("t");
    assert_eq!(
        tensor(p, "x_hc").shape,
        &[t, Dim::Const(4), Dim::Const(4096)]
    );
    assert_eq!(
        tensor(p, "hc_attn_fn").shape,
        &[Dim::Const(24), Dim::Const(16384)]
    );
    assert_eq!(
        tensor(p, "wq_b").shape,
        &[Dim::Const(1024), Dim::Const(32768)]
    );
    assert_eq!(tensor(p, "wq_b").dtype, DType::I8);
    assert_eq!(
        tensor(p, "kv_cache").shape,
        &[
            Dim::Var("nb"),
            Dim::Const(32),
            Dim::Const(1),
            Dim::Const(512)
        ]
    );
    assert_eq!(tensor(p, "kv_cache").dir, Dir::InOut);
    assert_eq!(tensor(p, "swa_slot_mapping").dtype, DType::I64);
    assert_eq!(tensor(p, "swa_indices").shape, &[t, Dim::Const(128)]);
    assert_eq!(
        tensor(p, "wo_a").shape,
        &[Dim::Const(4), Dim::Const(1024), Dim::Const(4096)]
    );
    assert_eq!(tensor(p, "wo_a").placement, Placement::Sharded { axis: 0 });
    assert_eq!(
        tensor(p, "wo_b").shape,
        &[Dim::Const(4096), Dim::Const(4096)]
    );
    assert_eq!(tensor(p, "wo_b").placement, Placement::Sharded { axis: 1 });
    assert_eq!(tensor(p, "wo_b_scale").placement, Placement::Replicated);
    // The reference's exchange windows and signals are not host ABI (see abi::plan).
    for name in [
        "attention_window",
        "attention_signal",
        "o_window",
        "o_signal",
    ] {
        assert!(v.tensors.iter().all(|t| t.name != name), "{name}");
    }
    assert_eq!(p.spec.path, "specs/swa.yaml");
    assert_eq!(p.deployment.local_t, 256);
    assert_eq!(p.chip.aic_cores, 24);
    let axis = |n: &str| v.axes.iter().find(|a| a.name == n).map(|a| a.max);
    assert_eq!(
        (axis("t"), axis("b"), axis("nb")),
        (Some(256), Some(32), Some(512))
    );
}

#[test]
fn swa_small_tp1_matches_the_golden_vector_meta() {
    // ../shared/golden-vectors/swa_small_tp1/meta.json, at the fixture's 128 tokens and 64 blocks.
    let p = &generated::swa_small_tp1::PLAN;
    let v = &p.abi;
    let bind = |d: &Dim| match *d {
        Dim::Const(n) => n,
        Dim::Var("t") => 128,
        Dim::Var("nb") => 64,
        Dim::Var(other) => panic!("unexpected axis {other}"),
    };
    let expect: &[(&str, &[usize], DType)] = &[
        ("x_hc", &[128, 4, 2048], DType::F32),
        ("hc_attn_fn", &[24, 8192], DType::F32),
        ("wq_a", &[2048, 256], DType::Bf16),
        ("wq_b", &[256, 16384], DType::I8),
        ("wkv", &[2048, 512], DType::Bf16),
        ("freqs_cos", &[128, 64], DType::Bf16),
        ("kv_cache", &[64, 32, 1, 512], DType::Bf16),
        ("swa_indices", &[128, 128], DType::I32),
        ("attn_sink", &[32], DType::F32),
        ("wo_a", &[2, 256, 8192], DType::Bf16),
        ("wo_b", &[2048, 512], DType::I8),
        ("x_out", &[128, 4, 2048], DType::F32),
    ];
    for (name, shape, dtype) in expect {
        let t = tensor(p, name);
        let got: Vec<usize> = t.shape.iter().map(bind).collect();
        assert_eq!(&got, shape, "{name}");
        assert_eq!(t.dtype, *dtype, "{name}");
    }
    assert_eq!(v.tensors.len(), 23);
}

#[test]
fn csa_ref_tp1_declares_every_tensor_of_the_csa_golden_vectors() {
    declares_every_tensor_of("csa_small_tp1", &generated::csa_ref_tp1::PLAN, 128);
}

/// The 1M CSA's ABI (csa_1m.md §2.1): token-local `freqs_*` and `cmp_freqs_*`, `[b, 4]` ring
/// tables, `[b, 8192]` cmp and index-key tables.
#[test]
fn csa1m_ref_tp1_declares_every_tensor_of_the_1m_golden_vectors() {
    declares_every_tensor_of("csa1m_small_tp1", &generated::csa1m_ref_tp1::PLAN, 8);
}

/// Every input and output of the vectors in `name`'s meta.json (intermediate outputs
/// aside) is a tensor of `p` with its shape and dtype; a runtime axis takes one value
/// across the tensors, within the plan's bound, and `t` tokens.
fn declares_every_tensor_of(name: &str, p: &VariantPlan, t: usize) {
    let dir = runner::variant::repo_root()
        .join("../shared/golden-vectors")
        .join(name);
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("meta.json")).unwrap()).unwrap();
    let intermediate: Vec<&str> = meta["intermediate_outputs"]
        .as_array()
        .map(|a| a.iter().map(|v| v.as_str().unwrap()).collect())
        .unwrap_or_default();
    let mut axes: std::collections::BTreeMap<&str, usize> = Default::default();
    let mut seen = 0;
    for section in ["inputs", "outputs"] {
        for (name, entry) in meta[section].as_object().unwrap() {
            if intermediate.contains(&name.as_str()) {
                continue;
            }
            let t = tensor(p, name);
            let shape: Vec<usize> = entry[0]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_u64().unwrap() as usize)
                .collect();
            assert_eq!(t.shape.len(), shape.len(), "{name}: rank");
            for (d, &n) in t.shape.iter().zip(&shape) {
                match *d {
                    Dim::Const(c) => assert_eq!(c, n, "{name}: {:?} vs {shape:?}", t.shape),
                    Dim::Var(v) => {
                        assert_eq!(*axes.entry(v).or_insert(n), n, "{name}: axis {v}");
                        let max = p.abi.axes.iter().find(|a| a.name == v).unwrap().max;
                        assert!(n <= max, "{name}: axis {v} = {n} above the plan's {max}");
                    }
                }
            }
            let dtype = match entry[1].as_str().unwrap() {
                "float32" => DType::F32,
                "bfloat16" => DType::Bf16,
                "int8" => DType::I8,
                "int32" => DType::I32,
                "int64" => DType::I64,
                other => panic!("{name}: dtype {other}"),
            };
            assert_eq!(t.dtype, dtype, "{name}");
            if section == "inputs" {
                seen += 1;
            }
        }
    }
    // Every ABI input is one of the vectors' inputs.
    let inputs = p.abi.tensors.iter().filter(|t| t.dir != Dir::Out).count();
    assert_eq!(inputs, seen, "ABI inputs vs the vectors' inputs");
    assert_eq!(axes.get("t"), Some(&t));
}
