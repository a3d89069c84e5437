//! Comparators with the reference's semantics and thresholds
//! (golden/validation.py; swa.md §5, hca_csa.md §8.2–8.3). Each returns a
//! [`Report`]: pass/fail, error figures, the bad-point count against its
//! allowance, and the worst elements.

mod check;
mod elementwise;
mod layer;
mod mapped_pool;
mod report;
pub mod spread;
mod topk;

pub use check::Check;
pub use elementwise::{allowance, ratio_allclose, ratio_reldiff};
pub use layer::{Judged, compare_layer, judge_layer, layer_checks, layer_probes};
pub use mapped_pool::{MappedPool, mapped_pool};
pub use report::{Report, Rule, Worst};
pub use spread::Spread;
pub use topk::{topk_rows, topk_sets};
