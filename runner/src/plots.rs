//! Failure pictures: for a compared output, an SVG heat-map of its bad elements over the
//! grid of its [`Spread`] (rows × columns of the tensor seen as a matrix: tokens ×
//! columns, pool rows × columns) and an SVG histogram of the rule's measure with its
//! threshold.

use std::path::{Path, PathBuf};

use golden::compare::spread::{HIGH, LOW};
use golden::compare::{Report, Spread};
use plotters::prelude::*;

/// Size of both pictures, pixels.
pub const WIDTH: u32 = 900;
pub const HEIGHT: u32 = 600;

/// The files written for one output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pictures {
    pub heatmap: PathBuf,
    pub histogram: PathBuf,
}

/// Writes `<stem>.heatmap.svg` and `<stem>.histogram.svg` of `report` into `dir`; `None`
/// when the comparison has no element-wise spread (top-k sets, a layout mismatch).
pub fn write(dir: &Path, stem: &str, report: &Report) -> Result<Option<Pictures>, String> {
    let Some(spread) = &report.spread else {
        return Ok(None);
    };
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let pictures = Pictures {
        heatmap: dir.join(format!("{stem}.heatmap.svg")),
        histogram: dir.join(format!("{stem}.histogram.svg")),
    };
    heatmap(&pictures.heatmap, &report.output, spread)
        .map_err(|e| format!("{}: {e}", pictures.heatmap.display()))?;
    histogram(&pictures.histogram, &report.output, spread)
        .map_err(|e| format!("{}: {e}", pictures.histogram.display()))?;
    Ok(Some(pictures))
}

/// The colour of a cell with `bad` of `compared` elements bad: pale grey when clean (white
/// when nothing was compared there), yellow to dark red with the bad fraction.
pub fn cell_colour(bad: u32, compared: u32) -> RGBColor {
    if compared == 0 {
        return WHITE;
    }
    if bad == 0 {
        return RGBColor(225, 225, 225);
    }
    let f = f64::from(bad) / f64::from(compared);
    let lerp = |a: f64, b: f64| (a + (b - a) * f).round() as u8;
    RGBColor(lerp(255.0, 140.0), lerp(210.0, 0.0), 0)
}

type DrawResult = Result<(), Box<dyn std::error::Error>>;

fn heatmap(path: &Path, output: &str, s: &Spread) -> DrawResult {
    let root = SVGBackend::new(path, (WIDTH, HEIGHT)).into_drawing_area();
    root.fill(&WHITE)?;
    let (rows, cols) = (s.rows as f64, s.cols as f64);
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("{output} {:?}: bad elements (rows × last axis)", s.shape),
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..cols, 0.0..rows)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc("column (last axis)")
        .y_desc("row (leading axes, from the top)")
        // Row 0 at the top: the chart's y counts from the bottom.
        .y_label_formatter(&|y| format!("{:.0}", rows - y))
        .x_label_formatter(&|x| format!("{x:.0}"))
        .draw()?;
    chart.draw_series(s.bad.iter().zip(&s.compared).enumerate().map(
        |(i, (&bad, &compared))| {
            let (r, c) = s.cell(i);
            Rectangle::new(
                [
                    (c.start as f64, rows - r.start as f64),
                    (c.end as f64, rows - r.end as f64),
                ],
                cell_colour(bad, compared).filled(),
            )
        },
    ))?;
    root.present()?;
    Ok(())
}

fn histogram(path: &Path, output: &str, s: &Spread) -> DrawResult {
    let root = SVGBackend::new(path, (WIDTH, HEIGHT)).into_drawing_area();
    root.fill(&WHITE)?;
    let top = s.hist.iter().copied().max().unwrap_or(1).max(1) as f64 * 2.0;
    // Bin i spans log10 values [LOW + i − 1, LOW + i).
    let (x0, x1) = (f64::from(LOW - 1), f64::from(HIGH + 1));
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("{output}: {} of every compared element", s.measure),
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(x0..x1, (0.5..top).log_scale())?;
    chart
        .configure_mesh()
        .x_desc(format!("log10 {}", s.measure))
        .y_desc("elements")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .draw()?;
    let t = s.threshold.log10();
    chart.draw_series(
        s.hist
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(i, &n)| {
                let left = x0 + i as f64;
                let colour = if left >= t { RED } else { BLUE };
                Rectangle::new(
                    [(left + 0.05, 0.5), (left + 0.95, n as f64)],
                    colour.mix(0.7).filled(),
                )
            }),
    )?;
    chart
        .draw_series(LineSeries::new([(t, 0.5), (t, top)], BLACK.stroke_width(2)))?
        .label(format!("threshold {:.2e}", s.threshold))
        .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], BLACK));
    chart.configure_series_labels().border_style(BLACK).draw()?;
    root.present()?;
    Ok(())
}
