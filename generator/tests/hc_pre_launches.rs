//! Where hc_pre's mix runs (`stages::hc_pre`): fused, in the projection's launch (one mixed
//! kernel on the projection's blocks, the vector cores mixing tiles the cube cores have
//! signalled); unfused, in a vector launch of its own after the projection.

mod common;

use common::{hca, replace, tp1_launches};

#[test]
fn the_mix_runs_in_the_projection_launch_where_fused() {
    let fused = tp1_launches(&hca(), "hc_pre");
    assert_eq!(fused.len(), 1, "{fused:?}");
    let (kernel, blocks) = &fused[0];
    assert!(
        kernel.starts_with("hc_pre_hc4_") && kernel.contains("_it20_"),
        "{kernel}"
    );
    let unfused = tp1_launches(
        &replace(&hca(), "layer: hca", "layer: hca\nfuse: false"),
        "hc_pre",
    );
    assert_eq!(unfused.len(), 2, "{unfused:?}");
    assert!(unfused[0].0.starts_with("hc_pre_proj_"), "{unfused:?}");
    assert!(unfused[1].0.starts_with("hc_pre_mix_"), "{unfused:?}");
    // the fused launch runs on the projection's blocks (its groups' AIVs mix)
    assert_eq!(*blocks, unfused[0].1, "{fused:?} vs {unfused:?}");
}
