//! The ACL runtime calls the `npu` backend makes, loaded from `libascendcl.so` at run time
//! (signatures: ascendc.md §B.3). Every call's status is checked; a failure names the call.

use std::ffi::{CString, c_char, c_void};
use std::path::Path;

use crate::backend::BackendError;

/// `aclrtMemMallocPolicy::ACL_MEM_MALLOC_HUGE_FIRST`.
const MALLOC_HUGE_FIRST: i32 = 0;
/// `aclrtMemcpyKind`.
const MEMCPY_HOST_TO_DEVICE: i32 = 1;
const MEMCPY_DEVICE_TO_HOST: i32 = 2;

pub type Stream = *mut c_void;

type InitFn = unsafe extern "C" fn(*const c_char) -> i32;
type FinalizeFn = unsafe extern "C" fn() -> i32;
type DeviceFn = unsafe extern "C" fn(i32) -> i32;
type CreateStreamFn = unsafe extern "C" fn(*mut Stream) -> i32;
type StreamFn = unsafe extern "C" fn(Stream) -> i32;
type MallocFn = unsafe extern "C" fn(*mut *mut c_void, usize, i32) -> i32;
type FreeFn = unsafe extern "C" fn(*mut c_void) -> i32;
type MemcpyFn = unsafe extern "C" fn(*mut c_void, usize, *const c_void, usize, i32) -> i32;

/// The loaded ACL library.
pub struct Acl {
    init: InitFn,
    finalize: FinalizeFn,
    set_device: DeviceFn,
    reset_device: DeviceFn,
    create_stream: CreateStreamFn,
    destroy_stream: StreamFn,
    synchronize_stream: StreamFn,
    malloc: MallocFn,
    free: FreeFn,
    memcpy: MemcpyFn,
    _lib: libloading::Library,
}

fn check(call: &str, status: i32) -> Result<(), BackendError> {
    if status == 0 {
        Ok(())
    } else {
        Err(BackendError::Run(format!(
            "{call} failed with ACL error {status}"
        )))
    }
}

impl Acl {
    pub(crate) fn load(path: &Path) -> Result<Acl, BackendError> {
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
            Ok(Acl {
                init: sym!("aclInit"),
                finalize: sym!("aclFinalize"),
                set_device: sym!("aclrtSetDevice"),
                reset_device: sym!("aclrtResetDevice"),
                create_stream: sym!("aclrtCreateStream"),
                destroy_stream: sym!("aclrtDestroyStream"),
                synchronize_stream: sym!("aclrtSynchronizeStream"),
                malloc: sym!("aclrtMalloc"),
                free: sym!("aclrtFree"),
                memcpy: sym!("aclrtMemcpy"),
                _lib: lib,
            })
        }
    }

    pub(crate) fn init(&self) -> Result<(), BackendError> {
        let none = CString::default();
        // SAFETY: an empty config path means "no config file".
        check("aclInit", unsafe { (self.init)(none.as_ptr()) })
    }

    pub(crate) fn finalize(&self) {
        // SAFETY: called once after every device is reset; failures at exit are moot.
        unsafe { (self.finalize)() };
    }

    /// Binds the calling thread to `device`.
    pub(crate) fn set_device(&self, device: u32) -> Result<(), BackendError> {
        // SAFETY: plain call with a device id.
        check("aclrtSetDevice", unsafe {
            (self.set_device)(device as i32)
        })
    }

    pub(crate) fn reset_device(&self, device: u32) {
        // SAFETY: plain call with a device id; used on teardown.
        unsafe { (self.reset_device)(device as i32) };
    }

    pub(crate) fn create_stream(&self) -> Result<Stream, BackendError> {
        let mut s: Stream = std::ptr::null_mut();
        // SAFETY: ACL writes the new stream handle into `s`.
        check("aclrtCreateStream", unsafe { (self.create_stream)(&mut s) })?;
        Ok(s)
    }

    pub(crate) fn destroy_stream(&self, s: Stream) {
        // SAFETY: `s` came from create_stream and is not used afterwards.
        unsafe { (self.destroy_stream)(s) };
    }

    pub(crate) fn synchronize(&self, s: Stream) -> Result<(), BackendError> {
        // SAFETY: `s` is a live stream of the current device.
        check("aclrtSynchronizeStream", unsafe {
            (self.synchronize_stream)(s)
        })
    }

    /// Device memory of `len` bytes (at least one byte is allocated).
    pub(crate) fn malloc(&self, len: usize) -> Result<*mut c_void, BackendError> {
        let mut p: *mut c_void = std::ptr::null_mut();
        // SAFETY: ACL writes the allocation into `p`.
        check("aclrtMalloc", unsafe {
            (self.malloc)(&mut p, len.max(1), MALLOC_HUGE_FIRST)
        })?;
        Ok(p)
    }

    pub(crate) fn free(&self, p: *mut c_void) {
        // SAFETY: `p` came from malloc and is not used afterwards.
        unsafe { (self.free)(p) };
    }

    /// Copies host bytes to device memory of at least `src.len()` bytes.
    pub(crate) fn upload(&self, dst: *mut c_void, src: &[u8]) -> Result<(), BackendError> {
        if src.is_empty() {
            return Ok(());
        }
        // SAFETY: `dst` is a device allocation of at least src.len() bytes.
        check("aclrtMemcpy (host to device)", unsafe {
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
        check("aclrtMemcpy (device to host)", unsafe {
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
}
