//! On-chip buffers and the budget check. Each kernel lists the buffers its building
//! block allocates (`Kernel::buffers`, passed to it as `<NAME>_BYTES` knobs), as rows: a
//! buffer's name, memory, element type, element count, how many copies rotate (2 =
//! double buffering), and, for buffers that move rows to or from GM, the contiguous run
//! of elements one transfer moves (its alignment decides whether plain `DataCopy` can
//! move it). A launch holds exactly its kernel's rows; the check sums them per memory.

use abi::DType;

use crate::chip::{Chip, Mem};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Buffer {
    pub name: &'static str,
    pub mem: Mem,
    pub dtype: DType,
    pub elems: usize,
    pub count: usize,
    /// Elements per contiguous GM transfer, for buffers that move rows to or from GM.
    pub gm_run: Option<usize>,
}

impl Buffer {
    /// Bytes of one copy.
    pub fn bytes(&self) -> usize {
        self.elems * self.dtype.size()
    }

    /// Bytes of all copies, each rounded up to the memory's alignment.
    pub fn allocated(&self, chip: &Chip) -> usize {
        self.bytes().next_multiple_of(chip.alignment(self.mem)) * self.count
    }

    /// The kernel parameter that passes [`Buffer::bytes`] to its `InitBuffer`.
    pub fn knob(&self) -> String {
        format!("{}_BYTES", self.name.to_uppercase())
    }

    pub fn gm_run_bytes(&self) -> Option<usize> {
        self.gm_run.map(|r| r * self.dtype.size())
    }
}

/// The bytes of `mem` a kernel with `buffers` allocates: each rounded up to the
/// memory's alignment, times its copies.
pub fn bytes_in(buffers: &[Buffer], mem: Mem, chip: &Chip) -> usize {
    buffers
        .iter()
        .filter(|b| b.mem == mem)
        .map(|b| b.allocated(chip))
        .sum()
}

/// A buffer row.
pub const fn row(
    name: &'static str,
    mem: Mem,
    dtype: DType,
    elems: usize,
    count: usize,
    gm_run: Option<usize>,
) -> Buffer {
    Buffer {
        name,
        mem,
        dtype,
        elems,
        count,
        gm_run,
    }
}

/// Elements (f32) of each of the four UB tiles of `k_slice_sum.h` at most: two partials
/// in, two sums out.
pub const K_SUM_TILE: usize = 2048;

/// ReduceMax scratch (no index) for `count` f32 values: a (value, index) pair per whole
/// 64-lane repeat, at least one, rounded up to a 32-byte block (ReduceMax.md;
/// `dsv4/quant.h` ReduceTmpElems).
pub fn reduce_tmp(count: usize) -> usize {
    (2 * (count / 64).max(1)).next_multiple_of(8)
}

/// A budget violation: what to say and which rule it breaks.
pub struct Violation {
    pub message: String,
    pub rule: &'static str,
}

fn kib(bytes: usize) -> String {
    format!("{:.1} KiB", bytes as f64 / 1024.0)
}

/// Checks capacities per memory and the alignment of GM runs through UB: `buffers` are all
/// a kernel's (a fused kernel's parts' too), of which a block holds `used(mem)` at once.
pub fn check(
    stage: &str,
    buffers: &[&Buffer],
    used: impl Fn(Mem) -> usize,
    pad_unaligned: bool,
    chip: &Chip,
) -> Vec<Violation> {
    let mut out = Vec::new();
    for mem in Mem::ALL {
        let used = used(mem);
        let cap = chip.capacity(mem);
        if used > cap {
            let parts: Vec<String> = buffers
                .iter()
                .filter(|b| b.mem == mem)
                .map(|b| format!("{} {}x{}", b.name, b.count, kib(b.bytes())))
                .collect();
            out.push(Violation {
                message: format!(
                    "{stage} buffers need {} of {mem} but {} has {} ({})",
                    kib(used),
                    chip.name,
                    kib(cap),
                    parts.join(", ")
                ),
                rule: "the buffers of a stage must fit each on-chip memory of the target chip",
            });
        }
    }
    if !pad_unaligned {
        let align = chip.alignment(Mem::Ub);
        for b in buffers.iter().filter(|b| b.mem == Mem::Ub) {
            if let Some(run) = b.gm_run_bytes().filter(|r| r % align != 0) {
                out.push(Violation {
                    message: format!(
                        "{stage} moves GM rows of {run} B through UB buffer {}, not a multiple of {align} B",
                        b.name
                    ),
                    rule: "unaligned UB rows need `unaligned_rows: data_copy_pad` on the stage",
                });
            }
        }
    }
    out
}
