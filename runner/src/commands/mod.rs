//! The runner's commands (`run`, `cost`, `bench`: one module each, with its arguments) and
//! what they share: choosing the plan, the devices and the backend.

pub mod bench;
pub mod cost;
pub mod run;

use std::path::{Path, PathBuf};

use abi::plan::VariantPlan;
use clap::Args;
use golden::LayerSpec;
use golden::compare::layer_probes;
use harness::backend::{BackendKind, BackendOptions, KernelSources, Progress};
use harness::runtime::{Runtime, RuntimeError, RuntimeOptions};

use crate::stop::Stop;
use crate::{progress, variant};

/// Where a layer runs.
#[derive(Args)]
pub struct Placement {
    /// sim (the CPU model) or npu (CANN; `bench` then measures the device's own time).
    #[arg(long, default_value = "sim")]
    pub backend: String,
    /// npu: device ids, one per rank (default 0,…,TP−1).
    #[arg(
        short = 'd',
        long = "devices",
        value_name = "0,1,…",
        allow_hyphen_values = true
    )]
    pub devices: Option<String>,
}

pub fn cwd() -> PathBuf {
    std::env::current_dir().unwrap_or_default()
}

/// The device ids of `-d` (default 0,…,tp−1): integers, no duplicates, one per rank.
pub fn devices(text: Option<&str>, tp: usize) -> Result<Vec<u32>, Stop> {
    let Some(text) = text else {
        return Ok((0..tp as u32).collect());
    };
    let mut ids = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let id: u32 = part.parse().map_err(|_| {
            Stop::usage(format!(
                "-d/--devices: `{part}` is not a device id (a non-negative integer)"
            ))
        })?;
        if ids.contains(&id) {
            return Err(Stop::usage(format!(
                "-d/--devices: device {id} is listed twice"
            )));
        }
        ids.push(id);
    }
    if ids.len() != tp {
        return Err(Stop::usage(format!(
            "-d/--devices lists {} device(s) but --tp {tp} needs one per rank",
            ids.len()
        )));
    }
    Ok(ids)
}

/// The plan's kernels built on `backend`, after checking the plan can run at all.
pub fn prepare(
    plan: &'static VariantPlan,
    backend: BackendKind,
    devices: &[u32],
    options: impl Into<BackendOptions>,
    verbose: bool,
) -> Result<Runtime, Stop> {
    let backend = backend.create(devices, options.into());
    let spec = variant::layer_spec(plan).map_err(Stop::usage)?;
    let options = RuntimeOptions {
        progress: Progress::to(progress::stderr(plan.name(), verbose)),
        probes: layer_probes(&spec),
    };
    let sources = KernelSources::in_repo(&variant::repo_root());
    Ok(Runtime::prepare(plan, backend.as_ref(), &sources, options)?)
}

/// Fails early (before fixtures and builds) when the plan has stages without kernels.
fn require_kernels(plan: &'static VariantPlan) -> Result<(), Stop> {
    if plan.missing.is_empty() {
        Ok(())
    } else {
        Err(RuntimeError::MissingStages {
            variant: plan.name(),
            stages: plan.missing.to_vec(),
        }
        .into())
    }
}

pub fn target(
    layer: &str,
    tp: usize,
    spec: Option<&Path>,
) -> Result<(&'static VariantPlan, LayerSpec), Stop> {
    let plan = variant::select(layer, tp, spec, &cwd()).map_err(Stop::usage)?;
    // A draft's stages without kernels first: its dims may be ones the golden refuses too.
    require_kernels(plan)?;
    let spec = variant::layer_spec(plan).map_err(Stop::fail)?;
    Ok((plan, spec))
}

/// Refuses the npu backend's execution modes elsewhere and together.
pub fn npu_modes(backend: BackendKind, sync_each: bool, graph: bool) -> Result<(), Stop> {
    if sync_each && backend != BackendKind::Npu {
        return Err(Stop::usage(
            "--sync-each synchronises the npu backend's stream after every step; the sim has no stream",
        ));
    }
    if graph && backend != BackendKind::Npu {
        return Err(Stop::usage(
            "--graph replays a captured ACL graph on the npu backend; the sim runs each launch itself",
        ));
    }
    if graph && sync_each {
        return Err(Stop::usage(
            "--graph and --sync-each exclude each other: a replayed graph runs its steps without the host",
        ));
    }
    Ok(())
}

/// `path` for run 1, and `path` with `.run<n>` before its extension for run n > 1.
pub fn nth_file(path: &Path, n: usize) -> PathBuf {
    if n == 1 {
        return path.to_path_buf();
    }
    let stem = path.file_stem().unwrap_or_default().to_string_lossy();
    let name = match path.extension() {
        Some(ext) => format!("{stem}.run{n}.{}", ext.to_string_lossy()),
        None => format!("{stem}.run{n}"),
    };
    path.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_lists_follow_the_reference_cli_rules() {
        assert_eq!(devices(None, 2).unwrap(), [0, 1]);
        assert_eq!(devices(Some("3, 5"), 2).unwrap(), [3, 5]);
        for (text, why) in [
            ("0,x", "`x` is not a device id"),
            ("0,-1", "`-1` is not a device id"),
            ("1,1", "device 1 is listed twice"),
            ("0", "lists 1 device(s) but --tp 2"),
        ] {
            let e = devices(Some(text), 2).unwrap_err();
            assert_eq!(e.code, 2);
            assert!(e.message.contains(why), "{text}: {}", e.message);
        }
    }
}
