//! No spec makes the generator panic: mutants of the FLASH specs (numbers replaced by edge
//! values or random ones, lines dropped or repeated) are either planned and rendered or
//! refused with errors located at `file:line:col`. (A refused spec writes nothing: `gen`
//! fails before the tree writer runs, see xtask/tests/cli.rs.)

use std::panic::{self, AssertUnwindSafe};
use std::path::Path;

use kernelgen::render::Block;
use proptest::prelude::*;

const SPECS: [&str; 3] = ["specs/swa.yaml", "specs/hca.yaml", "specs/csa.yaml"];

/// Values at the edges of what the checks and the planners divide, round and narrow.
const EDGES: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "7",
    "8",
    "15",
    "16",
    "17",
    "31",
    "32",
    "33",
    "63",
    "64",
    "127",
    "128",
    "129",
    "255",
    "256",
    "512",
    "1000",
    "1024",
    "4095",
    "4096",
    "8192",
    "16384",
    "65535",
    "65536",
    "65537",
    "1048576",
    "1048577",
    "2147483648",
    "4294967295",
    "4294967296",
    "18446744073709551615",
    "0x101024",
    "1_0001024",
    "-1",
    "-8",
    "1.5",
    "1e9",
    "nan",
    "true",
];

#[derive(Debug, Clone)]
enum Mutation {
    /// Replace number tokens (indices into the spec's numbers) with values.
    Numbers(Vec<(usize, String)>),
    DropLine(usize),
    RepeatLine {
        line: usize,
        at: usize,
    },
}

fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::sample::select(EDGES).prop_map(str::to_string),
        (0u32..70_000).prop_map(|v| v.to_string()),
    ]
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        3 => proptest::collection::vec((any::<usize>(), value()), 1..=3).prop_map(Mutation::Numbers),
        1 => any::<usize>().prop_map(Mutation::DropLine),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(line, at)| Mutation::RepeatLine { line, at }),
    ]
}

/// Byte ranges of the number tokens in `text`.
fn numbers(text: &str) -> Vec<(usize, usize)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let starts = b[i].is_ascii_digit()
            && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'));
        if starts {
            let s = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b"._-".contains(&b[i])) {
                i += 1;
            }
            out.push((s, i));
        } else {
            i += 1;
        }
    }
    out
}

fn apply(text: &str, m: &Mutation) -> String {
    let lines: Vec<&str> = text.lines().collect();
    match m {
        Mutation::Numbers(picks) => {
            let spans = numbers(text);
            let mut picks: Vec<(usize, &str)> = picks
                .iter()
                .map(|(i, v)| (i % spans.len(), v.as_str()))
                .collect();
            picks.sort();
            picks.dedup_by_key(|p| p.0);
            let mut out = text.to_string();
            for (i, v) in picks.into_iter().rev() {
                let (s, e) = spans[i];
                out.replace_range(s..e, v);
            }
            out
        }
        Mutation::DropLine(i) => {
            let i = i % lines.len();
            lines
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, l)| *l)
                .collect::<Vec<_>>()
                .join("\n")
        }
        Mutation::RepeatLine { line, at } => {
            let mut v = lines.clone();
            v.insert(at % lines.len(), lines[line % lines.len()]);
            v.join("\n")
        }
    }
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 20000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn a_mutated_spec_is_planned_or_refused_at_a_location(file in 0..SPECS.len(), m in mutation()) {
        static BLOCKS: std::sync::OnceLock<Vec<Block>> = std::sync::OnceLock::new();
        let blocks = BLOCKS.get_or_init(|| kernelgen::read_blocks(root()).unwrap());
        let path = SPECS[file];
        let text = apply(&std::fs::read_to_string(root().join(path)).unwrap(), &m);
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
            let spec = kernelgen::spec::parse(path, &text).map_err(|e| vec![e])?;
            let variants = kernelgen::variant::build(&spec)?;
            kernelgen::render::render(&variants, blocks).expect("valid plans render");
            Ok::<(), Vec<kernelgen::diag::SpecError>>(())
        }));
        let Ok(result) = outcome else {
            return Err(TestCaseError::fail(format!("the generator panicked on\n{text}")));
        };
        if let Err(errors) = result {
            prop_assert!(!errors.is_empty());
            for e in errors {
                prop_assert!(e.loc.is_some(), "unlocated error: {}", e.message);
            }
        }
    }
}
