//! What a matmul launch offers the fusion pass (`crate::kernel_plan::fuse`): products
//! that read the same A run as one `dsv4/matmul_group.h` launch, each part's work items
//! exactly those its own launch would run, dealt over all the launch's blocks.

use sha2::{Digest, Sha256};

use crate::kernel_plan::{Cores, Kernel, Value};

/// Names longer than this would not make a file name (255 bytes) with room to spare: a
/// longer group is named by its shapes and a digest of its parts' names.
const MAX_NAME: usize = 160;

/// Why the matmul `kernel` cannot be a part of a group, or `None` when it can.
pub(crate) fn unfit(kernel: &Kernel) -> Option<&'static str> {
    if param(kernel, "SLICE_K") < param(kernel, "K") && param(kernel, "CHAIN") == 0 {
        return Some("its K is split (a zero fill or a slice sum goes with it)");
    }
    if param(kernel, "BATCH") != 1 {
        return Some("it is batched");
    }
    None
}

/// Why two groupable matmuls cannot share their A operand (`None`: they can): they must
/// read it as the same rows of the same element type.
pub(crate) fn conflict(a: &Kernel, b: &Kernel) -> Option<&'static str> {
    let same = |p: &str| param(a, p) == param(b, p);
    if !["INT8", "K", "LDA", "GROUP_ROWS", "ROWS_PER_TOKEN"]
        .iter()
        .all(|p| same(p))
    {
        return Some("they read A differently (element type, K, leading dimension or rows)");
    }
    None
}

/// The bytes of B one work item of a part streams (its N range over all of K): the group
/// deals the parts with the heaviest items first.
pub(crate) fn b_bytes_per_item(kernel: &Kernel) -> u64 {
    let elem = if param(kernel, "INT8") == 1 { 1 } else { 2 };
    u64::from(param(kernel, "RANGE_N")) * u64::from(param(kernel, "K")) * elem
}

/// The group kernel of `parts` (each a groupable matmul), in the order they are dealt: the
/// parts as they are, their items over all the launch's blocks.
pub(crate) fn kernel(parts: &[&Kernel]) -> Kernel {
    let op = if param(parts[0], "INT8") == 1 {
        "i8"
    } else {
        "bf16"
    };
    let prefix = format!("matmul_{op}_");
    let descs: Vec<&str> = parts
        .iter()
        .map(|k| k.name.strip_prefix(&prefix).unwrap_or(&k.name))
        .collect();
    let mut name = format!("matmul_group_{op}_{}", descs.join("__"));
    if name.len() > MAX_NAME {
        // the parts' names (each its full specialisation), digested
        let mut h = Sha256::new();
        for k in parts {
            h.update(k.name.as_bytes());
            h.update([0]);
        }
        let digest: String = h.finalize()[..6]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let ns: Vec<String> = parts.iter().map(|k| param(k, "N").to_string()).collect();
        name = format!(
            "matmul_group{}_{op}_k{}_n{}_{digest}",
            parts.len(),
            param(parts[0], "K"),
            ns.join("x"),
        );
    }
    let mut args = vec!["a"];
    for i in 0..parts.len() {
        args.push(["b0", "b1", "b2", "b3", "b4", "b5", "b6", "b7"][i]);
        args.push(["c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7"][i]);
    }
    Kernel {
        name,
        doc: format!(
            "{} matmuls of one A, their work items dealt over every block in turn",
            parts.len()
        ),
        block: "matmul_group.h",
        class: "MatmulGroup",
        cores: Cores::Aic,
        params: Vec::new(),
        args,
        buffers: Vec::new(),
        parts: parts.iter().map(|k| (*k).clone()).collect(),
    }
}

/// The most parts a group binds (B and C each).
pub(crate) const MAX_PARTS: usize = 8;

fn param(kernel: &Kernel, name: &str) -> u32 {
    match kernel.params.iter().find(|(n, _)| *n == name) {
        Some((_, Value::U32(v))) => *v,
        Some((_, Value::Bool(v))) => u32::from(*v),
        _ => panic!("matmul kernel {} has no parameter {name}", kernel.name),
    }
}
