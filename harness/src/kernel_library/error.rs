//! Errors of building, loading and launching sim kernels.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("sim build: cannot run the C++ compiler `{compiler}`: {source}")]
    Compiler {
        compiler: String,
        source: std::io::Error,
    },
    /// The compiler rejected a translation unit; `diagnostics` is its output (file:line: ...).
    #[error("sim build: compiling {} failed\n  command: {command}\n{diagnostics}", file.display())]
    Compile {
        file: PathBuf,
        command: String,
        diagnostics: String,
    },
    #[error("sim build: linking {} failed\n  command: {command}\n{diagnostics}", output.display())]
    Link {
        output: PathBuf,
        command: String,
        diagnostics: String,
    },
    #[error("sim build: {} : {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("sim: cannot load {}: {message}", path.display())]
    Load { path: PathBuf, message: String },
    #[error("sim: kernel `{kernel}` is not exported by {}", library.display())]
    MissingKernel { kernel: String, library: PathBuf },
    /// A kernel trapped (bad access, protocol misuse, deadlock): the message names the
    /// kernel, the core, the API call and the buffer.
    #[error("{message}")]
    Trap { kernel: String, message: String },
    #[error("sim: invalid launch of `{kernel}`: {message}")]
    InvalidLaunch { kernel: String, message: String },
}

impl SimError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        SimError::Io {
            path: path.into(),
            source,
        }
    }
}
