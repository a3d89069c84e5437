//! Filling a rank's [`Tiling`] words: from the runtime axes bound to a layer's inputs, or
//! field by field for a run of single stages.

use abi::tiling::{TILING_FIELDS, TILING_WORDS};

use super::buffers::Extents;
use super::error::RuntimeError;
use crate::backend::Tiling;

impl Tiling {
    /// The words of a rank of `tp`: the runtime axes by name (pool and table extents that
    /// are not bound stay 0) and `group_t = tp · t`.
    pub fn new(extents: &Extents, tp: usize) -> Tiling {
        let mut words = [0u32; TILING_WORDS];
        for (word, field) in words.iter_mut().zip(TILING_FIELDS) {
            let value = match field {
                "group_t" => tp * extents.t(),
                axis => extents.get(axis).unwrap_or(0),
            };
            *word = u32::try_from(value)
                .expect("runtime extents are bounded by the plan's u32 capacities");
        }
        Tiling { words }
    }

    /// Words with the named fields set and every other word 0: for a run of single stages,
    /// whose caller states the extents its kernels read (pool and table extents included)
    /// instead of binding them from a layer's inputs.
    pub fn from_fields(fields: &[(&str, usize)]) -> Result<Tiling, RuntimeError> {
        let mut words = [0u32; TILING_WORDS];
        for &(field, value) in fields {
            let bad = |why: &str| RuntimeError::Inputs(format!("tiling field `{field}`: {why}"));
            let i = TILING_FIELDS
                .iter()
                .position(|f| *f == field)
                .ok_or_else(|| bad("no such field in dsv4::TilingData"))?;
            words[i] = u32::try_from(value).map_err(|_| bad("does not fit a u32 word"))?;
        }
        Ok(Tiling { words })
    }
}
