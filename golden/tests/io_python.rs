//! A file written by the harness loads in Python with the `safetensors`
//! package (tests/py/check_safetensors.py). Runs when `python3` can import
//! safetensors and numpy (CI installs them); otherwise it says so and the
//! byte-level header test in io_roundtrip.rs stands alone.

use golden::io::write_tensors;
use golden::tensor::{Tensor, TensorMap};
use half::bf16;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

fn python_ready() -> bool {
    Command::new("python3")
        .args(["-c", "import safetensors, numpy"])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn run_check(tensors: &TensorMap, expected: serde_json::Value) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("case.safetensors");
    let want = dir.path().join("expected.json");
    write_tensors(&file, tensors, &BTreeMap::new()).unwrap();
    std::fs::write(&want, expected.to_string()).unwrap();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/py/check_safetensors.py");
    Command::new("python3")
        .arg(script)
        .arg(&file)
        .arg(&want)
        .output()
        .unwrap()
}

#[test]
fn python_safetensors_reads_our_names_dtypes_shapes_and_values() {
    if !python_ready() {
        eprintln!(
            "SKIPPED: python3 cannot import safetensors and numpy; the byte-level header test covers the format"
        );
        return;
    }
    let mut m = TensorMap::new();
    let bf = [1.0f32, -2.5, 0.0, 3.140625].map(bf16::from_f32).to_vec();
    m.insert("kv_cache", Tensor::from_vec(vec![1, 2, 1, 2], bf).unwrap());
    m.insert(
        "x_out",
        Tensor::from_vec(vec![3], vec![1.5f32, -0.0, f32::NAN]).unwrap(),
    );
    m.insert(
        "wq_b",
        Tensor::from_vec(vec![3], vec![-128i8, 0, 127]).unwrap(),
    );
    m.insert(
        "swa_lens",
        Tensor::from_vec(vec![2], vec![-1i32, 1 << 30]).unwrap(),
    );
    m.insert(
        "swa_slot_mapping",
        Tensor::from_vec(vec![2], vec![-1i64, 1 << 40]).unwrap(),
    );
    let expected = serde_json::json!({
        "kv_cache": {"dtype": "BF16", "shape": [1, 2, 1, 2], "values": [1.0, -2.5, 0.0, 3.140625]},
        "x_out": {"dtype": "F32", "shape": [3], "values": [1.5, -0.0, "nan"]},
        "wq_b": {"dtype": "I8", "shape": [3], "values": [-128, 0, 127]},
        "swa_lens": {"dtype": "I32", "shape": [2], "values": [-1, 1 << 30]},
        "swa_slot_mapping": {"dtype": "I64", "shape": [2], "values": [-1, 1i64 << 40]},
    });
    let out = run_check(&m, expected.clone());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // The check can fail: a wrong expectation is caught.
    let mut wrong = expected;
    wrong["wq_b"]["values"] = serde_json::json!([-127, 0, 127]);
    let out = run_check(&m, wrong);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("wq_b"));
}
