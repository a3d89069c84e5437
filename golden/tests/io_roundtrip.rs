//! Save → load → compare is bit-exact; the file format is safetensors (checked
//! byte by byte); bad files are reported, not panicked on.

use golden::compare::compare_layer;
use golden::fixtures::{self, FixtureOptions};
use golden::io::{
    INPUTS_FILE, IoError, OUTPUTS_FILE, load_case, read_tensors, save_case, write_tensors,
};
use golden::tensor::{Tensor, TensorMap};
use golden::{self, Layer, LayerSpec};
use half::{bf16, f16};
use std::collections::BTreeMap;

/// One tensor per dtype, with values that catch sign, byte order and NaN payloads.
fn all_dtypes() -> TensorMap {
    let mut m = TensorMap::new();
    let bf: Vec<bf16> = [1.0f32, -2.5, 0.0, -0.0, 3.140625, f32::INFINITY]
        .iter()
        .map(|&v| bf16::from_f32(v))
        .collect();
    m.insert("a_bf16", Tensor::from_vec(vec![2, 3], bf).unwrap());
    let h: Vec<f16> = [1.0f32, -65504.0, 0.0, -0.0, 6.0e-8, f32::NAN]
        .iter()
        .map(|&v| f16::from_f32(v))
        .collect();
    m.insert("a_f16", Tensor::from_vec(vec![6], h).unwrap());
    m.insert(
        "b_f32",
        Tensor::from_vec(
            vec![4],
            vec![1.5f32, -0.0, f32::from_bits(0x7fc0_1234), 1e-40],
        )
        .unwrap(),
    );
    m.insert(
        "c_i8",
        Tensor::from_vec(vec![3], vec![-128i8, 0, 127]).unwrap(),
    );
    m.insert(
        "d_i32",
        Tensor::from_vec(vec![2, 1], vec![-1i32, 1 << 30]).unwrap(),
    );
    m.insert(
        "e_i64",
        Tensor::from_vec(vec![2], vec![-1i64, 1 << 40]).unwrap(),
    );
    m
}

fn same_bits(a: &TensorMap, b: &TensorMap) {
    assert_eq!(a.names().collect::<Vec<_>>(), b.names().collect::<Vec<_>>());
    for (name, t) in a.iter() {
        let u = b.get(name).unwrap();
        assert_eq!((t.dtype(), t.shape()), (u.dtype(), u.shape()), "{name}");
        assert_eq!(t.as_le_bytes(), u.as_le_bytes(), "{name}");
    }
}

#[test]
fn every_dtype_round_trips_bit_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = all_dtypes();
    let mut outputs = TensorMap::new();
    outputs.insert(
        "x_out",
        Tensor::from_vec(vec![2], vec![0.25f32, -7.0]).unwrap(),
    );
    let meta = BTreeMap::from([
        ("layer".to_string(), "swa".to_string()),
        ("tp".to_string(), "1".to_string()),
    ]);
    save_case(dir.path(), &inputs, &outputs, &meta).unwrap();
    assert!(dir.path().join(INPUTS_FILE).is_file() && dir.path().join(OUTPUTS_FILE).is_file());
    let back = load_case(dir.path()).unwrap();
    same_bits(&back.inputs, &inputs);
    same_bits(&back.outputs, &outputs);
    assert_eq!(back.metadata, meta);
}

#[test]
fn a_saved_layer_case_replays_to_the_same_outputs() {
    let spec = LayerSpec::small(Layer::Swa, 2);
    let inputs = fixtures::build(&spec, &FixtureOptions::default())
        .unwrap()
        .inputs;
    let outputs = golden::run(&spec, &inputs).unwrap();
    let dir = tempfile::tempdir().unwrap();
    save_case(dir.path(), &inputs, &outputs, &BTreeMap::new()).unwrap();
    let saved = load_case(dir.path()).unwrap();
    same_bits(&saved.inputs, &inputs);
    let replayed = golden::run(&spec, &saved.inputs).unwrap();
    same_bits(&replayed, &saved.outputs);
    let reports = compare_layer(&spec, &saved.inputs, &replayed, &saved.outputs);
    assert!(
        reports
            .iter()
            .all(|r| r.pass && r.bad == 0 && r.max_abs == 0.0),
        "{reports:?}"
    );
}

#[test]
fn the_file_is_an_8_byte_length_a_json_header_and_raw_little_endian_data() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.safetensors");
    let tensors = all_dtypes();
    let meta = BTreeMap::from([("seed".to_string(), "7".to_string())]);
    write_tensors(&path, &tensors, &meta).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    let data = &bytes[8 + n..];
    assert_eq!(header["__metadata__"]["seed"], "7");
    let want = [
        ("a_bf16", "BF16", vec![2, 3]),
        ("a_f16", "F16", vec![6]),
        ("b_f32", "F32", vec![4]),
        ("c_i8", "I8", vec![3]),
        ("d_i32", "I32", vec![2, 1]),
        ("e_i64", "I64", vec![2]),
    ];
    let mut covered = 0;
    for (name, dtype, shape) in want {
        let h = &header[name];
        assert_eq!(h["dtype"], dtype, "{name}");
        assert_eq!(h["shape"], serde_json::json!(shape), "{name}");
        let (a, b) = (
            h["data_offsets"][0].as_u64().unwrap() as usize,
            h["data_offsets"][1].as_u64().unwrap() as usize,
        );
        assert_eq!(
            &data[a..b],
            tensors.get(name).unwrap().as_le_bytes(),
            "{name}"
        );
        covered += b - a;
    }
    assert_eq!(covered, data.len(), "no bytes outside the tensors");
    // Spot-check byte order: the i32 −1 then 2^30.
    let h = &header["d_i32"]["data_offsets"][0];
    let at = h.as_u64().unwrap() as usize;
    assert_eq!(&data[at..at + 8], &[0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0x40]);
}

#[test]
fn bad_files_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let missing = read_tensors(&dir.path().join("nope.safetensors")).unwrap_err();
    assert!(
        matches!(missing, IoError::File { .. }) && missing.to_string().contains("nope.safetensors")
    );

    let truncated = dir.path().join("short.safetensors");
    std::fs::write(&truncated, [200u8, 0, 0, 0, 0, 0, 0, 0, b'{']).unwrap();
    assert!(matches!(
        read_tensors(&truncated).unwrap_err(),
        IoError::Format { .. }
    ));

    // A valid file with a dtype layer cases never use.
    let header = br#"{"h":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}}"#;
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(header);
    bytes.extend_from_slice(&[0; 8]);
    let f64_file = dir.path().join("f64.safetensors");
    std::fs::write(&f64_file, bytes).unwrap();
    let err = read_tensors(&f64_file).unwrap_err();
    assert!(
        matches!(err, IoError::Dtype { ref name, .. } if name == "h"),
        "{err}"
    );

    assert!(
        load_case(dir.path())
            .unwrap_err()
            .to_string()
            .contains(INPUTS_FILE)
    );
}
