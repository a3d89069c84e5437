//! Every invalid spec yields `file:line:col`, the offending value and the rule.
//! Each case edits a valid small spec, then asserts where the first error points
//! (found independently, by searching the edited text), what it says and which
//! rule it names, and how many errors there are.

mod common;

use common::{SWA, check, csa, csa_ring, hca, locate, replace};

struct Case {
    name: &'static str,
    text: String,
    /// The error points at `token` on the only line containing `line`.
    at: (&'static str, &'static str),
    message: &'static str,
    rule: &'static str,
    count: usize,
}

fn case(
    name: &'static str,
    text: String,
    at: (&'static str, &'static str),
    message: &'static str,
    rule: &'static str,
) -> Case {
    Case {
        name,
        text,
        at,
        message,
        rule,
        count: 1,
    }
}

fn swa(edits: &[(&str, &str)]) -> String {
    edit(SWA, edits)
}

fn edit(base: &str, edits: &[(&str, &str)]) -> String {
    edits
        .iter()
        .fold(base.to_owned(), |t, (from, to)| replace(&t, from, to))
}

const HC_POST: &str = "  - hc_post:\n      tiling: { tokens: 8, cols: 128 }\n";
const O_REDUCE_SCATTER: &str = "  - o_reduce_scatter:\n      tiling: { rows: 8, cols: 256 }\n";
const ATTN_TILING: &str = "tiling: { heads: 8, kv_rows: 128, d: 64 }";
const INDEX_QUERY: &str = "  - index_query:\n      tiling: { m: 32, n: 128, k: 128, tokens: 2 }\n";
const INDEX_COMPRESSOR: &str =
    "  - index_compressor:\n      tiling: { m: 32, n: 128, k: 128, tokens: 8, channels: 64 }\n";
const QKV_TILING: &str = "tiling: { m: 32, n: 128, k: 128, tokens: 8 }";

fn cases() -> Vec<Case> {
    vec![
        // Syntax and types, reported by the YAML layer.
        case("unknown key", swa(&[("  heads: 16", "  headz: 16")]), ("headz", "headz"),
            "unknown key `headz`", "only the keys of the schema are allowed"),
        case("unknown key in a tiling", swa(&[("{ tokens: 8 }", "{ tokens: 8, rows: 2 }")]),
            ("rows: 2", "rows"), "unknown key `rows`", "only the keys of the schema are allowed"),
        case("duplicate key", swa(&[("  heads: 16\n", "  heads: 16\n  heads: 32\n")]),
            ("heads: 32", "heads"), "duplicate key `heads`", "a key appears at most once"),
        case("wrong type", swa(&[("heads: 16", "heads: sixteen")]), ("sixteen", "sixteen"),
            "`sixteen` is not an integer", "the value must have the key's type"),
        case("wrong type: boolean", hca().replace("overlap: false", "overlap: maybe"),
            ("maybe", "maybe"), "`maybe` is not a boolean (true or false)", "the value must have the key's type"),
        case("missing key points at its mapping", swa(&[("  rms_eps: 1.0e-6\n", "")]),
            ("model:", "model"), "missing key `rms_eps`", "every key of the schema without a default must be present"),
        case("missing key of a stage", swa(&[("      window: 128\n", "")]), ("- sparse_attention:", "sparse_attention"),
            "missing key `window`", "every key of the schema without a default must be present"),
        case("missing key of a flow mapping", swa(&[("tiling: { tokens: 8, cols: 128 }", "tiling: { cols: 128 }")]),
            ("tiling: { cols: 128 }", "{"), "missing key `tokens`", "every key of the schema without a default must be present"),
        case("missing top-level key", swa(&[("target: 910b\n", "")]), ("name: t", "name"),
            "missing key `target`", "every key of the schema without a default must be present"),
        case("unknown stage kind", swa(&[("- rms_norm:", "- rms_nrm:")]), ("rms_nrm", "rms_nrm"),
            "unknown name `rms_nrm`", "the value must be one of the listed names"),
        case("unknown rope table", swa(&[("table: per_token", "table: per_row")]),
            ("per_row", "per_row"), "unknown name `per_row`", "the value must be one of the listed names"),
        case("not YAML at all", "name: [unclosed\nlayer: swa\n".into(), ("name: [unclosed", "["),
            "", "a spec is one YAML document holding a mapping"),
        case("not a mapping", "just some words\n".into(), ("just", "just"), "",
            "a spec is one YAML document holding a mapping"),
        // Values.
        case("zero dim", swa(&[("heads: 16", "heads: 0")]), ("heads: 0", "0"),
            "heads 0 is not a positive integer", "dims, counts and tiles are positive integers"),
        case("negative dim", swa(&[("hidden: 512", "hidden: -512")]), ("hidden: -512", "-512"),
            "hidden -512 is not a positive integer", "dims, counts and tiles are positive integers"),
        case("zero tile", swa(&[("{ tokens: 8 }", "{ tokens: 0 }")]), ("tokens: 0", "0"),
            "tile tokens 0 is not a positive integer", "dims, counts and tiles are positive integers"),
        // Bounded so that no size computed from the spec can overflow.
        case("dim too large", swa(&[("o_lora_rank: 128", "o_lora_rank: 1_0001024")]),
            ("o_lora_rank", "1_0001024"), "o_lora_rank 10001024 is not a positive integer of at most 65536",
            "dims, counts and tiles are positive integers up to 65536"),
        case("pool too large", swa(&[("kv_pool_blocks: 64", "kv_pool_blocks: 20000000")]),
            ("kv_pool_blocks", "20000000"), "kv_pool_blocks 20000000 is not a positive integer of at most 16777216",
            "positions and pool sizes up to 16777216"),
        // Every stage has kernels unless the spec is a draft, and a draft has a stage without.
        case("stage without kernels", swa(&[(HC_POST,
                "  - hc_post:\n      tiling: { tokens: 8, cols: 8 }\n      unaligned_rows: data_copy_pad\n")]),
            ("- hc_post", "hc_post"),
            "stage hc_post has no kernels at TP 1, 2, 4: tile cols 8 is not a multiple of 16",
            "a knowingly incomplete spec says `draft: true`"),
        // A product taller than the matmul planner's bound on runtime rows (each copy moves
        // one row range, which L0C keeps far below the 16-bit ND2NZ row count; the bound
        // keeps the planner's search over row ranges short and untested sizes out).
        Case { count: 2, ..case("matmul rows past 16 bits",
            swa(&[("tp: [1, 2, 4]", "tp: [1]"), ("decode_batch: 16", "decode_batch: 8192")]),
            ("- qkv_proj_rope", "qkv_proj_rope"),
            "stage qkv_proj_rope has no kernels at TP 1: wq_a: 65536 rows are more than the 65,535 a matmul's split is planned for",
            "a knowingly incomplete spec says `draft: true`") },
        // A dim past an API field that no split plans around: hc_pre copies each token's
        // hc_mult x hidden floats with one ND2NZ, whose source row length is 16 bits.
        case("x_hc row past the 16-bit ND2NZ source row", swa(&[("hidden: 512", "hidden: 16384")]),
            ("hidden: 16384", "16384"),
            "hc_pre: an x_hc row of hc_mult x hidden = 4 x 16384 = 65536 floats is longer than one ND2NZ source row",
            "Nd2NzParams.srcDValue is at most 65535: hc_mult x hidden <= 65535"),
        case("complete draft", swa(&[("layer: swa", "layer: swa\ndraft: true")]), ("draft", "true"),
            "the spec is marked draft but every stage has kernels", "`draft: true` marks a spec"),
        case("epsilon not positive", swa(&[("rms_eps: 1.0e-6", "rms_eps: 0.0")]), ("rms_eps", "0.0"),
            "rms_eps 0 is not a positive number", "positive finite numbers"),
        case("bad spec name", swa(&[("name: t", "name: Bad-Name")]), ("Bad-Name", "Bad-Name"),
            "`Bad-Name` is not a lowercase identifier", "name matches [a-z][a-z0-9_]*"),
        case("unknown target chip", swa(&[("target: 910b", "target: 910c")]), ("910c", "910c"),
            "unknown target chip `910c`; known chips: 910b, 910b3, 910b4, a3",
            "target names a chip of the built-in table"),
        case("empty tp list", swa(&[("tp: [1, 2, 4]", "tp: []")]), ("tp: []", "["),
            "empty tp list", "tp lists at least one TP degree"),
        case("duplicated tp", swa(&[("tp: [1, 2, 4]", "tp: [1, 2, 2]")]), ("tp: [1, 2, 2]", "2]"),
            "tp 2 is listed twice", "each TP degree appears once"),
        // Model consistency.
        case("rope dim odd", swa(&[("rope_dim: 64", "rope_dim: 63")]), ("rope_dim", "63"),
            "rope_dim 63 is odd", "rope_dim is even"),
        case("rope dim larger than head dim", swa(&[("rope_dim: 64", "rope_dim: 256")]),
            ("rope_dim", "256"), "rope_dim 256 is larger than head_dim 128",
            "the rotary dims are the last rope_dim dims of a head"),
        case("heads not divisible by o_groups", swa(&[("o_groups: 8", "o_groups: 6")]),
            ("o_groups", "6"), "heads 16 is not divisible by o_groups 6", "o_groups must divide heads"),
        case("block size not a multiple of 16", swa(&[("block_size: 32", "block_size: 24")]),
            ("block_size", "24"), "block_size 24 is not a multiple of 16", "window gathers copy 16-row runs"),
        // TP degrees.
        case("o_groups not divisible by tp", swa(&[("tp: [1, 2, 4]", "tp: [1, 2, 16]")]),
            ("tp: [1, 2, 16]", "16"), "o_groups 8 is not divisible by tp 16",
            "each TP degree must divide o_groups"),
        case("token capacity not divisible by tp",
            swa(&[("o_groups: 8", "o_groups: 16"), ("tp: [1, 2, 4]", "tp: [16]"), ("decode_batch: 16", "decode_batch: 5")]),
            ("tp: [16]", "16"), "token capacity 40 (decode_batch x decode_seq) is not divisible by tp 16",
            "each TP degree must divide the token capacity"),
        case("decode_batch not divisible by tp", swa(&[("tp: [1, 2, 4]", "tp: [1, 2]"), ("decode_batch: 16", "decode_batch: 3")]),
            ("tp: [1, 2]", "2"), "decode_batch 3 is not divisible by tp 2", "a rank holds whole requests"),
        case("token capacity per rank not a multiple of 8", swa(&[("decode_seq: 8", "decode_seq: 1")]),
            ("tp: [1, 2, 4]", "4"), "token capacity per rank 4 at tp 4 is not a multiple of 8",
            "kernels move tokens in 8-row blocks"),
        // Tiles.
        case("tile not dividing its dim", swa(&[("tiling: { tokens: 8, cols: 256 }", "tiling: { tokens: 8, cols: 192 }")]),
            ("tokens: 8, cols: 192", "192"), "rms_norm tile cols 192 does not divide hidden 512",
            "a tile must divide the dimension it tiles"),
        case("matmul tile not dividing its dim", swa(&[(QKV_TILING, "tiling: { m: 32, n: 128, k: 96, tokens: 8 }")]),
            ("k: 96", "96"), "qkv_proj_rope tile k 96 does not divide hidden 512",
            "a matmul tile must divide the dimension it tiles or cover it whole"),
        case("matmul rows not dividing T_PAD", swa(&[(QKV_TILING, "tiling: { m: 48, n: 128, k: 128, tokens: 8 }")]),
            ("m: 48", "48"), "qkv_proj_rope tile m 48 does not divide T_PAD 128 at tp 1",
            "a matmul tile must divide the dimension it tiles or cover it whole"),
        case("cube tile not a multiple of 16", swa(&[(QKV_TILING, "tiling: { m: 24, n: 128, k: 128, tokens: 8 }")]),
            ("m: 24", "24"), "qkv_proj_rope tile m 24 is not a multiple of 16", "cube tiles are whole 16x16 fractals"),
        case("token tile not dividing 8", swa(&[("tiling: { tokens: 8, cols: 128 }", "tiling: { tokens: 3, cols: 128 }")]),
            ("tokens: 3", "3"), "hc_post token tile 3 does not divide 8", "token tiles divide 8"),
        case("hc_pre token tile other than 8", swa(&[("tiling: { m: 16, k: 128, tokens: 8, cols: 256 }", "tiling: { m: 16, k: 128, tokens: 4, cols: 256 }")]),
            ("tokens: 4", "4"), "hc_pre tile tokens 4 is not 8", "this tile is fixed by the kernel's lane layout"),
        case("attention kv tile not dividing the window", swa(&[(ATTN_TILING, "tiling: { heads: 8, kv_rows: 96, d: 64 }")]),
            ("kv_rows: 96", "96"), "kv_rows 96 does not divide window 128", "a tile must divide the dimension it tiles"),
        case("attention kv tile not whole fractals", swa(&[(ATTN_TILING, "tiling: { heads: 16, kv_rows: 8, d: 64 }")]),
            ("kv_rows: 8", "8"), "sparse_attention tile kv_rows 8 is not a multiple of 16", "cube tiles are whole 16x16 fractals"),
        case("attention head tile not whole blocks", swa(&[(ATTN_TILING, "tiling: { heads: 4, kv_rows: 128, d: 64 }")]),
            ("heads: 4", "4"), "sparse_attention tile heads 4 is not a multiple of 8",
            "attention head tiles are whole 32-byte blocks of f32"),
        // Budgets and alignment on the target chip.
        case("UB overflow", swa(&[(HC_POST, "  - hc_post:\n      tiling: { tokens: 8, cols: 512 }\n")]),
            ("tokens: 8, cols: 512", "{"), "hc_post kernel hc_post_hc4_d512_t8_c512 buffers need 290.6 KiB of UB but 910b has 184.0 KiB (attn_out 2x8.0 KiB, x_hc 2x64.0 KiB",
            "the buffers of a stage must fit each on-chip memory of the target chip"),
        // Both window cube kernels hold the union (attention_cube.h): one error each.
        Case { count: 2, ..case("L1 overflow", swa(&[("head_dim: 128", "head_dim: 512"), ("window: 128", "window: 640")]),
            ("kv_rows: 128", "{"),
            "sparse_attention kernel attn_window_scores_h16_d512_w640_s8_bs32_ht8_kv128_dk64 buffers need 697.0 KiB of L1 but 910b has 511.9 KiB (union 1x656.0 KiB",
            "the buffers of a stage must fit each on-chip memory of the target chip") },
        // A fused kernel's parts hold its buffers (the window's scores, softmax and values
        // with the finish in one launch): two B tiles of 256 dims x 128 rows. One error per
        // TP degree (the finish's name holds the padded token count).
        Case { count: 3, ..case("L0B overflow in a fused kernel's part", swa(&[("head_dim: 128", "head_dim: 256"), (ATTN_TILING, "tiling: { heads: 16, kv_rows: 128, d: 256 }")]),
            ("heads: 16, kv_rows: 128, d: 256", "{"),
            "sparse_attention kernel attn_window_finish_h16_d256_w128_s8_bs32_ht16_kv128_dk256_oh7_r64_hpg2_tpad128 buffers need 128.0 KiB of L0B but 910b has 64.0 KiB (b_l0 2x64.0 KiB)",
            "the buffers of a stage must fit each on-chip memory of the target chip") },
        // The matmul's own buffers, per launch: one error per TP degree (its split differs).
        Case { count: 3, ..case("L0A overflow", swa(&[(QKV_TILING, "tiling: { m: 512, n: 16, k: 64, tokens: 8 }")]),
            ("m: 512", "{"), "qkv_proj_rope kernel matmul_bf16_kn_n128_k512_tile512x16x64_split128x512x16_bufs4x2 buffers need 128.0 KiB of L0A but 910b has 64.0 KiB (a_l0 2x64.0 KiB)",
            "the buffers of a stage must fit each on-chip memory of the target chip") },
        Case { count: 3, ..case("L0B overflow", swa(&[(QKV_TILING, "tiling: { m: 16, n: 256, k: 256, tokens: 8 }")]),
            ("n: 256", "{"), "qkv_proj_rope kernel matmul_bf16_kn_n128_k512_tile16x128x256_split128x512x128_bufs4x2 buffers need 128.0 KiB of L0B but 910b has 64.0 KiB (b_l0 2x64.0 KiB)",
            "the buffers of a stage must fit each on-chip memory of the target chip") },
        // (two TP degrees: at the third the planner takes halved tiles that fit)
        Case { count: 2, ..case("L0C overflow", swa(&[(QKV_TILING, "tiling: { m: 256, n: 1024, k: 16, tokens: 8 }")]),
            ("m: 256", "{"), "qkv_proj_rope kernel matmul_i8_kn_n2048_k128_half_tile256x512x32_split32x128x512_bufs4x1_runs buffers need 512.0 KiB of L0C but 910b has 128.0 KiB (c_strip 1x512.0 KiB)",
            "the buffers of a stage must fit each on-chip memory of the target chip") },
        // hc_post refuses such rows before it launches a kernel; rank_sum's bf16 rows out are
        // checked once per TP degree (2 and 4: its kernel is named after it).
        Case { count: 2, ..case("unaligned UB rows without a pad policy", swa(&[(O_REDUCE_SCATTER, "  - o_reduce_scatter:\n      tiling: { rows: 8, cols: 8 }\n")]),
            ("rows: 8, cols: 8", "{"), "o_reduce_scatter kernel rank_sum_tp2_n512_t8x8 moves GM rows of 16 B through UB buffer rows_out, not a multiple of 32 B",
            "unaligned UB rows need `unaligned_rows: data_copy_pad` on the stage") },
        // Pools, compression and the indexer.
        case("window larger than the physical pool", swa(&[("kv_pool_blocks: 64", "kv_pool_blocks: 2")]),
            ("window: 128", "128"), "window 128 is larger than the physical KV pool of 64 rows (2 blocks x 32)",
            "the window must fit in the physical KV pool of one rank"),
        case("top-k larger than the candidates", csa().replace("topk: 64", "topk: 8192"),
            ("topk: 8192", "8192"), "indexer topk 8192 is larger than the 4096 compressed rows a request can have",
            "topk <= max_positions / ratio"),
        case("compressor stage on a ratio-0 layer", hca().replace("layer: hca", "layer: swa"),
            ("- compressor:", "compressor"), "compressor stage in a swa layer (compress ratio 0)",
            "only hca and csa layers compress"),
        case("compress ratio beyond max positions", hca().replace("max_positions: 1048576", "max_positions: 64"),
            ("ratio: 128", "128"), "compressor ratio 128 exceeds max_positions 64",
            "ratio <= max_positions"),
        case("hca layer without a compressor",
            edit(&hca(), &[(common::HCA_COMPRESSOR, ""), ("sources: [window, compressed]", "sources: [window]")]),
            ("layer: hca", "hca"), "hca layer without a compressor stage",
            "hca and csa layers compress their KV with a compressor stage"),
        case("indexer head_dim not a power of two", csa().replace("head_dim: 128\n      topk", "head_dim: 96\n      topk"),
            ("head_dim: 96", "96"), "indexer head_dim 96 is not a power of two", "Hadamard"),
        case("index queries without an indexer",
            edit(&hca(), &[(common::HCA_COMPRESSOR, &format!("{}{INDEX_QUERY}", common::HCA_COMPRESSOR))]),
            ("- index_query:", "index_query"), "index_query stage without an indexer stage",
            "index queries take their heads and head_dim from the layer's indexer stage"),
        case("index keys without an indexer",
            edit(&hca(), &[(common::HCA_COMPRESSOR, &format!("{}{INDEX_COMPRESSOR}", common::HCA_COMPRESSOR))]),
            ("- index_compressor:", "index_compressor"), "index_compressor stage without an indexer stage",
            "index keys take their head_dim and pools from the layer's indexer stage"),
        // Which reference CSA a layer follows (README, "CSA"): the mixes it never defined.
        case("state ring on hca", hca().replace("state_block_size: 8\n", "state_block_size: 8\n      state: ring\n"),
            ("state: ring", "ring"), "state: ring on a non-overlapping hca compressor",
            "the state ring is CSA's overlapping compressor's (pypto-lib PR #1013): layer: csa with overlap: true"),
        case("state ring with the position table", csa_ring().replace("table: per_token", "table: positions"),
            ("state: ring", "ring"), "state: ring with rope.table: positions",
            "the ring CSA (PR #1013) takes token-local RoPE rows: rope.table: per_token"),
        case("snapshot CSA with token rows", csa().replace("table: positions", "table: per_token"),
            ("table: per_token", "per_token"), "rope.table: per_token on a CSA layer with paged compressor state",
            "the snapshot CSA (paged state) gathers its RoPE rows from the whole table (rope.table: positions); token-local rows are the ring CSA's (compressor state: ring)"),
        case("state rings past the pool", csa_ring().replace("state: ring\n      state_pool_blocks: 64", "state: ring\n      state_pool_blocks: 60"),
            ("state_pool_blocks: 60", "60"), "state_pool_blocks 60 holds fewer than decode_batch 16 rings of 4 pages",
            "with state: ring every request owns a ring: state_pool_blocks >= decode_batch x 2·ratio / state_block_size"),
        case("index-key rings past the pool", csa_ring().replace("state_pool_blocks: 64\n      key_pool_blocks", "state_pool_blocks: 32\n      key_pool_blocks"),
            ("state_pool_blocks: 32", "32"), "state_pool_blocks 32 holds fewer than decode_batch 16 rings of 4 pages",
            "the index-key compressor keeps a ring per request like the main one"),
        case("yarn band inverted", hca().replace("beta_fast: 32.0", "beta_fast: 0.5"),
            ("yarn:", "0.5"), "yarn beta_fast 0.5 is not larger than beta_slow 1", "beta_fast > beta_slow"),
        // The stage graph.
        case("stage appears twice", swa(&[("  - sparse_attention:", "  - cache_insert: { tiling: { tokens: 4 } }\n  - sparse_attention:")]),
            ("cache_insert: { tiling: { tokens: 4 } }", "cache_insert"), "stage cache_insert appears twice",
            "each stage kind runs at most once per layer"),
        case("stage before its input", swa(&[
                ("  - hc_pre:\n      tiling: { m: 16, k: 128, tokens: 8, cols: 256 }\n  - rms_norm:\n      tiling: { tokens: 8, cols: 256 }\n",
                 "  - rms_norm:\n      tiling: { tokens: 8, cols: 256 }\n  - hc_pre:\n      tiling: { m: 16, k: 128, tokens: 8, cols: 256 }\n")]),
            ("- rms_norm:", "rms_norm"), "rms_norm needs x_mixed, which no earlier stage produces",
            "a stage only uses what an earlier stage produces (x_mixed come from hc_pre)"),
        case("attention source nobody produces", swa(&[("sources: [window]", "sources: [window, indexed]")]),
            ("sources:", "indexed"), "KV source indexed needs top-k indices, which no earlier stage produces",
            "(top-k indices come from indexer)"),
        case("no stage writes x_out", swa(&[(HC_POST, "")]), ("- hc_pre:", "-"),
            "the stage list never produces x_out", "a layer ends with hc_post"),
        Case { count: 2, ..case("indexer without compressor",
            csa().replace("  - compressor:\n      ratio: 4\n      overlap: true\n      state_block_size: 2\n      state_pool_blocks: 64\n      cmp_pool_blocks: 16\n      tiling: { m: 32, n: 128, k: 128, tokens: 8, channels: 64 }\n", ""),
            ("- indexer:", "indexer"), "indexer needs compressed rows, which no earlier stage produces",
            "(compressed rows come from compressor)") },
    ]
}

#[test]
fn every_invalid_spec_is_located_with_value_and_rule() {
    let cases = cases();
    assert!(cases.len() >= 25);
    let mut failures = Vec::new();
    for c in &cases {
        let errors = match check(&c.text) {
            Ok(_) => {
                failures.push(format!("{}: accepted", c.name));
                continue;
            }
            Err(e) => e,
        };
        let first = &errors[0];
        let (line, col) = locate(&c.text, c.at.0, c.at.1);
        let loc = first.loc.map(|l| (l.line, l.col));
        let headline = first.headline();
        let ok = first.file == "specs/test/bad.yaml"
            && loc == Some((line, col))
            && first.message.contains(c.message)
            && first.rule.contains(c.rule)
            && headline.starts_with(&format!("specs/test/bad.yaml:{line}:{col}: error: "))
            && headline.ends_with(&format!("(rule: {})", first.rule))
            && errors.len() == c.count;
        if !ok {
            let all: Vec<String> = errors.iter().map(|e| e.headline()).collect();
            failures.push(format!(
                "{}: expected {line}:{col} `{}` (rule {}) x{}, got:\n    {}",
                c.name,
                c.message,
                c.rule,
                c.count,
                all.join("\n    ")
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn empty_file_is_an_error_at_its_start() {
    let errors = check("").unwrap_err();
    let e = &errors[0];
    assert_eq!(e.loc.map(|l| (l.line, l.col)), Some((1, 1)));
    assert_eq!(e.rule, "a spec is one YAML document holding a mapping");
}

#[test]
fn the_display_shows_the_offending_line_with_a_caret() {
    let text = swa(&[("o_groups: 8", "o_groups: 6")]);
    let e = &check(&text).unwrap_err()[0];
    let shown = e.to_string();
    assert!(
        shown.starts_with(
            "specs/test/bad.yaml:12:13: error: heads 16 is not divisible by o_groups 6 (rule: "
        ),
        "{shown}"
    );
    assert!(
        shown.contains("12 |   o_groups: 6\n   |             ^"),
        "{shown}"
    );
}

#[test]
fn the_base_specs_are_valid() {
    for (name, text) in [
        ("swa", SWA.to_owned()),
        ("hca", hca()),
        ("csa", csa()),
        ("csa_ring", csa_ring()),
    ] {
        let plans = check(&text).unwrap_or_else(|e| panic!("{name}: {}", e[0]));
        assert_eq!(plans.len(), 3, "{name}");
    }
}

#[test]
fn a_pad_policy_admits_unaligned_rows() {
    // Validation admits the rows; hc_post.h has no DataCopyPad path yet: a draft.
    let text = swa(&[
        (
            HC_POST,
            "  - hc_post:\n      tiling: { tokens: 8, cols: 8 }\n      unaligned_rows: data_copy_pad\n",
        ),
        ("layer: swa", "layer: swa\ndraft: true"),
    ]);
    let plans = check(&text).unwrap_or_else(|e| panic!("{}", e[0]));
    let hc_post = plans[0].stages.last().expect("stages");
    assert!(hc_post.pad_unaligned);
}
