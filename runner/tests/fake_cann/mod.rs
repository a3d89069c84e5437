//! The fake CANN toolkit of the npu backend's tests, built from this directory's C and
//! shell sources with the host C compiler (nothing of CANN is copied: the declarations are
//! written from the public signatures): `lib64/libascendcl.so` (acl.c) and `libhccl.so`
//! (hccl.c), the ASC package config, `include/acl/acl.h` for the launchers, and a `cmake`
//! on PATH (cmake) that builds the backend's project against the CPU model (device.h).
//!
//! The fake's state (initialised once, like ACL) is process-wide, so a test takes the kit
//! with [`kit`], which serialises the tests of the binary and resets the log and faults.

#![allow(dead_code)] // each test uses part of this module

use std::ffi::{CStr, CString, c_char};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

use sha2::{Digest, Sha256};

/// The built toolkit and handles on its control functions.
pub struct FakeCann {
    pub root: PathBuf,
    acl: libloading::Library,
    hccl: libloading::Library,
}

/// ACL's `ACL_ERROR_RT_MEMORY_ALLOCATION`, `ACL_ERROR_RT_PARAM_INVALID` and HCCL's
/// `HCCL_E_INTERNAL`, for injected failures.
pub const MEMORY_ALLOCATION: i32 = 207001;
pub const PARAM_INVALID: i32 = 107000;
pub const HCCL_INTERNAL: i32 = 4;

const SOURCES: [&str; 6] = [
    "acl.c",
    "hccl.c",
    "cmake",
    "device.h",
    "acl/acl.h",
    "mod.rs",
];

/// The fake clock's charge for a kernel and for a collective (acl.c's FAKE_KERNEL_NS and
/// FAKE_COLLECTIVE_NS).
pub const KERNEL_US: f64 = 20.0;
pub const COLLECTIVE_US: f64 = 10.0;

/// The C signatures of the fake's functions, for the tests that call them directly
/// (acl.c and hccl.c; handles are untyped pointers).
pub mod c {
    use std::ffi::c_char;
    pub type Init = unsafe extern "C" fn(*const c_char) -> i32;
    /// aclrtSetDevice, aclrtResetDevice.
    pub type Device = unsafe extern "C" fn(i32) -> i32;
    pub type Malloc = unsafe extern "C" fn(*mut *mut u8, usize, i32) -> i32;
    pub type Memcpy = unsafe extern "C" fn(*mut u8, usize, *const u8, usize, i32) -> i32;
    /// aclrtCreateStream, aclrtCreateEvent.
    pub type Create = unsafe extern "C" fn(*mut *mut u8) -> i32;
    /// Calls on one handle: free, destroy, synchronise.
    pub type Handle = unsafe extern "C" fn(*mut u8) -> i32;
    /// aclrtRecordEvent(event, stream), aclmdlRIExecuteAsync(model, stream).
    pub type Pair = unsafe extern "C" fn(*mut u8, *mut u8) -> i32;
    pub type CaptureBegin = unsafe extern "C" fn(*mut u8, i32) -> i32;
    pub type CaptureEnd = unsafe extern "C" fn(*mut u8, *mut *mut u8) -> i32;
    pub type Elapsed = unsafe extern "C" fn(*mut f32, *mut u8, *mut u8) -> i32;
    pub type Recent = unsafe extern "C" fn() -> *const c_char;
    /// A stream task of fake_acl_enqueue.
    pub type Task = unsafe extern "C" fn(*mut u8, i64, *mut u8, usize) -> i32;
    /// fake_acl_enqueue(stream, task, drop, ctx, cost_ns, call).
    pub type Enqueue = unsafe extern "C" fn(
        *mut u8,
        Task,
        unsafe extern "C" fn(*mut u8),
        *mut u8,
        i64,
        *const u8,
    ) -> i32;
    pub type RootInfo = unsafe extern "C" fn(*mut u8) -> i32;
    pub type Join = unsafe extern "C" fn(u32, *const u8, u32, *mut *mut u8) -> i32;
    pub type AllToAllV = unsafe extern "C" fn(
        *const u8,
        *const u64,
        *const u64,
        i32,
        *const u8,
        *const u64,
        *const u64,
        i32,
        *mut u8,
        *mut u8,
    ) -> i32;

    /// A task context's drop that keeps it (the test owns it).
    pub unsafe extern "C" fn keep(_: *mut u8) {}
}

static KIT: OnceLock<FakeCann> = OnceLock::new();
static WITHOUT_CAPTURE: OnceLock<PathBuf> = OnceLock::new();
static SERIAL: Mutex<()> = Mutex::new(());

/// The fake toolkit (built on first use, environment pointed at it) as a 910B1 with a
/// fresh log and no fault, held for one test.
pub fn kit() -> (&'static FakeCann, MutexGuard<'static, ()>) {
    let guard = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let kit = KIT.get_or_init(FakeCann::build);
    kit.reset("Ascend910B1", 24, 48);
    (kit, guard)
}

fn here() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake_cann")
}

/// The CPU model's files (harness/sim), sorted: the fake device runs kernels in it, so a
/// change there must not hit a kernel library built with the old one.
fn sim_sources() -> Vec<PathBuf> {
    walkdir::WalkDir::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("../harness/sim"))
        .sort_by_file_name()
        .into_iter()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().is_file())
        .map(walkdir::DirEntry::into_path)
        .collect()
}

fn run(cmd: &mut Command) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Writes `bytes` to `path` through a rename, so a library another process maps stays whole.
fn install(path: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, bytes).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

impl FakeCann {
    /// Builds the toolkit under the test target's tmp dir (a stable path, so the backend's
    /// build cache can hit across runs: the version file carries a hash of the fake's
    /// sources and of the CPU model its "device compiler" builds in) and points
    /// `ASCEND_HOME_PATH` and `PATH` at it.
    fn build() -> FakeCann {
        let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fake-cann");
        let src = here();
        let mut h = Sha256::new();
        for f in SOURCES {
            h.update(std::fs::read(src.join(f)).unwrap());
        }
        for f in sim_sources() {
            h.update(f.to_string_lossy().as_bytes());
            h.update(std::fs::read(&f).unwrap());
        }
        let hash: String = h.finalize()[..8]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let lib64 = root.join("lib64");
        std::fs::create_dir_all(&lib64).unwrap();
        let scratch = tempfile::tempdir().unwrap();
        let acl = scratch.path().join("libascendcl.so");
        run(Command::new(&cc)
            .args(["-shared", "-fPIC", "-O1", "-pthread", "-Wall"])
            .arg("-Wl,-soname,libascendcl.so")
            .arg("-o")
            .arg(&acl)
            .arg(src.join("acl.c")));
        install(&lib64.join("libascendcl.so"), &std::fs::read(&acl).unwrap());
        let hccl = scratch.path().join("libhccl.so");
        run(Command::new(&cc)
            .args(["-shared", "-fPIC", "-O1", "-pthread", "-Wall"])
            .arg("-o")
            .arg(&hccl)
            .arg(src.join("hccl.c"))
            .arg(format!("-L{}", lib64.display()))
            .arg("-lascendcl")
            .arg("-Wl,-rpath,$ORIGIN"));
        install(&lib64.join("libhccl.so"), &std::fs::read(&hccl).unwrap());
        install(
            &root.join("compiler/tikcpp/ascendc_kernel_cmake/asc-config.cmake"),
            b"# The fake CANN's ASC package: the fake cmake does the work.\n",
        );
        install(
            &root.join("compiler/version.info"),
            format!("Version=9.0.0\nFake-Sources={hash}\n").as_bytes(),
        );
        install(
            &root.join("include/acl/acl.h"),
            &std::fs::read(src.join("acl/acl.h")).unwrap(),
        );
        install(
            &root.join("fake/device.h"),
            &std::fs::read(src.join("device.h")).unwrap(),
        );
        let sim = Path::new(env!("CARGO_MANIFEST_DIR")).join("../harness/sim");
        let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
        let config = format!(
            "SIM_INCLUDE={}\nSIM_SRC={}\nCXX={cxx}\nOBJ_CACHE={}\n",
            sim.join("include").display(),
            sim.join("src").display(),
            Path::new(env!("CARGO_TARGET_TMPDIR"))
                .join("fake-cann-objects")
                .display()
        );
        install(&root.join("fake/config"), config.as_bytes());
        let cmake = root.join("bin/cmake");
        install(&cmake, &std::fs::read(src.join("cmake")).unwrap());
        run(Command::new("chmod").arg("+x").arg(&cmake));
        let _ = std::fs::remove_file(root.join("fake/cmake.log"));
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut paths = vec![root.join("bin")];
        paths.extend(std::env::split_paths(&path));
        // SAFETY: set once, under SERIAL, before this process makes any ACL call; the
        // tests of this binary all go through `kit`.
        unsafe {
            std::env::set_var("ASCEND_HOME_PATH", &root);
            std::env::set_var("PATH", std::env::join_paths(paths).unwrap());
            std::env::set_var("HCCL_CONNECT_TIMEOUT", "3");
            std::env::set_var("HCCL_EXEC_TIMEOUT", "20");
        }
        // SAFETY: the fake libraries just built; the backend loads the same paths, so
        // these handles reach the same state.
        let (acl, hccl) = unsafe {
            (
                libloading::Library::new(lib64.join("libascendcl.so")).unwrap(),
                libloading::Library::new(lib64.join("libhccl.so")).unwrap(),
            )
        };
        FakeCann { root, acl, hccl }
    }

    /// A second toolkit whose ACL lacks the model-capture API (acl.c built with
    /// FAKE_NO_CAPTURE), as an older CANN's would: its root, for a subprocess's
    /// ASCEND_HOME_PATH (this process has initialised the first toolkit's ACL).
    pub fn without_capture(&self) -> &'static Path {
        WITHOUT_CAPTURE.get_or_init(|| {
            let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fake-cann-no-capture");
            let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
            let scratch = tempfile::tempdir().unwrap();
            let acl = scratch.path().join("libascendcl.so");
            run(Command::new(&cc)
                .args([
                    "-shared",
                    "-fPIC",
                    "-O1",
                    "-pthread",
                    "-Wall",
                    "-DFAKE_NO_CAPTURE",
                ])
                .arg("-Wl,-soname,libascendcl.so")
                .arg("-o")
                .arg(&acl)
                .arg(here().join("acl.c")));
            install(
                &root.join("lib64/libascendcl.so"),
                &std::fs::read(&acl).unwrap(),
            );
            for f in [
                "lib64/libhccl.so",
                "compiler/tikcpp/ascendc_kernel_cmake/asc-config.cmake",
            ] {
                install(&root.join(f), &std::fs::read(self.root.join(f)).unwrap());
            }
            install(&root.join("compiler/version.info"), b"Version=8.0.RC3\n");
            root
        })
    }

    /// Acts as `chip` with `aic` AI Cores and `aiv` vector cores; forgets log and faults.
    pub fn reset(&self, chip: &str, aic: i64, aiv: i64) {
        let chip = CString::new(chip).unwrap();
        // SAFETY: fake_reset(const char*, int64_t, int64_t) of acl.c.
        unsafe {
            let f: libloading::Symbol<unsafe extern "C" fn(*const c_char, i64, i64)> =
                self.acl.get(b"fake_reset\0").unwrap();
            f(chip.as_ptr(), aic, aiv);
        }
    }

    /// The `nth` call of `call` on `device` (None: any) from now on fails with `code`.
    pub fn fail(&self, call: &str, device: Option<i32>, nth: i32, code: i32) {
        let call = CString::new(call).unwrap();
        // SAFETY: fake_fail(const char*, int, int, int) of acl.c.
        unsafe {
            let f: libloading::Symbol<unsafe extern "C" fn(*const c_char, i32, i32, i32)> =
                self.acl.get(b"fake_fail\0").unwrap();
            f(call.as_ptr(), device.unwrap_or(-1), nth, code);
        }
    }

    /// The call log since the last reset, a line per call: `T<thread> D<device> <call> …`.
    pub fn log(&self) -> String {
        // SAFETY: fake_log returns a malloc'd string that fake_free releases.
        unsafe {
            let get: libloading::Symbol<unsafe extern "C" fn() -> *mut c_char> =
                self.acl.get(b"fake_log\0").unwrap();
            let free: libloading::Symbol<unsafe extern "C" fn(*mut c_char)> =
                self.acl.get(b"fake_free\0").unwrap();
            let p = get();
            let s = CStr::from_ptr(p).to_string_lossy().into_owned();
            free(p);
            s
        }
    }

    /// Live allocations, streams and communicators, a line each.
    pub fn leaks(&self) -> String {
        let mut buf = vec![0u8; 1 << 16];
        // SAFETY: fake_acl_leaks(char*, size_t) writes at most `cap` bytes;
        // fake_hccl_live_comms() counts communicators.
        unsafe {
            let f: libloading::Symbol<unsafe extern "C" fn(*mut u8, usize) -> usize> =
                self.acl.get(b"fake_acl_leaks\0").unwrap();
            let n = f(buf.as_mut_ptr(), buf.len());
            let comms: libloading::Symbol<unsafe extern "C" fn() -> i32> =
                self.hccl.get(b"fake_hccl_live_comms\0").unwrap();
            let mut out = String::from_utf8_lossy(&buf[..n]).into_owned();
            let c = comms();
            if c != 0 {
                out.push_str(&format!("{c} HCCL communicator(s)\n"));
            }
            out
        }
    }

    /// The fake cmake's invocations, a line each.
    pub fn cmake_log(&self) -> String {
        std::fs::read_to_string(self.root.join("fake/cmake.log")).unwrap_or_default()
    }
}
