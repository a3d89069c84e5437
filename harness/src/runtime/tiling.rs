//! The runtime extents every kernel receives as its `tiling` argument: 16 little-endian
//! u32 words in the layout of `dsv4::TilingData`
//! (`templates/ascendc/include/dsv4/tiling_data.h`; a test keeps the two in step).

use abi::tiling::{TILING_FIELDS, TILING_WORDS};

use super::RuntimeError;
use super::buffers::Extents;

/// One rank's tiling words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tiling {
    words: [u32; TILING_WORDS],
}

impl Tiling {
    /// The words for `rank` of `tp`: the runtime axes by name (pool and table extents
    /// that are not bound stay 0), `tp_rank`, `group_t = tp · t` and the global device
    /// index of TP rank 0.
    pub fn new(extents: &Extents, rank: usize, tp: usize, group_base: u32) -> Tiling {
        let mut words = [0u32; TILING_WORDS];
        for (word, field) in words.iter_mut().zip(TILING_FIELDS) {
            let value = match field {
                "tp_rank" => rank,
                "group_t" => tp * extents.t(),
                "group_base" => group_base as usize,
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

    pub fn get(&self, field: &str) -> Option<u32> {
        TILING_FIELDS
            .iter()
            .position(|f| *f == field)
            .map(|i| self.words[i])
    }

    pub fn to_bytes(&self) -> [u8; 4 * TILING_WORDS] {
        let mut out = [0u8; 4 * TILING_WORDS];
        for (chunk, w) in out.chunks_exact_mut(4).zip(self.words) {
            chunk.copy_from_slice(&w.to_le_bytes());
        }
        out
    }
}
