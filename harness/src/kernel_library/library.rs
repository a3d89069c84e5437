//! A loaded sim library and kernel launches on raw GM byte buffers.

use std::collections::HashMap;
use std::ffi::{CString, c_char, c_void};
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use super::builder::{BuildSpec, build_library};
use super::error::SimError;
use super::ffi;
use super::timing::{ChipTiming, CoreTime, KernelTime, Pipe, TimedCall, intern};

/// Which cores a launch runs, as the host launch plan states it (dav-c220 topology).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CoreMode {
    /// `blockDim` vector cores.
    Aiv,
    /// `blockDim` cube cores.
    Aic,
    /// `blockDim` groups of one cube core and two vector cores (KERNEL_TYPE_MIX_AIC_1_2).
    Mix,
}

impl CoreMode {
    fn abi(self) -> u32 {
        match self {
            CoreMode::Aiv => 0,
            CoreMode::Aic => 1,
            CoreMode::Mix => 2,
        }
    }
}

/// Plain element types a GM buffer may be viewed as (no padding, any bit pattern valid).
pub trait GmElem: Copy + sealed::Sealed {}
mod sealed {
    pub trait Sealed {}
}
macro_rules! gm_elem {
    ($($t:ty),*) => {$(impl sealed::Sealed for $t {} impl GmElem for $t {})*};
}
gm_elem!(
    u8,
    i8,
    u16,
    i16,
    u32,
    i32,
    u64,
    i64,
    f32,
    f64,
    half::bf16,
    half::f16
);

/// One kernel argument: a GM buffer the kernel may access (bounds-checked by the sim).
pub struct GmArg<'a> {
    name: String,
    ptr: *mut u8,
    len: usize,
    warm: Option<&'a [u64]>,
    _borrow: PhantomData<&'a mut [u8]>,
}

impl<'a> GmArg<'a> {
    /// A named buffer; the name appears in trap messages.
    pub fn new<T: GmElem>(name: impl Into<String>, buf: &'a mut [T]) -> Self {
        GmArg {
            name: name.into(),
            ptr: buf.as_mut_ptr().cast::<u8>(),
            len: std::mem::size_of_val(buf),
            warm: None,
            _borrow: PhantomData,
        }
    }

    /// A buffer shared between concurrent launches (e.g. TP ranks writing disjoint parts).
    ///
    /// # Safety
    /// `ptr..ptr+len` must stay valid for the whole launch, and concurrent launches
    /// touching it must not race on the same bytes except through the kernels' atomics.
    pub unsafe fn from_raw(name: impl Into<String>, ptr: *mut u8, len: usize) -> GmArg<'static> {
        GmArg {
            name: name.into(),
            ptr,
            len,
            warm: None,
            _borrow: PhantomData,
        }
    }

    /// The buffer's L2 lines an earlier launch left in L2 (one bit per
    /// [`ChipTiming::l2_line_bytes`] of the buffer, bit i in word i / 64): the timeline
    /// serves reads of them at L2 speed (`harness/sim/include/sim/timing.h`).
    pub fn warm<'b>(self, lines: Option<&'b [u64]>) -> GmArg<'b>
    where
        'a: 'b,
    {
        GmArg {
            warm: lines,
            ..self
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}

/// Counters of one launch (all cores summed; peaks are the maximum over cores).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LaunchStats {
    /// Bytes moved from / to GM by DMA (DataCopy, DataCopyPad, ND2NZ, Fixpipe).
    pub gm_read_bytes: u64,
    pub gm_write_bytes: u64,
    /// Distinct GM bytes those transfers touched (each byte counted once per direction
    /// and buffer; what they leave in L2 is [`Launched::lines`], by L2 line).
    pub gm_distinct_read_bytes: u64,
    pub gm_distinct_write_bytes: u64,
    /// The launch's minimum: every value a GM byte holds read once and written once (a
    /// read counts unless the byte was read since it was last written, a write unless it
    /// was written since it was last read). Inputs read once and outputs written once, and
    /// a hand-off through GM (a mixed kernel's cube and vector parts meet only there on
    /// A2) once per value it carries, even through a reused buffer.
    /// `gm_bytes() / gm_min_bytes()` > 1 means re-reads or overwrites nobody read.
    pub gm_min_read_bytes: u64,
    pub gm_min_write_bytes: u64,
    /// Scalar GlobalTensor::GetValue / SetValue calls.
    pub scalar_gm_reads: u64,
    pub scalar_gm_writes: u64,
    /// Cube multiply-accumulates (m·n·k of each Mmad) by input type.
    pub mac_bf16: u64,
    pub mac_f16: u64,
    pub mac_f32: u64,
    pub mac_i8: u64,
    /// Active lanes of all vector instructions.
    pub vec_elem_ops: u64,
    /// Peak bytes allocated by TPipe per memory, maximum over cores.
    pub peak_ub: u64,
    pub peak_l1: u64,
    pub peak_l0a: u64,
    pub peak_l0b: u64,
    pub peak_l0c: u64,
}

impl LaunchStats {
    pub fn gm_bytes(&self) -> u64 {
        self.gm_read_bytes + self.gm_write_bytes
    }
    pub fn gm_distinct_bytes(&self) -> u64 {
        self.gm_distinct_read_bytes + self.gm_distinct_write_bytes
    }
    pub fn gm_min_bytes(&self) -> u64 {
        self.gm_min_read_bytes + self.gm_min_write_bytes
    }
    pub fn macs(&self) -> u64 {
        self.mac_bf16 + self.mac_f16 + self.mac_f32 + self.mac_i8
    }
}

/// DMA traffic of one GM argument of a launch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgTraffic {
    /// The argument's name (as given to [`GmArg`]).
    pub name: String,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub distinct_read_bytes: u64,
    pub distinct_write_bytes: u64,
    /// As [`LaunchStats::gm_min_read_bytes`], for this argument.
    pub min_read_bytes: u64,
    pub min_write_bytes: u64,
}

/// What the sim checks beyond values, bounds, alignment, capacities and protocol (those
/// are always on). The defaults model the device as the npu backend builds for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checks {
    /// The ordering sanitizer: pipe hazards inside a core and GM races between cores
    /// (harness/sim/include/sim/hazard.h). Turn it off for speed measurements only.
    pub hazards: bool,
    /// Model the compiler's `--cce-auto-sync=on` (the default of CANN's kernel build
    /// flows): it orders PIPE_V after PIPE_V and PIPE_S against V / MTE2 / MTE3 on AIV.
    pub auto_sync: bool,
    /// The modeled device time (`harness/sim/include/sim/timing.h`); it rides on the
    /// ordering checker, so it needs `hazards`.
    pub timeline: bool,
    /// With `timeline`: keep every call's interval (for a trace; memory grows with calls).
    pub trace: bool,
    /// With `timeline`: run a launch's cores one at a time in a fixed order (the
    /// lowest-numbered that can run, until it waits or ends), so the modeled time is the
    /// same on every run: the core that touches a GM byte first pays its HBM read
    /// (`timing.h`), and cores racing on threads would make that a race. One host thread at
    /// a time, so slower; `cost` turns it on.
    pub ordered: bool,
}

impl Default for Checks {
    fn default() -> Self {
        Checks {
            hazards: true,
            auto_sync: true,
            timeline: true,
            trace: false,
            ordered: false,
        }
    }
}

impl Checks {
    /// Only the always-on checks (for measuring the sanitizer's overhead).
    pub const UNCHECKED: Checks = Checks {
        hazards: false,
        auto_sync: true,
        timeline: false,
        trace: false,
        ordered: false,
    };

    fn bits(self) -> u32 {
        let bit = |on: bool, b: u32| if on { b } else { 0 };
        bit(self.hazards, ffi::CHECK_HAZARDS)
            | bit(self.auto_sync, ffi::CHECK_AUTO_SYNC)
            | bit(self.timeline, ffi::TIMELINE)
            | bit(self.trace, ffi::TRACE)
            | bit(self.ordered, ffi::ORDERED)
    }
}

/// What one launch measured: its counters, each argument's DMA traffic, and (with
/// [`Checks::timeline`]) its modeled device time.
#[derive(Debug, Clone, PartialEq)]
pub struct Launched {
    pub stats: LaunchStats,
    pub args: Vec<ArgTraffic>,
    /// Per argument, the L2 lines the launch touched (one bit each, as [`GmArg::warm`]
    /// takes them; empty without the timeline).
    pub lines: Vec<Vec<u64>>,
    pub time: Option<KernelTime>,
}

/// A compiled, loaded set of kernels.
pub struct SimLibrary {
    path: PathBuf,
    launch_fn: ffi::LaunchFn,
    chip: ChipTiming,
    lib: libloading::Library,
    checks: Checks,
}

impl SimLibrary {
    /// Compiles `spec` (or reuses the cached build) and loads it.
    pub fn build(spec: &BuildSpec) -> Result<SimLibrary, SimError> {
        SimLibrary::build_noting(spec, &mut |_| {})
    }

    /// [`SimLibrary::build`], telling `note` about a cache entry it replaced (damaged, or
    /// refused by the loader: then its message) before it rebuilds.
    pub fn build_noting(
        spec: &BuildSpec,
        note: &mut dyn FnMut(&str),
    ) -> Result<SimLibrary, SimError> {
        let cached = build_library(spec, None)?;
        if let Some(why) = &cached.replaced {
            note(&format!("{why}; rebuilt"));
        }
        match SimLibrary::load(&cached.path) {
            Err(SimError::Load { message, .. }) => {
                let again = build_library(spec, Some(&message))?;
                note(&format!("{}; rebuilt", again.replaced.unwrap_or_default()));
                SimLibrary::load(&again.path)
            }
            other => other,
        }
    }

    /// Loads an already built library.
    pub fn load(path: &Path) -> Result<SimLibrary, SimError> {
        let load_err = |e: libloading::Error| SimError::Load {
            path: path.to_path_buf(),
            message: e.to_string(),
        };
        // SAFETY: the library is one we built from the sim runtime; its initialisers are
        // plain C++ static initialisation.
        let lib = unsafe { libloading::Library::new(path) }.map_err(load_err)?;
        // SAFETY: symbol types match harness/sim/src/runtime.cpp (checked by the ABI version).
        let version =
            unsafe { lib.get::<ffi::AbiVersionFn>(b"sim_abi_version\0") }.map_err(load_err)?;
        let found = unsafe { version() };
        if found != ffi::ABI_VERSION {
            return Err(SimError::Load {
                path: path.to_path_buf(),
                message: format!(
                    "runtime ABI version {found}, this harness expects {}",
                    ffi::ABI_VERSION
                ),
            });
        }
        let launch_fn = *unsafe { lib.get::<ffi::LaunchFn>(b"sim_launch\0") }.map_err(load_err)?;
        let chip_fn =
            *unsafe { lib.get::<ffi::ChipTimingFn>(b"sim_chip_timing\0") }.map_err(load_err)?;
        let mut c = ffi::SimChipTiming::default();
        // SAFETY: fills the struct it is given (runtime.cpp).
        unsafe { chip_fn(&mut c) };
        Ok(SimLibrary {
            path: path.to_path_buf(),
            launch_fn,
            chip: ChipTiming {
                clock_hz: c.clock_hz,
                op_head_cycles: c.op_head_cycles,
                launch_gap: std::time::Duration::from_secs_f64(c.launch_gap_us * 1e-6),
                hccs_bytes_per_s: c.hccs_bytes_per_s,
                collective_latency: std::time::Duration::from_secs_f64(
                    c.collective_latency_us * 1e-6,
                ),
                l2_bytes: c.l2_bytes as u64,
                l2_line_bytes: c.l2_line_bytes as u64,
                shared_gm: (c.load_a, c.load_b),
                gm_peak_bytes_per_s: c.gm_peak_bytes_per_s,
            },
            lib,
            checks: Checks::default(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The checks later launches run with (default: [`Checks::default`]).
    pub fn with_checks(mut self, checks: Checks) -> Self {
        self.checks = checks;
        self
    }

    pub fn checks(&self) -> Checks {
        self.checks
    }

    /// The chip figures of the model this library was built with.
    pub fn chip_timing(&self) -> ChipTiming {
        self.chip
    }

    /// Runs `kernel` (an `extern "C"` kernel of this library taking one GM_ADDR per arg)
    /// on `block_dim` blocks and returns its counters; a trap comes back as an error.
    pub fn launch(
        &self,
        kernel: &str,
        mode: CoreMode,
        block_dim: u32,
        args: &mut [GmArg<'_>],
    ) -> Result<LaunchStats, SimError> {
        self.launch_measured(kernel, mode, block_dim, args)
            .map(|l| l.stats)
    }

    /// [`launch`](Self::launch), also returning the DMA traffic of each argument in order
    /// and the modeled time.
    pub fn launch_measured(
        &self,
        kernel: &str,
        mode: CoreMode,
        block_dim: u32,
        args: &mut [GmArg<'_>],
    ) -> Result<Launched, SimError> {
        let invalid = |message: String| SimError::InvalidLaunch {
            kernel: kernel.to_string(),
            message,
        };
        let cname = CString::new(kernel).map_err(|_| invalid("kernel name contains NUL".into()))?;
        // SAFETY: we only take the symbol's address; the runtime calls it with `args.len()`
        // GM_ADDR arguments, which is the kernel ABI of this crate's generated kernels.
        let sym = unsafe {
            self.lib
                .get::<unsafe extern "C" fn()>(cname.as_bytes_with_nul())
        }
        .map_err(|_| SimError::MissingKernel {
            kernel: kernel.to_string(),
            library: self.path.clone(),
        })?;
        let fn_ptr = *sym as *mut c_void;
        let names: Vec<CString> = args
            .iter()
            .map(|a| {
                CString::new(a.name.as_str())
                    .map_err(|_| invalid(format!("argument name {:?}", a.name)))
            })
            .collect::<Result<_, _>>()?;
        let timed = self.checks.hazards && self.checks.timeline;
        let line_words = |len: usize| (len as u64).div_ceil(self.chip.l2_line_bytes).div_ceil(64);
        if let Some(a) = args
            .iter()
            .find(|a| a.warm.is_some_and(|w| (w.len() as u64) < line_words(a.len)))
        {
            return Err(invalid(format!(
                "argument {:?}: its warm lines cover less than its {} bytes",
                a.name, a.len
            )));
        }
        // The L2 lines each argument's launch touches, for the next launches' warm lines.
        let mut lines: Vec<Vec<u64>> = args
            .iter()
            .map(|a| vec![0; if timed { line_words(a.len) as usize } else { 0 }])
            .collect();
        let raw: Vec<ffi::SimGmArg> = args
            .iter()
            .zip(&names)
            .zip(&mut lines)
            .map(|((a, n), l)| ffi::SimGmArg {
                ptr: a.ptr,
                len: a.len as u64,
                name: n.as_ptr(),
                warm: a.warm.map_or(std::ptr::null(), <[u64]>::as_ptr),
                lines: if timed {
                    l.as_mut_ptr()
                } else {
                    std::ptr::null_mut()
                },
            })
            .collect();
        let nargs = u32::try_from(raw.len()).map_err(|_| invalid("too many arguments".into()))?;
        let mut stats = ffi::SimStats::default();
        let mut traffic = vec![ffi::SimArgTraffic::default(); raw.len()];
        let per_block = if mode == CoreMode::Mix { 3 } else { 1 };
        let mut times = vec![ffi::SimCoreTiming::default(); block_dim as usize * per_block];
        let mut recorder = Recorder::default();
        let on_call: Option<ffi::CallFn> = self.checks.trace.then_some(record_call as ffi::CallFn);
        let mut err = vec![0u8; 16 * 1024];
        // SAFETY: every pointer outlives the call; buffers are exclusively borrowed (or
        // vouched for by `GmArg::from_raw`).
        let rc = unsafe {
            (self.launch_fn)(
                cname.as_ptr(),
                fn_ptr,
                mode.abi(),
                block_dim,
                self.checks.bits(),
                raw.as_ptr(),
                nargs,
                &mut stats,
                traffic.as_mut_ptr(),
                times.as_mut_ptr(),
                on_call,
                (&raw mut recorder).cast::<c_void>(),
                err.as_mut_ptr().cast::<c_char>(),
                err.len() as u64,
            )
        };
        let message = || {
            let end = err.iter().position(|&b| b == 0).unwrap_or(err.len());
            String::from_utf8_lossy(&err[..end]).into_owned()
        };
        match rc {
            ffi::LAUNCH_OK => Ok(Launched {
                stats: LaunchStats {
                    gm_read_bytes: stats.gm_read_bytes,
                    gm_write_bytes: stats.gm_write_bytes,
                    gm_distinct_read_bytes: stats.gm_distinct_read_bytes,
                    gm_distinct_write_bytes: stats.gm_distinct_write_bytes,
                    gm_min_read_bytes: stats.gm_min_read_bytes,
                    gm_min_write_bytes: stats.gm_min_write_bytes,
                    scalar_gm_reads: stats.scalar_gm_reads,
                    scalar_gm_writes: stats.scalar_gm_writes,
                    mac_bf16: stats.mac_bf16,
                    mac_f16: stats.mac_f16,
                    mac_f32: stats.mac_f32,
                    mac_i8: stats.mac_i8,
                    vec_elem_ops: stats.vec_elem_ops,
                    peak_ub: stats.peak_ub,
                    peak_l1: stats.peak_l1,
                    peak_l0a: stats.peak_l0a,
                    peak_l0b: stats.peak_l0b,
                    peak_l0c: stats.peak_l0c,
                },
                args: args
                    .iter()
                    .zip(&traffic)
                    .map(|(a, t)| ArgTraffic {
                        name: a.name.clone(),
                        read_bytes: t.read_bytes,
                        write_bytes: t.write_bytes,
                        distinct_read_bytes: t.distinct_read_bytes,
                        distinct_write_bytes: t.distinct_write_bytes,
                        min_read_bytes: t.min_read_bytes,
                        min_write_bytes: t.min_write_bytes,
                    })
                    .collect(),
                lines,
                time: timed.then(|| KernelTime {
                    chip: self.chip,
                    cores: times
                        .iter()
                        .map(|t| CoreTime {
                            aic: t.aic == 1,
                            end: u64::from(t.end),
                            busy: t.busy,
                            hbm_bytes: t.hbm_bytes,
                            l2_bytes: t.l2_bytes,
                        })
                        .collect(),
                    calls: recorder.calls,
                }),
            }),
            ffi::LAUNCH_TRAP => Err(SimError::Trap {
                kernel: kernel.to_string(),
                message: message(),
            }),
            _ => Err(invalid(message())),
        }
    }
}

/// The calls of a traced launch, and each API name's `'static` copy by the sim's pointer
/// (the names are literals: one lookup in the process-wide set per name, not per call).
#[derive(Default)]
struct Recorder {
    calls: Vec<TimedCall>,
    names: HashMap<usize, &'static str>,
}

/// The sim's `onCall`: appends one call to the [`Recorder`] behind `ctx`.
unsafe extern "C" fn record_call(
    ctx: *mut c_void,
    core: u32,
    pipe: u32,
    api: *const c_char,
    start: u32,
    cycles: u32,
) {
    // SAFETY: `ctx` is the `&mut Recorder` launch_measured passed, alive for the call (the
    // sim calls back on the launching thread, after its cores joined); `api` is a C string
    // literal of the sim.
    let r = unsafe { &mut *ctx.cast::<Recorder>() };
    let api = *r
        .names
        .entry(api as usize)
        .or_insert_with(|| intern(&unsafe { std::ffi::CStr::from_ptr(api) }.to_string_lossy()));
    r.calls.push(TimedCall {
        core,
        pipe: Pipe::from_index(pipe),
        api,
        start,
        cycles,
    });
}

/// Fills a GM buffer with 0xFF bytes (NaN in fp32/fp16/bf16, -1 in integers), so
/// outputs a kernel fails to write are visible.
pub fn poison<T: GmElem>(buf: &mut [T]) {
    // SAFETY: GmElem types are plain numbers: every byte pattern is a valid value.
    let bytes = unsafe {
        std::slice::from_raw_parts_mut(buf.as_mut_ptr().cast::<u8>(), std::mem::size_of_val(buf))
    };
    bytes.fill(0xFF);
}
