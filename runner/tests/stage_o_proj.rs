//! Stage o_proj (swa.md §3.7–3.8) and the reduce-scatter's sum on the CPU model, against
//! `golden`: TP 1 attn_out, each rank's sharded f32 partial, and the cross-rank
//! sum, at capacity and capacity − 8 tokens. Padding rows of the packed heads are NaN, so
//! a kernel reading them fails; every output and workspace starts poisoned.
//!
//! Inputs: the fixture's distributions, with the packed heads and wo_a rounded to power-of-
//! two grids (see [`grid_normal`]) so that every wo_a product is exact in f32 in any
//! summation order. The latent then cannot differ between the kernels' (split-K, atomic)
//! and the golden's order, so its int8 quantisation cannot flip a value: one flipped value
//! moves ~5 % of its row's outputs past 1/128, and the reference's zero-bad-point threshold
//! would fail by chance.
//!
//! The collectives' data movement (executed by the runtime in a layer run) is emulated
//! here with the golden's own collectives.

mod stage_checks;
mod support;

use std::collections::BTreeMap;

use abi::plan::{Cores, Launch, Step};
use golden::Dims;
use golden::arith::{narrow, widen};
use golden::collectives::{all_to_all_groups, reduce_scatter};
use golden::compare::ratio_allclose;
use golden::fixtures::random::Draws;
use golden::fixtures::weights::{bf16_values, quantize_rows};
use golden::gemm::{Mat, Threads, matmul, matmul_int, widen_i8};
use golden::o_proj::{OProjWeights, o_proj, o_proj_partial};
use golden::quant::{Rounding, quantize_row};
use golden::tensor::Tensor;
use half::bf16;
use harness::backend::poison;
use kernelgen::plan::Plan;
use stage_checks::{HcStreams, assert_pass, assert_unwritten, check_launches, dims, head, tensor};

const SEED: u64 = 20_260_819;

/// `n` values of N(0, std²) rounded to multiples of 2^-`exp` and clipped to ±4 std: few
/// significant bits, so products of two such values and their sums stay exact in f32.
fn grid_normal(draws: &Draws, stream: &str, n: usize, std: f32, exp: i32) -> Vec<f32> {
    let (unit, clip) = (2f32.powi(-exp), 4.0 * std);
    draws
        .normal(stream, n, std)
        .into_iter()
        .map(|v| (v.clamp(-clip, clip) / unit).round() * unit)
        .collect()
}

/// The grid exponent that gives `std` about 8 grid steps.
fn grid_exp(std: f32) -> i32 {
    (8.0 / std).log2().round() as i32
}

/// The std of the packed heads.
const HEADS_STD: f32 = 0.5;

/// The full (unsharded) output-projection weights, with the fixture's distributions.
struct Weights {
    /// `[o_groups, o_lora, o_group_in]`.
    wo_a: Vec<bf16>,
    /// `[hidden, o_groups · o_lora]`.
    wo_b: Vec<i8>,
    wo_b_scale: Vec<f32>,
}

impl Weights {
    fn new(d: &Dims, draws: &Draws) -> Weights {
        let (g, lora, gin, hidden) = (d.o_groups, d.o_lora, d.o_group_in(), d.hidden);
        let std = 1.0 / (gin as f32).sqrt();
        let wo_a = narrow(&grid_normal(
            draws,
            "wo_a",
            g * lora * gin,
            std,
            grid_exp(std),
        ));
        // A row of wo_a products sums at most o_group_in · |x|max · |w|max grid units: within
        // f32's 24 bits, every partial sum in any order is exact.
        let units = |std: f32| (4.0 * std * 2f32.powi(grid_exp(std))).ceil();
        assert!(
            gin as f32 * units(HEADS_STD) * units(std) < (1u32 << 24) as f32,
            "wo_a products would round"
        );
        let width = g * lora;
        let wo_b = draws.normal("wo_b", hidden * width, 1.0 / (width as f32).sqrt());
        let wo_b = quantize_rows(&bf16_values(&wo_b), width, Rounding::HalfEven);
        Weights {
            wo_a,
            wo_b: wo_b.values,
            wo_b_scale: wo_b.scale,
        }
    }

    /// Rank `r`'s shard: its local groups of wo_a, their columns of wo_b.
    fn shard(&self, d: &Dims, r: usize) -> Weights {
        let (lg, lora, gin) = (d.local_o_groups(), d.o_lora, d.o_group_in());
        let (w, full) = (d.local_o_width(), d.o_groups * lora);
        Weights {
            wo_a: self.wo_a[r * lg * lora * gin..(r + 1) * lg * lora * gin].to_vec(),
            wo_b: self
                .wo_b
                .chunks_exact(full)
                .flat_map(|row| row[r * w..(r + 1) * w].iter().copied())
                .collect(),
            wo_b_scale: self.wo_b_scale.clone(),
        }
    }

    fn golden(&self) -> OProjWeights<'_> {
        OProjWeights {
            wo_a: &self.wo_a,
            wo_b: &self.wo_b,
            wo_b_scale: &self.wo_b_scale,
        }
    }

    fn insert(&self, d: &Dims, tensors: &mut BTreeMap<String, Tensor>) {
        let (lg, lora, gin) = (d.local_o_groups(), d.o_lora, d.o_group_in());
        let put = |t: Result<Tensor, _>| t.expect("weights fill their shape");
        tensors.insert(
            "wo_a".into(),
            put(Tensor::from_vec(vec![lg, lora, gin], self.wo_a.clone())),
        );
        tensors.insert(
            "wo_b".into(),
            put(Tensor::from_vec(
                vec![d.hidden, lg * lora],
                self.wo_b.clone(),
            )),
        );
        tensors.insert(
            "wo_b_scale".into(),
            put(Tensor::from_vec(vec![d.hidden], self.wo_b_scale.clone())),
        );
    }
}

/// One rank's packed attention output `[o_groups · t_pad, o_group_in]`: rows `< t` of
/// every group slab random, the padding rows NaN.
fn packed_heads(d: &Dims, draws: &Draws, rank: usize, t: usize) -> Vec<bf16> {
    let (g, t_pad, gin) = (d.o_groups, d.local_t_pad(), d.o_group_in());
    let stream = format!("o_packed_heads.{rank}");
    let values = narrow(&grid_normal(
        draws,
        &stream,
        g * t_pad * gin,
        HEADS_STD,
        grid_exp(HEADS_STD),
    ));
    values
        .chunks_exact(gin)
        .enumerate()
        .flat_map(|(row, r)| {
            let pad = row % t_pad >= t;
            r.iter().map(move |&v| if pad { bf16::NAN } else { v })
        })
        .collect()
}

/// The runtime token counts every test runs: capacity and capacity − 8 (a
/// sub-capacity count leaves padding rows).
fn token_counts(d: &Dims) -> [usize; 2] {
    [d.local_t(), d.local_t() - 8]
}

/// Runs `f`, printing its wall time.
fn timed<R>(p: &Plan, f: impl FnOnce() -> R) -> R {
    let start = std::time::Instant::now();
    let r = f();
    println!("{}: stage run {:.2?}", p.variant, start.elapsed());
    r
}

/// TP 1: o_packed_heads → attn_out, then hc_post (which may take o_proj's group sum as its
/// prologue: `dsv4/group_combine_hc_post.h`, attn_out then never written): the dequantised
/// sum rounded to bf16 against the golden within (1e-4, 1/128) everywhere, attn_out (where
/// written) and x_out bit-exact from it.
fn tp1(variant: &str) {
    let d = dims(support::plan(variant));
    tp1_at(variant, &token_counts(&d));
}

/// [`tp1`] at the runtime token counts `ts`.
fn tp1_at(variant: &str, ts: &[usize]) {
    let p = support::plan(variant);
    let d = dims(p);
    let (hidden, cap) = (d.hidden, d.local_t());
    let rt = support::stages(variant, &["o_proj", "hc_post"]);
    let fused = support::host(variant).steps.iter().any(
        |s| matches!(s, Step::Launch(l) if l.stage == "o_proj" && l.also.contains(&"hc_post")),
    );
    assert_eq!(
        fused, p.fuse,
        "{variant}: hc_post takes o_proj's sum where it fuses"
    );
    let draws = Draws::new(SEED);
    let w = Weights::new(&d, &draws);
    for &t in ts {
        let packed = packed_heads(&d, &draws, 0, t);
        let streams = HcStreams::new(&draws, &d, cap, t);
        let mut tensors = BTreeMap::new();
        w.insert(&d, &mut tensors);
        tensors.insert(
            "o_packed_heads".into(),
            tensor(
                vec![d.o_groups * d.local_t_pad(), d.o_group_in()],
                packed.clone(),
            ),
        );
        streams.insert(&d, cap, &mut tensors);
        let tiling = support::tiling(&[("t", t), ("b", t / d.seq), ("group_t", t)]);
        let stats = timed(p, || support::run(rt, &mut tensors, tiling));
        check_launches(p, &stats);
        let want = o_proj(&d, &packed, d.local_t_pad(), t, w.golden());
        let out = (!fused).then_some("attn_out");
        let attn: Vec<bf16> = check_intermediates(&d, &tensors, &w, t, "o_packed_heads", out)
            .into_iter()
            .map(bf16::from_f32)
            .collect();
        assert_pass(&ratio_allclose(
            &format!("{variant} t={t} attn_out"),
            &tensor(vec![t, hidden], attn.clone()),
            &tensor(vec![t, hidden], want),
            1e-4,
            1.0 / 128.0,
            0.0,
        ));
        if let Some(got) = out.map(|o| &tensors[o]) {
            assert_unwritten("attn_out", got, t * hidden);
        } else {
            assert!(
                !tensors.contains_key("attn_out"),
                "{variant}: attn_out bound"
            );
        }
        streams.assert_x_out(variant, &d, &attn, &tensors["x_out"], t);
    }
}

/// The exact steps inside the stage, from the f32 latent (see [`latent`]): the int8
/// quantisation and the int32 products are bit-exact, rows ≥ `rows` of every group slab
/// stay unwritten, and `out` (where the stage writes it) is the dequantised sum, returned
/// (f32, `rows` × hidden) bit-exact. `input`: the stage's group slabs.
fn check_intermediates(
    d: &Dims,
    tensors: &BTreeMap<String, Tensor>,
    w: &Weights,
    rows: usize,
    input: &str,
    out: Option<&str>,
) -> Vec<f32> {
    let (lg, lora, hidden) = (d.local_o_groups(), d.o_lora, d.hidden);
    let cap = tensors["o_i8"].shape()[1];
    let values = |name: &str| &tensors[name];
    let latent = latent(d, tensors, w, input, cap, rows);
    let q = values("o_i8").values::<i8>().expect("i8");
    let scale = values("o_scale").values::<f32>().expect("f32");
    let acc = values("o_acc").values::<i32>().expect("i32");
    let mut sum = vec![0.0f32; rows * hidden];
    for g in 0..lg {
        let slab = g * cap;
        let mut want_q = vec![0i8; rows * lora];
        for (u, wq) in want_q.chunks_exact_mut(lora).enumerate() {
            let s = quantize_row(&latent[(slab + u) * lora..(slab + u + 1) * lora], wq);
            assert_eq!(
                scale[slab + u].to_bits(),
                s.to_bits(),
                "o_scale[{g}, {u}]: got {}, want {s}",
                scale[slab + u]
            );
        }
        assert!(
            q[slab * lora..(slab + rows) * lora] == want_q[..],
            "o_i8 group {g} differs from the quantised latent"
        );
        let wo_b = widen_i8(&w.wo_b);
        let products = matmul_int(
            Mat::rows(&widen_i8(&want_q), rows, lora),
            Mat {
                data: &wo_b[g * lora..],
                rows: lora,
                cols: hidden,
                rs: 1,
                cs: lg * lora,
            },
            Threads::All,
        );
        let got_p = &acc[slab * hidden..(slab + rows) * hidden];
        if let Some(i) = (0..products.len()).find(|&i| got_p[i] as f32 != products[i]) {
            panic!(
                "o_acc[{g}, {}, {}]: got {}, want {}",
                i / hidden,
                i % hidden,
                got_p[i],
                products[i]
            );
        }
        for (u, row) in sum.chunks_exact_mut(hidden).enumerate() {
            let s = scale[slab + u];
            let p = &got_p[u * hidden..(u + 1) * hidden];
            row.iter_mut().zip(p).for_each(|(a, &v)| *a += v as f32 * s);
        }
        let slabs = [("o_latent", lora), ("o_i8", lora), ("o_acc", hidden)];
        for (name, t, width) in slabs
            .into_iter()
            .filter_map(|(name, width)| Some((name, tensors.get(name)?, width)))
        {
            let bytes = &t.as_le_bytes()
                [(slab + rows) * width * t.dtype().size()..(slab + cap) * width * t.dtype().size()];
            assert!(
                bytes.iter().all(|&b| b == poison(t.dtype())),
                "{name} group {g}: padding rows written"
            );
        }
        assert!(
            scale[slab + rows..slab + cap]
                .iter()
                .all(|v| v.to_bits() == u32::MAX),
            "o_scale group {g}: padding rows written"
        );
    }
    for row in sum.chunks_exact_mut(hidden) {
        row.iter_mut()
            .zip(&w.wo_b_scale)
            .for_each(|(a, &s)| *a *= s);
    }
    let Some(out) = out else {
        return sum;
    };
    let got = values(out);
    let same = match got.values::<bf16>() {
        Some(v) => v[..rows * hidden]
            .iter()
            .zip(&sum)
            .all(|(g, &s)| g.to_bits() == bf16::from_f32(s).to_bits()),
        None => got.values::<f32>().expect("f32")[..rows * hidden]
            .iter()
            .zip(&sum)
            .all(|(g, s)| g.to_bits() == s.to_bits()),
    };
    assert!(same, "{out} differs from the dequantised sum of o_acc");
    sum
}

/// The f32 latent `[groups, cap, lora]` of each group's first `rows` rows (the rest 0): the
/// kernels' own where o_latent goes through GM, else (the quantisation summing wo_a's k
/// slices itself) the slab rows times the group's wo_a, which the grids make exact in any
/// order, so the kernels' sum has the same bits.
fn latent(
    d: &Dims,
    tensors: &BTreeMap<String, Tensor>,
    w: &Weights,
    input: &str,
    cap: usize,
    rows: usize,
) -> Vec<f32> {
    if let Some(t) = tensors.get("o_latent") {
        return t.values::<f32>().expect("f32").to_vec();
    }
    let (lg, lora, gin) = (d.local_o_groups(), d.o_lora, d.o_group_in());
    let slabs = tensors[input].values::<bf16>().expect("bf16");
    let mut out = vec![0.0f32; lg * cap * lora];
    for g in 0..lg {
        let x = widen(&slabs[g * cap * gin..(g * cap + rows) * gin]);
        let wo_a = widen(&w.wo_a[g * lora * gin..(g + 1) * lora * gin]);
        let a = matmul(
            Mat::rows(&x, rows, gin),
            Mat::transposed(&wo_a, gin, lora),
            Threads::All,
        );
        out[g * cap * lora..(g * cap + rows) * lora].copy_from_slice(&a);
    }
    out
}

#[test]
fn tp1_swa_small() {
    tp1("swa_small_tp1");
}

#[test]
fn tp1_swa_mini() {
    tp1("swa_mini_tp1");
}

/// Fusion off: attn_out goes through GM to hc_post's own launch.
#[test]
fn tp1_swa_small_unfused() {
    tp1("swa_small_unfused_tp1");
}

/// The reference's deployment (FLASH dims, 8 tokens): both products are weight streams on
/// every core, one mixed launch each: wo_a with its B read into L2 ahead of the cube by the
/// vector cores (`dsv4/matmul_prefetch.h`), wo_b's last columns on the vector cores, which
/// also read some of the cube's B ahead of it between their units' slices
/// (`dsv4/matmul_group.h` ReadBeside); the int8 one must still be the exact int32 product
/// (`check_intermediates`).
#[test]
fn tp1_swa_deployment_runs_both_products_on_every_core() {
    let variant = "swa_deployment_tp1";
    let launches = o_proj_launches(variant);
    let mixed: Vec<&Vec<&str>> = (launches.iter())
        .filter(|(l, _)| l.cores == Cores::Mix)
        .map(|(_, parts)| parts)
        .collect();
    assert_eq!(
        mixed,
        [
            &vec!["Matmul", "BReader"],
            &vec!["Matmul", "VectorMatmul", "BReader"]
        ],
        "{launches:?}"
    );
    tp1_at(variant, &[8]);
}

/// Each launch of `variant`'s o_proj stage with its kernel's parts' classes.
fn o_proj_launches(variant: &str) -> Vec<(&'static Launch, Vec<&'static str>)> {
    let kernels = &support::planned(variant).kernels.kernels;
    (support::host(variant).steps.iter())
        .filter_map(|s| match s {
            Step::Launch(l) if l.stage == "o_proj" => {
                let k = kernels.iter().find(|k| k.name == l.kernel)?;
                Some((l, k.parts.iter().map(|p| p.class).collect()))
            }
            _ => None,
        })
        .collect()
}

/// Where wo_b's launch alone would leave the vector cores idle while the group sum waits for
/// all of it (`gemm::overlap`), wo_b runs in two column ranges: the first alone, the second
/// beside the sum of the first (`consumer` on the vector cores), then the sum of the second;
/// the stage's outputs are still the golden's.
fn assert_wo_b_beside(variant: &str, consumer: &str) {
    let launches = o_proj_launches(variant);
    let beside = (launches.iter())
        .position(|(l, parts)| l.cores == Cores::Mix && parts[..] == ["MatmulAt", consumer])
        .unwrap_or_else(|| panic!("{variant}: {consumer} beside wo_b's second range"));
    let (first, last) = (launches[beside - 1].0, launches[beside + 1].0);
    assert!(
        first.kernel.starts_with("matmul_i8_nk") && first.args == ["o_i8", "wo_b", "o_acc"],
        "{variant}: wo_b's first range before it"
    );
    assert!(
        last.cores == Cores::Aiv && last.kernel.contains("_col") && last.args[0] == "o_acc",
        "{variant}: the second range's sum after it"
    );
}

/// FLASH at TP 1: the group sum with hc_post (`dsv4/group_combine_hc_post.h`) on column
/// ranges beside wo_b's; attn_out and x_out the golden's at runtime counts below capacity.
#[test]
fn tp1_swa_runs_the_group_sum_beside_wo_b() {
    assert_wo_b_beside("swa_tp1", "GroupCombineHcPost");
    tp1_at("swa_tp1", &[16, 40]);
}

/// Pro at TP 4: the f32 partial's group sum (`dsv4/group_combine.h`) beside wo_b's ranges.
#[test]
fn sharded_pro_swa_flash_tp4_runs_the_group_sum_beside_wo_b() {
    assert_wo_b_beside("pro_swa_flash_tp4", "GroupCombine");
    sharded_at("pro_swa_flash_tp4", &[8]);
}

/// TP > 1: per rank the all-to-all's group slabs → o_partial (vs the golden partial within
/// (1e-4, 1/128), no bad point), then the token scatter and the rank sum (exact against
/// the golden's reduce-scatter of the kernels' partials).
fn sharded(variant: &str) {
    let d = dims(support::plan(variant));
    sharded_at(variant, &token_counts(&d));
}

/// [`sharded`] at the runtime token counts `ts`.
fn sharded_at(variant: &str, ts: &[usize]) {
    let p = support::plan(variant);
    let d = dims(p);
    let (tp, lg, gin, hidden) = (d.tp, d.local_o_groups(), d.o_group_in(), d.hidden);
    let group_t_pad = tp * d.local_t_pad();
    let projection = support::stages(variant, &["o_proj"]);
    // with fusion the rank sum is hc_post's prologue (`dsv4/rank_sum_hc_post.h`): attn_out
    // is then never written, and x_out is hc_post's of the golden's sum
    let rank_sum = support::stages(variant, &["o_reduce_scatter", "hc_post"]);
    let fused = support::host(variant).steps.iter().any(|s| {
        matches!(s, Step::Launch(l) if l.stage == "o_reduce_scatter" && l.also.contains(&"hc_post"))
    });
    assert_eq!(
        fused, p.fuse,
        "{variant}: hc_post takes the rank sum where it fuses"
    );
    let draws = Draws::new(SEED);
    let full = Weights::new(&d, &draws);
    for &t in ts {
        let group_t = tp * t;
        let packed: Vec<Vec<bf16>> = (0..tp).map(|r| packed_heads(&d, &draws, r, t)).collect();
        // The all-to-all's output, compact [lg, group_t, gin] per rank.
        let windows = all_to_all_groups(&d, &packed, d.local_t_pad(), t);
        let mut partials = Vec::new();
        for (r, window) in windows.iter().enumerate() {
            let w = full.shard(&d, r);
            let mut local = vec![bf16::NAN; lg * group_t_pad * gin];
            for g in 0..lg {
                local[g * group_t_pad * gin..(g * group_t_pad + group_t) * gin]
                    .copy_from_slice(&window[g * group_t * gin..(g + 1) * group_t * gin]);
            }
            let mut tensors = BTreeMap::new();
            w.insert(&d, &mut tensors);
            tensors.insert(
                "attention_local".into(),
                tensor(vec![lg * group_t_pad, gin], local),
            );
            let tiling = support::tiling(&[("t", t), ("b", t / d.seq), ("group_t", group_t)]);
            let stats = timed(p, || support::run(projection, &mut tensors, tiling));
            check_launches(p, &stats);
            let want = o_proj_partial(&d, window, group_t, group_t, w.golden());
            let got = &tensors["o_partial"];
            assert_pass(&ratio_allclose(
                &format!("{variant} t={t} rank {r} o_partial"),
                &head::<f32>(got, group_t, hidden),
                &tensor(vec![group_t, hidden], want),
                1e-4,
                1.0 / 128.0,
                0.0,
            ));
            assert_unwritten("o_partial", got, group_t * hidden);
            check_intermediates(
                &d,
                &tensors,
                &w,
                group_t,
                "attention_local",
                Some("o_partial"),
            );
            partials.push(got.values::<f32>().expect("f32")[..group_t * hidden].to_vec());
        }
        // The token scatter: owner o's window rows r·t + j ← rank r's partial rows o·t + j.
        let want = reduce_scatter(&partials, t, hidden);
        for (o, want) in want.into_iter().enumerate() {
            let mut window = vec![f32::from_bits(u32::MAX); tp * d.local_t_pad() * hidden];
            for (r, part) in partials.iter().enumerate() {
                window[r * t * hidden..(r + 1) * t * hidden]
                    .copy_from_slice(&part[o * t * hidden..(o + 1) * t * hidden]);
            }
            let mut tensors = BTreeMap::new();
            tensors.insert(
                "o_window".into(),
                tensor(vec![tp * d.local_t_pad(), hidden], window),
            );
            let streams = HcStreams::new(&draws, &d, d.local_t(), t);
            streams.insert(&d, d.local_t(), &mut tensors);
            let tiling = support::tiling(&[("t", t), ("b", t / d.seq), ("group_t", group_t)]);
            let stats = support::run(rank_sum, &mut tensors, tiling);
            check_launches(p, &stats);
            if fused {
                assert!(
                    !tensors.contains_key("attn_out"),
                    "{variant}: attn_out bound"
                );
            } else {
                let got = &tensors["attn_out"];
                let got_rows = &got.values::<bf16>().expect("bf16")[..t * hidden];
                assert!(
                    got_rows
                        .iter()
                        .zip(&want)
                        .all(|(g, w)| g.to_bits() == w.to_bits()),
                    "{variant} t={t} owner {o}: attn_out differs from the golden reduce-scatter"
                );
                assert_unwritten("attn_out", got, t * hidden);
            }
            let what = format!("{variant} t={t} owner {o}");
            streams.assert_x_out(&what, &d, &want, &tensors["x_out"], t);
        }
    }
}

#[test]
fn sharded_swa_mini_tp2() {
    sharded("swa_mini_tp2");
}

#[test]
fn sharded_swa_mini_tp4() {
    sharded("swa_mini_tp4");
}

#[test]
fn sharded_swa_small_tp2() {
    sharded("swa_small_tp2");
}

/// Fusion off: attn_out goes through GM from the rank sum's launch to hc_post's.
#[test]
fn sharded_swa_small_unfused_tp2() {
    sharded("swa_small_unfused_tp2");
}

/// The generated plan wires the steps as swa.md §3.8 orders them (without fusion: with it,
/// hc_post's launch takes the rank sum).
#[test]
fn collective_steps() {
    let steps: Vec<String> = support::host("swa_small_unfused_tp2")
        .steps
        .iter()
        .filter_map(|s| match s {
            Step::GroupAllToAll { src, dst, .. } => Some(format!("a2a {src}->{dst}")),
            Step::TokenScatter { src, dst } => Some(format!("scatter {src}->{dst}")),
            Step::Launch(l) if l.stage == "o_reduce_scatter" => {
                Some(format!("launch {}", l.args.join(",")))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        steps,
        [
            "a2a o_packed_heads->attention_local",
            "scatter o_partial->o_window",
            "launch o_window,attn_out"
        ]
    );
    assert!(
        !support::host("swa_mini_tp1")
            .steps
            .iter()
            .any(|s| matches!(s, Step::GroupAllToAll { .. } | Step::TokenScatter { .. })),
        "TP 1 has no collectives"
    );
}
