//! Golden timings at FLASH dims with the reference's default token counts
//! (TP 1: 512 tokens), with baselines in the same run: the layer's four big
//! matrix products alone, and SWA at half the tokens.
//!
//! `cargo bench -p golden --bench golden_layers [-- swa|hca|csa …]`

use golden::fixtures::{self, FixtureOptions};
use golden::gemm::{Mat, Threads, matmul};
use golden::{self, Dims, Layer, LayerSpec};
use std::time::{Duration, Instant};

fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let t0 = Instant::now();
    let v = f();
    (v, t0.elapsed())
}

/// The big products of one layer step at `tokens`: wq_b, wo_a (all groups),
/// wo_b (all groups) and wq_a, as f32 GEMMs on constant data.
fn gemm_baseline(d: &Dims, tokens: usize) -> (Duration, f64) {
    let shapes = [
        (tokens, d.q_lora, d.heads * d.head_dim),
        (tokens * d.o_groups, d.o_group_in(), d.o_lora),
        (tokens * d.o_groups, d.o_lora, d.hidden),
        (tokens, d.hidden, d.q_lora),
    ];
    let mut flops = 0.0;
    let (_, time) = timed(|| {
        for &(m, k, n) in &shapes {
            let a = vec![0.5f32; m * k];
            let b = vec![0.25f32; k * n];
            let c = matmul(Mat::rows(&a, m, k), Mat::rows(&b, k, n), Threads::All);
            assert_eq!(c.len(), m * n);
            flops += 2.0 * (m * k * n) as f64;
        }
    });
    (time, flops / time.as_secs_f64() / 1e9)
}

fn run(label: &str, spec: &LayerSpec, opts: &FixtureOptions) -> Duration {
    let (fixture, build) = timed(|| fixtures::build(spec, opts).expect("the FLASH fixture builds"));
    let (out, golden) = timed(|| golden::run(spec, &fixture.inputs).expect("the golden runs"));
    let x = out.values::<f32>("x_out").expect("x_out");
    assert!(
        x.iter().all(|v| v.is_finite()),
        "{label}: x_out has non-finite values"
    );
    let tokens = x.len() / (spec.dims.hc_mult * spec.dims.hidden);
    println!(
        "{label:<28} tokens {tokens:>4}  fixture {:>7.2} s  golden {:>7.2} s",
        build.as_secs_f64(),
        golden.as_secs_f64()
    );
    golden
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let wanted = |name: &str| args.is_empty() || args.iter().any(|a| a == name);
    println!("threads: {}", rayon::current_num_threads());
    let flash = Dims::flash(1);
    let (time, gflops) = gemm_baseline(&flash, flash.local_t());
    println!(
        "{:<28} tokens {:>4}  {:>7.2} s  ({gflops:.1} GFLOP/s)",
        "baseline: big GEMMs (f32)",
        flash.local_t(),
        time.as_secs_f64()
    );
    if wanted("swa") {
        let spec = LayerSpec::flash_swa(1);
        let half = FixtureOptions {
            tokens: Some(spec.dims.local_t() / 2),
            ..FixtureOptions::default()
        };
        run("baseline: swa tp1 half", &spec, &half);
    }
    for layer in [Layer::Swa, Layer::Hca, Layer::Csa] {
        for tp in [1, 2] {
            if wanted(layer.name()) {
                let label = format!("{} tp{tp}", layer.name());
                run(
                    &label,
                    &LayerSpec::flash(layer, tp),
                    &FixtureOptions::default(),
                );
            }
        }
    }
}
