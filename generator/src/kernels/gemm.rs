//! The cube matmul kernel the projection stages share (GM → L1 → L0A/L0B → Mmad →
//! Fixpipe → GM), specialised on dtypes, layouts and the static extents.
