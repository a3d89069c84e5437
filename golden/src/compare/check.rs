//! One output's comparison: which comparator, with which thresholds, and the two rule
//! shapes the layers use.

use super::elementwise::ratio_allclose;
use super::report::{Report, Rule};
use crate::tensor::TensorMap;

/// One output's comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    pub output: &'static str,
    pub rule: Rule,
}

impl Check {
    /// `ratio_reldiff` with the reference's 0.8 % share and a cap of 1.
    pub fn reldiff(output: &'static str, diff_thd: f32) -> Check {
        Check {
            output,
            rule: Rule::RelDiff {
                diff_thd,
                pct_thd: 0.008,
                max_diff_hd: 1.0,
            },
        }
    }

    /// All-close with an allowance of bad elements (a pool through its slot mapping, or an
    /// intermediate as a whole).
    pub fn all_close(output: &'static str, atol: f32, rtol: f32, max_error_ratio: f64) -> Check {
        Check {
            output,
            rule: Rule::AllClose {
                atol,
                rtol,
                max_error_ratio,
            },
        }
    }

    /// This all-close check on a whole tensor of `got` against `want`.
    pub fn whole(&self, got: &TensorMap, want: &TensorMap) -> Report {
        let Rule::AllClose {
            atol,
            rtol,
            max_error_ratio,
        } = self.rule
        else {
            unreachable!("whole tensors are compared element by element")
        };
        match (got.get(self.output), want.get(self.output)) {
            (Ok(g), Ok(w)) => ratio_allclose(self.output, g, w, atol, rtol, max_error_ratio),
            _ => Report::broken(
                self.output,
                self.rule.clone(),
                "not probed from the run".into(),
            ),
        }
    }
}
