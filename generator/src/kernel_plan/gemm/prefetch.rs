//! Weights read into L2 ahead of the cube (`dsv4/matmul_prefetch.h`): a product launched
//! alone on the cube cores leaves the vector cores idle, and the cube cores alone load at
//! most their share of HBM (hicann/ge's Load fit: 24 cores 457 GB/s, 72 cores 1.31 TB/s);
//! the B slices a cube core reads first are most of what it loads from HBM. The fusion pass's
//! last step runs each such product as one mixed launch whose vector cores read each
//! strip's B into L2 a few strips ahead of their cube core, which then finds it there
//! (FLASH `wo_a` at 512 tokens, TP 1: 339.4 → 253.9 µs modeled).

use crate::budget::row;
use crate::chip::Mem;
use crate::kernel_plan::{Cores, Decision, Kernel, KernelPlan, Step, Value, intern};
use abi::DType;

/// Strips the vector cores read ahead of their cube core (a cross-core flag counts 15).
const DEPTH: usize = 8;

/// Strips of B a block must have for its vector cores to read ahead of the cube at all: with
/// one, the cube only waits for what it would have loaded itself, and the mixed launch adds
/// (FLASH CSA's Hadamard products, one strip a block: 3.1 → 3.7 µs at the deployment; with
/// at least 8 also `wo_a` at TP 4, 5.3 a block, would stay, 112 → 133 µs).
const MIN_STRIPS: usize = 2;

/// Whether `strips` strips of B over `blocks` blocks are enough to read ahead
/// ([`MIN_STRIPS`] a block; the split planner times a launch so too).
pub(super) fn enough_strips(strips: usize, blocks: usize) -> bool {
    strips >= MIN_STRIPS * blocks
}

/// The vector cores' scratch: slots of one DMA's worth of B rows, in two halves a round of
/// DMAs fills in turn (a half is filled again once its last round landed: rounds of 90 KiB
/// outlast a GM read's latency).
const CHUNK_BYTES: usize = 45 * 1024;
const SLOTS: usize = 4;

/// The products a launch of `kernel` runs alone on the cube cores: its own, or a matmul
/// group's cube parts (None for anything else).
fn products(kernel: &Kernel) -> Option<Vec<&Kernel>> {
    let matmul = |k: &Kernel| k.block == "matmul.h" && k.class == "Matmul" && k.cores == Cores::Aic;
    if kernel.cores != Cores::Aic {
        return None;
    }
    match kernel.class {
        "Matmul" if matmul(kernel) => Some(vec![kernel]),
        "MatmulGroup" if kernel.parts.iter().all(matmul) => Some(kernel.parts.iter().collect()),
        _ => None,
    }
}

/// Why a launch of `kernel` on `blocks` blocks does not have its B read ahead, or None
/// where it does: products alone on the cube cores whose items each hold one panel's
/// columns, with B enough for [`MIN_STRIPS`] strips a block.
fn unfit(kernel: &Kernel, blocks: u32) -> Option<String> {
    let Some(products) = products(kernel) else {
        return Some("not products alone on the cube cores".into());
    };
    if products
        .iter()
        .any(|k| k.param("COLUMNS_INNER") == Some(Value::Bool(true)))
    {
        return Some("its items share A panels over column ranges".into());
    }
    let strips: usize = (products.iter())
        .map(|k| {
            let p = |name| k.u32_param(name).unwrap_or(0);
            p("BATCH") * p("N").div_ceil(p("TILE_N").max(1)) * p("K").div_ceil(p("SLICE_K").max(1))
        })
        .sum();
    if !enough_strips(strips, blocks as usize) {
        return Some(format!(
            "{strips} strips of B over {blocks} blocks, fewer than {MIN_STRIPS} a block"
        ));
    }
    None
}

/// The mixed kernel: `kernel` (a product, or a group of them) on the cube cores, its vector
/// cores reading B ahead of it: a matmul group of the products and `BReader` last (a
/// product alone a group of one).
pub fn prefetched(kernel: &Kernel) -> Kernel {
    let reader = reader(8, CHUNK_BYTES, SLOTS);
    let mut parts = if kernel.class == "MatmulGroup" {
        kernel.parts.clone()
    } else {
        vec![kernel.clone()]
    };
    parts.push(reader);
    Kernel {
        name: format!("{}_pf", kernel.name),
        doc: format!(
            "{}; the vector cores read B into L2 ahead of the cube",
            kernel.doc
        ),
        block: "matmul_group.h",
        class: "MatmulGroup",
        cores: Cores::Mix,
        params: Vec::new(),
        args: kernel.args.clone(),
        buffers: Vec::new(),
        parts,
    }
}

/// The vector cores' reads beside their share's units (`share::VectorShare`): `eighths` of
/// each of the cube's strips of B (its rows), in DMAs of at most `chunk` bytes into `slots`
/// of UB (two halves, a round of DMAs filling one: a round shorter than a GM read's latency
/// waits for the rest of it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Beside {
    pub eighths: usize,
    pub chunk: usize,
    pub slots: usize,
}

/// The reader of a product's strips beside its vector share's units (`dsv4/matmul_group.h`
/// ReadBeside).
pub(super) fn beside(read: Beside) -> Kernel {
    reader(read.eighths, read.chunk, read.slots)
}

/// `dsv4/matmul_prefetch.h`'s BReader: `eighths` of each strip's B rows, DMAs of at most
/// `chunk` bytes into `slots`.
fn reader(eighths: usize, chunk: usize, slots: usize) -> Kernel {
    let u = Value::u32;
    Kernel {
        name: "b_reader".into(),
        doc: format!(
            "{eighths}/8 of each strip's B into L2, {DEPTH} strips ahead of the cube at most"
        ),
        block: "matmul_prefetch.h",
        class: "BReader",
        cores: Cores::Aiv,
        params: vec![
            ("DEPTH", u(DEPTH)),
            ("EIGHTHS", u(eighths)),
            ("SLOTS", u(slots)),
        ],
        args: Vec::new(),
        buffers: vec![row("chunk", Mem::Ub, DType::I8, chunk, slots, None)],
        parts: Vec::new(),
    }
}

/// `plan` with each product launched alone on the cube cores run with its B read ahead
/// by its vector cores, each decision added to `decisions`.
pub(crate) fn alone(mut plan: KernelPlan, decisions: &mut Vec<Decision>) -> KernelPlan {
    for i in 0..plan.steps.len() {
        let Step::Launch(launch) = &plan.steps[i] else {
            continue;
        };
        let Some(kernel) = plan.kernels.iter().find(|k| k.name == launch.kernel) else {
            continue;
        };
        if let Some(why) = unfit(kernel, launch.block_dim) {
            if kernel.block.starts_with("matmul") && kernel.cores == Cores::Aic {
                decisions.push(Decision::NotAhead { product: i, why });
            }
            continue;
        }
        let mixed = prefetched(kernel);
        let mut launch = *launch;
        launch.kernel = intern(&mixed.name);
        launch.cores = Cores::Mix;
        if !plan.kernels.iter().any(|k| k.name == mixed.name) {
            plan.kernels.push(mixed);
        }
        plan.steps[i] = Step::Launch(launch);
        decisions.push(Decision::Ahead { product: i });
    }
    plan.without_unused_kernels()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chip;
    use crate::kernel_plan::gemm::kernels::kernel;
    use crate::kernel_plan::gemm::matmul::{BLayout, Matmul, Operands, Rows, flash_wo_b};
    use crate::kernel_plan::gemm::split::{Deal, Room, Split, Tiles, plan_split};
    use crate::kernel_plan::{Launch, intern_list};

    /// `mm` planned on 64 × 128 × 128 tiles, its items dealt `deal`.
    fn product(mm: &Matmul, deal: Deal) -> Kernel {
        let chip = chip::find("910b").unwrap();
        let tiles = [64, 128, 128];
        let room = Room::for_tiles(tiles[0], tiles[1], tiles[2], chip);
        let split = plan_split(mm, &room, Tiles::spec(mm, tiles), chip).unwrap();
        kernel(mm, &Split { deal, ..split })
    }

    /// FLASH's wo_b at 512 tokens, TP 1, its items dealt `deal`.
    fn wo_b(deal: Deal) -> Kernel {
        product(&flash_wo_b(), deal)
    }

    fn launch(k: &Kernel, blocks: u32) -> Step {
        Step::Launch(Launch {
            stage: "o_proj",
            kernel: intern(&k.name),
            cores: k.cores,
            block_dim: blocks,
            args: intern_list(&["o_i8", "wo_b", "o_acc"]),
            also: &[],
        })
    }

    /// A product alone on the cube cores runs as one mixed launch with its B read ahead
    /// (a matmul group of its kernel and the vector cores' reads); one whose items
    /// share A panels over column ranges stays (the vector cores could not follow its
    /// strips), and so does one of too little B (a 128 × 128 Hadamard product: one strip);
    /// a vector kernel is not a product.
    #[test]
    fn a_product_alone_has_its_b_read_ahead_by_its_vector_cores() {
        let (runs, cols) = (wo_b(Deal::RowsInner), wo_b(Deal::ColumnsInner));
        let hadamard = product(
            &Matmul::new(Operands::Bf16, BLayout::Kn, Rows::Tokens, 16, 128, 128),
            Deal::BackAndForth,
        );
        let vector = Kernel {
            name: "sum".into(),
            doc: String::new(),
            block: "group_combine.h",
            class: "GroupCombine",
            cores: Cores::Aiv,
            params: Vec::new(),
            args: vec!["p", "out"],
            buffers: Vec::new(),
            parts: Vec::new(),
        };
        let plan = KernelPlan {
            kernels: vec![runs.clone(), cols.clone(), hadamard.clone(), vector.clone()],
            steps: vec![
                launch(&runs, 24),
                launch(&cols, 24),
                launch(&hadamard, 1),
                launch(&vector, 48),
            ],
            ..KernelPlan::default()
        };
        let mut decisions = Vec::new();
        let plan = alone(plan, &mut decisions);
        assert_eq!(
            decisions,
            [
                Decision::Ahead { product: 0 },
                Decision::NotAhead {
                    product: 1,
                    why: "its items share A panels over column ranges".into()
                },
                Decision::NotAhead {
                    product: 2,
                    why: "1 strips of B over 1 blocks, fewer than 2 a block".into()
                }
            ]
        );
        let Step::Launch(first) = &plan.steps[0] else {
            panic!("a launch")
        };
        assert_eq!((first.cores, first.block_dim), (Cores::Mix, 24));
        assert_eq!(first.args, ["o_i8", "wo_b", "o_acc"]);
        let mixed = plan
            .kernels
            .iter()
            .find(|k| k.name == first.kernel)
            .unwrap();
        assert_eq!(mixed.name, format!("{}_pf", runs.name));
        assert_eq!((mixed.class, mixed.cores), ("MatmulGroup", Cores::Mix));
        assert_eq!(mixed.parts[0], runs);
        assert_eq!(
            (mixed.parts[1].class, mixed.parts[1].cores),
            ("BReader", Cores::Aiv)
        );
        assert_eq!(mixed.parts.len(), 2);
        // the product's own kernel is no longer launched; the others are as they were
        let names: Vec<&str> = plan.kernels.iter().map(|k| k.name.as_str()).collect();
        assert!(!names.contains(&runs.name.as_str()));
        assert!(
            [cols.name.as_str(), &hadamard.name, "sum"]
                .iter()
                .all(|n| names.contains(n))
        );
    }

    /// A matmul group of products alone runs with one reader after its parts; a group with
    /// a vector part (the vector cores are busy) stays.
    #[test]
    fn a_group_alone_has_its_parts_b_read_ahead_after_them() {
        let part = wo_b(Deal::RowsInner);
        let group = |parts: Vec<Kernel>| Kernel {
            name: format!("group{}", parts.len()),
            doc: String::new(),
            block: "matmul_group.h",
            class: "MatmulGroup",
            cores: if parts.iter().all(|p| p.cores == Cores::Aic) {
                Cores::Aic
            } else {
                Cores::Mix
            },
            params: Vec::new(),
            args: vec!["o_i8", "wo_b", "o_acc"],
            buffers: Vec::new(),
            parts,
        };
        let vector_part = Kernel {
            cores: Cores::Aiv,
            class: "VectorMatmul",
            ..part.clone()
        };
        let (cube, mixed) = (
            group(vec![part.clone(), part.clone()]),
            group(vec![part.clone(), part.clone(), vector_part]),
        );
        let plan = KernelPlan {
            kernels: vec![cube.clone(), mixed.clone()],
            steps: vec![launch(&cube, 24), launch(&mixed, 24)],
            ..KernelPlan::default()
        };
        let mut decisions = Vec::new();
        let plan = alone(plan, &mut decisions);
        assert_eq!(decisions, [Decision::Ahead { product: 0 }]);
        let ahead = plan.kernels.iter().find(|k| k.name == "group2_pf").unwrap();
        assert_eq!(
            (ahead.class, ahead.cores, ahead.parts.len()),
            ("MatmulGroup", Cores::Mix, 3)
        );
        assert_eq!(ahead.parts[..2], cube.parts[..]);
        assert_eq!(ahead.parts[2].class, "BReader");
    }
}
