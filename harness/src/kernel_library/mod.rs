//! Kernel libraries on the sim (the CPU model of the Ascend C API, `harness/sim`): generated
//! kernels compile with the host C++ compiler against `harness/sim/include` (our own
//! implementation of the API subset, same names and signatures as CANN's headers) into a
//! shared library, cached, loaded at run time and launched here with raw GM byte buffers.
//!
//! ```no_run
//! use harness::kernel_library::{BuildSpec, CoreMode, GmArg, SimLibrary};
//! let lib = SimLibrary::build(&BuildSpec::new(["kernels/add.cpp"])).unwrap();
//! let (mut x, mut y) = (vec![0u8; 1024], vec![0u8; 1024]);
//! let stats = lib
//!     .launch("add_kernel", CoreMode::Aiv, 4, &mut [GmArg::new("x", &mut x), GmArg::new("y", &mut y)])
//!     .unwrap();
//! println!("{} GM bytes read", stats.gm_read_bytes);
//! ```

mod builder;
mod error;
mod ffi;
mod library;
mod timing;

pub use builder::{BuildSpec, model_include_dir};
pub use error::SimError;
pub use library::{
    ArgTraffic, Checks, CoreMode, GmArg, GmElem, LaunchStats, Launched, SimLibrary, poison,
};
pub use timing::{ChipTiming, CoreTime, KernelTime, Pipe, TimedCall};
