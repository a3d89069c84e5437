//! The whole pipeline in memory: determinism, freshness of the committed tree,
//! file hygiene, and variants nobody planned for.

use std::path::{Path, PathBuf};

use kernelgen::render::{self, MARKER};
use kernelgen::tree::{self, Scope};
use kernelgen::{generate, spec, variant};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn generating_twice_gives_identical_bytes() {
    let a = generate(&root(), &[]).unwrap_or_else(|e| panic!("{e}"));
    let b = generate(&root(), &[]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(a.files, b.files);
    assert!(a.files.len() > 40);
}

#[test]
fn the_committed_tree_is_fresh() {
    // `cargo xtask gen --check` as a test.
    let root = root();
    let g = generate(&root, &[]).unwrap_or_else(|e| panic!("{e}"));
    let report = tree::compare(&root, &g.files, &Scope::All).expect("read generated/");
    let stale: Vec<&str> = report.changes.iter().map(|c| c.path.as_str()).collect();
    assert!(
        report.is_clean(),
        "generated/ is out of date ({stale:?}, unknown {:?}): run `cargo xtask gen`",
        report.foreign
    );
}

#[test]
fn files_are_sorted_headed_and_free_of_machine_details() {
    let root = root();
    let g = generate(&root, &[]).unwrap_or_else(|e| panic!("{e}"));
    let paths: Vec<&str> = g.files.iter().map(|f| f.path.as_str()).collect();
    let mut sorted = paths.clone();
    sorted.sort_unstable();
    assert_eq!(paths, sorted);
    let abs = root.canonicalize().unwrap();
    for f in &g.files {
        let first = f.content.lines().next().unwrap();
        assert!(
            first.starts_with("// ") && first.contains(MARKER),
            "{}",
            f.path
        );
        assert!(first.ends_with("— do not edit"), "{}", f.path);
        assert_eq!(render::owner_of(&f.content), Some(f.owner.as_str()));
        assert!(
            f.content.ends_with('\n') && !f.content.ends_with("\n\n"),
            "{}",
            f.path
        );
        assert!(
            !f.content.contains(abs.to_str().unwrap()),
            "{} has an absolute path",
            f.path
        );
        assert!(
            !f.content.contains('\r') && !f.content.contains('\t'),
            "{}",
            f.path
        );
    }
    // The header names the spec and its content hash.
    let swa = g
        .files
        .iter()
        .find(|f| f.path == "generated/host/swa_tp2.rs")
        .unwrap();
    let text = std::fs::read(root.join("specs/swa.yaml")).unwrap();
    let expected = format!(
        "from specs/swa.yaml (spec {}) — do not edit",
        abi::short_hash(&text)
    );
    assert!(swa.content.lines().next().unwrap().ends_with(&expected));
}

#[test]
fn the_unplanned_variant_generates_from_its_spec_alone() {
    let g = generate(&root(), &[]).unwrap_or_else(|e| panic!("{e}"));
    let p = &g
        .variants
        .iter()
        .find(|v| v.plan.variant == "csa_unplanned_tp8")
        .expect("planned")
        .plan;
    assert_eq!(p.shape.tp, 8);
    assert_eq!((p.attention.window, p.attention.window_tiles), (256, 2));
    assert_eq!(p.compressor.as_ref().map(|c| c.ratio), Some(16));
    assert_eq!(p.attention.padded_topk, 512);
    assert_eq!(p.model.rope_dim, 32);
    let path = "generated/host/csa_unplanned_tp8.rs";
    assert!(g.files.iter().any(|f| f.path == path), "{path}");
}

#[test]
fn pro_dims_at_tp_8_validate_and_render() {
    // DeepSeek-V4 Pro attention dims (codegen.md §5.2), edited into the FLASH SWA spec.
    let text = std::fs::read_to_string(root().join("specs/swa.yaml")).unwrap();
    // wq_b's [q_lora, heads · head_dim] weight is 65536 wide, past the 16-bit ND2NZ stride:
    // the matmul copies it row by row, so every stage plans.
    let mut text = text
        .replace("name: swa", "name: swa_pro")
        .replace("tp: [1, 2, 4]", "tp: [8]");
    for (from, to) in [
        ("hidden: 4096", "hidden: 7168"),
        ("heads: 64", "heads: 128"),
        ("q_lora_rank: 1024", "q_lora_rank: 1536"),
        ("o_groups: 8", "o_groups: 16"),
        // q_lora 1536 widens qkv's UB rows: 4 tokens per vector item keeps them within 184 KiB.
        (
            "tiling: { m: 128, n: 64, k: 128, tokens: 8 }   # L0C",
            "tiling: { m: 128, n: 64, k: 128, tokens: 4 }   # L0C",
        ),
    ] {
        assert!(text.contains(from));
        text = text.replace(from, to);
    }
    let spec = spec::parse("specs/swa_pro.yaml", &text).unwrap_or_else(|e| panic!("{e}"));
    let variants = variant::build(&spec).unwrap_or_else(|e| panic!("{}", e[0]));
    let (p, kernels) = (&variants[0].plan, &variants[0].kernels);
    assert_eq!(
        (p.shape.b, p.shape.local_t, p.shape.local_o_groups),
        (8, 64, 2)
    );
    assert_eq!((p.model.heads_per_group, p.model.o_group_in), (8, 4096));
    assert!(kernels.missing.is_empty(), "{:?}", kernels.missing);
    // whole, or in two column ranges (the second beside QHeads, gemm::overlap)
    assert!(
        kernels.kernels.iter().any(|k| {
            k.name.starts_with("matmul_i8_kn_n65536_k1536")
                || k.name
                    .starts_with("matmul_i8_kn_n32768_k1536_half_ldb65536")
        }),
        "wq_b's matmul is planned"
    );
    let files = render::render(&variants, &[]).expect("renders");
    let host = files
        .iter()
        .find(|f| f.path == "generated/host/swa_pro_tp8.rs")
        .unwrap();
    assert!(host.content.contains("shape: &[Const(7168), Const(1536)]"));
}

#[test]
fn a_selection_renders_only_its_spec_and_the_index() {
    let g = generate(&root(), &[PathBuf::from("specs/hca.yaml")]).unwrap_or_else(|e| panic!("{e}"));
    // Beside hca's own files: the index and the shared kernels and building blocks.
    let owners: std::collections::BTreeSet<&str> = g
        .files
        .iter()
        .map(|f| f.owner.as_str())
        .filter(|o| !o.starts_with("templates/") && !o.starts_with("blocks/"))
        .collect();
    assert_eq!(
        owners.into_iter().collect::<Vec<_>>(),
        ["specs/", "specs/hca.yaml"]
    );
    // The index still lists every variant.
    let index = g
        .files
        .iter()
        .find(|f| f.path == "generated/host/mod.rs")
        .unwrap();
    assert!(index.content.contains("pub mod swa_tp1;"));
}

#[test]
fn building_blocks_sync_each_hand_off_by_itself() {
    // Every hand-off names the one event or barrier its dependency needs (the sim's hazard
    // checker proves they suffice): no building block drains every pipe, and no flag takes a
    // fixed id that could collide with the ids the queues hold (dsv4/pipe_sync.h Handshake).
    let dir = root().join("blocks/dsv4");
    let mut blocks = 0;
    for entry in std::fs::read_dir(&dir).expect("building blocks") {
        let path = entry.expect("dir entry").path();
        let text = std::fs::read_to_string(&path).expect("readable header");
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        blocks += 1;
        assert!(!text.contains("PIPE_ALL"), "{name} drains every pipe");
        assert!(!text.contains("EVENT_ID"), "{name} uses a fixed event id");
        if name != "pipe_sync.h" {
            for call in ["SetFlag<", "WaitFlag<"] {
                // CrossCoreSetFlag / CrossCoreWaitFlag are the cross-core flags
                let intra = text
                    .match_indices(call)
                    .any(|(i, _)| !text[..i].ends_with("CrossCore"));
                assert!(!intra, "{name} calls {call}…> outside Handshake");
            }
        }
    }
    assert!(blocks > 10);
}

/// Where a further attention source splits over KV: the mixed kernel takes every core group
/// and a combine follows it only when a unit (request or token) has more than one KV piece;
/// otherwise one group per unit at most and no combine.
#[test]
fn further_sources_split_over_kv_only_where_a_unit_has_several_pieces() {
    let g = generate(&root(), &[]).unwrap_or_else(|e| panic!("{e}"));
    let launches = |name: &str| -> Vec<(String, u32)> {
        let v = g
            .variants
            .iter()
            .find(|v| v.plan.variant == name)
            .unwrap_or_else(|| panic!("no variant {name}"));
        v.kernels
            .steps
            .iter()
            .filter_map(|s| match s {
                abi::plan::Step::Launch(l) if l.stage == "sparse_attention" => {
                    Some((l.kernel.to_string(), l.block_dim))
                }
                _ => None,
            })
            .collect()
    };
    let find = |ls: &[(String, u32)], prefix: &str| {
        ls.iter()
            .find(|(k, _)| k.starts_with(prefix))
            .map(|(_, blocks)| *blocks)
    };
    // hca_small: 8192 compressed rows in chunks of 512; the deployment: 64 rows, one chunk.
    let hca = launches("hca_small_tp1");
    assert_eq!(find(&hca, "attn_compressed_h"), Some(24));
    assert!(find(&hca, "attn_combine_finish_cmp").is_some());
    let hca_dep = launches("hca_deployment_tp1");
    assert_eq!(
        find(&hca_dep, "attn_compressed_finish_h"),
        Some(16),
        "4 requests, their 64 heads in 4 pieces of 16 each, finished in the launch"
    );
    assert_eq!(find(&hca_dep, "attn_combine"), None);
    // csa_ref: top-512 in four 128-slot tiles; csa_small: top-64, one tile.
    let csa = launches("csa_ref_tp1");
    assert_eq!(find(&csa, "attn_indexed_h"), Some(24));
    assert!(find(&csa, "attn_combine_finish_idx").is_some());
    let csa_small = launches("csa_small_tp1");
    assert_eq!(find(&csa_small, "attn_indexed_h"), Some(24), "128 tokens");
    assert_eq!(find(&csa_small, "attn_combine"), None);
    // The last launch of the attention finishes the heads: the combine after its source, or
    // the compressed source where nothing splits; no finish launch is left.
    let order: Vec<&str> = csa.iter().map(|(k, _)| k.as_str()).collect();
    let at = |p: &str| order.iter().position(|k| k.starts_with(p));
    assert!(at("attn_indexed_h") < at("attn_combine_finish_idx"));
    for plan in [&csa, &hca, &hca_dep] {
        assert_eq!(find(plan, "attn_finish"), None);
    }
}
