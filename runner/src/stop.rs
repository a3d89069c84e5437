//! How a command stops early: an exit code and one line for the user.

use harness::runtime::RuntimeError;

/// Exit code 2: bad arguments or an environment that cannot run the request; 1: a failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stop {
    pub code: u8,
    pub message: String,
}

impl Stop {
    pub fn usage(message: impl Into<String>) -> Stop {
        Stop {
            code: 2,
            message: message.into(),
        }
    }

    pub fn fail(message: impl Into<String>) -> Stop {
        Stop {
            code: 1,
            message: message.into(),
        }
    }
}

impl From<RuntimeError> for Stop {
    fn from(e: RuntimeError) -> Stop {
        Stop {
            code: e.exit_code(),
            message: e.to_string(),
        }
    }
}
