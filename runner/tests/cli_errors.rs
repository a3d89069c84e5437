//! Bad arguments to the runner binary: exit code 2 and one line saying why, before any
//! kernel is built (each case returns in well under a second).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn runner<S: AsRef<str>>(args: &[S]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(args.iter().map(AsRef::as_ref))
        .current_dir(repo())
        .env_remove("ASCEND_HOME_PATH")
        .output()
        .unwrap()
}

/// Asserts exit 2 and a single stderr line containing every `part`.
fn refused<S: AsRef<str> + std::fmt::Debug>(args: &[S], parts: &[&str]) {
    let out = runner(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{args:?}: {err}");
    for p in parts {
        assert!(lines[0].contains(p), "{args:?}: `{p}` not in: {}", lines[0]);
    }
}

/// `run` of the swa_mini spec at `tp` with more arguments.
fn mini(tp: &str, more: &[&str]) -> Vec<String> {
    [
        "run",
        "--layer",
        "swa",
        "--spec",
        "specs/test/swa_mini.yaml",
        "--tp",
        tp,
    ]
    .iter()
    .chain(more)
    .map(|s| s.to_string())
    .collect()
}

#[test]
fn layers_specs_and_tp_degrees_must_exist() {
    refused(
        &["run", "--layer", "mla"],
        &["unknown layer `mla`", "csa, hca, swa"],
    );
    refused(
        &[
            "run",
            "--layer",
            "swa",
            "--spec",
            "specs/test/swa_small.yaml",
            "--tp",
            "4",
        ],
        &[
            "TP 4 is not generated for specs/test/swa_small.yaml",
            "tp: [1, 2]",
        ],
    );
    refused(
        &[
            "run",
            "--layer",
            "hca",
            "--spec",
            "specs/test/swa_small.yaml",
            "--tp",
            "1",
        ],
        &["--layer hca", "describes a swa layer"],
    );
    refused(
        &["run", "--layer", "swa", "--spec", "specs/none.yaml"],
        &["--spec specs/none.yaml: no such file"],
    );
    refused(&["run", "--layer", "swa", "--bogus"], &["--bogus"]);
    refused(
        &["run", "--layer", "swa", "--backend", "tpu"],
        &["unknown backend `tpu`"],
    );
}

#[test]
fn device_lists_must_give_one_device_per_rank() {
    refused(&mini("2", &["-d", "0"]), &["lists 1 device(s) but --tp 2"]);
    refused(&mini("2", &["-d", "0,0"]), &["device 0 is listed twice"]);
    refused(&mini("1", &["--devices", "a"]), &["`a` is not a device id"]);
}

#[test]
fn token_counts_and_start_positions_are_checked() {
    refused(
        &mini("1", &["--tokens", "12"]),
        &["--tokens 12", "multiple of 8"],
    );
    // swa_mini at TP 1 holds 128 tokens per rank
    refused(
        &mini("1", &["--tokens", "136"]),
        &["--tokens 136", "capacity 128"],
    );
    refused(&mini("1", &["--start-pos", "-5"]), &["non-negative", "-5"]);
    refused(
        &mini("1", &["--start-pos", "1048569"]),
        &[
            "1048569",
            "MAX_SEQ_LEN=1048576",
            "largest legal start 1048568",
        ],
    );
    // CSA's ceiling in the reference snapshot: start + 8 <= 16,384, at FLASH dims.
    refused(
        &["run", "--layer", "csa", "--tp", "2", "--start-pos", "16377"],
        &["16377", "MAX_SEQ_LEN=16384", "largest legal start 16376"],
    );
    refused(
        &mini("1", &["--start-pos", "1,x"]),
        &["`x` is not an integer"],
    );
    // TP 2: 8 requests of 8 tokens per rank; 9 starts are too many
    refused(
        &mini("2", &["--start-pos", "1,2,3,4,5,6,7,8,9"]),
        &["9 requests", "exceed the per-rank capacity 64"],
    );
    refused(
        &mini("1", &["--start-pos", "8192", "--tokens", "16"]),
        &["--tokens 16 does not match 1 start position(s)"],
    );
}

#[test]
fn golden_data_must_be_readable_and_match_the_spec() {
    refused(
        &mini("1", &["--golden-data", "/nonexistent/case"]),
        &["--golden-data /nonexistent/case", "in.safetensors"],
    );
    // the reference's vectors are swa_small dims, not swa_mini
    let dir = runner::variant::repo_root().join("../shared/golden-vectors/swa_small_tp1");
    let vectors = dir.to_str().unwrap();
    refused(
        &mini("1", &["--golden-data", vectors]),
        &[
            "does not match swa_mini_tp1 (specs/test/swa_mini.yaml)",
            "x_hc",
        ],
    );
    refused(
        &mini("1", &["--golden-data", vectors, "--seed", "3"]),
        &["--golden-data replays saved inputs"],
    );
}

#[test]
fn stages_without_kernels_and_an_absent_cann_are_reported() {
    refused(
        &[
            "run",
            "--layer",
            "csa",
            "--spec",
            "specs/test/csa_unplanned.yaml",
            "--tp",
            "8",
            "--start-pos",
            "100",
        ],
        &[
            "csa_unplanned_tp8: stage",
            "has no kernels yet",
            "index_query",
        ],
    );
    refused(
        &[
            "cost",
            "--layer",
            "csa",
            "--spec",
            "specs/test/csa_unplanned.yaml",
            "--tp",
            "8",
        ],
        &["csa_unplanned_tp8: stage", "has no kernels yet"],
    );
    let out = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(mini("1", &["--backend", "npu"]))
        .current_dir(repo())
        .env("ASCEND_HOME_PATH", "/nonexistent/cann")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(
        err.trim(),
        "error: backend npu: CANN toolkit not found (ASCEND_HOME_PATH=/nonexistent/cann does not exist); \
         install CANN 9.0.0 or later and source its set_env.sh, or use --backend sim"
    );
}

#[test]
fn options_of_one_side_are_refused_on_the_other() {
    refused(
        &mini("1", &["--sync-each"]),
        &["--sync-each", "npu backend", "the sim has no stream"],
    );
    refused(
        &mini("1", &["--no-hazard-check", "--trace", "t.json"]),
        &["--trace", "--no-hazard-check"],
    );
}

#[test]
fn the_npu_execution_modes_are_refused_elsewhere_and_together() {
    refused(
        &mini("1", &["--graph"]),
        &["--graph replays a captured ACL graph on the npu backend"],
    );
    refused(
        &mini("1", &["--backend", "npu", "--graph", "--sync-each"]),
        &["--graph and --sync-each exclude each other"],
    );
    for flag in [["--trace", "t.json"], ["--warmup", "1"], ["-d", "0"]] {
        let args = [
            "bench",
            "--layer",
            "swa",
            "--spec",
            "specs/test/swa_mini.yaml",
            "--tp",
            "1",
        ];
        let args: Vec<&str> = args.iter().chain(&flag).copied().collect();
        refused(&args, &["is an option of bench --backend npu"]);
    }
    refused(
        &["bench", "--layer", "swa", "--graph"],
        &["--graph replays a captured ACL graph"],
    );
}
