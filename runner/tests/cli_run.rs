//! The runner binary end to end on a small spec: verdict lines, stage timings, the JSON
//! report, saved cases, and replaying a saved case with `--golden-data`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn runner(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(args)
        .current_dir(repo())
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn run_prints_a_verdict_per_output_saves_reports_and_replays() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.json");
    let saved = dir.path().join("cases");
    let out = runner(&[
        "run",
        "--layer",
        "swa",
        "--spec",
        "specs/test/swa_mini.yaml",
        "--tp",
        "2",
        "--report",
        report.to_str().unwrap(),
        "--save-data",
        saved.to_str().unwrap(),
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    // two runs (capacity 64 and 56 tokens per rank), each with both outputs and timings
    for needle in [
        "swa_mini_tp2 (specs/test/swa_mini.yaml) on sim, run 1/2: t=64 per rank (8 requests)",
        "run 2/2: t=56 per rank (7 requests)",
        "x_out  PASS",
        "kv_cache  PASS",
        "stages: hc_pre ",
        "o_group_all_to_all ",
        "PASS: 2 run(s) of swa_mini_tp2",
    ] {
        assert!(stdout.contains(needle), "`{needle}` not in:\n{stdout}");
    }
    assert_eq!(stdout.matches("x_out  PASS").count(), 2);
    // progress goes to stderr: not a terminal here, so a few plain lines per run and no
    // line per launch without -v
    let progress = text(&out.stderr);
    assert!(progress.contains("[swa_mini_tp2] building "), "{progress}");
    assert_eq!(
        progress.matches(" launches done in ").count(),
        2,
        "{progress}"
    );
    assert!(!progress.contains("rank 1]"), "{progress}");
    assert!(progress.lines().count() <= 12, "{progress}");

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(json["variant"], "swa_mini_tp2");
    assert_eq!(json["pass"], true);
    let runs = json["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["outputs"][0]["output"], "x_out");
    let launch = runs[0]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["kind"] == "launch")
        .unwrap();
    assert!(launch["counters"]["gm_read_bytes"].as_u64().unwrap() > 0);
    assert!(
        runs[0]["steps"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["kind"] == "exchange" && s["cross_rank_bytes"].as_u64().unwrap() > 0)
    );

    for t in ["t64", "t56"] {
        for f in ["in.safetensors", "out.safetensors"] {
            assert!(saved.join(t).join(f).is_file(), "{t}/{f}");
        }
    }
    let replay_with = |extra: &[&str]| {
        let case = saved.join("t56");
        let args = [
            "run",
            "--layer",
            "swa",
            "--spec",
            "specs/test/swa_mini.yaml",
            "--tp",
            "2",
        ];
        runner(&[&args[..], extra, &["--golden-data", case.to_str().unwrap()]].concat())
    };
    let replay = replay_with(&[]);
    let stdout = text(&replay.stdout);
    assert_eq!(
        replay.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&replay.stderr)
    );
    assert!(
        stdout.contains("t=56 per rank (7 requests), replay of"),
        "{stdout}"
    );
    assert!(stdout.contains("PASS: 1 run(s)"), "{stdout}");
    // with -v, a line per launch per rank as well
    assert!(text(&replay.stderr).lines().count() < 12);
    let verbose = replay_with(&["-v"]);
    let progress = text(&verbose.stderr);
    assert!(
        progress.contains("[swa_mini_tp2 rank 1] hc_pre 1/"),
        "{progress}"
    );
}
