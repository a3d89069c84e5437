//! Fusion: after every stage has added its launches, the planner merges launches whose
//! work can share one kernel, so data and cores are shared instead of passing through
//! launch boundaries. `fuse: false` in a spec leaves the launches as the stages made them
//! (and the stages plan none of their own fused kernels: `Plan::fuse`, e.g. the window
//! attention's one mixed launch in `stages::sparse_attention`).
//!
//! The merge here is offered by the cube matmul ([`gemm::group`]): products that
//! read the same A (the projections of one input) run in one launch, their work items
//! dealt over all its blocks in rounds, every other round backwards, the parts with the
//! heaviest items first (`BackAndForth` in `dsv4/matmul.h`), so a part of few items
//! shares its cores with the others' instead of holding some alone. Each item is what it
//! was in its own launch, so the buffers the stages planned (and the budget check passed)
//! stay what a block holds. A later product joins an earlier one when
//! - neither is batched (whole products, k slices chained on one core and k slices whose
//!   partial products a slice sum adds after it all join), and both read A the same way;
//! - it can move up to the first: only launches lie between them, none of which binds
//!   any tensor the later one binds (so nothing between writes what it reads or reads or
//!   writes what it writes), and the group binds none of its B and C.
//!
//! At a few rows the group may also give the vector cores the last columns of its parts
//! (`gemm::share::plan_group`, from the parts' parameters and what the stages kept:
//! [`KernelPlan::matmuls`]): the launch is then mixed and runs on every block.
//!
//! Parts may come from several stages: the launch belongs to its first part's stage and
//! names the others in [`Launch::also`], so a run of one of those stages runs it too.
//!
//! A stage may also offer to take the launch before it as its prologue ([`Prologue`], e.g.
//! hc_post the bf16 rows o_proj sums at TP 1, o_proj's quantisation the k-slice sum of its
//! wo_a): the two run as one kernel when the producer's launch directly precedes the
//! consumer's and no other step binds what it hands over.
//!
//! A cube product launched alone whose next launch finishes its C column range by column
//! range ([`KernelPlan::by_columns`], e.g. o_proj's group sum with hc_post) then runs in
//! column ranges, each range's consumer beside the next range's product in one mixed launch
//! (`gemm::overlap`).
//!
//! Last, independent vector launches that spread over any blocks run together in one launch,
//! side by side or in turn (`super::together`).

pub use super::Decision;
use super::gemm::{self, group};
use super::together::together;
use super::{Cores, Kernel, KernelPlan, Launch, MatmulOrigin, Prologue, Step, binds};
use crate::chip::Chip;

/// `plan` with its groupable launches merged, and every decision taken on the way (for
/// tests and for people reading why a launch stayed alone).
pub fn fuse(plan: KernelPlan, chip: &Chip) -> (KernelPlan, Vec<Decision>) {
    let mut decisions = Vec::new();
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut taken = vec![false; plan.steps.len()];
    for first in 0..plan.steps.len() {
        let Some((l1, k1)) = matmul(&plan, first) else {
            continue;
        };
        if taken[first] || group::unfit(k1).is_some() {
            continue;
        }
        let mut members = vec![first];
        for later in first + 1..plan.steps.len() {
            if members.len() == group::MAX_PARTS {
                break;
            }
            let Some((l2, k2)) = matmul(&plan, later) else {
                continue;
            };
            if taken[later] || l2.args[0] != l1.args[0] {
                continue;
            }
            match why_not(&plan, &members, later, k1, (l2, k2)) {
                None => {
                    decisions.push(Decision::Joins { first, later });
                    members.push(later);
                }
                Some(why) => decisions.push(Decision::Stays { first, later, why }),
            }
        }
        if members.len() > 1 {
            for &m in &members {
                taken[m] = true;
            }
            groups.push(members);
        }
    }
    let plan = merge(plan, &groups, chip);
    let plan = prologues(plan, &mut decisions);
    let plan = gemm::overlap::consumers(plan, chip, &mut decisions);
    let plan = together(plan, chip, &mut decisions);
    let plan = gemm::prefetch::alone(plan, &mut decisions);
    (plan, decisions)
}

/// `plan` with each offered prologue taken where it can be (after the matmul groups,
/// which prologues do not involve).
fn prologues(mut plan: KernelPlan, decisions: &mut Vec<Decision>) -> KernelPlan {
    for offer in std::mem::take(&mut plan.prologues) {
        let Prologue {
            producer,
            consumer,
            input,
            block_dim,
            fused,
        } = offer;
        let launch_of = |s: &Step, kernel: &str| match s {
            Step::Launch(l) if l.kernel == kernel => Some(*l),
            _ => None,
        };
        let Some(at) = plan
            .steps
            .iter()
            .position(|s| launch_of(s, &consumer).is_some())
        else {
            continue;
        };
        let before = at
            .checked_sub(1)
            .and_then(|b| launch_of(&plan.steps[b], &producer));
        let why = match &before {
            None => Some(format!("step {at} does not follow a launch of {producer}")),
            Some(l) if !l.args.contains(&input) => {
                Some(format!("{producer} does not bind {input}"))
            }
            Some(_) if !plan.workspaces.iter().any(|w| w.name == input) => {
                Some(format!("{input} is not a workspace (it must reach GM)"))
            }
            Some(_) => plan
                .steps
                .iter()
                .enumerate()
                .find(|&(i, s)| i + 1 != at && i != at && binds(s, input))
                .map(|(i, _)| format!("step {i} binds {input}, which would not reach GM")),
        };
        if let Some(why) = why {
            decisions.push(Decision::Declines {
                producer,
                consumer,
                why,
            });
            continue;
        }
        let first = before.expect("a launch of the producer precedes it");
        let second = launch_of(&plan.steps[at], &consumer).expect("the consumer's launch");
        // each tensor once: the consumer's arguments the producer binds too are its own
        let mut args: Vec<&str> = Vec::new();
        for a in first.args.iter().chain(second.args.iter()) {
            if *a != input && !args.contains(a) {
                args.push(a);
            }
        }
        let launch = Launch {
            stage: first.stage,
            kernel: super::intern(&fused.name),
            cores: fused.cores,
            block_dim,
            args: super::intern_list(&args),
            also: super::intern_list(&[second.stage]),
        };
        plan = plan.with_merged(vec![(vec![at - 1, at], launch, fused)]);
        plan.workspaces.retain(|w| w.name != input);
        decisions.push(Decision::Takes { producer, consumer });
    }
    plan
}

/// Why step `later` cannot join the group `members` (led by `first`).
fn why_not(
    plan: &KernelPlan,
    members: &[usize],
    later: usize,
    k1: &Kernel,
    (l2, k2): (&Launch, &Kernel),
) -> Option<String> {
    if let Some(why) = group::unfit(k2) {
        return Some(why.into());
    }
    if let Some(why) = group::conflict(k1, k2) {
        return Some(why.into());
    }
    let binds = |l: &Launch, name: &str| l.args.contains(&name);
    let mine = &l2.args[1..];
    for m in members {
        let Step::Launch(l) = &plan.steps[*m] else {
            unreachable!("members are launches")
        };
        if let Some(t) = mine.iter().find(|t| binds(l, t)) {
            return Some(format!("the group already binds its {t}"));
        }
    }
    let first = members[0];
    for between in first + 1..later {
        if members.contains(&between) {
            continue;
        }
        match &plan.steps[between] {
            Step::Launch(l) => {
                if let Some(t) = l2.args.iter().find(|t| binds(l, t)) {
                    return Some(format!(
                        "step {between} ({}) binds its {t} and runs between them",
                        l.kernel
                    ));
                }
            }
            _ => return Some(format!("step {between} is a collective between them")),
        }
    }
    None
}

/// Step `i` as a matmul launch with its kernel.
fn matmul(plan: &KernelPlan, i: usize) -> Option<(&Launch, &Kernel)> {
    let Step::Launch(l) = &plan.steps[i] else {
        return None;
    };
    let k = plan.kernels.iter().find(|k| k.name == l.kernel)?;
    (k.block == "matmul.h").then_some((l, k))
}

/// `plan` with each group's launches replaced by one group launch at its first's place.
fn merge(plan: KernelPlan, groups: &[Vec<usize>], chip: &Chip) -> KernelPlan {
    let mut merges = Vec::new();
    for members in groups {
        let mut parts: Vec<(&Launch, &Kernel)> = members
            .iter()
            .map(|&i| matmul(&plan, i).expect("members are matmul launches"))
            .collect();
        // the launch serves its first step's stage, whatever order the parts run in
        let stage = parts[0].0.stage;
        parts.sort_by_key(|(_, k)| std::cmp::Reverse(group::b_bytes_per_item(k)));
        let origins: Option<Vec<&MatmulOrigin>> = parts
            .iter()
            .map(|(_, k)| plan.matmuls.iter().find(|o| o.kernel == k.name))
            .collect();
        let kernels: Vec<&Kernel> = parts.iter().map(|(_, k)| *k).collect();
        let kernel = group::kernel(&kernels, origins.as_deref(), chip);
        let mut args: Vec<&'static str> = vec![parts[0].0.args[0]];
        let mut also: Vec<&str> = Vec::new();
        for (l, _) in &parts {
            args.extend_from_slice(&l.args[1..]);
            if l.stage != stage && !also.contains(&l.stage) {
                also.push(l.stage);
            }
        }
        // every part's items on every block: as many blocks as items, up to the cores (a
        // mixed group's vector units on every block's vector cores)
        let own: u32 = match kernel.cores {
            Cores::Mix => chip.aic_cores as u32,
            _ => parts.iter().map(|(l, _)| l.block_dim).sum(),
        };
        let launch = Launch {
            stage,
            kernel: super::intern(&kernel.name),
            cores: kernel.cores,
            block_dim: own.min(chip.aic_cores as u32),
            args: super::intern_list(&args),
            also: super::intern_list(&also),
        };
        merges.push((members.clone(), launch, kernel));
    }
    plan.with_merged(merges)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chip;
    use crate::kernel_plan::{Cores, Value, intern_list};
    use crate::plan::TensorPlan;
    use abi::plan::Step;

    fn chip() -> &'static Chip {
        chip::find("910b").unwrap()
    }

    /// A matmul kernel with the parameters the pass reads.
    fn mm(name: &str, n: u32, k: u32, slice_k: u32) -> Kernel {
        Kernel {
            name: name.into(),
            doc: String::new(),
            block: "matmul.h",
            class: "Matmul",
            cores: Cores::Aic,
            params: vec![
                ("INT8", Value::Bool(false)),
                ("GROUP_ROWS", Value::Bool(false)),
                ("ROWS_PER_TOKEN", Value::U32(1)),
                ("N", Value::U32(n)),
                ("K", Value::U32(k)),
                ("BATCH", Value::U32(1)),
                ("LDA", Value::U32(k)),
                ("SLICE_K", Value::U32(slice_k)),
                ("CHAIN", Value::Bool(false)),
                ("RUNS", Value::Bool(false)),
                ("COLUMNS_INNER", Value::Bool(false)),
                ("RANGE_N", Value::U32(64)),
            ],
            args: vec!["a", "b", "c"],
            buffers: Vec::new(),
            parts: Vec::new(),
        }
    }

    fn vector(name: &str) -> Kernel {
        Kernel {
            block: "rms_norm.h",
            class: "RmsNorm",
            cores: Cores::Aiv,
            params: Vec::new(),
            ..mm(name, 0, 0, 0)
        }
    }

    fn launch(stage: &'static str, k: &Kernel, blocks: u32, args: &[&str]) -> Step {
        Step::Launch(Launch {
            stage,
            kernel: super::super::intern(&k.name),
            cores: k.cores,
            block_dim: blocks,
            args: intern_list(args),
            also: &[],
        })
    }

    /// `steps` of `kernels` (distinct by name).
    fn plan(kernels: &[&Kernel], steps: Vec<Step>) -> KernelPlan {
        KernelPlan {
            kernels: kernels.iter().map(|k| (*k).clone()).collect(),
            steps,
            ..KernelPlan::default()
        }
    }

    #[test]
    fn projections_of_one_input_merge_across_independent_launches() {
        let (wq, wkv, quant) = (
            mm("q", 1024, 4096, 4096),
            mm("kv", 512, 4096, 4096),
            vector("quant"),
        );
        let p = plan(
            &[&wq, &quant, &wkv],
            vec![
                launch("s", &wq, 16, &["x", "wq_a", "q_latent"]),
                launch("s", &quant, 1, &["q_latent", "qr"]),
                launch("s", &wkv, 8, &["x", "wkv", "kv_latent"]),
            ],
        );
        let (fused, decisions) = fuse(p, chip());
        // the group, alone on the cube cores, then has its B read ahead (gemm::prefetch)
        assert_eq!(
            decisions,
            [
                Decision::Joins { first: 0, later: 2 },
                Decision::Ahead { product: 0 }
            ]
        );
        assert_eq!(fused.steps.len(), 2);
        let Step::Launch(g) = &fused.steps[0] else {
            panic!()
        };
        assert_eq!(g.args, ["x", "wq_a", "q_latent", "wkv", "kv_latent"]);
        assert_eq!(g.block_dim, 24);
        let kernel = fused.kernels.iter().find(|k| k.name == g.kernel).unwrap();
        assert_eq!(kernel.class, "MatmulGroup");
        assert_eq!(kernel.param_structs(), "P0, P1, P2");
        let parts: Vec<&str> = kernel.parts.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(
            parts,
            ["q", "kv", "b_reader"],
            "equal items keep the steps' order"
        );
        // the parts' own kernels are no longer launched, so no longer planned
        assert!(
            fused
                .kernels
                .iter()
                .all(|k| k.name != "q" && k.name != "kv")
        );
        assert!(fused.kernels.iter().any(|k| k.name == "quant"));
    }

    #[test]
    fn chained_k_slices_join_a_group() {
        // k slices summed in order on one core need no zero fill or slice sum launch, so
        // the product is one launch like a whole one
        let a = mm("a", 256, 512, 512);
        let mut chained = mm("chained", 256, 512, 256);
        let chain = chained.params.iter_mut().find(|(n, _)| *n == "CHAIN");
        chain.expect("the helper sets CHAIN").1 = Value::Bool(true);
        let p = plan(
            &[&a, &chained],
            vec![
                launch("s", &a, 2, &["x", "w1", "y1"]),
                launch("s", &chained, 2, &["x", "w2", "y2"]),
            ],
        );
        let (fused, decisions) = fuse(p, chip());
        assert_eq!(
            decisions,
            [
                Decision::Joins { first: 0, later: 1 },
                Decision::Ahead { product: 0 }
            ]
        );
        assert_eq!(fused.steps.len(), 1);
    }

    #[test]
    fn k_slices_apart_join_a_group_and_their_sums_follow_it() {
        // each product's partial products go to a workspace of its own, so the group
        // binds each once and every slice sum still reads what its product wrote
        let (q, kv) = (mm("q", 1024, 4096, 1024), mm("kv", 512, 4096, 1024));
        let (sum_q, sum_kv) = (vector("sum_q"), vector("sum_kv"));
        let p = plan(
            &[&q, &sum_q, &kv, &sum_kv],
            vec![
                launch("s", &q, 24, &["x", "wq_a", "k_partials_q"]),
                launch("s", &sum_q, 48, &["k_partials_q", "q_latent"]),
                launch("s", &kv, 24, &["x", "wkv", "k_partials_kv"]),
                launch("s", &sum_kv, 48, &["k_partials_kv", "kv_latent"]),
            ],
        );
        let (fused, decisions) = fuse(p, chip());
        assert!(decisions.contains(&Decision::Joins { first: 0, later: 2 }));
        let launches: Vec<&str> = fused
            .steps
            .iter()
            .map(|s| match s {
                Step::Launch(l) => l.kernel,
                _ => panic!("launches only"),
            })
            .collect();
        assert_eq!(
            &launches[1..],
            ["sum_q", "sum_kv"],
            "the group, then the sums"
        );
        let Step::Launch(g) = &fused.steps[0] else {
            panic!()
        };
        let kernel = fused.kernels.iter().find(|k| k.name == g.kernel).unwrap();
        assert_eq!(kernel.class, "MatmulGroup");
        assert_eq!(
            g.args,
            ["x", "wq_a", "k_partials_q", "wkv", "k_partials_kv"]
        );
    }

    #[test]
    fn what_stays_apart_and_why() {
        let (a, b) = (mm("a", 256, 512, 512), mm("b", 256, 512, 512));
        let mut batched = mm("batched", 256, 512, 512);
        let batch = batched.params.iter_mut().find(|(n, _)| *n == "BATCH");
        batch.expect("the helper sets BATCH").1 = Value::U32(2);
        let narrow = mm("narrow", 256, 1024, 1024);
        let touch = vector("touch");
        let cases: Vec<(Vec<&Kernel>, Vec<Step>, &str)> = vec![
            (
                vec![&a, &touch, &b],
                vec![
                    launch("s", &a, 2, &["x", "w1", "y1"]),
                    launch("s", &touch, 1, &["y2"]),
                    launch("s", &b, 2, &["x", "w2", "y2"]),
                ],
                "step 1 (touch) binds its y2 and runs between them",
            ),
            (
                vec![&a, &batched],
                vec![
                    launch("s", &a, 2, &["x", "w1", "y1"]),
                    launch("s", &batched, 2, &["x", "w2", "y2"]),
                ],
                "it is batched",
            ),
            (
                vec![&a, &narrow],
                vec![
                    launch("s", &a, 2, &["x", "w1", "y1"]),
                    launch("s", &narrow, 2, &["x", "w2", "y2"]),
                ],
                "they read A differently",
            ),
            (
                vec![&a, &b],
                vec![
                    launch("s", &a, 2, &["x", "w1", "y1"]),
                    launch("s", &b, 2, &["x", "w1", "y1"]),
                ],
                "the group already binds its w1",
            ),
            (
                vec![&a, &b],
                vec![
                    launch("s", &a, 2, &["x", "w1", "y1"]),
                    Step::TokenScatter {
                        src: "y0",
                        dst: "y9",
                    },
                    launch("s", &b, 2, &["x", "w2", "y2"]),
                ],
                "step 1 is a collective between them",
            ),
        ];
        for (kernels, steps, why) in cases {
            let n = steps.len();
            let (fused, decisions) = fuse(plan(&kernels, steps), chip());
            assert_eq!(fused.steps.len(), n, "{why}");
            // the group decisions (the products' B read ahead or not after them)
            let grouping: Vec<&Decision> = (decisions.iter())
                .filter(|d| !matches!(d, Decision::Ahead { .. } | Decision::NotAhead { .. }))
                .collect();
            match grouping.as_slice() {
                [Decision::Stays { why: got, .. }] => assert!(got.starts_with(why), "{got}"),
                other => panic!("{why}: {other:?}"),
            }
        }
    }

    #[test]
    fn parts_of_several_stages_make_one_launch_that_serves_them_all() {
        let (a, b, c) = (
            mm("a", 256, 512, 512),
            mm("b", 128, 512, 512),
            mm("c", 64, 512, 512),
        );
        let p = plan(
            &[&a, &b, &c],
            vec![
                launch("qkv", &a, 2, &["x", "w1", "y1"]),
                launch("compressor", &b, 1, &["x", "w2", "y2"]),
                launch("indexer", &c, 1, &["x", "w3", "y3"]),
            ],
        );
        let (fused, _) = fuse(p, chip());
        assert_eq!(fused.steps.len(), 1);
        let Step::Launch(g) = &fused.steps[0] else {
            panic!()
        };
        assert_eq!((g.stage, g.also), ("qkv", &["compressor", "indexer"][..]));
        assert!(g.serves("indexer") && !g.serves("o_proj"));
    }

    /// The parts with the heaviest items are dealt first (their arguments with them), the
    /// launch still serves its first step's stage, and it has a block per item up to the
    /// cores.
    #[test]
    fn heaviest_items_lead_and_every_item_has_a_block_up_to_the_cores() {
        let light = mm("light", 1024, 4096, 4096);
        let mut heavy = mm("heavy", 1024, 4096, 4096);
        heavy.params.retain(|(n, _)| *n != "RANGE_N");
        heavy.params.push(("RANGE_N", Value::U32(256)));
        for (blocks, want) in [((16, 4), 20), ((24, 4), 24)] {
            let p = plan(
                &[&light, &heavy],
                vec![
                    launch("qkv", &light, blocks.0, &["x", "w1", "y1"]),
                    launch("compressor", &heavy, blocks.1, &["x", "w2", "y2"]),
                ],
            );
            let (fused, _) = fuse(p, chip());
            let Step::Launch(g) = &fused.steps[0] else {
                panic!()
            };
            assert_eq!(g.block_dim, want);
            assert_eq!((g.stage, g.also), ("qkv", &["compressor"][..]));
            assert_eq!(g.args, ["x", "w2", "y2", "w1", "y1"]);
            let kernel = fused.kernels.iter().find(|k| k.name == g.kernel).unwrap();
            let parts: Vec<&str> = kernel.parts.iter().map(|p| p.name.as_str()).collect();
            assert_eq!(parts, ["heavy", "light", "b_reader"]); // B read ahead after them
        }
    }

    /// `consumer`'s offer to take `producer` (its input `h`) as `fused`.
    fn offer(producer: &Kernel, consumer: &Kernel, fused: &Kernel) -> Prologue {
        Prologue {
            producer: producer.name.clone(),
            consumer: consumer.name.clone(),
            input: "h",
            block_dim: 7,
            fused: fused.clone(),
        }
    }

    /// The workspace `h` the producer hands over.
    fn hand_over() -> TensorPlan {
        TensorPlan {
            name: "h",
            shape: Vec::new(),
            dtype: abi::DType::Bf16,
            dir: abi::Dir::Out,
            placement: abi::Placement::PerRank,
        }
    }

    /// A producer directly before its consumer becomes one launch of the fused kernel: the
    /// producer's arguments but the hand-over, then the consumer's others (`s`, which both
    /// bind, once); the producer's stage,
    /// serving the consumer's too; the hand-over's workspace and both old kernels gone.
    #[test]
    fn a_prologue_directly_before_its_consumer_is_taken() {
        let (sum, post, fused) = (vector("sum"), vector("post"), vector("sum_post"));
        let mut p = plan(
            &[&sum, &post],
            vec![
                launch("o_proj", &sum, 4, &["p", "s", "h"]),
                launch("hc_post", &post, 3, &["h", "x", "s", "y"]),
            ],
        );
        p.workspaces.push(hand_over());
        p.prologues.push(offer(&sum, &post, &fused));
        let (out, decisions) = fuse(p, chip());
        assert_eq!(
            decisions,
            [Decision::Takes {
                producer: "sum".into(),
                consumer: "post".into()
            }]
        );
        let [Step::Launch(l)] = &out.steps[..] else {
            panic!("one launch: {:?}", out.steps)
        };
        assert_eq!((l.kernel, l.block_dim), ("sum_post", 7));
        assert_eq!(l.args, ["p", "s", "x", "y"]);
        assert_eq!((l.stage, l.also), ("o_proj", &["hc_post"][..]));
        let names: Vec<&str> = out.kernels.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(names, ["sum_post"]);
        assert!(out.workspaces.is_empty(), "{:?}", out.workspaces);
    }

    /// An offer is declined, and both launches stay, when a step runs between them, another
    /// step binds the hand-over, the producer does not write it or it is no workspace (it
    /// must then reach GM).
    #[test]
    fn a_prologue_stays_apart_when_its_hand_over_is_needed_elsewhere() {
        let (sum, post, other) = (vector("sum"), vector("post"), vector("other"));
        let fused = vector("sum_post");
        let cases = [
            (
                vec![
                    launch("o_proj", &sum, 4, &["p", "s", "h"]),
                    launch("o_proj", &other, 4, &["q", "r"]),
                    launch("hc_post", &post, 3, &["h", "x", "y"]),
                ],
                "step 2 does not follow a launch of sum",
            ),
            (
                vec![
                    launch("o_proj", &sum, 4, &["p", "s", "h"]),
                    launch("hc_post", &post, 3, &["h", "x", "y"]),
                    launch("next", &other, 4, &["h", "r"]),
                ],
                "step 2 binds h, which would not reach GM",
            ),
        ];
        let unbound = [
            launch("o_proj", &sum, 4, &["p", "s", "o"]),
            launch("hc_post", &post, 3, &["h", "x", "y"]),
        ];
        let cases = cases
            .into_iter()
            .chain([(unbound.to_vec(), "sum does not bind h")]);
        for (steps, why) in cases {
            let n = steps.len();
            let mut p = plan(&[&sum, &post, &other], steps);
            p.workspaces.push(hand_over());
            p.prologues.push(offer(&sum, &post, &fused));
            let (out, decisions) = fuse(p, chip());
            assert_eq!(
                decisions,
                [Decision::Declines {
                    producer: "sum".into(),
                    consumer: "post".into(),
                    why: why.into()
                }]
            );
            assert_eq!(out.steps.len(), n);
            assert!(out.kernels.iter().all(|k| k.name != "sum_post"));
        }
        // a hand-over that is no workspace (an output of the layer) must reach GM
        let mut p = plan(
            &[&sum, &post],
            vec![
                launch("o_proj", &sum, 4, &["p", "s", "h"]),
                launch("hc_post", &post, 3, &["h", "x", "y"]),
            ],
        );
        p.prologues.push(offer(&sum, &post, &fused));
        let (out, decisions) = fuse(p, chip());
        assert!(
            matches!(&decisions[..], [Decision::Declines { why, .. }] if why.contains("not a workspace")),
            "{decisions:?}"
        );
        assert_eq!(out.steps.len(), 2);
    }
}
