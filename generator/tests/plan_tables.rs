//! The FLASH plans against the reference tables (swa.md §1, hca_csa.md §1-§2).
//! Every expected number is copied by hand from those tables.

use std::path::Path;

use abi::Dim;
use kernelgen::chip::Mem;
use kernelgen::plan::Plan;
use kernelgen::variant::{self, Variant};

const MIB: usize = 1 << 20;

fn variants(spec: &str) -> Vec<Variant> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let spec = kernelgen::read_spec(&root, spec).unwrap_or_else(|e| panic!("{e}"));
    variant::build(&spec).unwrap_or_else(|e| panic!("{}", e[0]))
}

fn plans(spec: &str) -> Vec<Plan> {
    variants(spec).into_iter().map(|v| v.plan).collect()
}

/// swa.md §1.2 and hca_csa.md §1.5: TP, B, S, T, T_PAD, GROUP_T, GROUP_T_PAD,
/// LOCAL_O_GROUPS, LOCAL_O_WIDTH, ATTENTION_WINDOW_ROWS, O_WINDOW_ROWS.
const TP_TABLE: [[usize; 11]; 3] = [
    [1, 64, 8, 512, 512, 512, 512, 8, 8192, 4096, 512],
    [2, 32, 8, 256, 256, 512, 512, 4, 4096, 2048, 512],
    [4, 16, 8, 128, 128, 512, 512, 2, 2048, 1024, 512],
];

fn assert_tp_table(spec: &str) {
    let plans = plans(spec);
    assert_eq!(plans.len(), 3);
    for (p, row) in plans.iter().zip(TP_TABLE) {
        let s = &p.shape;
        let got = [
            s.tp,
            s.b,
            s.decode_seq,
            s.local_t,
            s.t_pad,
            s.group_t,
            s.group_t_pad,
            s.local_o_groups,
            s.local_o_width,
            s.attention_window_rows,
            s.o_window_rows,
        ];
        assert_eq!(got, row, "{spec} at tp {}", row[0]);
        assert_eq!(p.variant, format!("{}_tp{}", p.spec_name, row[0]));
    }
}

#[test]
fn swa_hca_csa_per_tp_shapes_match_the_reference() {
    assert_tp_table("specs/swa.yaml");
    assert_tp_table("specs/hca.yaml");
    assert_tp_table("specs/csa.yaml");
}

#[test]
fn swa_model_constants_and_windows() {
    let plans = plans("specs/swa.yaml");
    let m = &plans[0].model;
    assert_eq!(
        (m.nope_dim, m.half_rope, m.heads_per_group, m.o_group_in),
        (448, 32, 8, 4096)
    );
    assert_eq!((m.hc_dim, m.mix_hc, m.hc_sinkhorn_iters), (16384, 24, 20));
    assert_eq!(m.softmax_scale, 0.044194173824159216_f64 as f32);
    assert_eq!((m.rms_eps, m.hc_eps), (1e-6, 1e-6));
    assert_eq!(plans[0].rope.theta, 10000.0);
    assert!(plans[0].rope.yarn.is_none());
    for p in &plans {
        assert_eq!(p.pools.kv_pool_rows, 16384);
        assert_eq!(p.pools.max_positions, 1_048_576);
        assert_eq!(p.attention.padded_topk, 128);
        assert_eq!(p.attention.window_tiles, 1);
    }
    // The reference's exchange windows: 16 MiB / 8 MiB attention, 8 MiB o (swa.md §1.2).
    // They are a device detail of its one-sided puts, not host ABI: the collectives
    // move rows between kernel workspaces.
    let window = |p: &Plan| p.shape.attention_window_rows * p.model.o_group_in * 2;
    assert_eq!((window(&plans[1]), window(&plans[2])), (16 * MIB, 8 * MIB));
    assert_eq!(
        plans[1].shape.o_window_rows * plans[1].model.hidden * 4,
        8 * MIB
    );
    assert!(
        plans[1]
            .tensors
            .iter()
            .all(|t| !t.name.ends_with("_window"))
    );
    let bytes = |p: &Plan, n: &str| p.tensor(n).map(|t| t.bytes(&p.axes));
    // The KV pool: 512 blocks x 32 rows x 512 bf16 = 16 MiB per rank.
    assert_eq!(bytes(&plans[1], "kv_cache"), Some(16 * MIB));
    // At TP 1 the collectives are identity and not planned.
    let variants = variants("specs/swa.yaml");
    assert!(variants[0].stage("o_group_all_to_all").is_none());
    assert!(variants[1].stage("o_reduce_scatter").is_some());
}

#[test]
fn hca_compression_constants() {
    let plans = plans("specs/hca.yaml");
    let p = &plans[1];
    let c = p.compressor.as_ref().expect("hca compresses");
    // hca_csa.md §1.2, HCA column.
    assert_eq!((c.ratio, c.overlap, c.coff), (128, false, 1));
    assert_eq!(
        (c.out_width, c.head_dim, c.state_row_width),
        (512, 512, 1024)
    );
    assert_eq!(
        (c.state_block_size, c.state_pool_blocks, c.state_pool_rows),
        (8, 256, 2048)
    );
    assert_eq!(c.state_table_width, 131072);
    assert_eq!(c.pool_entries, 128);
    // §1.3 and §7.4: an 8192-row cmp_kv pool, which is one request's 1M-position ceiling.
    assert_eq!(
        (c.cache_pool_blocks, c.cache_pool_rows, c.max_rows),
        (256, 8192, 8192)
    );
    assert!(p.indexer.is_none());
    let a = &p.attention;
    assert_eq!(
        (a.window, a.padded_topk, a.max_compressed_rows),
        (128, 128, 8192)
    );
    assert_eq!(a.compressed_tiles, 64);
    // §1.4: YaRN band 15..25 at theta 160000.
    let y = p.rope.yarn.as_ref().expect("yarn");
    assert_eq!(
        (p.rope.theta, y.factor, y.original_max_positions),
        (160000.0, 16.0, 65536)
    );
    assert_eq!((y.low, y.high), (15.0, 25.0));
}

#[test]
fn csa_compression_indexer_and_candidates() {
    let plans = plans("specs/csa.yaml");
    let p = &plans[2];
    let c = p.compressor.as_ref().expect("csa compresses");
    // hca_csa.md §1.2, CSA main column.
    assert_eq!((c.ratio, c.overlap, c.coff), (4, true, 2));
    assert_eq!(
        (c.out_width, c.head_dim, c.state_row_width),
        (1024, 512, 2048)
    );
    assert_eq!(
        (c.state_block_size, c.state_pool_rows, c.state_table_width),
        (2, 520, 8192)
    );
    assert_eq!(c.pool_entries, 8);
    // §1.3: KV_CMP_MAX_BLOCKS = ceil(16384 / 4 / 32) = 128.
    assert_eq!(c.cache_table_width, 128);
    // CSA indexer column and §1.1.
    let i = p.indexer.as_ref().expect("csa indexes");
    assert_eq!(
        (i.heads, i.head_dim, i.rope_dim, i.nope_dim),
        (64, 128, 64, 64)
    );
    assert_eq!((i.q_width, i.topk, i.candidates), (8192, 512, 4096));
    assert_eq!(i.weights_scale, 0.011048543_f32);
    assert_eq!(
        (i.inner.out_width, i.inner.head_dim, i.inner.state_row_width),
        (256, 128, 512)
    );
    assert_eq!(
        (i.inner.state_block_size, i.inner.state_pool_rows),
        (2, 520)
    );
    assert_eq!(i.inner.state_table_width, 8192);
    // §6.3: 128 + 512 = 640 candidates = 5 tiles of 128.
    let a = &p.attention;
    assert_eq!((a.padded_topk, a.window_tiles + a.topk_tiles), (640, 5));
}

fn names(p: &Plan) -> Vec<&str> {
    p.tensors.iter().map(|t| t.name).collect()
}

#[test]
fn hca_abi_follows_the_reference_order_and_shapes() {
    let plans = plans("specs/hca.yaml");
    // hca_csa.md §2.1, items 1..36.
    assert_eq!(
        names(&plans[0]),
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
            "cmp_freqs_cos",
            "cmp_freqs_sin",
            "cmp_wkv",
            "cmp_wgate",
            "cmp_ape",
            "cmp_norm_w",
            "compress_state",
            "compress_state_block_table",
            "kv_cache",
            "cmp_kv",
            "cmp_block_table",
            "ori_slot_mapping",
            "window_swa_indices",
            "window_swa_lens",
            "cmp_slot_mapping",
            "state_slot_mapping",
            "position_ids",
            "kv_seq_lens",
            "attn_sink",
            "wo_a",
            "wo_b",
            "wo_b_scale",
            "x_out",
        ]
    );
    let p = &plans[0];
    let shape = |n: &str| p.tensor(n).expect(n).shape.clone();
    use Dim::{Const as C, Var as V};
    assert_eq!(shape("cmp_freqs_cos"), [C(64), C(32)]);
    assert_eq!(shape("cmp_wkv"), [C(512), C(4096)]);
    assert_eq!(shape("cmp_ape"), [C(128), C(512)]);
    assert_eq!(shape("compress_state"), [V("state_nb"), C(8), C(1024)]);
    assert_eq!(shape("compress_state_block_table"), [V("b"), C(131072)]);
    assert_eq!(shape("cmp_kv"), [V("cmp_nb"), C(32), C(1), C(512)]);
    assert_eq!(shape("wo_a"), [C(8), C(1024), C(4096)]);
}

#[test]
fn csa_abi_follows_the_reference_order_and_shapes() {
    let plans = plans("specs/csa.yaml");
    // hca_csa.md §2.3.
    assert_eq!(
        names(&plans[1]),
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
            "cmp_wkv",
            "cmp_wgate",
            "cmp_ape",
            "cmp_norm_w",
            "compress_state",
            "compress_state_block_table",
            "idx_wq_b",
            "idx_wq_b_scale",
            "weights_proj",
            "hadamard_idx",
            "inner_wkv",
            "inner_wgate",
            "inner_ape",
            "inner_norm_w",
            "inner_compress_state",
            "inner_compress_state_block_table",
            "kv_cache",
            "cmp_kv",
            "cmp_block_table",
            "idx_kv_cache",
            "idx_kv_scale",
            "idx_block_table",
            "ori_slot_mapping",
            "window_swa_indices",
            "window_swa_lens",
            "cmp_slot_mapping",
            "idx_slot_mapping",
            "state_slot_mapping",
            "inner_state_slot_mapping",
            "position_ids",
            "kv_seq_lens",
            "attn_sink",
            "wo_a",
            "wo_b",
            "wo_b_scale",
            "x_out",
        ]
    );
    let p = &plans[1];
    let shape = |n: &str| p.tensor(n).expect(n).shape.clone();
    use Dim::{Const as C, Var as V};
    assert_eq!(shape("freqs_cos"), [C(16384), C(64)]);
    assert_eq!(shape("cmp_wkv"), [C(1024), C(4096)]);
    assert_eq!(shape("cmp_ape"), [C(4), C(1024)]);
    assert_eq!(shape("compress_state"), [V("state_nb"), C(2), C(2048)]);
    assert_eq!(shape("compress_state_block_table"), [V("b"), C(8192)]);
    assert_eq!(shape("idx_wq_b"), [C(1024), C(8192)]);
    assert_eq!(shape("weights_proj"), [C(4096), C(64)]);
    assert_eq!(shape("hadamard_idx"), [C(128), C(128)]);
    assert_eq!(shape("inner_wkv"), [C(256), C(4096)]);
    assert_eq!(shape("inner_ape"), [C(4), C(256)]);
    assert_eq!(
        shape("inner_compress_state"),
        [V("inner_state_nb"), C(2), C(512)]
    );
    assert_eq!(shape("idx_kv_cache"), [V("idx_nb"), C(32), C(1), C(128)]);
    assert_eq!(shape("idx_kv_scale"), [V("idx_nb"), C(32), C(1), C(1)]);
    assert_eq!(shape("wo_b"), [C(4096), C(4096)]);
    let bound = |n: &str| p.axes.iter().find(|a| a.name == n).map(|a| a.max);
    assert_eq!(
        (bound("state_nb"), bound("cmp_nb"), bound("idx_nb")),
        (Some(260), Some(256), Some(256))
    );
}

#[test]
fn every_flash_kernel_fits_the_910b() {
    for spec in ["specs/swa.yaml", "specs/hca.yaml", "specs/csa.yaml"] {
        for v in variants(spec) {
            let chip = v.plan.chip;
            assert!(!v.kernels.kernels.is_empty(), "{}", v.plan.variant);
            for k in &v.kernels.kernels {
                for mem in Mem::ALL {
                    let bytes = k.bytes_in(mem, chip);
                    assert!(
                        bytes <= chip.capacity(mem),
                        "{} {} {mem}: {bytes} B",
                        v.plan.variant,
                        k.name
                    );
                }
            }
        }
    }
}
