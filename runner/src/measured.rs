//! `bench --backend npu`: the device's own times (the npu backend's events around every
//! launch and collective) over the timed steps, per step of rank 0 and per layer, next to
//! the modeled time of the sim's timeline on the same case — on a machine with a device,
//! the timing model's calibration table.

use std::time::Duration;

use harness::runtime::RunRecord;

use crate::modeled::{Timeline, us};

/// One step of rank 0: its median measured time over the timed steps and its modeled time.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub step: usize,
    pub stage: &'static str,
    /// The kernel, or "collective".
    pub name: &'static str,
    pub measured: Option<Duration>,
    pub modeled: Option<Duration>,
}

/// Rank 0's steps over `runs` (the timed steps), against `modeled`.
pub fn rows(runs: &[RunRecord], modeled: Option<&Timeline>) -> Vec<Row> {
    let Some(first) = runs.first() else {
        return Vec::new();
    };
    first
        .rank(0)
        .enumerate()
        .map(|(i, s)| {
            let times: Vec<Duration> = runs
                .iter()
                .filter_map(|r| r.rank(0).nth(i).and_then(|s| s.device).map(|d| d.time))
                .collect();
            Row {
                step: s.step,
                stage: s.stage,
                name: s.kind.name(),
                measured: (times.len() == runs.len()).then(|| median(&times)),
                modeled: modeled
                    .and_then(|t| t.rank(0).find(|m| m.step == s.step))
                    .map(|m| m.time),
            }
        })
        .collect()
}

/// The layer's median measured time over `runs` (each the slowest rank's).
pub fn layer(runs: &[RunRecord]) -> Option<Duration> {
    let times: Option<Vec<Duration>> = runs.iter().map(|r| r.device).collect();
    times.filter(|t| !t.is_empty()).map(|t| median(&t))
}

pub fn median(v: &[Duration]) -> Duration {
    let mut s = v.to_vec();
    s.sort();
    s[s.len() / 2]
}

fn cell(d: Option<Duration>) -> String {
    d.map_or("–".into(), |d| format!("{:.1}", us(d)))
}

fn ratio(measured: Option<Duration>, modeled: Option<Duration>) -> String {
    match (measured, modeled) {
        (Some(a), Some(b)) if !b.is_zero() => format!("{:.2}", a.as_secs_f64() / b.as_secs_f64()),
        _ => "–".into(),
    }
}

/// The table: a line per step of rank 0 (ratio: measured / modeled), then the layer.
pub fn print(rows: &[Row], layer: Option<Duration>, modeled: Option<&Timeline>) {
    println!(
        "  {:>4}  {:<20} {:>11} {:>10} {:>8}  kernel",
        "step", "stage", "measured µs", "modeled µs", "ratio"
    );
    for r in rows {
        println!(
            "  {:>4}  {:<20} {:>11} {:>10} {:>8}  {}",
            r.step,
            r.stage,
            cell(r.measured),
            cell(r.modeled),
            ratio(r.measured, r.modeled),
            r.name
        );
    }
    let total = modeled.map(|t| t.total);
    println!(
        "  layer (slowest rank, first event to last): measured {} µs, modeled {} µs, measured/modeled {}",
        cell(layer),
        cell(total),
        ratio(layer, total)
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness::backend::StepTime;
    use harness::runtime::{StepKind, StepRecord};

    fn run(times_us: &[u64], total_us: u64) -> RunRecord {
        let steps = times_us
            .iter()
            .enumerate()
            .map(|(i, &t)| StepRecord {
                rank: 0,
                step: i,
                stage: "s",
                kind: StepKind::Launch {
                    kernel: "k",
                    block_dim: 1,
                    counters: None,
                },
                start: Duration::ZERO,
                end: Duration::ZERO,
                device: Some(StepTime {
                    start: Duration::ZERO,
                    time: Duration::from_micros(t),
                }),
            })
            .collect();
        RunRecord {
            tp: 1,
            steps,
            setup: Duration::ZERO,
            execute: Duration::ZERO,
            readback: Duration::ZERO,
            device: Some(Duration::from_micros(total_us)),
        }
    }

    #[test]
    fn rows_take_each_steps_median_over_the_timed_steps() {
        let runs = [run(&[10, 50], 70), run(&[30, 40], 90), run(&[20, 60], 80)];
        let rows = rows(&runs, None);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].measured, Some(Duration::from_micros(20)));
        assert_eq!(rows[1].measured, Some(Duration::from_micros(50)));
        assert_eq!(rows[0].modeled, None);
        assert_eq!(layer(&runs), Some(Duration::from_micros(80)));
        assert_eq!(
            ratio(
                Some(Duration::from_micros(30)),
                Some(Duration::from_micros(20))
            ),
            "1.50"
        );
    }
}
