//! The runtime extents every kernel receives as its `tiling` argument: 16 little-endian
//! u32 words in the layout of `dsv4::TilingData`
//! (`blocks/dsv4/tiling_data.h`; a test keeps the two in step). The
//! runtime fills them (`crate::runtime::tiling`); a backend passes the bytes on.

use abi::tiling::{TILING_FIELDS, TILING_WORDS};

/// One rank's tiling words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tiling {
    pub(crate) words: [u32; TILING_WORDS],
}

impl Tiling {
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
