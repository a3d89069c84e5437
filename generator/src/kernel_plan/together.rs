//! Launches together, the fusion pass's last merge (`super::fuse`): vector kernels whose
//! stages declared that their work spreads over any number of blocks
//! ([`KernelPlan::spreads`]) run in one launch (`dsv4/together.h`) when none binds a tensor
//! another writes: a launch and its gap fewer per part but the first. A later launch joins
//! an earlier one's run when only launches lie between them, the run's parts bind no tensor
//! it binds but the layer's read-only inputs ([`KernelPlan::read_only`]), and it can move
//! up to the run or the run down to it: none of the launches between binds a tensor of the
//! one that moves but those inputs. Where the parts' blocks fit the vector cores
//! together, each runs side by side with the others on blocks of its own, as many as its
//! own launch had (the launch takes as long as its longest part); otherwise they run in
//! turn on the most blocks any part had. The launch serves every part's stage and binds
//! the parts' arguments in order.
//!
//! The same kernel may lead with a cube part ([`kernel`]: a product's column range beside
//! the vector kernel consuming the range before, `gemm::overlap`).

use sha2::{Digest, Sha256};

use super::{
    Cores, Decision, Kernel, KernelPlan, Launch, Step, TOGETHER, Value, binds, serves_also,
};
use super::{intern, intern_list};
use crate::chip::Chip;

/// Parts of one launch at most (in turn, each waits for the one before it on its blocks).
const MOST: usize = 4;

/// GM arguments of a launch at most, beside workspace and tiling (the sim dispatches
/// kernels of up to 64).
const MOST_ARGS: usize = 62;

/// Names longer than this would not make a file name with room to spare: a longer run is
/// named by its part count and a digest of its parts' names.
const MAX_NAME: usize = 160;

/// `plan` with its runs of independent spreading vector launches merged on `chip`, each
/// decision (by step index in the plan as the runs merged before it left it) added to
/// `decisions`.
pub(super) fn together(
    mut plan: KernelPlan,
    chip: &Chip,
    decisions: &mut Vec<Decision>,
) -> KernelPlan {
    let mut first = 0;
    while first < plan.steps.len() {
        match run(&plan, first, decisions) {
            Some((members, at)) => {
                plan = merge(plan, &members, at, chip);
                // the merged launch is at `at` less the members that were before it
                first = at + 1 - members.iter().filter(|&&m| m < at).count();
            }
            None => first += 1,
        }
    }
    plan
}

/// The run that step `first` leads, if any: its members in plan order and the step where
/// they meet. A later launch joins by moving up to the run, or the run moves down to it,
/// past launches that bind no tensor of theirs but the read-only inputs.
fn run(
    plan: &KernelPlan,
    first: usize,
    decisions: &mut Vec<Decision>,
) -> Option<(Vec<usize>, usize)> {
    spreading(plan, first)?;
    let (mut members, mut at) = (vec![first], first);
    for later in first + 1..plan.steps.len() {
        if members.len() == MOST || !matches!(plan.steps[later], Step::Launch(_)) {
            break; // nothing moves past a collective
        }
        let Some((l, _)) = spreading(plan, later) else {
            continue;
        };
        let shared = |s: usize, with: &Launch| {
            with.args
                .iter()
                .find(|t| !plan.read_only.contains(t) && binds(&plan.steps[s], t))
                .copied()
        };
        let between: Vec<usize> = (at + 1..later).filter(|s| !members.contains(s)).collect();
        let up = between.iter().find_map(|&s| Some((s, shared(s, l)?)));
        let down = || {
            between.iter().find_map(|&s| {
                let t = members.iter().find_map(|&m| shared(s, launch(plan, m)))?;
                Some((s, t))
            })
        };
        let args: usize = members.iter().map(|&m| launch(plan, m).args.len()).sum();
        let why = if args + l.args.len() > MOST_ARGS {
            Some(format!(
                "the run would take {} GM arguments, more than {MOST_ARGS}",
                args + l.args.len()
            ))
        } else if let Some((m, t)) = members.iter().find_map(|&m| Some((m, shared(m, l)?))) {
            Some(format!("step {m} of the run binds its {t}"))
        } else if let Some((s, t)) = up {
            match down() {
                Some((s2, t2)) => {
                    let (k, k2) = (launch(plan, s).kernel, launch(plan, s2).kernel);
                    Some(format!(
                        "step {s} ({k}) binds its {t} and step {s2} ({k2}) the run's {t2}, between them"
                    ))
                }
                None => {
                    at = later; // the run moves down
                    None
                }
            }
        } else {
            None // it moves up
        };
        match why {
            None => {
                decisions.push(Decision::Together { first, later });
                members.push(later);
            }
            Some(why) => decisions.push(Decision::Apart { first, later, why }),
        }
    }
    (members.len() > 1).then_some((members, at))
}

/// Step `i`'s launch (a launch it must be).
fn launch(plan: &KernelPlan, i: usize) -> &Launch {
    match &plan.steps[i] {
        Step::Launch(l) => l,
        _ => unreachable!("step {i} is a launch"),
    }
}

/// Step `i`'s launch and kernel, if that is a single vector kernel that spreads.
fn spreading(plan: &KernelPlan, i: usize) -> Option<(&Launch, &Kernel)> {
    let Step::Launch(l) = &plan.steps[i] else {
        return None;
    };
    let k = plan.kernels.iter().find(|k| k.name == l.kernel)?;
    let spreads = plan.spreads.contains(&k.name);
    (spreads && l.cores == Cores::Aiv && k.parts.is_empty()).then_some((l, k))
}

/// `plan` with the run's launches replaced by one launch at step `at`.
fn merge(plan: KernelPlan, members: &[usize], at: usize, chip: &Chip) -> KernelPlan {
    let merged = {
        let parts: Vec<(&Launch, &Kernel)> = members
            .iter()
            .map(|&m| spreading(&plan, m).expect("members are spreading launches"))
            .collect();
        let on: Vec<(&Kernel, u32)> = parts.iter().map(|(l, k)| (*k, l.block_dim)).collect();
        let kernel = kernel(&on, chip);
        let stage = parts[0].0.stage;
        let launches: Vec<&Launch> = parts.iter().map(|(l, _)| *l).collect();
        let also = serves_also(stage, &launches);
        let args: Vec<&str> = parts
            .iter()
            .flat_map(|(l, _)| l.args.iter().copied())
            .collect();
        let launch = Launch {
            stage,
            kernel: intern(&kernel.name),
            cores: Cores::Aiv,
            block_dim: match side_by_side(&on, chip) {
                true => on.iter().map(|(_, b)| b).sum(),
                false => on.iter().map(|(_, b)| *b).max().unwrap_or(1),
            },
            args: intern_list(&args),
            also: intern_list(&also),
        };
        // with_merged puts the launch where its first listed step was
        let steps = std::iter::once(at).chain(members.iter().copied().filter(|&m| m != at));
        (steps.collect(), launch, kernel)
    };
    plan.with_merged(vec![merged])
}

/// Whether the vector parts of `parts` (kernels and their blocks) fit the vector cores side
/// by side.
fn side_by_side(parts: &[(&Kernel, u32)], chip: &Chip) -> bool {
    let vector: u32 = (parts.iter().filter(|(k, _)| k.cores == Cores::Aiv))
        .map(|(_, b)| b)
        .sum();
    vector <= chip.aiv_cores as u32
}

/// The kernel of `parts` (each kernel on its count of blocks) together, the vector parts
/// side by side or in turn ([`side_by_side`]), or, led by a cube part (`CubeBeside`: a mixed
/// launch of the cube cores' blocks), side by side on its vector cores; each part's kernel
/// with its argument count (and a vector part's blocks), its GM arguments named after their
/// part.
pub(super) fn kernel(parts: &[(&Kernel, u32)], chip: &Chip) -> Kernel {
    let beside = side_by_side(parts, chip);
    let mixed = parts[0].0.cores == Cores::Aic;
    assert!(
        !mixed || (beside && parts[1..].iter().all(|(k, _)| k.cores == Cores::Aiv)),
        "a cube part leads vector parts side by side"
    );
    let names: Vec<&str> = parts.iter().map(|(k, _)| k.name.as_str()).collect();
    // side by side, a part's blocks are part of what the kernel is specialised on
    let named: Vec<String> = parts
        .iter()
        .map(|(k, blocks)| match beside {
            true => format!("{}_on{blocks}", k.name),
            false => k.name.clone(),
        })
        .collect();
    let how = if beside { "beside" } else { "in_turn" };
    let joined = format!("{how}_{}", named.join("__"));
    let name = if joined.len() <= MAX_NAME {
        joined
    } else {
        let mut h = Sha256::new();
        for n in &named {
            h.update(n.as_bytes());
            h.update([0]);
        }
        let digest: String = h.finalize()[..6]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        format!("{how}{}_{digest}", parts.len())
    };
    let args = parts
        .iter()
        .enumerate()
        .flat_map(|(i, (k, _))| k.args.iter().map(move |a| intern(&format!("p{i}_{a}"))))
        .collect();
    Kernel {
        name,
        doc: format!(
            "{} independent {}: {}",
            parts.len(),
            match (mixed, beside) {
                (true, _) =>
                    "kernels at once, the first on the cube cores, the others side by side on the vector cores",
                (false, true) => "vector kernels side by side, each on blocks of its own",
                (false, false) => "vector kernels in turn on every block",
            },
            names.join(", ")
        ),
        block: TOGETHER,
        class: if mixed { "CubeBeside" } else { "Together" },
        cores: if mixed { Cores::Mix } else { Cores::Aiv },
        params: Vec::new(),
        args,
        buffers: Vec::new(),
        parts: parts
            .iter()
            .scan(0, |base, (k, blocks)| {
                let mut part = (*k).clone();
                part.params.push(("ARGS", Value::u32(k.args.len())));
                if beside && k.cores == Cores::Aiv {
                    part.params.push(("BLOCK_BASE", Value::U32(*base)));
                    part.params.push(("BLOCKS", Value::U32(*blocks)));
                    *base += blocks;
                }
                Some(part)
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chip;

    fn chip() -> &'static Chip {
        chip::find("910b").unwrap()
    }

    /// A vector kernel taking `args`.
    fn vector(name: &str, args: &[&'static str]) -> Kernel {
        Kernel {
            name: name.into(),
            doc: String::new(),
            block: "compressor.h",
            class: "Compressor",
            cores: Cores::Aiv,
            params: vec![("HD", Value::U32(128))],
            args: args.to_vec(),
            buffers: Vec::new(),
            parts: Vec::new(),
        }
    }

    fn launch(stage: &'static str, k: &Kernel, blocks: u32, args: &[&str]) -> Step {
        Step::Launch(Launch {
            stage,
            kernel: intern(&k.name),
            cores: k.cores,
            block_dim: blocks,
            args: intern_list(args),
            also: &[],
        })
    }

    /// `steps` of `kernels`, those named in `spreads` spreading; `cos` is read-only.
    fn plan(kernels: &[&Kernel], spreads: &[&str], steps: Vec<Step>) -> KernelPlan {
        KernelPlan {
            kernels: kernels.iter().map(|k| (*k).clone()).collect(),
            steps,
            spreads: spreads.iter().map(|s| s.to_string()).collect(),
            read_only: vec!["cos"],
            ..KernelPlan::default()
        }
    }

    fn run(p: KernelPlan) -> (KernelPlan, Vec<Decision>) {
        let mut decisions = Vec::new();
        let p = together(p, chip(), &mut decisions);
        (p, decisions)
    }

    fn param(k: &Kernel, name: &str) -> Option<Value> {
        k.param(name)
    }

    #[test]
    fn independent_launches_run_side_by_side_where_their_blocks_fit() {
        let (quant, proj, finish) = (
            vector("quant", &["x", "q"]),
            vector("proj", &["q", "acc"]),
            vector("finish", &["kv", "cos", "pool"]),
        );
        let p = plan(
            &[&quant, &proj, &finish],
            &["quant", "finish"],
            vec![
                launch("qkv", &quant, 1, &["x", "q"]),
                launch("qkv", &proj, 24, &["q", "acc"]),
                launch("insert", &finish, 8, &["kv", "cos", "pool"]),
            ],
        );
        let (p, decisions) = run(p);
        assert_eq!(decisions, [Decision::Together { first: 0, later: 2 }]);
        assert_eq!(p.steps.len(), 2, "the later launch moved up to the first");
        let Step::Launch(l) = &p.steps[0] else {
            panic!()
        };
        assert_eq!(l.args, ["x", "q", "kv", "cos", "pool"]);
        assert_eq!((l.block_dim, l.stage, l.also), (9, "qkv", &["insert"][..]));
        let k = p.kernels.iter().find(|k| k.name == l.kernel).unwrap();
        assert_eq!(
            (k.class, k.block, k.cores),
            ("Together", TOGETHER, Cores::Aiv)
        );
        assert_eq!(k.name, "beside_quant_on1__finish_on8");
        assert_eq!(k.args, ["p0_x", "p0_q", "p1_kv", "p1_cos", "p1_pool"]);
        let ranges: Vec<_> = k
            .parts
            .iter()
            .map(|p| (param(p, "ARGS"), param(p, "BLOCK_BASE"), param(p, "BLOCKS")))
            .collect();
        let u = |v| Some(Value::U32(v));
        assert_eq!(ranges, [(u(2), u(0), u(1)), (u(3), u(1), u(8))]);
        assert_eq!(k.includes(), ["together.h", "compressor.h"]);
        // the parts' own kernels are no longer launched, the other one still is
        let names: Vec<&str> = p.kernels.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(names, ["proj", k.name.as_str()]);
    }

    #[test]
    fn a_run_moves_down_to_a_launch_that_cannot_move_up() {
        // the queries' heads need the projection between them; the key write does not
        let (keys, proj, heads) = (
            vector("keys", &["kf", "slots", "cache"]),
            vector("proj", &["qr", "w", "acc"]),
            vector("heads", &["acc", "cos", "q"]),
        );
        let p = plan(
            &[&keys, &proj, &heads],
            &["keys", "heads"],
            vec![
                launch("index_compressor", &keys, 4, &["kf", "slots", "cache"]),
                launch("index_query", &proj, 24, &["qr", "w", "acc"]),
                launch("index_query", &heads, 32, &["acc", "cos", "q"]),
            ],
        );
        let (p, decisions) = run(p);
        assert_eq!(decisions, [Decision::Together { first: 0, later: 2 }]);
        let kernels: Vec<&str> = p
            .steps
            .iter()
            .map(|s| match s {
                Step::Launch(l) => l.kernel,
                _ => panic!(),
            })
            .collect();
        assert_eq!(kernels, ["proj", "beside_keys_on4__heads_on32"]);
        let Step::Launch(l) = &p.steps[1] else {
            panic!()
        };
        assert_eq!(l.args, ["kf", "slots", "cache", "acc", "cos", "q"]);
        assert_eq!(
            (l.stage, l.also, l.block_dim),
            ("index_compressor", &["index_query"][..], 36)
        );
    }

    #[test]
    fn launches_that_do_not_fit_the_vector_cores_together_run_in_turn() {
        let (a, b) = (vector("a", &["x", "y"]), vector("b", &["cos", "z"]));
        let p = plan(
            &[&a, &b],
            &["a", "b"],
            vec![
                launch("s", &a, 40, &["x", "y"]),
                launch("s", &b, 16, &["cos", "z"]),
            ],
        );
        let (p, _) = run(p);
        let Step::Launch(l) = &p.steps[0] else {
            panic!()
        };
        assert_eq!(l.block_dim, 40, "the most blocks any part had");
        let k = p.kernels.iter().find(|k| k.name == l.kernel).unwrap();
        assert_eq!(k.name, "in_turn_a__b");
        assert!(k.parts.iter().all(|p| param(p, "BLOCKS").is_none()));
    }

    #[test]
    fn what_stays_apart_and_why() {
        let write = vector("write", &["x", "t"]);
        let read = vector("read", &["t", "u"]);
        let other = vector("other", &["v", "w"]);
        let between = vector("between", &["w", "out"]);
        let lone = vector("lone", &["p", "q"]);
        let steps = vec![
            launch("s", &write, 4, &["x", "t"]),
            launch("s", &read, 4, &["t", "u"]),
            launch("s", &between, 4, &["w", "out"]),
            launch("s", &other, 4, &["v", "w"]),
            launch("s", &lone, 4, &["p", "q"]),
            Step::TokenScatter { src: "q", dst: "r" },
            launch("s", &lone, 4, &["p", "q"]),
        ];
        let p = plan(
            &[&write, &read, &other, &between, &lone],
            &["write", "read", "other"],
            steps,
        );
        let (p, decisions) = run(p);
        let why = |first, later| {
            decisions.iter().find_map(|d| match d {
                Decision::Apart {
                    first: f,
                    later: l,
                    why,
                } if (*f, *l) == (first, later) => Some(why.as_str()),
                _ => None,
            })
        };
        // what the run writes
        assert_eq!(why(0, 1), Some("step 0 of the run binds its t"));
        // a tensor a launch between them binds, and one the run shares with another
        assert_eq!(
            why(0, 3),
            Some("step 2 (between) binds its w and step 1 (read) the run's t, between them")
        );
        // the reader moves down past the launch between to the other instead; a kernel that
        // does not spread is no candidate; nothing moves past a collective
        let joined: Vec<&Decision> = decisions
            .iter()
            .filter(|d| matches!(d, Decision::Together { .. }))
            .collect();
        assert_eq!(joined, [&Decision::Together { first: 1, later: 3 }]);
        assert_eq!(p.steps.len(), 6);
    }

    #[test]
    fn a_run_takes_no_more_arguments_than_a_launch_can() {
        let wide: Vec<&'static str> = (0..40).map(|i| &*format!("a{i}").leak()).collect();
        let other: Vec<&'static str> = (0..40).map(|i| &*format!("b{i}").leak()).collect();
        let (a, b) = (vector("a", &wide), vector("b", &other));
        let p = plan(
            &[&a, &b],
            &["a", "b"],
            vec![launch("s", &a, 4, &wide), launch("s", &b, 4, &other)],
        );
        let (p, decisions) = run(p);
        assert_eq!(
            decisions,
            [Decision::Apart {
                first: 0,
                later: 1,
                why: "the run would take 80 GM arguments, more than 62".into()
            }]
        );
        assert_eq!(p.steps.len(), 2);
    }

    /// A cube part leads a mixed kernel (`CubeBeside`): it runs on the cube cores, the vector
    /// parts side by side on the vector cores from block 0.
    #[test]
    fn a_cube_part_leads_its_vector_parts_in_a_mixed_kernel() {
        let mut cube = vector("mm", &["a", "b", "c"]);
        (cube.cores, cube.block) = (Cores::Aic, "matmul.h");
        let heads = vector("heads", &["c", "cos", "q"]);
        let k = kernel(&[(&cube, 24), (&heads, 44)], chip());
        assert_eq!(
            (k.cores, k.block, k.name.as_str()),
            (Cores::Mix, TOGETHER, "beside_mm_on24__heads_on44")
        );
        let u = |v| Some(Value::U32(v));
        assert_eq!(k.class, "CubeBeside");
        assert_eq!(param(&k.parts[0], "BLOCKS"), None);
        assert_eq!(
            (
                param(&k.parts[1], "BLOCK_BASE"),
                param(&k.parts[1], "BLOCKS")
            ),
            (u(0), u(44))
        );
        assert_eq!(k.args, ["p0_a", "p0_b", "p0_c", "p1_c", "p1_cos", "p1_q"]);
        assert_eq!(k.includes(), ["together.h", "matmul.h", "compressor.h"]);
    }
}
