//! The result of comparing one output.

use std::fmt;

use super::spread::Spread;
use crate::tensor::unravel;

/// The rule an output was compared with.
#[derive(Debug, Clone, PartialEq)]
pub enum Rule {
    /// `ratio_reldiff(diff_thd, pct_thd, max_diff_hd)`.
    RelDiff {
        diff_thd: f32,
        pct_thd: f64,
        max_diff_hd: f64,
    },
    /// `ratio_allclose(atol, rtol, max_error_ratio)` (mapped rows of a pool, or whole).
    AllClose {
        atol: f32,
        rtol: f32,
        max_error_ratio: f64,
    },
    /// Top-k index sets with score-tie tolerance.
    TopK { atol: f32, rtol: f32 },
}

/// One of the worst elements.
#[derive(Debug, Clone, PartialEq)]
pub struct Worst {
    pub flat: usize,
    pub index: Vec<usize>,
    pub got: f64,
    pub want: f64,
}

/// Pass/fail and error figures of one output.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub output: String,
    pub pass: bool,
    pub rule: Rule,
    /// Elements (or rows, for top-k) compared.
    pub numel: usize,
    pub bad: usize,
    pub allowed: usize,
    pub max_abs: f64,
    /// RelDiff: the worst per-point rdiff (compared with the cap).
    /// AllClose: the worst |got − want| / |want| over nonzero wants.
    pub max_rel: f64,
    /// Up to 5 elements, worst first.
    pub worst: Vec<Worst>,
    /// Why it failed beyond the counts (NaN/Inf, a changed unmapped row, a
    /// broken mapping, the cap), if it did.
    pub reason: Option<String>,
    /// Where the bad elements sit (element-wise rules; not top-k sets).
    pub spread: Option<Spread>,
}

impl Report {
    /// A structural failure before any numeric comparison.
    pub fn broken(output: &str, rule: Rule, reason: String) -> Report {
        Report {
            output: output.into(),
            pass: false,
            rule,
            numel: 0,
            bad: 0,
            allowed: 0,
            max_abs: 0.0,
            max_rel: 0.0,
            worst: Vec::new(),
            reason: Some(reason),
            spread: None,
        }
    }

    /// The multi-line form: the summary line, the rule, the worst elements.
    pub fn detail(&self) -> String {
        let mut s = format!("{self}\n    rule: {}", self.rule);
        for w in &self.worst {
            s.push_str(&format!(
                "\n    [{}] {:?}  got {:.8e}  want {:.8e}",
                w.flat, w.index, w.got, w.want
            ));
        }
        s
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rule::RelDiff {
                diff_thd,
                pct_thd,
                max_diff_hd,
            } => write!(
                f,
                "ratio_reldiff(diff_thd={diff_thd}, pct_thd={pct_thd}, max_diff_hd={max_diff_hd})"
            ),
            Rule::AllClose {
                atol,
                rtol,
                max_error_ratio,
            } => write!(
                f,
                "ratio_allclose(atol={atol}, rtol={rtol}, max_error_ratio={max_error_ratio})"
            ),
            Rule::TopK { atol, rtol } => {
                write!(f, "top-k sets, score ties within atol={atol} rtol={rtol}")
            }
        }
    }
}

/// `x_out  PASS  bad 12/8388608 (allowed 67109)  max|d| 1.9e-3  max rel 2.1e-3 (cap 1)`
impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}  {}  bad {}/{} (allowed {})  max|d| {:.1e}  max rel {:.1e}",
            self.output,
            if self.pass { "PASS" } else { "FAIL" },
            self.bad,
            self.numel,
            self.allowed,
            self.max_abs,
            self.max_rel
        )?;
        if let Rule::RelDiff { max_diff_hd, .. } = self.rule {
            write!(f, " (cap {max_diff_hd})")?;
        }
        if let Some(reason) = &self.reason {
            write!(f, "  — {reason}")?;
        }
        Ok(())
    }
}

/// Keeps the `N` elements with the largest badness.
pub(super) struct WorstList {
    items: Vec<(f64, usize, f64, f64)>,
}

pub(super) const WORST: usize = 5;

impl WorstList {
    pub fn new() -> Self {
        WorstList { items: Vec::new() }
    }

    pub fn offer(&mut self, badness: f64, flat: usize, got: f64, want: f64) {
        let badness = if badness.is_nan() {
            f64::INFINITY
        } else {
            badness
        };
        if self.items.len() == WORST && badness <= self.items[WORST - 1].0 {
            return;
        }
        let at = self.items.partition_point(|e| e.0 >= badness);
        self.items.insert(at, (badness, flat, got, want));
        self.items.truncate(WORST);
    }

    pub fn into_worst(self, shape: &[usize]) -> Vec<Worst> {
        self.items
            .into_iter()
            .map(|(_, flat, got, want)| Worst {
                flat,
                index: unravel(flat, shape),
                got,
                want,
            })
            .collect()
    }
}
