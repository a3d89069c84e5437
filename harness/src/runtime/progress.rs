//! Progress of long steps, one line each on stderr (`[swa_tp2] building kernels…`,
//! `[swa_tp2 rank 0] o_proj 2/4 group_quant_…`). Off in tests.

#[derive(Debug, Clone)]
pub struct Progress {
    label: Option<String>,
}

impl Progress {
    /// Lines prefixed with `[label]`.
    pub fn stderr(label: impl Into<String>) -> Progress {
        Progress {
            label: Some(label.into()),
        }
    }

    pub fn quiet() -> Progress {
        Progress { label: None }
    }

    pub fn note(&self, message: &str) {
        if let Some(l) = &self.label {
            eprintln!("[{l}] {message}");
        }
    }

    pub fn rank_note(&self, rank: usize, message: &str) {
        if let Some(l) = &self.label {
            eprintln!("[{l} rank {rank}] {message}");
        }
    }
}
