//! `cargo xtask`: the project's command line.
//!
//! `gen` and `diff` depend only on the generator, never on generated code, so a
//! template that renders broken Rust can be fixed by editing it and running
//! `gen` again. Commands that run generated layers reach the `runner` crate as
//! a subprocess.

mod codegen;
mod headers;
mod layers;
mod style;

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "cargo xtask",
    about = "Generate, check and diff the kernels and host harnesses in generated/; run, cost and bench the layers"
)]
struct Cli {
    /// Repository root (default: the workspace this xtask was built in).
    #[arg(long, global = true, hide = true)]
    root: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Validate every spec in specs/ and write generated/ from them.
    ///
    /// Only changed files are written, each atomically; files carrying the
    /// @generated marker that no spec produces any more are removed. Nothing is
    /// written when any spec is invalid. Exit codes: 0 ok, 1 --check found
    /// stale, missing or orphaned files, 2 invalid spec or bad arguments.
    Gen {
        /// Render in memory and compare with generated/ instead of writing:
        /// prints a unified diff per stale file and lists missing and orphaned files.
        #[arg(long)]
        check: bool,
        /// Regenerate only the files of these specs (every spec is still validated;
        /// other specs' files are left alone).
        #[arg(long = "spec", value_name = "FILE")]
        specs: Vec<PathBuf>,
    },
    /// Show what `gen` would change in generated/, as a colored unified diff.
    Diff {
        /// Summarise: changed lines per file and totals.
        #[arg(long)]
        stat: bool,
    },
    /// Run a layer end to end on a backend and compare with the golden
    /// (`--layer swa|hca|csa --tp N …`; `cargo xtask run --help` lists the options).
    #[command(disable_help_flag = true)]
    Run {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<OsString>,
    },
    /// Per-launch FLOPs, GM bytes against the minimum and roofline time of one sim run.
    #[command(disable_help_flag = true)]
    Cost {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<OsString>,
    },
    /// Time the layer on the sim against the golden on the same inputs.
    #[command(disable_help_flag = true)]
    Bench {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<OsString>,
    },
    /// Type-check every generated kernel against the public Ascend C headers.
    ///
    /// Compiles each kernel in generated/ascendc/kernels with `-fsyntax-only` in CPU-debug
    /// mode (dav-c220) once per core type its marking implies (__vector__: aiv, __cube__:
    /// aic, __mix__: both), and again with the device's spelling of ASCEND_IS_AIV/AIC
    /// (npu-aiv, npu-aic); also holds the sim's name table (harness/sim/api_scope.cpp)
    /// against the headers. Prints PASS/FAIL per kernel with the first error. Run it before
    /// every submission that touches a kernel, a building block or the sim. Without both
    /// directories it prints why it skipped and exits 0. Exit codes: 0 pass or skipped,
    /// 1 a kernel or the table failed, 2 bad directories or headers that do not compile.
    CheckHeaders {
        /// A checkout of mirror-cann/asc-devkit (never committed here).
        #[arg(long, value_name = "DIR")]
        devkit: Option<PathBuf>,
        /// A checkout of hicann/asc-tools (its cpudebug/ stubs).
        #[arg(long, value_name = "DIR")]
        tools: Option<PathBuf>,
        /// Check only the kernels whose file name contains this text.
        #[arg(long, value_name = "TEXT")]
        kernel: Option<String>,
        /// Parallel compiles (default: the number of cores).
        #[arg(long, short = 'j', value_name = "N")]
        jobs: Option<usize>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let root = cli.root.unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("xtask lives one level below the workspace root")
            .to_path_buf()
    });
    let code = match cli.command {
        Command::Gen { check, specs } => codegen::gen_command(&root, check, &specs),
        Command::Diff { stat } => codegen::diff_command(&root, stat),
        Command::Run { args } => layers::forward(&root, "run", &args),
        Command::Cost { args } => layers::forward(&root, "cost", &args),
        Command::Bench { args } => layers::forward(&root, "bench", &args),
        Command::CheckHeaders {
            devkit,
            tools,
            kernel,
            jobs,
        } => headers::check_headers_command(
            &root,
            &headers::Options {
                devkit,
                tools,
                filter: kernel,
                jobs,
            },
        ),
    };
    ExitCode::from(code)
}
