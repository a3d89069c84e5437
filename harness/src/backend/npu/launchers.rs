//! The built kernel library's `dsv4_launch_<kernel>` entry points (one per kernel,
//! [`super::build`] writes them), loaded once per build.

use std::ffi::c_void;
use std::path::Path;

use super::acl::Stream;
use super::build;
use crate::backend::BackendError;
use abi::plan::Kernel;

/// `dsv4_launch_<kernel>(blockDim, stream, args)`: the `<<<>>>` launch and its
/// `aclrtGetLastError` status.
pub(super) type LaunchFn = unsafe extern "C" fn(u32, Stream, *mut *mut c_void) -> i32;

/// The `dsv4_launch_<kernel>` entry points of the built library.
pub(super) struct Launchers {
    fns: Vec<(&'static str, LaunchFn)>,
    _lib: libloading::Library,
}

impl Launchers {
    pub(super) fn load(path: &Path, kernels: &[Kernel]) -> Result<Launchers, BackendError> {
        let err = |e: libloading::Error| BackendError::Build(format!("{}: {e}", path.display()));
        // SAFETY: the library was built from our launcher sources; each exported launcher
        // has the LaunchFn signature (build::launcher).
        unsafe {
            let lib = libloading::Library::new(path).map_err(err)?;
            let mut fns = Vec::with_capacity(kernels.len());
            for k in kernels {
                let symbol = build::launcher_symbol(k.name);
                let f: LaunchFn = *lib.get(symbol.as_bytes()).map_err(err)?;
                fns.push((k.name, f));
            }
            Ok(Launchers { fns, _lib: lib })
        }
    }

    pub(super) fn get(&self, kernel: &str) -> Result<LaunchFn, BackendError> {
        self.fns
            .iter()
            .find(|(n, _)| *n == kernel)
            .map(|(_, f)| *f)
            .ok_or_else(|| BackendError::Run(format!("no launcher for kernel {kernel}")))
    }
}
