//! The runner's command line: `run`, `cost` and `bench` (`../shared/DESIGN.md` §10; `cargo xtask run |
//! cost | bench` forward here). Bad arguments exit 2 with one line saying why; a failed
//! comparison exits 1.

use std::ffi::OsString;

use clap::{Parser, Subcommand};

use crate::commands::bench::{self, BenchArgs};
use crate::commands::cost::{self, CostArgs};
use crate::commands::run::{self, RunArgs};

#[derive(Parser)]
#[command(
    name = "runner",
    bin_name = "cargo xtask",
    about = "Run generated decode layers on a backend and compare them with the golden"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Also a line per kernel launch per rank (progress is a bar in a terminal, a few plain
    /// lines per run otherwise).
    #[arg(short, long, global = true)]
    verbose: bool,
}

#[derive(Subcommand)]
enum Command {
    /// Run a layer end to end and compare every output with the golden.
    ///
    /// Without --start-pos and --tokens: TP 1 runs once at capacity, TP > 1 at capacity
    /// and capacity − 8 tokens per rank (the reference's defaults). Exit codes: 0 every
    /// output passed, 1 a comparison or a kernel failed, 2 bad arguments.
    Run(RunArgs),
    /// One sim run (at capacity, default starts; or --start-pos): per kernel launch FLOPs,
    /// GM bytes moved against the minimum, scalar GM accesses, roofline time on the plan's
    /// chip, and the modeled device time of the sim's timeline with what bounds it (README
    /// "Modeled time": the model, its constants and their sources).
    Cost(CostArgs),
    /// Time the layer. On the sim (the default): sim wall time (not device time: see
    /// `cost`) with the ordering checker and timeline, with the checker only, and with
    /// neither, against the golden on the same inputs (medians). With --backend npu: the
    /// device's own time from events around every launch and collective, over --warmup
    /// untimed and --reps timed steps, per step of rank 0 and per layer (medians), next to
    /// the modeled time of a sim run of the same case and their ratio.
    Bench(BenchArgs),
}

/// Runs the command line `args` (program name first); returns the exit code.
pub fn main(args: impl IntoIterator<Item = OsString>) -> u8 {
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) if !e.use_stderr() => {
            print!("{e}");
            return 0;
        }
        Err(e) => {
            eprintln!("{}", one_line(&e.render().to_string()));
            return 2;
        }
    };
    let v = cli.verbose;
    let outcome = match cli.command {
        Command::Run(a) => run::run(a, v),
        Command::Cost(a) => cost::cost(a, v),
        Command::Bench(a) => bench::bench(a, v),
    };
    match outcome {
        Ok(code) => code,
        Err(stop) => {
            eprintln!("error: {}", stop.message);
            stop.code
        }
    }
}

/// clap's multi-line error as one line (without the usage and help pointers).
fn one_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|l| {
            !l.is_empty() && !l.starts_with("Usage:") && !l.starts_with("For more information")
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clap_errors_become_one_line() {
        let e = Cli::try_parse_from(["runner", "run", "--layer", "swa", "--bogus"])
            .err()
            .unwrap();
        let line = one_line(&e.render().to_string());
        assert!(!line.contains('\n'));
        assert!(line.contains("--bogus"), "{line}");
    }
}
