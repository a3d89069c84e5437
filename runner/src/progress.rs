//! What `run`, `cost` and `bench` show on stderr while they work. In a terminal: a
//! spinner while kernels build, then one bar per run (launches done of every rank's,
//! the current stage, elapsed and ETA). Elsewhere (CI logs, a file): plain lines, the
//! build, a line at 25, 50 and 75 % of a run's launches and one at its end. With `-v`, a
//! line per launch per rank as well.

use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use harness::backend::Observer;
use indicatif::{ProgressBar, ProgressStyle};

/// The observer for stderr: bars in a terminal, plain lines otherwise.
pub fn stderr(label: &str, verbose: bool) -> Arc<dyn Observer> {
    if std::io::stderr().is_terminal() {
        Arc::new(Bars::new(label, verbose))
    } else {
        Arc::new(Lines::new(label, verbose, std::io::stderr()))
    }
}

fn building_text(kernels: usize, backend: &str) -> String {
    format!("building {kernels} kernels for the {backend} backend…")
}

fn built_text(elapsed: Duration) -> String {
    format!("kernels ready in {:.1} s", elapsed.as_secs_f64())
}

fn launch_line(
    label: &str,
    rank: usize,
    stage: &str,
    nth: usize,
    of: usize,
    kernel: &str,
) -> String {
    format!("[{label} rank {rank}] {stage} {nth}/{of} {kernel}")
}

/// Plain lines into `out`.
pub struct Lines<W> {
    label: String,
    verbose: bool,
    out: Mutex<W>,
    run: Mutex<RunCount>,
}

#[derive(Default)]
struct RunCount {
    total: usize,
    done: usize,
    started: Option<Instant>,
}

impl<W: Write> Lines<W> {
    pub fn new(label: &str, verbose: bool, out: W) -> Self {
        Lines {
            label: label.to_string(),
            verbose,
            out: Mutex::new(out),
            run: Mutex::new(RunCount::default()),
        }
    }

    pub fn into_inner(self) -> W {
        self.out
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn line(&self, text: &str) {
        let mut out = self.out.lock().unwrap_or_else(PoisonError::into_inner);
        // A log that cannot be written is no reason to stop a run.
        let _ = writeln!(out, "{text}");
    }
}

impl<W: Write + Send> Observer for Lines<W> {
    fn note(&self, message: &str) {
        self.line(&format!("[{}] {message}", self.label));
    }

    fn building(&self, kernels: usize, backend: &str) {
        self.note(&building_text(kernels, backend));
    }

    fn built(&self, elapsed: Duration) {
        self.note(&built_text(elapsed));
    }

    fn run_started(&self, launches: usize) {
        *self.run.lock().unwrap_or_else(PoisonError::into_inner) = RunCount {
            total: launches,
            done: 0,
            started: Some(Instant::now()),
        };
    }

    fn launch(&self, rank: usize, stage: &str, nth: usize, of: usize, kernel: &str) {
        if self.verbose {
            self.line(&launch_line(&self.label, rank, stage, nth, of, kernel));
        }
        let mut run = self.run.lock().unwrap_or_else(PoisonError::into_inner);
        run.done += 1;
        let (done, total) = (run.done, run.total.max(1));
        // A line at 25, 50 and 75 % of the launches; the end has its own.
        if done < total && (done - 1) * 4 / total != done * 4 / total {
            let secs = run.started.map_or(0.0, |s| s.elapsed().as_secs_f64());
            drop(run);
            self.note(&format!("launch {done}/{total} ({stage}) {secs:.1} s"));
        }
    }

    fn run_finished(&self) {
        let run = self.run.lock().unwrap_or_else(PoisonError::into_inner);
        let secs = run.started.map_or(0.0, |s| s.elapsed().as_secs_f64());
        let text = format!("{} launches done in {secs:.1} s", run.done);
        drop(run);
        self.note(&text);
    }
}

/// indicatif bars on stderr.
pub struct Bars {
    label: String,
    verbose: bool,
    bar: Mutex<Option<ProgressBar>>,
}

impl Bars {
    pub fn new(label: &str, verbose: bool) -> Self {
        Bars {
            label: label.to_string(),
            verbose,
            bar: Mutex::new(None),
        }
    }

    fn current(&self) -> Option<ProgressBar> {
        self.bar
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn replace(&self, bar: ProgressBar) {
        *self.bar.lock().unwrap_or_else(PoisonError::into_inner) = Some(bar);
    }
}

impl Observer for Bars {
    fn note(&self, message: &str) {
        let line = format!("[{}] {message}", self.label);
        match self.current() {
            Some(bar) => bar.println(line),
            None => eprintln!("{line}"),
        }
    }

    fn building(&self, kernels: usize, backend: &str) {
        let spinner = ProgressBar::new_spinner().with_message(format!(
            "[{}] {}",
            self.label,
            building_text(kernels, backend)
        ));
        spinner.enable_steady_tick(Duration::from_millis(100));
        self.replace(spinner);
    }

    fn built(&self, elapsed: Duration) {
        if let Some(spinner) = self.current() {
            spinner.finish_with_message(format!("[{}] {}", self.label, built_text(elapsed)));
        }
    }

    fn run_started(&self, launches: usize) {
        let style = ProgressStyle::with_template(
            "{prefix} [{bar:30}] {pos}/{len} launches · {msg} · {elapsed} (ETA {eta})",
        )
        .expect("a valid template")
        .progress_chars("=> ");
        let bar = ProgressBar::new(launches as u64)
            .with_style(style)
            .with_prefix(format!("[{}]", self.label));
        bar.enable_steady_tick(Duration::from_millis(200));
        self.replace(bar);
    }

    fn launch(&self, rank: usize, stage: &str, nth: usize, of: usize, kernel: &str) {
        let Some(bar) = self.current() else {
            return;
        };
        if self.verbose {
            bar.println(launch_line(&self.label, rank, stage, nth, of, kernel));
        }
        if rank == 0 && nth == 1 {
            bar.set_message(stage.to_string());
        }
        bar.inc(1);
    }

    fn run_finished(&self) {
        if let Some(bar) = self.current() {
            bar.finish_with_message("done");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_lines_name_the_build_and_each_quarter_of_a_run() {
        let lines = Lines::new("hca_tp2", false, Vec::new());
        lines.building(29, "sim");
        lines.built(Duration::from_millis(1500));
        lines.run_started(8);
        for rank in 0..2 {
            for (stage, nth, of) in [
                ("hc_pre", 1, 2),
                ("hc_pre", 2, 2),
                ("o_proj", 1, 2),
                ("o_proj", 2, 2),
            ] {
                lines.launch(rank, stage, nth, of, "k");
            }
        }
        lines.run_finished();
        let text = String::from_utf8(lines.into_inner()).unwrap();
        let got: Vec<&str> = text.lines().collect();
        assert_eq!(got.len(), 6, "{text}");
        assert_eq!(got[0], "[hca_tp2] building 29 kernels for the sim backend…");
        assert_eq!(got[1], "[hca_tp2] kernels ready in 1.5 s");
        for (line, (n, stage)) in
            got[2..5]
                .iter()
                .zip([(2, "hc_pre"), (4, "o_proj"), (6, "hc_pre")])
        {
            assert!(
                line.starts_with(&format!("[hca_tp2] launch {n}/8 ({stage}) ")),
                "{line}"
            );
        }
        assert!(
            got[5].starts_with("[hca_tp2] 8 launches done in "),
            "{}",
            got[5]
        );
    }

    #[test]
    fn verbose_lines_add_every_launch_of_every_rank() {
        let lines = Lines::new("swa_tp2", true, Vec::new());
        lines.run_started(2);
        lines.launch(0, "o_proj", 1, 1, "group_quant_g2");
        lines.launch(1, "o_proj", 1, 1, "group_quant_g2");
        let text = String::from_utf8(lines.into_inner()).unwrap();
        assert!(
            text.contains("[swa_tp2 rank 0] o_proj 1/1 group_quant_g2\n"),
            "{text}"
        );
        assert!(
            text.contains("[swa_tp2 rank 1] o_proj 1/1 group_quant_g2\n"),
            "{text}"
        );
    }
}
