//! Resolving a plan's TP collectives against a rank's buffer layout into the
//! [`Exchange`]s backends execute (`crate::backend::exchange`).

use abi::plan::{Step, VariantPlan};

use super::buffers::{Layout, capacity_shape};
use super::error::RuntimeError;
use crate::backend::{Exchange, Pattern};

/// Resolves a collective step; `None` for a launch.
pub fn resolve(
    plan: &VariantPlan,
    layout: &Layout,
    step: &Step,
) -> Result<Option<Exchange>, RuntimeError> {
    let (src, dst, pattern) = match *step {
        Step::Launch(_) => return Ok(None),
        Step::GroupAllToAll {
            src,
            dst,
            local_groups,
            src_slab_rows,
            dst_slab_rows,
        } => (
            src,
            dst,
            Pattern::GroupAllToAll {
                local_groups,
                src_slab_rows,
                dst_slab_rows,
            },
        ),
        Step::TokenScatter { src, dst } => (src, dst, Pattern::TokenScatter),
    };
    let bad = |why: String| {
        RuntimeError::Plan(format!(
            "{}: {} {src} → {dst}: {why}",
            plan.name(),
            step.stage()
        ))
    };
    let rows_of = |name: &str| -> Result<(usize, usize, usize), RuntimeError> {
        let id = layout
            .id(name)
            .ok_or_else(|| bad(format!("`{name}` is neither an ABI tensor nor a workspace")))?;
        let decl = layout.spec(id).decl;
        let shape = capacity_shape(plan, decl)?;
        let rows = shape.first().copied().unwrap_or(1);
        let bytes = shape.iter().product::<usize>() * decl.dtype.size();
        Ok((id, rows, bytes / rows.max(1)))
    };
    let (src_id, src_rows, src_row_bytes) = rows_of(src)?;
    let (dst_id, dst_rows, dst_row_bytes) = rows_of(dst)?;
    if src_id == dst_id {
        return Err(bad("source and destination are the same buffer".into()));
    }
    if src_row_bytes != dst_row_bytes {
        return Err(bad(format!(
            "rows of {src_row_bytes} and {dst_row_bytes} bytes"
        )));
    }
    let tp = plan.abi.tp;
    if let Pattern::GroupAllToAll {
        local_groups,
        src_slab_rows,
        dst_slab_rows,
    } = pattern
        && (src_rows < tp * local_groups * src_slab_rows || dst_rows < local_groups * dst_slab_rows)
    {
        return Err(bad(format!(
            "{src_rows} and {dst_rows} rows cannot hold {} groups of {src_slab_rows} and {local_groups} of {dst_slab_rows} rows",
            tp * local_groups
        )));
    }
    Ok(Some(Exchange {
        pattern,
        src: src_id,
        dst: dst_id,
        row_bytes: src_row_bytes,
        src_rows,
        dst_rows,
    }))
}
