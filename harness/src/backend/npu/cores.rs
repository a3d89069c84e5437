//! Whether a device can run a plan's launches: every block of a launch must have its own
//! core (a mixed kernel's blocks meet in SyncAll and cross-core flags, so blocks queued
//! behind others would never be met). A vector kernel needs `blockDim` vector cores; a cube
//! or mixed kernel `blockDim` AI Cores (one per 1:2 group). The plan's chip comes from the
//! spec's `target`; a device with fewer cores (910B3/B4: 20 AI Cores) is refused by name.

use super::acl::DeviceCores;
use crate::backend::BackendError;
use abi::plan::{Cores, Kernel, Step, VariantPlan};

/// Refuses `plan`'s launches of `kernels` that `device` (with `cores`) cannot run, naming
/// each.
pub fn check(
    plan: &VariantPlan,
    kernels: &[Kernel],
    device: u32,
    cores: &DeviceCores,
) -> Result<(), BackendError> {
    let mut refused = Vec::new();
    for step in plan.steps {
        let Step::Launch(l) = step else { continue };
        if !kernels.iter().any(|k| k.name == l.kernel) {
            continue;
        }
        let (have, kind) = match l.cores {
            Cores::Aiv => (cores.aiv, "vector cores"),
            Cores::Aic | Cores::Mix => (cores.aic, "AI Cores"),
        };
        if l.block_dim > have {
            let what = match l.cores {
                Cores::Aiv => "vector",
                Cores::Aic => "cube",
                Cores::Mix => "mixed 1:2",
            };
            let line = format!(
                "  {stage}: the {what} kernel {kernel} on {bd} blocks needs {bd} {kind}",
                stage = l.stage,
                kernel = l.kernel,
                bd = l.block_dim,
            );
            if !refused.contains(&line) {
                refused.push(line);
            }
        }
    }
    if refused.is_empty() {
        return Ok(());
    }
    Err(BackendError::Unavailable(format!(
        "backend npu: device {device} is an {soc} with {aic} AI Cores and {aiv} vector cores; \
         {variant} was generated for target {target} ({paic} AI Cores, {paiv} vector cores) \
         and launches more blocks than this device has cores:\n{lines}\n\
         generate the variant for this chip (e.g. `target: 910b4` in its spec)",
        soc = cores.soc,
        aic = cores.aic,
        aiv = cores.aiv,
        variant = plan.name(),
        target = plan.chip.name,
        paic = plan.chip.aic_cores,
        paiv = plan.chip.aiv_cores,
        lines = refused.join("\n"),
    )))
}
