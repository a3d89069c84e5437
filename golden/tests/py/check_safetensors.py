"""Loads a safetensors file written by the harness with the `safetensors`
package and checks names, dtypes, shapes and values against a JSON file of
expectations: {name: {"dtype": "BF16", "shape": [..], "values": [..]}}.
Values are compared as float64; "nan" matches NaN. Exit status 0 = pass."""

import json
import math
import sys

import numpy as np
import safetensors
from safetensors.numpy import load_file

NUMPY = {"F32": np.float32, "I8": np.int8, "I32": np.int32, "I64": np.int64}


def decode(dtype, data, shape):
    if dtype == "BF16":
        bits = np.frombuffer(data, dtype="<u2").astype(np.uint32) << 16
        return bits.view(np.float32).reshape(shape)
    return np.frombuffer(data, dtype=np.dtype(NUMPY[dtype]).newbyteorder("<")).reshape(shape)


def same(got, want):
    if want == "nan":
        return math.isnan(got)
    return got == want


def main(path, expected_path):
    with open(expected_path) as f:
        expected = json.load(f)
    with open(path, "rb") as f:
        tensors = dict(safetensors.deserialize(f.read()))
    failures = []
    if set(tensors) != set(expected):
        failures.append(f"names {sorted(tensors)} != {sorted(expected)}")
    for name, want in expected.items():
        t = tensors.get(name)
        if t is None:
            continue
        if t["dtype"] != want["dtype"] or list(t["shape"]) != want["shape"]:
            failures.append(f"{name}: {t['dtype']} {t['shape']} != {want['dtype']} {want['shape']}")
            continue
        values = decode(t["dtype"], bytes(t["data"]), t["shape"]).astype(np.float64).ravel().tolist()
        if len(values) != len(want["values"]) or not all(same(g, w) for g, w in zip(values, want["values"])):
            failures.append(f"{name}: values {values} != {want['values']}")
    # numpy's own loader reads every non-bf16 tensor.
    plain = load_file(path) if all(e["dtype"] != "BF16" for e in expected.values()) else None
    if plain is not None and set(plain) != set(expected):
        failures.append("safetensors.numpy.load_file disagrees on names")
    for f in failures:
        print(f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
