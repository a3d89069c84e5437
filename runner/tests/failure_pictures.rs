//! Failure pictures: a deliberately broken kernel (swa_mini's hc_post, which at TP 1 takes
//! o_proj's group sum as its prologue, with its block 1 returning at once, so the x_out
//! band that block owns keeps the poison) fails x_out,
//! and the comparison's spread, its words and the heat-map show exactly that band; the
//! pictures are SVG files of the documented size.

mod layer_checks;

use golden::compare::judge_layer;
use golden::fixtures::StartPositions;
use harness::backend::KernelSources;
use layer_checks::{prepare_from, seeded};
use runner::layer::CaseResult;
use runner::{layer, plots, variant};

const CALL: &str = "    dsv4::GroupCombineHcPost<Params>::Run(";

/// The generated hc_post kernel of `plan` with block 1 skipping its work, in a folder the
/// sources search before `generated/`.
fn broken_sources(kernel: &str, dir: &std::path::Path) -> KernelSources {
    let repo = KernelSources::in_repo(&variant::repo_root());
    let good = std::fs::read_to_string(repo.source(kernel)).unwrap();
    assert!(
        good.contains(CALL),
        "the hc_post entry calls the block: {good}"
    );
    let broken = good.replace(
        CALL,
        &format!("    if (AscendC::GetBlockIdx() == 1) {{\n        return;  // the deliberate bug\n    }}\n{CALL}"),
    );
    std::fs::write(dir.join(format!("{kernel}.cpp")), broken).unwrap();
    repo.searching_first(dir.to_path_buf())
}

#[test]
fn a_broken_kernels_band_shows_in_the_spread_the_words_and_the_heatmap() {
    let plan = variant::by_name("swa_mini_tp1").unwrap();
    let kernel = plan
        .kernels
        .iter()
        .find(|k| k.name.contains("_hc_post_"))
        .unwrap()
        .name;
    let tmp = tempfile::tempdir().unwrap();
    let sources = broken_sources(kernel, tmp.path());
    let spec = variant::layer_spec(plan).unwrap();
    let rt = prepare_from(plan, &sources).unwrap();
    let t = plan.deployment.local_t;
    let (f, want) = seeded(&spec, StartPositions::Default, Some(t));
    let out = rt.run(&f.inputs).unwrap();
    let judged = judge_layer(&spec, &f.inputs, (&out.outputs, &out.probes), &want).unwrap();
    let x_out = judged.reports.iter().find(|r| r.output == "x_out").unwrap();
    assert!(!x_out.pass, "{}", x_out.detail());

    // hc_post's work items are (8-token group, 256-column chunk) pairs in that order, one
    // per block here: block 1 owns tokens 0..8, columns 256..512 of every stream.
    let s = x_out
        .spread
        .as_ref()
        .expect("x_out is compared element-wise");
    assert_eq!(s.shape, [t, 4, 512]);
    // (NaN: the report counts them as illegal values, not as bad points; the spread does)
    assert_eq!(s.bad.iter().sum::<u32>(), 8 * 4 * 256);
    let hit = |axis: usize| -> Vec<usize> {
        (0..s.shape[axis])
            .filter(|&i| s.by_axis[axis][i] > 0)
            .collect()
    };
    assert_eq!(hit(0), (0..8).collect::<Vec<_>>());
    assert_eq!(hit(1), (0..4).collect::<Vec<_>>());
    assert_eq!(hit(2), (256..512).collect::<Vec<_>>());
    let words = s.describe();
    assert!(
        words.starts_with(&format!(
            "axis 0: 0..=7 of {t} (8 indices, most at 0), axis 1: all 4, axis 2: 256..=511 of 512"
        )),
        "{words}"
    );

    // The heat-map: the band's cells (rows 0..32 = tokens 0..8 × 4 streams, columns
    // 256..512) all bad, every other cell clean.
    let result = CaseResult {
        label: "broken hc_post".into(),
        reports: judged.reports.clone(),
        stray: out.stray.clone(),
        record: out.record.clone(),
        golden: None,
        notes: Vec::new(),
    };
    let pics = tmp.path().join("pictures");
    layer::draw(&result, &pics, "broken", false).unwrap();
    let heatmap = std::fs::read_to_string(pics.join("broken_x_out.heatmap.svg")).unwrap();
    let histogram = std::fs::read_to_string(pics.join("broken_x_out.histogram.svg")).unwrap();
    for svg in [&heatmap, &histogram] {
        assert!(
            svg.contains(&format!(
                r#"width="{}" height="{}""#,
                plots::WIDTH,
                plots::HEIGHT
            )),
            "{}",
            &svg[..svg.len().min(300)]
        );
    }
    let (gr, gc) = s.grid();
    let band = 32usize.div_ceil(s.cell_rows) * (256 / s.cell_cols);
    let fill =
        |c: plotters::style::RGBColor| format!("fill=\"#{:02X}{:02X}{:02X}\"", c.0, c.1, c.2);
    let all_bad = heatmap.matches(&fill(plots::cell_colour(1, 1))).count();
    let clean = heatmap.matches(&fill(plots::cell_colour(0, 1))).count();
    assert_eq!(all_bad, band, "band cells");
    assert_eq!(clean, gr * gc - band, "clean cells");
    let marked = format!("threshold {:.2e}", s.threshold);
    assert!(
        histogram.contains(&marked),
        "the threshold is marked: {marked}"
    );
}
