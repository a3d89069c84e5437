//! A variant (one spec at one TP degree) through the passes, in order:
//! spec → [`validate`](crate::validate) → [`derive`](crate::derive) (plan and stage list
//! per TP degree) → [`stages::plan_kernels`] (kernel plan). Rendering reads the result.

use crate::budget;
use crate::derive;
use crate::diag::{Diagnostics, SpecError};
use crate::kernel_plan::{KernelPlan, Step, fuse};
use crate::plan::Plan;
use crate::stages::{self, Spec, StagePlan};
use crate::validate::{self, Validated};

/// One variant, planned.
#[derive(Debug, Clone)]
pub struct Variant {
    pub plan: Plan,
    /// Execution order; the TP collectives are left out at TP 1, where they are identity.
    pub stages: Vec<StagePlan>,
    /// The kernels the stages launch, in order, and the per-rank workspaces between
    /// them (the only buffers besides the ABI: the TP collectives move rows between
    /// workspaces, so the reference's exchange windows are not planned).
    pub kernels: KernelPlan,
}

impl Variant {
    pub fn stage(&self, name: &str) -> Option<&StagePlan> {
        self.stages.iter().find(|s| s.name() == name)
    }
}

/// Validates `spec` and plans one variant per TP degree, in the order of its `tp` list.
pub fn build(spec: &Spec) -> Result<Vec<Variant>, Vec<SpecError>> {
    let mut diags = Diagnostics::new(&spec.path, &spec.text);
    let Some(base) = validate::check(spec, &mut diags) else {
        return Err(diags.errors);
    };
    let planned: Vec<(Plan, Vec<StagePlan>)> = base
        .tp
        .iter()
        .filter_map(|tp| derive::for_tp(spec, &base, tp, &mut diags))
        .collect();
    // Kernels are planned from valid plans only: a refused value would only repeat its error.
    if !diags.is_clean() {
        return Err(diags.errors);
    }
    let variants: Vec<Variant> = planned
        .into_iter()
        .map(|(plan, stages)| {
            let mut kernels = stages::plan_kernels(&plan, &stages);
            // Checked as the stages planned them: fusion puts kernels side by side, and
            // each block still holds one stage kernel's buffers.
            check_budgets(&base, &kernels, &mut diags);
            if plan.fuse {
                kernels = fuse::fuse(kernels, plan.chip).0;
            }
            Variant {
                kernels,
                plan,
                stages,
            }
        })
        .collect();
    check_planned(&base, &variants, &mut diags);
    if diags.is_clean() {
        Ok(variants)
    } else {
        Err(diags.errors)
    }
}

/// Every launched kernel's buffers (the sizes its `InitBuffer` calls receive; a fused
/// kernel's are its parts', held as `Kernel::bytes_in` says) fit each on-chip memory of the
/// chip, and move GM rows it can align; reported at the stage's tiling.
fn check_budgets(base: &Validated, kernels: &KernelPlan, d: &mut Diagnostics) {
    for step in &kernels.steps {
        let Step::Launch(launch) = step else {
            continue;
        };
        let kernel = kernels
            .kernels
            .iter()
            .find(|k| k.name == launch.kernel)
            .expect("a launched kernel is planned");
        let stage = base
            .stages
            .iter()
            .find(|s| s.params.name() == launch.stage)
            .expect("a launch belongs to a stage of the spec");
        let label = format!("{} kernel {}", launch.stage, kernel.name);
        let buffers = kernel.all_buffers();
        let used = |mem| kernel.bytes_in(mem, base.chip);
        for e in budget::check(&label, &buffers, used, stage.pad_unaligned, base.chip) {
            d.error(stage.tiling_loc, e.message, e.rule);
        }
    }
}

/// Every stage of a spec has kernels at every TP degree, or the spec says `draft: true`
/// (and then some stage has none: a draft that is complete says so too).
fn check_planned(base: &Validated, variants: &[Variant], d: &mut Diagnostics) {
    const RULE: &str = "every stage has kernels; a knowingly incomplete spec says `draft: true`";
    // One error per stage and reason, naming the TP degrees it holds at.
    let mut unplanned: Vec<(&str, &str, Vec<usize>)> = Vec::new();
    for v in variants {
        for u in &v.kernels.missing {
            match unplanned
                .iter_mut()
                .find(|(s, r, _)| *s == u.stage && *r == u.reason)
            {
                Some((_, _, tps)) => tps.push(v.plan.shape.tp),
                None => unplanned.push((u.stage, &u.reason, vec![v.plan.shape.tp])),
            }
        }
    }
    match base.draft {
        Some(_) if !unplanned.is_empty() => {}
        Some(loc) => d.error(
            loc,
            "the spec is marked draft but every stage has kernels",
            "`draft: true` marks a spec with stages that have no kernels yet",
        ),
        None => {
            for (stage, reason, tps) in unplanned {
                let st = base
                    .stages
                    .iter()
                    .find(|s| s.params.name() == stage)
                    .expect("a planned stage is in the spec");
                let tps: Vec<String> = tps.iter().map(usize::to_string).collect();
                d.error(
                    st.loc,
                    format!(
                        "stage {stage} has no kernels at TP {}: {reason}",
                        tps.join(", ")
                    ),
                    RULE,
                );
            }
        }
    }
}
