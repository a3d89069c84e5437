//! `cost --plot FILE.svg`: modeled and roofline time of every launch of a rank, side by
//! side (plotters' SVG backend), so the launches the model finds far from their floor stand out.

use std::path::Path;

use plotters::prelude::*;

use crate::cost::LaunchCost;
use crate::modeled::us;

/// Draws `costs` (launches in plan order) into `path`.
pub fn write(path: &Path, title: &str, costs: &[LaunchCost]) -> Result<(), String> {
    draw(path, title, costs).map_err(|e| format!("{}: {e}", path.display()))
}

fn draw(path: &Path, title: &str, costs: &[LaunchCost]) -> Result<(), Box<dyn std::error::Error>> {
    let width = (160 + 28 * costs.len() as u32).max(640);
    let root = SVGBackend::new(path, (width, 480)).into_drawing_area();
    root.fill(&WHITE)?;
    let top = costs
        .iter()
        .map(|c| us(c.modeled.map_or(c.roofline, |m| m.0)).max(us(c.roofline)))
        .fold(1.0, f64::max)
        * 1.1;
    let n = costs.len().max(1);
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("{title}: modeled vs roofline per launch"),
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(50)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..n as f64, 0.0..top)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n)
        .x_label_formatter(&|x| {
            costs
                .get(x.floor() as usize)
                .map(|c| c.step.to_string())
                .unwrap_or_default()
        })
        .x_desc("launch (the # of `cost`'s table)")
        .y_desc("µs")
        .draw()?;
    let bars = |offset: f64, colour: RGBColor, value: fn(&LaunchCost) -> f64| {
        costs.iter().enumerate().map(move |(i, c)| {
            let x = i as f64 + offset;
            Rectangle::new([(x, 0.0), (x + 0.38, value(c))], colour.mix(0.8).filled())
        })
    };
    chart
        .draw_series(bars(0.1, BLUE, |c| {
            us(c.modeled.map_or(Default::default(), |m| m.0))
        }))?
        .label("modeled")
        .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], BLUE.filled()));
    chart
        .draw_series(bars(0.5, RGBColor(150, 150, 150), |c| us(c.roofline)))?
        .label("roofline")
        .legend(|(x, y)| {
            Rectangle::new(
                [(x, y - 5), (x + 12, y + 5)],
                RGBColor(150, 150, 150).filled(),
            )
        });
    chart.configure_series_labels().border_style(BLACK).draw()?;
    root.present()?;
    Ok(())
}
