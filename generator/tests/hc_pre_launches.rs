//! Where hc_pre's mix runs (`stages::hc_pre`): fused, in the projection's launch (one mixed
//! kernel on the projection's blocks, the vector cores mixing tiles the cube cores have
//! signalled); unfused, in a vector launch of its own after the projection.

mod common;

use abi::plan::Step;
use common::{check, hca, replace};

/// The hc_pre launches of the spec's TP 1 plan: (kernel, blocks), in launch order.
fn hc_pre_launches(text: &str) -> Vec<(String, u32)> {
    let variants = check(text).unwrap_or_else(|e| panic!("{}", e[0]));
    let v = variants
        .iter()
        .find(|v| v.plan.shape.tp == 1)
        .expect("a TP 1 variant");
    v.kernels
        .steps
        .iter()
        .filter_map(|s| match s {
            Step::Launch(l) if l.stage == "hc_pre" => Some((l.kernel.to_string(), l.block_dim)),
            _ => None,
        })
        .collect()
}

#[test]
fn the_mix_runs_in_the_projection_launch_where_fused() {
    let fused = hc_pre_launches(&hca());
    assert_eq!(fused.len(), 1, "{fused:?}");
    let (kernel, blocks) = &fused[0];
    assert!(
        kernel.starts_with("hc_pre_hc4_") && kernel.contains("_it20_"),
        "{kernel}"
    );
    let unfused = hc_pre_launches(&replace(&hca(), "layer: hca", "layer: hca\nfuse: false"));
    assert_eq!(unfused.len(), 2, "{unfused:?}");
    assert!(unfused[0].0.starts_with("hc_pre_proj_"), "{unfused:?}");
    assert!(unfused[1].0.starts_with("hc_pre_mix_"), "{unfused:?}");
    // the fused launch runs on the projection's blocks (its groups' AIVs mix)
    assert_eq!(*blocks, unfused[0].1, "{fused:?} vs {unfused:?}");
}
