//! The runtime extents every kernel receives as its `tiling` argument: 16 little-endian
//! u32 words in the layout of `dsv4::TilingData`
//! (`blocks/dsv4/tiling_data.h`; a test keeps the two in step).

/// The fields of `dsv4::TilingData`, in order; the remaining words are reserved (zero).
pub const TILING_FIELDS: [&str; 10] = [
    "t",
    "b",
    "nb",
    "group_t",
    "state_nb",
    "cmp_nb",
    "cmp_tw",
    "inner_state_nb",
    "idx_nb",
    "idx_tw",
];

pub const TILING_WORDS: usize = 16;
