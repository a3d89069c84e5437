//! A rank's buffers: the ABI tensors of the plan and its workspaces, their runtime
//! extents, their initial contents, and the outputs read back after a run.
//!
//! Inputs (and in/out pools) are bound at the extent the caller's tensors have; outputs
//! and workspaces are allocated at capacity (every runtime axis at its bound) and
//! poisoned (`backend::poison`: NaN in float types, −128 bytes in integer ones), so an element a kernel fails to
//! write shows up in the comparison, and rows beyond the runtime extent that a kernel
//! writes by mistake are caught by [`Collected::stray`]. A run of single stages binds
//! the caller's tensors of any role by name and allocates the rest the same way
//! ([`for_stages`]).

use abi::plan::VariantPlan;
use abi::{DType, Dim, Dir, TensorDecl};
use tensor::{Tensor, TensorMap};

use super::error::RuntimeError;
use crate::backend::poison;

/// What a buffer is to a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Input,
    /// A pool: an input whose updated contents are an output.
    InOut,
    Output,
    Workspace,
}

/// One buffer of a rank.
#[derive(Debug, Clone, Copy)]
pub struct BufferSpec {
    pub decl: &'static TensorDecl,
    pub role: Role,
}

/// Every buffer a rank holds, indexed by id: the ABI tensors in order, then the workspaces.
#[derive(Debug, Clone)]
pub struct Layout {
    specs: Vec<BufferSpec>,
}

impl Layout {
    pub fn of(plan: &VariantPlan) -> Result<Layout, RuntimeError> {
        let abi = plan.abi.tensors.iter().map(|decl| BufferSpec {
            decl,
            role: match decl.dir {
                Dir::In => Role::Input,
                Dir::InOut => Role::InOut,
                Dir::Out => Role::Output,
            },
        });
        let work = plan.workspaces.iter().map(|decl| BufferSpec {
            decl,
            role: Role::Workspace,
        });
        let specs: Vec<BufferSpec> = abi.chain(work).collect();
        for (i, s) in specs.iter().enumerate() {
            if specs[..i].iter().any(|o| o.decl.name == s.decl.name) {
                return Err(RuntimeError::Plan(format!(
                    "{}: buffer `{}` is declared twice",
                    plan.name(),
                    s.decl.name
                )));
            }
        }
        Ok(Layout { specs })
    }

    pub fn id(&self, name: &str) -> Option<usize> {
        self.specs.iter().position(|s| s.decl.name == name)
    }

    pub fn spec(&self, id: usize) -> &BufferSpec {
        &self.specs[id]
    }

    pub fn len(&self) -> usize {
        self.specs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.specs.is_empty()
    }

    /// Ids of the buffers a run reads back: outputs and pools, then the workspaces named
    /// in `probes`.
    pub fn results(&self, probes: &[&str]) -> Result<Vec<usize>, RuntimeError> {
        let mut ids: Vec<usize> = (0..self.specs.len())
            .filter(|&i| matches!(self.specs[i].role, Role::Output | Role::InOut))
            .collect();
        for &name in probes {
            match self.id(name) {
                Some(id) if self.specs[id].role == Role::Workspace => ids.push(id),
                _ => {
                    return Err(RuntimeError::Plan(format!(
                        "probe `{name}` is not a workspace of the plan"
                    )));
                }
            }
        }
        Ok(ids)
    }
}

/// The runtime axes of one run (the same on every rank), bound from the inputs' shapes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extents {
    values: Vec<(&'static str, usize)>,
}

impl Extents {
    pub fn get(&self, axis: &str) -> Option<usize> {
        self.values
            .iter()
            .find(|(n, _)| *n == axis)
            .map(|(_, v)| *v)
    }

    /// Tokens per rank.
    pub fn t(&self) -> usize {
        self.get("t").unwrap_or(0)
    }

    /// Binds every runtime axis from the input tensors (reference names, with a leading
    /// `[tp]` axis at TP > 1) and checks dtypes, shapes and capacities; `b` defaults to
    /// `t / decode_seq` where no tensor binds it.
    pub fn bind(
        plan: &VariantPlan,
        layout: &Layout,
        inputs: &TensorMap,
    ) -> Result<Extents, RuntimeError> {
        let tp = plan.abi.tp;
        let mut values: Vec<(&'static str, usize, &'static str)> = Vec::new();
        for s in layout.specs.iter() {
            if !matches!(s.role, Role::Input | Role::InOut) {
                continue;
            }
            let d = s.decl;
            let bad = |why: String| RuntimeError::Inputs(format!("tensor `{}`: {why}", d.name));
            let tensor = inputs
                .get(d.name)
                .map_err(|_| bad("missing from the inputs".into()))?;
            let shape = per_rank_shape(tensor, tp).map_err(bad)?;
            check_tensor(plan, d, tensor.dtype(), shape)?;
            for (&n, dim) in shape.iter().zip(d.shape) {
                let Dim::Var(axis) = *dim else {
                    continue;
                };
                match values.iter().find(|(a, _, _)| *a == axis) {
                    Some(&(_, v, by)) if v != n => {
                        return Err(bad(format!("axis {axis} is {n} here but {v} in `{by}`")));
                    }
                    Some(_) => {}
                    None => values.push((axis, n, d.name)),
                }
            }
        }
        let mut values: Vec<(&'static str, usize)> =
            values.into_iter().map(|(a, v, _)| (a, v)).collect();
        let t = values
            .iter()
            .find(|(a, _)| *a == "t")
            .map(|(_, v)| *v)
            .ok_or_else(|| RuntimeError::Plan(format!("{}: no input binds axis t", plan.name())))?;
        let seq = plan.deployment.decode_seq;
        if t % 8 != 0 || t % seq != 0 {
            return Err(RuntimeError::Inputs(format!(
                "{t} tokens per rank: the kernels need a multiple of 8 and of decode_seq={seq}"
            )));
        }
        if !values.iter().any(|(a, _)| *a == "b") {
            values.push(("b", t / seq));
        }
        Ok(Extents { values })
    }

    /// The shape of `decl` at these extents.
    pub fn shape(&self, decl: &TensorDecl) -> Vec<usize> {
        decl.shape
            .iter()
            .map(|d| match *d {
                Dim::Const(n) => n,
                Dim::Var(a) => self.get(a).unwrap_or(0),
            })
            .collect()
    }
}

/// Checks a tensor's dtype and per-rank shape against `decl`: the rank, every constant
/// extent, and every runtime axis within [1, its capacity].
fn check_tensor(
    plan: &VariantPlan,
    decl: &TensorDecl,
    dtype: DType,
    shape: &[usize],
) -> Result<(), RuntimeError> {
    let bad = |why: String| RuntimeError::Inputs(format!("tensor `{}`: {why}", decl.name));
    if dtype != decl.dtype {
        return Err(bad(format!(
            "dtype {}, the plan expects {}",
            dtype.name(),
            decl.dtype.name()
        )));
    }
    if shape.len() != decl.shape.len() {
        return Err(bad(format!(
            "shape {:?} (per rank) has rank {}, the plan declares {}",
            shape,
            shape.len(),
            describe(decl.shape)
        )));
    }
    for (&n, dim) in shape.iter().zip(decl.shape) {
        match *dim {
            Dim::Const(m) if m != n => {
                return Err(bad(format!(
                    "shape {:?} (per rank), the plan declares {}",
                    shape,
                    describe(decl.shape)
                )));
            }
            Dim::Const(_) => {}
            Dim::Var(axis) => {
                let max = axis_max(plan, axis)?;
                if n == 0 || n > max {
                    return Err(bad(format!(
                        "axis {axis} = {n} is outside the plan's capacity [1, {max}]"
                    )));
                }
            }
        }
    }
    Ok(())
}

fn axis_max(plan: &VariantPlan, axis: &str) -> Result<usize, RuntimeError> {
    plan.abi
        .axes
        .iter()
        .find(|a| a.name == axis)
        .map(|a| a.max)
        .ok_or_else(|| RuntimeError::Plan(format!("{}: axis {axis} has no capacity", plan.name())))
}

/// `decl`'s shape with every runtime axis at its capacity.
pub fn capacity_shape(plan: &VariantPlan, decl: &TensorDecl) -> Result<Vec<usize>, RuntimeError> {
    decl.shape
        .iter()
        .map(|d| match *d {
            Dim::Const(n) => Ok(n),
            Dim::Var(a) => axis_max(plan, a),
        })
        .collect()
}

fn describe(shape: &[Dim]) -> String {
    let parts: Vec<String> = shape
        .iter()
        .map(|d| match d {
            Dim::Const(n) => n.to_string(),
            Dim::Var(v) => (*v).to_string(),
        })
        .collect();
    format!("[{}]", parts.join(", "))
}

/// The per-rank shape of a (`[tp]`-stacked at TP > 1) tensor.
fn per_rank_shape(t: &Tensor, tp: usize) -> Result<&[usize], String> {
    if tp == 1 {
        return Ok(t.shape());
    }
    match t.shape().split_first() {
        Some((&lead, rest)) if lead == tp => Ok(rest),
        _ => Err(format!(
            "shape {:?} lacks the leading [tp = {tp}] rank axis",
            t.shape()
        )),
    }
}

/// Rank `rank`'s initial buffer contents, by id: its slice of every input, and every
/// output and workspace at capacity, poisoned.
pub fn initial(
    plan: &VariantPlan,
    layout: &Layout,
    inputs: &TensorMap,
    rank: usize,
) -> Result<Vec<Vec<u8>>, RuntimeError> {
    let tp = plan.abi.tp;
    layout
        .specs
        .iter()
        .map(|s| match s.role {
            Role::Input | Role::InOut => {
                let bytes = inputs
                    .get(s.decl.name)
                    .map_err(|e| RuntimeError::Inputs(e.to_string()))?
                    .as_le_bytes();
                let n = bytes.len() / tp;
                Ok(bytes[rank * n..(rank + 1) * n].to_vec())
            }
            Role::Output | Role::Workspace => {
                let shape = capacity_shape(plan, s.decl)?;
                Ok(vec![
                    poison(s.decl.dtype);
                    shape.iter().product::<usize>() * s.decl.dtype.size()
                ])
            }
        })
        .collect()
}

/// One rank's buffers for a run of single stages.
pub struct StageBuffers {
    /// Initial contents by id; empty for the buffers no launch binds.
    pub initial: Vec<Vec<u8>>,
    /// The shapes of the bound buffers, in the order of their ids as given.
    pub shapes: Vec<Vec<usize>>,
}

/// The buffers `ids` a run of single stages binds: the caller's tensor of each name
/// (checked against its declaration; a runtime axis may be below its capacity), every other
/// one at capacity, poisoned. A tensor that names none of `ids` is an error.
pub fn for_stages(
    plan: &VariantPlan,
    layout: &Layout,
    ids: &[usize],
    tensors: &TensorMap,
) -> Result<StageBuffers, RuntimeError> {
    for name in tensors.names() {
        if !layout.id(name).is_some_and(|id| ids.contains(&id)) {
            return Err(RuntimeError::Inputs(format!(
                "tensor `{name}` is no argument of the stages' launches"
            )));
        }
    }
    let mut initial = vec![Vec::new(); layout.len()];
    let mut shapes = Vec::with_capacity(ids.len());
    for &id in ids {
        let decl = layout.spec(id).decl;
        match tensors.get(decl.name) {
            Ok(t) => {
                check_tensor(plan, decl, t.dtype(), t.shape())?;
                initial[id] = t.as_le_bytes().to_vec();
                shapes.push(t.shape().to_vec());
            }
            Err(_) => {
                let shape = capacity_shape(plan, decl)?;
                initial[id] =
                    vec![poison(decl.dtype); shape.iter().product::<usize>() * decl.dtype.size()];
                shapes.push(shape);
            }
        }
    }
    Ok(StageBuffers { initial, shapes })
}

/// The outputs of a run, stacked over ranks like the inputs.
#[derive(Debug, Clone, PartialEq)]
pub struct Collected {
    /// Every output at its runtime extent and every pool.
    pub outputs: TensorMap,
    /// The probed workspaces at their runtime extent.
    pub probes: TensorMap,
    /// Outputs a kernel wrote beyond the runtime extent (rows ≥ t must stay poisoned),
    /// as `"x_out on rank 1: 4096 bytes"`.
    pub stray: Vec<String>,
}

/// Assembles the outputs and probes from each rank's read-back buffers (`(id, bytes)` of
/// the `ids` of [`Layout::results`]).
pub fn collect(
    plan: &VariantPlan,
    layout: &Layout,
    extents: &Extents,
    ids: &[usize],
    per_rank: Vec<Vec<(usize, Vec<u8>)>>,
) -> Result<Collected, RuntimeError> {
    let tp = plan.abi.tp;
    let mut outputs = TensorMap::new();
    let mut probes = TensorMap::new();
    let mut stray = Vec::new();
    for &id in ids {
        let s = layout.spec(id);
        let shape = extents.shape(s.decl);
        let es = s.decl.dtype.size();
        let mut bytes = Vec::new();
        for (rank, bufs) in per_rank.iter().enumerate() {
            let (_, data) = bufs.iter().find(|(i, _)| *i == id).ok_or_else(|| {
                RuntimeError::Plan(format!(
                    "{} was not read back from rank {rank}",
                    s.decl.name
                ))
            })?;
            if s.role == Role::InOut {
                bytes.extend_from_slice(data);
                continue;
            }
            let cap = capacity_shape(plan, s.decl)?;
            let start = bytes.len();
            copy_block(data, &cap, &shape, es, &mut bytes);
            let written = |b: &[u8]| b.iter().filter(|&&x| x != poison(s.decl.dtype)).count();
            let outside = written(data) - written(&bytes[start..]);
            // A workspace may hold rows past the extent (scratch); an output may not.
            if outside > 0 && s.role == Role::Output {
                stray.push(format!(
                    "{} on rank {rank}: {outside} byte(s) written beyond the runtime extent {shape:?}",
                    s.decl.name
                ));
            }
        }
        let mut full = if tp > 1 { vec![tp] } else { Vec::new() };
        full.extend(&shape);
        let tensor = Tensor::from_le_bytes(s.decl.dtype, full, &bytes)
            .map_err(|e| RuntimeError::Plan(format!("{}: {e}", s.decl.name)))?;
        match s.role {
            Role::Workspace => probes.insert(s.decl.name, tensor),
            _ => outputs.insert(s.decl.name, tensor),
        };
    }
    Ok(Collected {
        outputs,
        probes,
        stray,
    })
}

/// Appends the leading `run` block of a row-major `cap`-shaped buffer to `out`.
fn copy_block(src: &[u8], cap: &[usize], run: &[usize], es: usize, out: &mut Vec<u8>) {
    let Some((&n, inner)) = run.split_first() else {
        out.extend_from_slice(&src[..es]);
        return;
    };
    let stride = cap[1..].iter().product::<usize>() * es;
    if cap[1..] == *inner {
        out.extend_from_slice(&src[..n * stride]);
        return;
    }
    for i in 0..n {
        copy_block(&src[i * stride..], &cap[1..], inner, es, out);
    }
}

#[cfg(test)]
mod tests {
    use super::copy_block;

    #[test]
    fn copy_block_takes_the_leading_corner() {
        // a 3 x 4 buffer of bytes, run extent 2 x 3
        let src: Vec<u8> = (0..12).collect();
        let mut out = Vec::new();
        copy_block(&src, &[3, 4], &[2, 3], 1, &mut out);
        assert_eq!(out, [0, 1, 2, 4, 5, 6]);
        let mut rows = Vec::new();
        copy_block(&src, &[3, 4], &[2, 4], 1, &mut rows);
        assert_eq!(rows, (0..8).collect::<Vec<u8>>());
    }
}
