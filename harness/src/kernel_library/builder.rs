//! Compiles kernel sources plus the sim runtime into a shared library, cached by a
//! content hash of everything that can affect the result: the sources, every file of
//! every include directory (the model's own headers included), the flags and the
//! compiler's `--version` output. Mtimes play no part, so a cache hit is a true hit.
//!
//! The model's own translation units (harness/sim/src) are compiled once per model hash
//! into `<cache>/model-<hash>/`; a kernel library then compiles only its kernel sources
//! (one translation unit each, in parallel, each object cached on its own as
//! `<cache>/obj-<hash>.o` so libraries sharing a kernel compile it once) and links them
//! with those objects into `<cache>/<kernels hash>-<model hash>/libsimkernels.so`. Everything is built in private
//! temporary directories and renamed into place, so concurrent builders (parallel test
//! processes) never see a half-written file. A library is used only when its bytes match
//! the digest written beside it (a damaged entry is rebuilt, [`Cached`] says why), and each
//! build sweeps the temporary directories of builders that are no longer running.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};

use super::error::SimError;
use super::ffi::ABI_VERSION;

const LIB_NAME: &str = "libsimkernels.so";

/// Flags of every translation unit. `-march=native` is fine because the cache is per
/// machine (the flags and the compiler are part of the key). `-O3` lets the Mmad and
/// vector loops vectorise; the sim's speed goals depend on it.
const CXX_FLAGS: &[&str] = &[
    "-std=c++17",
    "-O3",
    "-march=native",
    "-fPIC",
    "-pthread",
    "-Wall",
    "-Wno-unused",
];

/// The model's headers (`kernel_operator.h` and `sim/*.h`).
pub fn model_include_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("sim")
        .join("include")
}

/// The model's own translation units (runtime, checks, copies, cube), sorted.
fn model_sources() -> Result<Vec<PathBuf>, SimError> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("sim")
        .join("src");
    let mut files = files_below(&dir)?;
    files.retain(|f| f.extension().is_some_and(|e| e == "cpp"));
    Ok(files)
}

/// What to compile: kernel sources and the include directories they need besides the
/// model's own (e.g. `generated/ascendc/include`).
#[derive(Debug, Clone, Default)]
pub struct BuildSpec {
    pub sources: Vec<PathBuf>,
    pub include_dirs: Vec<PathBuf>,
    /// Where libraries are cached; default `$CARGO_TARGET_DIR/sim-cache`, else
    /// `<workspace>/target/sim-cache`.
    pub cache_dir: Option<PathBuf>,
}

impl BuildSpec {
    pub fn new<I, P>(sources: I) -> Self
    where
        I: IntoIterator<Item = P>,
        P: Into<PathBuf>,
    {
        BuildSpec {
            sources: sources.into_iter().map(Into::into).collect(),
            ..Default::default()
        }
    }

    pub fn include_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.include_dirs.push(dir.into());
        self
    }

    pub fn cache_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cache_dir = Some(dir.into());
        self
    }

    fn resolved_cache_dir(&self) -> PathBuf {
        if let Some(d) = &self.cache_dir {
            return d.clone();
        }
        if let Some(t) = std::env::var_os("CARGO_TARGET_DIR") {
            return PathBuf::from(t).join("sim-cache");
        }
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join("target")
            .join("sim-cache")
    }
}

fn compiler() -> String {
    std::env::var("CXX")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "c++".to_string())
}

/// A library in the cache, and why an entry that was there is not used.
pub(crate) struct Cached {
    pub path: PathBuf,
    /// The entry this build replaced, and why (damaged, or refused by the loader).
    pub replaced: Option<String>,
}

/// Builds (or finds in the cache) the library for `spec`. `refused` is the loader's message
/// about the entry a previous call returned: that entry is removed and rebuilt.
pub(crate) fn build_library(spec: &BuildSpec, refused: Option<&str>) -> Result<Cached, SimError> {
    let cxx = compiler();
    let version = Command::new(&cxx)
        .arg("--version")
        .output()
        .map_err(|source| SimError::Compiler {
            compiler: cxx.clone(),
            source,
        })?;
    let cache = spec.resolved_cache_dir();
    let model_includes = [model_include_dir()];
    let mut includes = model_includes.to_vec();
    includes.extend(spec.include_dirs.iter().cloned());

    // The model's own translation units change rarely: their objects are cached on their
    // own, so a kernel library only compiles its kernels.
    let model_units = model_sources()?;
    let model_key = cache_key(&cxx, &version.stdout, &model_units, &model_includes)?;
    let lib_key = cache_key(&cxx, &version.stdout, &spec.sources, &includes)?;
    let dir = cache.join(format!("{lib_key}-{model_key}"));
    let lib = dir.join(LIB_NAME);
    sweep(&cache);
    let replaced = match (refused, verify(&lib)) {
        (None, Ok(true)) => {
            return Ok(Cached {
                path: lib,
                replaced: None,
            });
        }
        (None, Ok(false)) => None,
        (Some(message), _) => Some(format!("{} does not load: {message}", lib.display())),
        (None, Err(why)) => Some(format!("{} is damaged: {why}", lib.display())),
    };
    if replaced.is_some() {
        std::fs::remove_dir_all(&dir).map_err(|e| SimError::io(&dir, e))?;
    }
    let tmp = scratch_dir(&dir)?;
    // kernels first: a broken kernel fails before the model is (re)compiled
    let result = kernel_objects(&cxx, &version.stdout, &spec.sources, &includes, &cache)
        .and_then(|mut objs| {
            let model_dir = cache.join(format!("model-{model_key}"));
            objs.extend(model_objects(
                &cxx,
                &model_units,
                &model_includes,
                &model_dir,
            )?);
            link(&cxx, &objs, &tmp.join(LIB_NAME))
        })
        .and_then(|built| {
            // The digest first: a library without one is never used.
            let bytes = std::fs::read(&built).map_err(|e| SimError::io(&built, e))?;
            std::fs::create_dir_all(&dir).map_err(|e| SimError::io(&dir, e))?;
            let sum = digest_path(&lib);
            std::fs::write(&sum, digest(&bytes)).map_err(|e| SimError::io(&sum, e))?;
            std::fs::rename(&built, &lib).map_err(|e| SimError::io(&lib, e))
        });
    let _ = std::fs::remove_dir_all(&tmp);
    result.map(|()| Cached {
        path: lib,
        replaced,
    })
}

fn digest_path(lib: &Path) -> PathBuf {
    lib.with_extension("so.sha256")
}

fn digest(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether the cached library is there (`Ok(false)`: not built yet) and matches its digest
/// (`Err`: what is wrong with it).
fn verify(lib: &Path) -> Result<bool, String> {
    let bytes = match std::fs::read(lib) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e.to_string()),
    };
    let want = std::fs::read_to_string(digest_path(lib))
        .map_err(|e| format!("no digest beside it ({e})"))?;
    if digest(&bytes) == want.trim() {
        Ok(true)
    } else {
        Err(format!(
            "{} bytes that do not match the digest written when it was built",
            bytes.len()
        ))
    }
}

/// Removes the temporary directories (`.<name>.tmp-<pid>-<nanos>`) that builders which are no
/// longer running left in `cache` (killed during a build). Linux: a pid without
/// `/proc/<pid>` is gone; elsewhere nothing is swept.
fn sweep(cache: &Path) {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(cache) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let pid = name
            .strip_prefix('.')
            .and_then(|n| n.split_once(".tmp-"))
            .and_then(|(_, rest)| rest.split('-').next())
            .and_then(|p| p.parse::<u32>().ok());
        if let Some(pid) = pid
            && !Path::new("/proc").join(pid.to_string()).exists()
        {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Object files of the kernel sources, each cached under its own key (its path and text,
/// every include directory, flags and compiler), so libraries sharing a kernel (the TP
/// degrees and variants of a layer) compile it once.
fn kernel_objects(
    cxx: &str,
    version: &[u8],
    units: &[PathBuf],
    includes: &[PathBuf],
    cache: &Path,
) -> Result<Vec<PathBuf>, SimError> {
    let objects = units
        .iter()
        .map(|u| {
            let key = cache_key(cxx, version, std::slice::from_ref(u), includes)?;
            Ok(cache.join(format!("obj-{key}.o")))
        })
        .collect::<Result<Vec<PathBuf>, SimError>>()?;
    let (todo, targets): (Vec<PathBuf>, Vec<&PathBuf>) = units
        .iter()
        .zip(&objects)
        .filter(|(_, o)| !o.is_file())
        .map(|(u, o)| (u.clone(), o))
        .unzip();
    if todo.is_empty() {
        return Ok(objects);
    }
    let tmp = scratch_dir(&cache.join("objects"))?;
    let built = compile_units(cxx, &todo, includes, &tmp).and_then(|objs| {
        for (obj, target) in objs.iter().zip(&targets) {
            // a concurrent builder may have placed the same object first; it is as good
            if let Err(e) = std::fs::rename(obj, target)
                && !target.is_file()
            {
                return Err(SimError::io(*target, e));
            }
        }
        Ok(())
    });
    let _ = std::fs::remove_dir_all(&tmp);
    built.map(|()| objects)
}

/// Object files of the model's sources, compiled once per key into `dir`.
fn model_objects(
    cxx: &str,
    units: &[PathBuf],
    includes: &[PathBuf],
    dir: &Path,
) -> Result<Vec<PathBuf>, SimError> {
    let objects = |d: &Path| {
        (0..units.len())
            .map(|i| d.join(format!("{i}.o")))
            .collect::<Vec<_>>()
    };
    if dir.join("complete").is_file() {
        return Ok(objects(dir));
    }
    let tmp = scratch_dir(dir)?;
    let built = compile_units(cxx, units, includes, &tmp).and_then(|_| {
        std::fs::write(tmp.join("complete"), b"").map_err(|e| SimError::io(&tmp, e))?;
        // a concurrent builder may have won the race; its objects are as good as ours
        match std::fs::rename(&tmp, dir) {
            Ok(()) => Ok(()),
            Err(_) if dir.join("complete").is_file() => Ok(()),
            Err(e) => Err(SimError::io(dir, e)),
        }
    });
    let _ = std::fs::remove_dir_all(&tmp);
    built.map(|()| objects(dir))
}

/// A fresh private directory next to `target` (same file system, so renames are atomic).
fn scratch_dir(target: &Path) -> Result<PathBuf, SimError> {
    let parent = target.parent().unwrap_or(target);
    std::fs::create_dir_all(parent).map_err(|e| SimError::io(parent, e))?;
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = parent.join(format!(".{name}.tmp-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&tmp).map_err(|e| SimError::io(&tmp, e))?;
    Ok(tmp)
}

fn cache_key(
    cxx: &str,
    version: &[u8],
    units: &[PathBuf],
    includes: &[PathBuf],
) -> Result<String, SimError> {
    let mut h = Sha256::new();
    h.update(format!("sim-abi-{ABI_VERSION}\0{cxx}\0").as_bytes());
    h.update(version);
    for f in CXX_FLAGS {
        h.update(f.as_bytes());
        h.update([0]);
    }
    for u in units {
        h.update(u.to_string_lossy().as_bytes());
        h.update([0]);
        h.update(std::fs::read(u).map_err(|e| SimError::io(u, e))?);
    }
    for dir in includes {
        h.update(dir.to_string_lossy().as_bytes());
        h.update([0]);
        for f in files_below(dir)? {
            h.update(
                f.strip_prefix(dir)
                    .unwrap_or(&f)
                    .to_string_lossy()
                    .as_bytes(),
            );
            h.update([0]);
            h.update(std::fs::read(&f).map_err(|e| SimError::io(&f, e))?);
        }
    }
    Ok(hex(&h.finalize()[..12]))
}

/// The files below `dir`, sorted.
fn files_below(dir: &Path) -> Result<Vec<PathBuf>, SimError> {
    let mut out = Vec::new();
    for entry in walkdir::WalkDir::new(dir).sort_by_file_name() {
        let entry = entry.map_err(|e| SimError::io(dir, e.into()))?;
        if entry.file_type().is_file() {
            out.push(entry.into_path());
        }
    }
    Ok(out)
}

/// Compiles `units` in parallel into `dir/<i>.o`; returns the object paths in order.
fn compile_units(
    cxx: &str,
    units: &[PathBuf],
    includes: &[PathBuf],
    dir: &Path,
) -> Result<Vec<PathBuf>, SimError> {
    let objects: Vec<PathBuf> = (0..units.len())
        .map(|i| dir.join(format!("{i}.o")))
        .collect();
    let next = Mutex::new(units.iter().zip(&objects));
    let errors: Mutex<Vec<SimError>> = Mutex::new(Vec::new());
    let workers = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .min(units.len().max(1));
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                loop {
                    let job = next.lock().unwrap_or_else(|p| p.into_inner()).next();
                    let Some((src, obj)) = job else { break };
                    if let Err(e) = compile_unit(cxx, src, includes, obj) {
                        errors.lock().unwrap_or_else(|p| p.into_inner()).push(e);
                    }
                }
            });
        }
    });
    let mut errors = errors.into_inner().unwrap_or_else(|p| p.into_inner());
    if !errors.is_empty() {
        return Err(errors.remove(0));
    }
    Ok(objects)
}

fn link(cxx: &str, objects: &[PathBuf], out: &Path) -> Result<PathBuf, SimError> {
    let mut cmd = Command::new(cxx);
    cmd.args(["-shared", "-pthread", "-o"])
        .arg(out)
        .args(objects);
    let output = cmd.output().map_err(|source| SimError::Compiler {
        compiler: cxx.to_string(),
        source,
    })?;
    if !output.status.success() {
        return Err(SimError::Link {
            output: out.to_path_buf(),
            command: format!("{cmd:?}"),
            diagnostics: String::from_utf8_lossy(&output.stderr).into_owned(),
        });
    }
    Ok(out.to_path_buf())
}

fn compile_unit(cxx: &str, src: &Path, includes: &[PathBuf], obj: &Path) -> Result<(), SimError> {
    let mut cmd = Command::new(cxx);
    cmd.args(CXX_FLAGS);
    for inc in includes {
        cmd.arg("-I").arg(inc);
    }
    cmd.arg("-c").arg(src).arg("-o").arg(obj);
    let output = cmd.output().map_err(|source| SimError::Compiler {
        compiler: cxx.to_string(),
        source,
    })?;
    if !output.status.success() {
        return Err(SimError::Compile {
            file: src.to_path_buf(),
            command: format!("{cmd:?}"),
            diagnostics: String::from_utf8_lossy(&output.stderr).into_owned(),
        });
    }
    Ok(())
}
