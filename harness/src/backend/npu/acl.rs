//! The ACL runtime calls the `npu` backend makes, loaded from `libascendcl.so` at run time
//! (signatures: ascendc.md §B.3, CANN's acl_rt.h and acl_mdl.h). The model-capture calls
//! are optional: a toolkit without them refuses only graph replay ([`Acl::capture`]).
//! Every call's status is checked; a failure
//! names the call, the ACL error code and the runtime's recent-error message
//! (`aclGetRecentErrMsg`, as the asc-devkit samples print it).
//!
//! ACL is initialised once per process and cannot be initialised again after
//! `aclFinalize` (acl.h), so the library lives in a process-wide [`Acl::get`]: `aclInit`
//! on first use, `aclFinalize` at process exit, after every kernel library it served has
//! been closed (each closes with its last run's kernels).

use std::ffi::{CStr, CString, c_char, c_void};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use crate::backend::BackendError;

/// `aclrtMemMallocPolicy::ACL_MEM_MALLOC_HUGE_FIRST`.
const MALLOC_HUGE_FIRST: i32 = 0;
/// `aclrtMemcpyKind`.
const MEMCPY_HOST_TO_DEVICE: i32 = 1;
const MEMCPY_DEVICE_TO_HOST: i32 = 2;
/// `aclrtDevAttr`: AI Core (cube) and vector core counts.
const DEV_ATTR_AICORE_CORE_NUM: i32 = 101;
const DEV_ATTR_VECTOR_CORE_NUM: i32 = 201;

/// `aclmdlRICaptureMode::ACL_MODEL_RI_CAPTURE_MODE_THREAD_LOCAL`: the capturing thread may
/// not make unsafe calls (synchronous copies); the other ranks' threads may.
const CAPTURE_THREAD_LOCAL: i32 = 1;
/// `aclrtEventRecordedStatus::ACL_EVENT_RECORDED_STATUS_COMPLETE`.
const EVENT_COMPLETE: i32 = 1;

/// The first CANN whose ACL documents the model-capture API (`aclmdlRICaptureBegin`, …;
/// marked experimental there).
pub const CAPTURE_CANN: &str = "8.1.RC1";

pub type Stream = *mut c_void;
pub type Event = *mut c_void;
/// A captured model run instance (`aclmdlRI`).
pub type Graph = *mut c_void;

type InitFn = unsafe extern "C" fn(*const c_char) -> i32;
type FinalizeFn = unsafe extern "C" fn() -> i32;
type RecentErrFn = unsafe extern "C" fn() -> *const c_char;
type SocNameFn = unsafe extern "C" fn() -> *const c_char;
type DeviceInfoFn = unsafe extern "C" fn(u32, i32, *mut i64) -> i32;
type DeviceFn = unsafe extern "C" fn(i32) -> i32;
type CreateStreamFn = unsafe extern "C" fn(*mut Stream) -> i32;
type StreamFn = unsafe extern "C" fn(Stream) -> i32;
type SyncTimeoutFn = unsafe extern "C" fn(Stream, i32) -> i32;
type MallocFn = unsafe extern "C" fn(*mut *mut c_void, usize, i32) -> i32;
type FreeFn = unsafe extern "C" fn(*mut c_void) -> i32;
type MemcpyFn = unsafe extern "C" fn(*mut c_void, usize, *const c_void, usize, i32) -> i32;
type CreateEventFn = unsafe extern "C" fn(*mut Event) -> i32;
type EventFn = unsafe extern "C" fn(Event) -> i32;
type RecordEventFn = unsafe extern "C" fn(Event, Stream) -> i32;
type QueryEventFn = unsafe extern "C" fn(Event, *mut i32) -> i32;
type ElapsedFn = unsafe extern "C" fn(*mut f32, Event, Event) -> i32;
type CaptureBeginFn = unsafe extern "C" fn(Stream, i32) -> i32;
type CaptureEndFn = unsafe extern "C" fn(Stream, *mut Graph) -> i32;
type ExecuteFn = unsafe extern "C" fn(Graph, Stream) -> i32;
type GraphFn = unsafe extern "C" fn(Graph) -> i32;

/// ACL's model-capture calls (acl_mdl.h), present from CANN [`CAPTURE_CANN`].
pub(crate) struct Capture {
    begin: CaptureBeginFn,
    end: CaptureEndFn,
    execute: ExecuteFn,
    destroy: GraphFn,
}

/// The loaded ACL library.
pub struct Acl {
    path: PathBuf,
    finalize: FinalizeFn,
    recent_err: RecentErrFn,
    soc_name: SocNameFn,
    device_info: DeviceInfoFn,
    set_device: DeviceFn,
    reset_device: DeviceFn,
    create_stream: CreateStreamFn,
    destroy_stream: StreamFn,
    synchronize_timeout: SyncTimeoutFn,
    malloc: MallocFn,
    free: FreeFn,
    memcpy: MemcpyFn,
    create_event: CreateEventFn,
    destroy_event: EventFn,
    record_event: RecordEventFn,
    query_event: QueryEventFn,
    elapsed: ElapsedFn,
    capture: Option<Capture>,
    _lib: libloading::Library,
}

/// What a device offers a launch, as `aclrtGetSocName` / `aclrtGetDeviceInfo` report it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceCores {
    pub soc: String,
    /// AI Cores: cube cores, one per mixed group.
    pub aic: u32,
    pub aiv: u32,
}

/// The process's ACL, initialised by the first [`Acl::get`].
static PROCESS: Mutex<Option<&'static Acl>> = Mutex::new(None);

unsafe extern "C" {
    fn atexit(f: extern "C" fn()) -> i32;
}

extern "C" fn finalize_at_exit() {
    let acl = *PROCESS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(acl) = acl {
        // SAFETY: the process is exiting; nothing uses ACL after this.
        let status = unsafe { (acl.finalize)() };
        if status != 0 {
            eprintln!("{}", acl.error("aclFinalize", status));
        }
    }
}

impl Acl {
    /// The process's ACL from `path`: loaded and initialised on first use (one `aclInit`
    /// per process; `aclFinalize` runs at exit).
    pub(crate) fn get(path: &Path) -> Result<&'static Acl, BackendError> {
        let mut process = PROCESS.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(acl) = *process {
            if acl.path != path {
                return Err(BackendError::Unavailable(format!(
                    "backend npu: this process initialised ACL from {}; it cannot switch to {}",
                    acl.path.display(),
                    path.display()
                )));
            }
            return Ok(acl);
        }
        let (acl, init) = Acl::load(path)?;
        let none = CString::default();
        // SAFETY: an empty config path means "no config file".
        let status = unsafe { init(none.as_ptr()) };
        if status != 0 {
            return Err(acl.error("aclInit", status));
        }
        let acl: &'static Acl = Box::leak(Box::new(acl));
        *process = Some(acl);
        // SAFETY: registers a plain extern "C" function.
        unsafe { atexit(finalize_at_exit) };
        Ok(acl)
    }

    fn load(path: &Path) -> Result<(Acl, InitFn), BackendError> {
        let unavailable = |e: libloading::Error| {
            BackendError::Unavailable(format!("backend npu: cannot load {}: {e}", path.display()))
        };
        // SAFETY: loading CANN's runtime library runs its initialisers, which is how every
        // ACL program starts; the symbols below are declared with ACL's C signatures.
        unsafe {
            let lib = libloading::Library::new(path).map_err(unavailable)?;
            macro_rules! sym {
                ($name:literal) => {
                    *lib.get(concat!($name, "\0").as_bytes())
                        .map_err(unavailable)?
                };
            }
            let init: InitFn = sym!("aclInit");
            let optional = |name: &[u8]| lib.get::<*const c_void>(name).is_ok();
            let capture = if optional(b"aclmdlRICaptureBegin\0") {
                Some(Capture {
                    begin: sym!("aclmdlRICaptureBegin"),
                    end: sym!("aclmdlRICaptureEnd"),
                    execute: sym!("aclmdlRIExecuteAsync"),
                    destroy: sym!("aclmdlRIDestroy"),
                })
            } else {
                None
            };
            let acl = Acl {
                path: path.to_path_buf(),
                finalize: sym!("aclFinalize"),
                recent_err: sym!("aclGetRecentErrMsg"),
                soc_name: sym!("aclrtGetSocName"),
                device_info: sym!("aclrtGetDeviceInfo"),
                set_device: sym!("aclrtSetDevice"),
                reset_device: sym!("aclrtResetDevice"),
                create_stream: sym!("aclrtCreateStream"),
                destroy_stream: sym!("aclrtDestroyStream"),
                synchronize_timeout: sym!("aclrtSynchronizeStreamWithTimeout"),
                malloc: sym!("aclrtMalloc"),
                free: sym!("aclrtFree"),
                memcpy: sym!("aclrtMemcpy"),
                create_event: sym!("aclrtCreateEvent"),
                destroy_event: sym!("aclrtDestroyEvent"),
                record_event: sym!("aclrtRecordEvent"),
                query_event: sym!("aclrtQueryEventStatus"),
                elapsed: sym!("aclrtEventElapsedTime"),
                capture,
                _lib: lib,
            };
            Ok((acl, init))
        }
    }

    /// The runtime's most recent error message on this thread, if it has one.
    pub(crate) fn recent_error(&self) -> Option<String> {
        // SAFETY: returns null or a NUL-terminated string owned by ACL, copied at once.
        let p = unsafe { (self.recent_err)() };
        (!p.is_null())
            .then(|| {
                unsafe { CStr::from_ptr(p) }
                    .to_string_lossy()
                    .trim()
                    .to_string()
            })
            .filter(|m| !m.is_empty())
    }

    /// `call` failed with `status`: the error, with the runtime's message.
    pub(crate) fn error(&self, call: &str, status: i32) -> BackendError {
        let detail = self
            .recent_error()
            .map(|m| format!(": {m}"))
            .unwrap_or_default();
        BackendError::Run(format!("{call} failed with ACL error {status}{detail}"))
    }

    fn check(&self, call: &str, status: i32) -> Result<(), BackendError> {
        if status == 0 {
            Ok(())
        } else {
            Err(self.error(call, status))
        }
    }

    /// The SoC and core counts of `device`.
    pub(crate) fn cores(&self, device: u32) -> Result<DeviceCores, BackendError> {
        // SAFETY: returns null or a NUL-terminated string owned by ACL.
        let p = unsafe { (self.soc_name)() };
        if p.is_null() {
            return Err(self.error("aclrtGetSocName", -1));
        }
        // SAFETY: non-null, NUL-terminated (above).
        let soc = unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
        let attr = |attr: i32, call: &str| -> Result<u32, BackendError> {
            let mut v = 0i64;
            // SAFETY: ACL writes one i64.
            self.check(call, unsafe { (self.device_info)(device, attr, &mut v) })?;
            Ok(u32::try_from(v).unwrap_or(0))
        };
        Ok(DeviceCores {
            soc,
            aic: attr(
                DEV_ATTR_AICORE_CORE_NUM,
                "aclrtGetDeviceInfo(ACL_DEV_ATTR_AICORE_CORE_NUM)",
            )?,
            aiv: attr(
                DEV_ATTR_VECTOR_CORE_NUM,
                "aclrtGetDeviceInfo(ACL_DEV_ATTR_VECTOR_CORE_NUM)",
            )?,
        })
    }

    /// Binds the calling thread to `device`.
    pub(crate) fn set_device(&self, device: u32) -> Result<(), BackendError> {
        // SAFETY: plain call with a device id.
        self.check("aclrtSetDevice", unsafe {
            (self.set_device)(device as i32)
        })
    }

    pub(crate) fn reset_device(&self, device: u32) -> Result<(), BackendError> {
        // SAFETY: plain call with a device id.
        self.check("aclrtResetDevice", unsafe {
            (self.reset_device)(device as i32)
        })
    }

    pub(crate) fn create_stream(&self) -> Result<Stream, BackendError> {
        let mut s: Stream = std::ptr::null_mut();
        // SAFETY: ACL writes the new stream handle into `s`.
        self.check("aclrtCreateStream", unsafe { (self.create_stream)(&mut s) })?;
        Ok(s)
    }

    pub(crate) fn destroy_stream(&self, s: Stream) -> Result<(), BackendError> {
        // SAFETY: `s` came from create_stream and is not used afterwards.
        self.check("aclrtDestroyStream", unsafe { (self.destroy_stream)(s) })
    }

    /// Waits for `s`'s work, at most `timeout`.
    pub(crate) fn synchronize(&self, s: Stream, timeout: Duration) -> Result<(), BackendError> {
        let ms = i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX);
        // SAFETY: `s` is a live stream of the current device.
        self.check("aclrtSynchronizeStreamWithTimeout", unsafe {
            (self.synchronize_timeout)(s, ms)
        })
    }

    /// Device memory of `len` bytes (at least one byte is allocated).
    pub(crate) fn malloc(&self, len: usize) -> Result<*mut c_void, BackendError> {
        let mut p: *mut c_void = std::ptr::null_mut();
        // SAFETY: ACL writes the allocation into `p`.
        self.check("aclrtMalloc", unsafe {
            (self.malloc)(&mut p, len.max(1), MALLOC_HUGE_FIRST)
        })?;
        Ok(p)
    }

    pub(crate) fn free(&self, p: *mut c_void) -> Result<(), BackendError> {
        // SAFETY: `p` came from malloc and is not used afterwards.
        self.check("aclrtFree", unsafe { (self.free)(p) })
    }

    /// Copies host bytes to device memory of at least `src.len()` bytes.
    pub(crate) fn upload(&self, dst: *mut c_void, src: &[u8]) -> Result<(), BackendError> {
        if src.is_empty() {
            return Ok(());
        }
        // SAFETY: `dst` is a device allocation of at least src.len() bytes.
        self.check("aclrtMemcpy (host to device)", unsafe {
            (self.memcpy)(
                dst,
                src.len(),
                src.as_ptr().cast(),
                src.len(),
                MEMCPY_HOST_TO_DEVICE,
            )
        })
    }

    /// Copies `len` bytes of device memory back to the host.
    pub(crate) fn download(&self, src: *mut c_void, len: usize) -> Result<Vec<u8>, BackendError> {
        let mut out = vec![0u8; len];
        if len == 0 {
            return Ok(out);
        }
        // SAFETY: `src` is a device allocation of at least `len` bytes; `out` holds `len`.
        self.check("aclrtMemcpy (device to host)", unsafe {
            (self.memcpy)(
                out.as_mut_ptr().cast(),
                len,
                src,
                len,
                MEMCPY_DEVICE_TO_HOST,
            )
        })?;
        Ok(out)
    }
    pub(crate) fn create_event(&self) -> Result<Event, BackendError> {
        let mut e: Event = std::ptr::null_mut();
        // SAFETY: ACL writes the new event handle into `e`.
        self.check("aclrtCreateEvent", unsafe { (self.create_event)(&mut e) })?;
        Ok(e)
    }

    pub(crate) fn destroy_event(&self, e: Event) -> Result<(), BackendError> {
        // SAFETY: `e` came from create_event and is not used afterwards.
        self.check("aclrtDestroyEvent", unsafe { (self.destroy_event)(e) })
    }

    /// Enqueues on `s` a record of `e`: it completes, with the device's time, when the work
    /// enqueued before it has.
    pub(crate) fn record(&self, e: Event, s: Stream) -> Result<(), BackendError> {
        // SAFETY: `e` and `s` are live handles of the current device.
        self.check("aclrtRecordEvent", unsafe { (self.record_event)(e, s) })
    }

    /// Whether `e`'s last record has completed.
    pub(crate) fn completed(&self, e: Event) -> Result<bool, BackendError> {
        let mut status = 0i32;
        // SAFETY: ACL writes one status value.
        self.check("aclrtQueryEventStatus", unsafe {
            (self.query_event)(e, &mut status)
        })?;
        Ok(status == EVENT_COMPLETE)
    }

    /// Device time from `start`'s record to `end`'s (both completed).
    pub(crate) fn elapsed(&self, start: Event, end: Event) -> Result<Duration, BackendError> {
        let mut ms = 0f32;
        // SAFETY: ACL writes one float.
        self.check("aclrtEventElapsedTime", unsafe {
            (self.elapsed)(&mut ms, start, end)
        })?;
        Ok(Duration::from_secs_f64(f64::from(ms.max(0.0)) / 1e3))
    }

    /// The model-capture API graph replay needs, or why this ACL cannot replay.
    pub(crate) fn capture_api(&self) -> Result<&Capture, BackendError> {
        self.capture.as_ref().ok_or_else(|| {
            BackendError::Unavailable(format!(
                "backend npu: --graph needs ACL's model-capture API (aclmdlRICaptureBegin, aclmdlRICaptureEnd, \
                 aclmdlRIExecuteAsync), which {} lacks: it arrived in CANN {CAPTURE_CANN}",
                self.path.display()
            ))
        })
    }

    /// Starts capturing `s`: its work is kept in a graph instead of running.
    pub(crate) fn capture_begin(&self, s: Stream) -> Result<(), BackendError> {
        let api = self.capture_api()?;
        // SAFETY: `s` is a live stream of the current device.
        self.check("aclmdlRICaptureBegin", unsafe {
            (api.begin)(s, CAPTURE_THREAD_LOCAL)
        })
    }

    /// Ends `s`'s capture: the graph of what was enqueued since [`Acl::capture_begin`].
    pub(crate) fn capture_end(&self, s: Stream) -> Result<Graph, BackendError> {
        let api = self.capture_api()?;
        let mut g: Graph = std::ptr::null_mut();
        // SAFETY: `s` is capturing; ACL writes the graph handle into `g`.
        self.check("aclmdlRICaptureEnd", unsafe { (api.end)(s, &mut g) })?;
        Ok(g)
    }

    /// Enqueues a replay of `g` on `s`.
    pub(crate) fn replay(&self, g: Graph, s: Stream) -> Result<(), BackendError> {
        let api = self.capture_api()?;
        // SAFETY: `g` is a live graph of the current device, `s` a live stream of it.
        self.check("aclmdlRIExecuteAsync", unsafe { (api.execute)(g, s) })
    }

    pub(crate) fn destroy_graph(&self, g: Graph) -> Result<(), BackendError> {
        let api = self.capture_api()?;
        // SAFETY: `g` came from capture_end and is not used afterwards.
        self.check("aclmdlRIDestroy", unsafe { (api.destroy)(g) })
    }
}
