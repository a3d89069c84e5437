//! Why a plan could not be prepared or run, with the exit code each reason gives.

use crate::backend::BackendError;

/// Why a plan could not be prepared or run.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error(
        "{variant}: stage {} has no kernels yet (missing: {})",
        stages[0],
        stages.join(", ")
    )]
    MissingStages {
        variant: &'static str,
        stages: Vec<&'static str>,
    },
    /// A generated kernel source is absent.
    #[error("{0}")]
    Sources(String),
    /// The plan contradicts itself (a bug in the generator or a template).
    #[error("plan: {0}")]
    Plan(String),
    /// The inputs do not match the plan's ABI.
    #[error("inputs: {0}")]
    Inputs(String),
    /// A run of single stages was asked for what it cannot do (a collective, a stage
    /// without launches).
    #[error("stages: {0}")]
    Stages(String),
    #[error(transparent)]
    Backend(#[from] BackendError),
    /// A step failed on a rank (a kernel trapped, a device call failed).
    #[error("rank {rank}, step {step} ({what}): {message}")]
    Step {
        rank: usize,
        step: usize,
        what: String,
        message: String,
    },
}

impl RuntimeError {
    /// 2 for what the user can fix by other arguments or setup, 1 for failures.
    pub fn exit_code(&self) -> u8 {
        match self {
            RuntimeError::MissingStages { .. }
            | RuntimeError::Sources(_)
            | RuntimeError::Inputs(_)
            | RuntimeError::Stages(_)
            | RuntimeError::Backend(BackendError::Unavailable(_)) => 2,
            _ => 1,
        }
    }
}
