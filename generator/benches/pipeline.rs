//! Time of the whole in-memory pipeline for every spec and TP degree, against a
//! baseline measured in the same run: reading and parsing the specs alone.
//!
//! `cargo bench -p kernelgen` (add `-- --iters N` to change the sample count).

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use kernelgen::tree::{self, Scope};

fn specs(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.join("specs")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "yaml") {
                out.push(
                    p.strip_prefix(root)
                        .unwrap()
                        .to_string_lossy()
                        .replace('\\', "/"),
                );
            }
        }
    }
    out.sort();
    out
}

/// Median and minimum of `iters` runs of `f`.
fn time(iters: usize, mut f: impl FnMut()) -> (Duration, Duration) {
    f(); // warm the file cache
    let mut samples: Vec<Duration> = (0..iters)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect();
    samples.sort();
    (samples[iters / 2], samples[0])
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let iters = args
        .iter()
        .position(|a| a == "--iters")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(50);
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let paths = specs(&root);

    let parse = time(iters, || {
        for p in &paths {
            black_box(kernelgen::read_spec(&root, p).unwrap());
        }
    });
    let plan = time(iters, || {
        for p in &paths {
            let spec = kernelgen::read_spec(&root, p).unwrap();
            black_box(kernelgen::variant::build(&spec).unwrap());
        }
    });
    let mut files = 0;
    let render = time(iters, || {
        let g = kernelgen::generate(&root, &[]).unwrap();
        files = g.files.len();
        black_box(g);
    });
    let check = time(iters, || {
        let g = kernelgen::generate(&root, &[]).unwrap();
        black_box(tree::compare(&root, &g.files, &Scope::All).unwrap());
    });

    println!(
        "{} specs, {files} files, {iters} iterations (median / min)",
        paths.len()
    );
    let base = parse.0.as_secs_f64();
    for (name, (median, min)) in [
        ("baseline: read + parse specs", parse),
        ("read + parse + validate + plan", plan),
        ("full pipeline in memory (gen)", render),
        ("pipeline + compare with disk (gen --check)", check),
    ] {
        println!(
            "  {name:44} {:8.3} ms  {:8.3} ms  {:5.1}x baseline",
            median.as_secs_f64() * 1e3,
            min.as_secs_f64() * 1e3,
            median.as_secs_f64() / base
        );
    }
}
