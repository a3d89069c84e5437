//! Choosing the generated plan a command runs (`--layer`, `--tp`, `--spec`) and mapping
//! its constants onto the golden's own description of the layer
//! ([`golden::LayerSpec`]), which stays independent of generated code.

use std::path::{Component, Path, PathBuf};

use abi::plan::VariantPlan;
use golden::{
    CsaDims, CsaState, Dims, HcaDims, LayerKind, LayerSpec, RopeProfile, RopeTable, Yarn,
};

use crate::generated::VARIANTS;

/// The repository this runner was built in.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("runner lives one level below the workspace root")
        .to_path_buf()
}

/// The generated plan called `name` (`<spec name>_tp<N>`).
pub fn by_name(name: &str) -> Option<&'static VariantPlan> {
    VARIANTS.iter().find(|p| p.name() == name)
}

/// The layer kinds the generated plans implement, in first-seen order.
pub fn layers() -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for p in VARIANTS {
        if !out.contains(&p.abi.layer) {
            out.push(p.abi.layer);
        }
    }
    out
}

/// The plan of `layer` at `tp` from `spec` (a path as given on the command line, relative
/// to `cwd`; default `specs/<layer>.yaml`). Errors are one line for the user.
pub fn select(
    layer: &str,
    tp: usize,
    spec: Option<&Path>,
    cwd: &Path,
) -> Result<&'static VariantPlan, String> {
    let layers = layers();
    if !layers.contains(&layer) {
        return Err(format!(
            "unknown layer `{layer}` (expected {})",
            layers.join(", ")
        ));
    }
    let root = repo_root();
    let rel = match spec {
        None => format!("specs/{layer}.yaml"),
        Some(p) => spec_path(&root, cwd, p)?,
    };
    let of_spec: Vec<&'static VariantPlan> =
        VARIANTS.iter().filter(|p| p.spec.path == rel).collect();
    let Some(first) = of_spec.first() else {
        return Err(format!(
            "{rel} has no generated variants; run `cargo xtask gen`"
        ));
    };
    if first.abi.layer != layer {
        return Err(format!(
            "--layer {layer}, but {rel} describes a {} layer",
            first.abi.layer
        ));
    }
    let text = std::fs::read(root.join(&rel)).map_err(|e| format!("{rel}: {e}"))?;
    if abi::short_hash(&text) != first.spec.hash {
        return Err(format!(
            "generated/ is stale for {rel} (the spec changed since it was generated); run `cargo xtask gen`"
        ));
    }
    of_spec
        .iter()
        .find(|p| p.abi.tp == tp)
        .copied()
        .ok_or_else(|| {
            let tps: Vec<String> = of_spec.iter().map(|p| p.abi.tp.to_string()).collect();
            format!(
                "TP {tp} is not generated for {rel} (its spec lists tp: [{}])",
                tps.join(", ")
            )
        })
}

/// `p` (relative to `cwd`) as a `/`-separated path relative to `root`.
fn spec_path(root: &Path, cwd: &Path, p: &Path) -> Result<String, String> {
    let full = cwd.join(p);
    let found = full
        .canonicalize()
        .map_err(|_| format!("--spec {}: no such file", p.display()))?;
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let rel = found
        .strip_prefix(&root)
        .map_err(|_| format!("--spec {} is not a file of this repository", p.display()))?;
    let parts: Vec<String> = rel
        .components()
        .filter_map(|c| match c {
            Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect();
    Ok(parts.join("/"))
}

/// The golden's description of the layer a plan implements.
pub fn layer_spec(p: &VariantPlan) -> Result<LayerSpec, String> {
    let (m, d) = (&p.model, &p.deployment);
    let dims = Dims {
        hidden: m.hidden,
        heads: m.heads,
        head_dim: m.head_dim,
        rope_dim: m.rope_dim,
        q_lora: m.q_lora_rank,
        o_lora: m.o_lora_rank,
        o_groups: m.o_groups,
        hc_mult: m.hc_mult,
        hc_sinkhorn_iters: m.hc_sinkhorn_iters,
        rms_eps: m.rms_eps,
        hc_eps: m.hc_eps,
        window: m.window,
        decode_batch: d.decode_batch,
        seq: d.decode_seq,
        block_size: d.block_size,
        kv_pool_blocks: d.kv_pool_blocks,
        max_seq_len: d.max_positions,
        rope: RopeProfile {
            theta: m.rope_theta,
            yarn: m.yarn.map(|y| Yarn {
                factor: y.factor,
                beta_fast: y.beta_fast,
                beta_slow: y.beta_slow,
                original_max_pos: y.original_max_positions,
            }),
        },
        // Token-local rows have a runtime axis; the whole table has max_positions rows.
        rope_table: match p.buffer("freqs_cos").map(|t| t.shape[0]) {
            Some(abi::Dim::Var(_)) => RopeTable::PerToken,
            _ => RopeTable::Positions,
        },
        tp: d.tp,
    };
    let missing = |what: &str| format!("{}: a {} plan without {what}", p.name(), p.abi.layer);
    let kind = match p.abi.layer {
        "swa" => LayerKind::Swa,
        "hca" => {
            let c = p.compressor.ok_or_else(|| missing("a compressor"))?;
            LayerKind::Hca(HcaDims {
                ratio: c.ratio,
                state_block: c.state_block_size,
                state_pool_blocks: c.state_pool_blocks,
                cmp_pool_blocks: c.cmp_pool_blocks,
            })
        }
        "csa" => {
            let c = p.compressor.ok_or_else(|| missing("a compressor"))?;
            let i = p.indexer.ok_or_else(|| missing("an indexer"))?;
            LayerKind::Csa(CsaDims {
                state: if c.state_ring {
                    CsaState::Ring
                } else {
                    CsaState::Paged
                },
                ratio: c.ratio,
                state_block: c.state_block_size,
                state_pool_blocks: c.state_pool_blocks,
                inner_state_pool_blocks: i.inner_state_pool_blocks,
                cmp_pool_blocks: c.cmp_pool_blocks,
                idx_pool_blocks: i.key_pool_blocks,
                index_heads: i.heads,
                index_head_dim: i.head_dim,
                index_topk: i.topk,
            })
        }
        other => return Err(format!("{}: unknown layer {other}", p.name())),
    };
    let spec = LayerSpec { dims, kind };
    spec.validate()
        .map_err(|e| format!("{}: the golden cannot run these dims: {e}", p.name()))?;
    Ok(spec)
}
