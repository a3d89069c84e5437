//! Building a plan's kernels with CANN's toolchain: a CMake project in the Ascend C "ASC"
//! language flow (ascendc.md §B.1; bisheng compiles, `--npu-arch=dav-2201` for the
//! 910B/A3 family; a Release build, so optimised) with one launcher source per kernel. A
//! launcher includes the generated kernel (marked `__vector__`, `__cube__` or
//! `__mix__(1, 2)` as the asc-devkit `.asc` samples do) and exports
//! `dsv4_launch_<kernel>(blockDim, stream, args)`, which launches it with
//! `<<<blockDim, nullptr, stream>>>` on the array of device pointers and returns
//! `aclrtGetLastError` as the samples check it, so the runtime binds every kernel through
//! one C signature and sees a launch that failed. Builds are cached by a content hash of
//! the project, the kernel sources, the building blocks and the toolkit (its path and
//! version files).

use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

use super::toolkit::Toolkit;
use crate::backend::Progress;
use crate::backend::{BackendError, KernelSources};
use abi::plan::{Kernel, VariantPlan};

/// The shared library the project builds.
pub const LIBRARY: &str = "libdsv4_kernels.so";

/// The exported launcher of `kernel`.
pub fn launcher_symbol(kernel: &str) -> String {
    format!("dsv4_launch_{kernel}")
}

/// The project's files: `CMakeLists.txt` and one `launch_<kernel>.asc` per kernel.
pub fn project(
    plan: &VariantPlan,
    kernels: &[Kernel],
    sources: &KernelSources,
) -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = kernels
        .iter()
        .map(|k| (format!("launch_{}.asc", k.name), launcher(k)))
        .collect();
    let list: Vec<String> = files.iter().map(|(f, _)| format!("    {f}")).collect();
    // A launcher's `#include "<kernel>.cpp"` finds the first folder's file, as `source` does.
    let kernel_dirs: Vec<String> = sources
        .kernels_dirs
        .iter()
        .map(|d| format!("\"{}\"", d.display()))
        .collect();
    let cmake = format!(
        "# Kernels of {variant}, built by the dsv4 npu backend.\n\
         cmake_minimum_required(VERSION 3.16)\n\
         set(CMAKE_ASC_ARCHITECTURES \"dav-2201\" CACHE STRING \"NPU architecture\")\n\
         find_package(ASC REQUIRED)\n\
         project(dsv4_kernels LANGUAGES ASC CXX)\n\
         add_library(dsv4_kernels SHARED\n{list}\n)\n\
         target_include_directories(dsv4_kernels PRIVATE \"{include}\" {kernels})\n\
         target_compile_options(dsv4_kernels PRIVATE\n    \
         $<$<COMPILE_LANGUAGE:ASC>:--npu-arch=${{CMAKE_ASC_ARCHITECTURES}}>\n)\n",
        variant = plan.name(),
        list = list.join("\n"),
        include = sources.include_dir.display(),
        kernels = kernel_dirs.join(" "),
    );
    files.push(("CMakeLists.txt".into(), cmake));
    files
}

fn launcher(k: &Kernel) -> String {
    let n = k.args.len() + 2; // the GM arguments, then workspace and tiling
    let args: Vec<String> = (0..n).map(|i| format!("(GM_ADDR)args[{i}]")).collect();
    format!(
        "// Host launcher of {name}.\n\
         #include \"acl/acl.h\"\n\
         #include \"{name}.cpp\"\n\n\
         extern \"C\" int32_t {symbol}(uint32_t block_dim, void* stream, void** args)\n\
         {{\n    {name}<<<block_dim, nullptr, stream>>>({args});\n    \
         return aclrtGetLastError(ACL_RT_THREAD_LEVEL);\n}}\n",
        name = k.name,
        symbol = launcher_symbol(k.name),
        args = args.join(", "),
    )
}

/// Builds (or finds in `cache`) the library of `kernels` of `plan`; returns its path.
pub fn build(
    toolkit: &Toolkit,
    plan: &VariantPlan,
    kernels: &[Kernel],
    sources: &KernelSources,
    cache: &Path,
    progress: &Progress,
) -> Result<PathBuf, BackendError> {
    let files = project(plan, kernels, sources);
    let dir = cache.join(key(toolkit, &files, kernels, sources)?);
    let lib = dir.join("build").join(LIBRARY);
    if lib.is_file() {
        return Ok(lib);
    }
    let io = |p: &Path, e: std::io::Error| BackendError::Build(format!("{}: {e}", p.display()));
    std::fs::create_dir_all(&dir).map_err(|e| io(&dir, e))?;
    for (name, text) in &files {
        let p = dir.join(name);
        std::fs::write(&p, text).map_err(|e| io(&p, e))?;
    }
    let asc = toolkit.asc_cmake_dir()?;
    progress.note(&format!("cmake + bisheng in {}", dir.display()));
    let build_dir = dir.join("build");
    run(Command::new("cmake")
        .arg("-S")
        .arg(&dir)
        .arg("-B")
        .arg(&build_dir)
        .arg(format!("-DASC_DIR={}", asc.display()))
        .arg("-DCMAKE_BUILD_TYPE=Release")
        .env("ASCEND_HOME_PATH", &toolkit.root))?;
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    run(Command::new("cmake")
        .arg("--build")
        .arg(&build_dir)
        .arg("--parallel")
        .arg(jobs.to_string())
        .env("ASCEND_HOME_PATH", &toolkit.root))?;
    if lib.is_file() {
        Ok(lib)
    } else {
        Err(BackendError::Build(format!(
            "the CANN build finished without {}",
            lib.display()
        )))
    }
}

fn run(cmd: &mut Command) -> Result<(), BackendError> {
    let shown = format!("{cmd:?}");
    let out = cmd.output().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => BackendError::Unavailable(
            "backend npu: cmake is not installed (the CANN kernel build needs it); \
             install cmake or use --backend sim"
                .into(),
        ),
        _ => BackendError::Build(format!("{shown}: {e}")),
    })?;
    if out.status.success() {
        Ok(())
    } else {
        Err(BackendError::Build(format!(
            "{shown} failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )))
    }
}

/// A content hash of the toolkit, the project files, the kernel sources and the building
/// blocks.
fn key(
    toolkit: &Toolkit,
    files: &[(String, String)],
    kernels: &[Kernel],
    sources: &KernelSources,
) -> Result<String, BackendError> {
    let mut h = Sha256::new();
    h.update(toolkit.fingerprint());
    h.update([0]);
    let mut read = |p: &Path| -> Result<(), BackendError> {
        let bytes =
            std::fs::read(p).map_err(|e| BackendError::Build(format!("{}: {e}", p.display())))?;
        h.update(p.to_string_lossy().as_bytes());
        h.update([0]);
        h.update(bytes);
        Ok(())
    };
    for k in kernels {
        read(&sources.source(k.name))?;
    }
    let mut blocks = Vec::new();
    for e in walkdir::WalkDir::new(&sources.include_dir) {
        let e =
            e.map_err(|e| BackendError::Build(format!("{}: {e}", sources.include_dir.display())))?;
        if e.file_type().is_file() {
            blocks.push(e.into_path());
        }
    }
    blocks.sort();
    for b in &blocks {
        read(b)?;
    }
    for (name, text) in files {
        h.update(name.as_bytes());
        h.update([0]);
        h.update(text.as_bytes());
    }
    Ok(h.finalize()
        .iter()
        .take(12)
        .map(|b| format!("{b:02x}"))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use abi::plan::Cores;

    #[test]
    fn a_launcher_passes_every_argument_then_workspace_and_tiling() {
        let k = Kernel {
            name: "rms_norm_d64",
            cores: Cores::Aiv,
            args: &["x", "w", "y"],
        };
        let text = launcher(&k);
        assert!(text.contains("#include \"rms_norm_d64.cpp\""), "{text}");
        assert!(text.contains(
            "extern \"C\" int32_t dsv4_launch_rms_norm_d64(uint32_t block_dim, void* stream, void** args)"
        ));
        assert!(text.contains("return aclrtGetLastError(ACL_RT_THREAD_LEVEL);"));
        assert!(text.contains(
            "rms_norm_d64<<<block_dim, nullptr, stream>>>((GM_ADDR)args[0], (GM_ADDR)args[1], \
             (GM_ADDR)args[2], (GM_ADDR)args[3], (GM_ADDR)args[4]);"
        ));
    }

    #[test]
    fn the_cache_key_follows_the_toolkits_path_and_version() {
        let dir = tempfile::tempdir().unwrap();
        let sources = KernelSources {
            kernels_dirs: vec![dir.path().to_path_buf()],
            include_dir: dir.path().join("include"),
        };
        std::fs::create_dir_all(&sources.include_dir).unwrap();
        let kits = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
        let kit = |i: usize| Toolkit {
            root: kits[i].path().to_path_buf(),
        };
        let files = [("CMakeLists.txt".to_string(), "project".to_string())];
        let key_of = |k: &Toolkit| key(k, &files, &[], &sources).unwrap();
        let first = key_of(&kit(0));
        assert_eq!(first, key_of(&kit(0)));
        assert_ne!(first, key_of(&kit(1)), "another toolkit path");
        let version = kits[0].path().join("compiler/version.info");
        std::fs::create_dir_all(version.parent().unwrap()).unwrap();
        std::fs::write(&version, "Version=9.0.1\n").unwrap();
        assert_ne!(first, key_of(&kit(0)), "another version at the same path");
    }
}
