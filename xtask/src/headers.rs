//! `check-headers`: type-checks every generated kernel against the public Ascend C headers
//! (a checkout of asc-devkit, with asc-tools' CPU-debug stubs) as a user's build would see
//! them, since the sim's headers only model them. Each kernel is compiled with
//! `-fsyntax-only` in CPU-debug mode (dav-c220) once per core type its marking implies
//! (`__vector__` AIV, `__cube__` AIC, `__mix__` both), and again with the device's
//! spelling of the core-type macros (`ASCEND_IS_AIV` as `constexpr(…)`, usable only as
//! `if ASCEND_IS_AIV { … }`). The sim's name table (`harness/sim/api_scope.cpp`) is held
//! against the same headers. Nothing of the devkit is copied: the stubs for the compiler's
//! intrinsics are generated from `xtask/headers/intrinsics.txt`, the tiling structs from the
//! devkit's own `*_tilingdata.h`, into `target/check-headers/`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use rayon::prelude::*;

/// The core types a kernel is compiled for, with the CPU-debug split-core define.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Core {
    Aiv,
    Aic,
}

impl Core {
    fn define(self) -> &'static str {
        match self {
            Core::Aiv => "-D__DAV_VEC__",
            Core::Aic => "-D__DAV_CUBE__",
        }
    }
    fn name(self) -> &'static str {
        match self {
            Core::Aiv => "aiv",
            Core::Aic => "aic",
        }
    }
    fn ascendc(self) -> &'static str {
        match self {
            Core::Aiv => "AscendC::AIV",
            Core::Aic => "AscendC::AIC",
        }
    }
}

/// A compile's outcome: Err holds the compiler's diagnostics.
type Checked = Result<(), String>;

/// One compile: a core type, with the CPU-debug or the device's core-type macros.
#[derive(Clone, Copy, PartialEq, Debug)]
struct Mode {
    core: Core,
    device_macros: bool,
}

impl Mode {
    fn label(self) -> String {
        let prefix = if self.device_macros { "npu-" } else { "" };
        format!("{prefix}{}", self.core.name())
    }
    fn prelude(self) -> String {
        format!("prelude_{}.h", self.label().replace('-', "_"))
    }
}

const MODES: [Mode; 4] = [
    Mode {
        core: Core::Aiv,
        device_macros: false,
    },
    Mode {
        core: Core::Aic,
        device_macros: false,
    },
    Mode {
        core: Core::Aiv,
        device_macros: true,
    },
    Mode {
        core: Core::Aic,
        device_macros: true,
    },
];

/// The core types a kernel's entry marking implies, or None without a marking.
fn cores_of(source: &str) -> Option<Vec<Core>> {
    let entry = source.lines().find(|l| l.contains("__global__"))?;
    if entry.contains("__mix__") {
        Some(vec![Core::Aic, Core::Aiv])
    } else if entry.contains("__vector__") {
        Some(vec![Core::Aiv])
    } else if entry.contains("__cube__") {
        Some(vec![Core::Aic])
    } else {
        None
    }
}

pub struct Options {
    pub devkit: Option<PathBuf>,
    pub tools: Option<PathBuf>,
    pub filter: Option<String>,
    pub jobs: Option<usize>,
}

pub fn check_headers_command(root: &Path, o: &Options) -> u8 {
    let (Some(devkit), Some(tools)) = (&o.devkit, &o.tools) else {
        println!(
            "check-headers: skipped: pass --devkit DIR and --tools DIR (checkouts of \
             mirror-cann/asc-devkit and hicann/asc-tools) to type-check the kernels against the \
             public Ascend C headers"
        );
        return 0;
    };
    match run(root, devkit, tools, o) {
        Ok(true) => 0,
        Ok(false) => 1,
        Err(e) => {
            eprintln!("error: check-headers: {e}");
            2
        }
    }
}

fn run(root: &Path, devkit: &Path, tools: &Path, o: &Options) -> Result<bool, String> {
    for (dir, file, what) in [
        (
            devkit,
            "include/kernel_operator.h",
            "--devkit (an asc-devkit checkout)",
        ),
        (
            tools,
            "cpudebug/include/stub_def.h",
            "--tools (an asc-tools checkout)",
        ),
    ] {
        if !dir.join(file).is_file() {
            return Err(format!("{} has no {file}: {what}", dir.display()));
        }
    }
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let work = root.join("target/check-headers");
    let stubs = work.join("stubs");
    write_stubs(root, devkit, &stubs)?;
    let kernels_dir = root.join("generated/ascendc/kernels");
    let mut kernels: Vec<PathBuf> = std::fs::read_dir(&kernels_dir)
        .map_err(|e| format!("{}: {e}", kernels_dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "cpp"))
        .filter(|p| {
            o.filter
                .as_ref()
                .is_none_or(|f| p.to_string_lossy().contains(f.as_str()))
        })
        .collect();
    kernels.sort();
    if kernels.is_empty() {
        return Err(format!(
            "no kernels under {} (run `cargo xtask gen`)",
            kernels_dir.display()
        ));
    }
    let base = base_args(
        devkit,
        tools,
        &stubs,
        &root.join("generated/ascendc/include"),
    );
    println!(
        "check-headers: devkit {} ({}), tools {} ({}); precompiling the headers in {} modes…",
        devkit.display(),
        git_head(devkit),
        tools.display(),
        git_head(tools),
        MODES.len()
    );
    let jobs = o
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    // the headers once per mode (a precompiled prelude), then every kernel against them
    let pch_failures = parallel(MODES.to_vec(), jobs, |m| {
        let prelude = work.join(m.prelude());
        std::fs::write(&prelude, prelude_text(*m)).map_err(|e| e.to_string())?;
        compile(
            &cxx,
            &base,
            *m,
            None,
            &[
                "-x".into(),
                "c++-header".into(),
                prelude.to_string_lossy().into_owned(),
                "-o".into(),
                format!("{}.gch", prelude.display()),
            ],
        )
    });
    if let Some((m, e)) = pch_failures
        .into_iter()
        .find_map(|(m, r)| r.err().map(|e| (m, e)))
    {
        return Err(format!(
            "the devkit's headers do not compile in mode {}:\n{e}",
            m.label()
        ));
    }
    let mut ok = check_table(root, &cxx, &base, &work)?;

    let mut checks = Vec::new();
    for k in &kernels {
        let src = std::fs::read_to_string(k).map_err(|e| format!("{}: {e}", k.display()))?;
        let Some(cores) = cores_of(&src) else {
            println!(
                "FAIL {}: no __vector__ / __cube__ / __mix__ marking on its entry",
                stem(k)
            );
            ok = false;
            continue;
        };
        for m in MODES.iter().filter(|m| cores.contains(&m.core)) {
            checks.push((k.clone(), *m));
        }
    }
    let total = checks.len();
    let done = Mutex::new(0usize);
    let results = parallel(checks, jobs, |(k, m)| {
        let prelude = work.join(m.prelude());
        let r = compile(
            &cxx,
            &base,
            *m,
            Some(&prelude),
            &[k.to_string_lossy().into_owned()],
        );
        let mut n = done.lock().unwrap();
        *n += 1;
        if (*n).is_multiple_of(50) || *n == total {
            eprintln!("check-headers: {}/{total} checks", *n);
        }
        r
    });
    let (mut passed, mut failed) = (0, 0);
    let mut by_kernel: Vec<(String, Vec<(Mode, Checked)>)> = Vec::new();
    for ((k, m), r) in results {
        let name = stem(&k);
        match by_kernel.last_mut() {
            Some((n, v)) if *n == name => v.push((m, r)),
            _ => by_kernel.push((name, vec![(m, r)])),
        }
    }
    for (name, modes) in &by_kernel {
        let labels: Vec<String> = modes.iter().map(|(m, _)| m.label()).collect();
        match modes
            .iter()
            .find_map(|(m, r)| r.as_ref().err().map(|e| (m, e)))
        {
            None => println!("PASS {name} ({})", labels.join(", ")),
            Some((m, e)) => {
                println!("FAIL {name} [{}]: {}", m.label(), first_error(e));
                ok = false;
            }
        }
        for (_, r) in modes {
            if r.is_ok() { passed += 1 } else { failed += 1 }
        }
    }
    println!(
        "check-headers: {} kernels, {total} kernel x mode checks: {passed} passed, {failed} failed \
         (devkit {}, tools {})",
        by_kernel.len(),
        git_head(devkit),
        git_head(tools)
    );
    Ok(ok)
}

/// The sim's name table against the devkit: every line compiles, and each global-only name
/// fails as `AscendC::NAME`.
fn check_table(root: &Path, cxx: &str, base: &[String], work: &Path) -> Result<bool, String> {
    let table = root.join("harness/sim/api_scope.cpp");
    let text = std::fs::read_to_string(&table).map_err(|e| format!("{}: {e}", table.display()))?;
    let mode = MODES[0];
    let prelude = work.join(mode.prelude());
    if let Err(e) = compile(
        cxx,
        base,
        mode,
        Some(&prelude),
        &[table.to_string_lossy().into_owned()],
    ) {
        println!("FAIL harness/sim/api_scope.cpp: {}", first_error(&e));
        return Ok(false);
    }
    let globals: Vec<&str> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("using ::")?.strip_suffix(';'))
        .collect();
    let mut probe = String::from("#include \"kernel_operator.h\"\n");
    for g in &globals {
        let _ = writeln!(probe, "using AscendC::{g};");
    }
    let file = work.join("global_only.cpp");
    std::fs::write(&file, probe).map_err(|e| e.to_string())?;
    let errors = compile(
        cxx,
        base,
        mode,
        Some(&prelude),
        &[file.to_string_lossy().into_owned()],
    )
    .err()
    .unwrap_or_default();
    let in_ascendc: Vec<&&str> = globals
        .iter()
        .enumerate()
        .filter(|(i, _)| !errors.contains(&format!("global_only.cpp:{}:", i + 2)))
        .map(|(_, g)| g)
        .collect();
    if in_ascendc.is_empty() {
        println!(
            "PASS harness/sim/api_scope.cpp: every name at its scope, {} global only",
            globals.len()
        );
        Ok(true)
    } else {
        println!(
            "FAIL harness/sim/api_scope.cpp: the devkit also declares {in_ascendc:?} in AscendC"
        );
        Ok(false)
    }
}

fn base_args(devkit: &Path, tools: &Path, stubs: &Path, generated: &Path) -> Vec<String> {
    let mut a: Vec<String> = [
        "-std=c++17",
        "-D__CCE_KT_TEST__=1",
        "-DASCENDC_CPU_DEBUG=1",
        "-D__CCE_AICORE__=220",
        "-D__DAV_C220__",
        "-D__NPU_ARCH__=2201",
    ]
    .map(String::from)
    .to_vec();
    let includes = [
        devkit.to_path_buf(),
        devkit.join("include"),
        devkit.join("include/basic_api"),
        devkit.join("include/adv_api"),
        devkit.join("include/utils"),
        devkit.join("impl"),
        devkit.join("impl/basic_api"),
        devkit.join("impl/utils"),
        tools.join("cpudebug/include"),
        tools.join("cpudebug/utils"),
        tools.join("cpudebug/utils/include"),
        stubs.to_path_buf(),
        generated.to_path_buf(),
    ];
    for i in includes {
        a.push(format!("-I{}", i.display()));
    }
    a
}

/// The precompiled prelude of a mode: the devkit's kernel_operator.h, and in the device
/// spelling the core-type macros as the device build defines them (sys_macros.h, non-CPU).
fn prelude_text(m: Mode) -> String {
    let mut s = String::from("#include \"kernel_operator.h\"\n");
    if m.device_macros {
        let _ = write!(
            s,
            "#undef ASCEND_IS_AIV\n#undef ASCEND_IS_AIC\n#undef ASCEND_IS_NOT_AIV\n#undef ASCEND_IS_NOT_AIC\n\
             constexpr int32_t g_checkCoreType = {};\n\
             #define ASCEND_IS_AIV constexpr(g_checkCoreType == AscendC::AIV)\n\
             #define ASCEND_IS_AIC constexpr(g_checkCoreType == AscendC::AIC)\n\
             #define ASCEND_IS_NOT_AIV constexpr(g_checkCoreType != AscendC::AIV)\n\
             #define ASCEND_IS_NOT_AIC constexpr(g_checkCoreType != AscendC::AIC)\n",
            m.core.ascendc()
        );
    }
    s
}

fn compile(
    cxx: &str,
    base: &[String],
    m: Mode,
    prelude: Option<&Path>,
    args: &[String],
) -> Result<(), String> {
    let mut cmd = Command::new(cxx);
    cmd.args(base).arg(m.core.define());
    if let Some(p) = prelude {
        cmd.args(["-fsyntax-only", "-Winvalid-pch", "-include"])
            .arg(p);
    }
    let out = cmd
        .args(args)
        .output()
        .map_err(|e| format!("cannot run {cxx}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// The compiler's first error line (with its location), or its first line.
fn first_error(stderr: &str) -> String {
    stderr
        .lines()
        .find(|l| l.contains("error"))
        .or_else(|| stderr.lines().next())
        .unwrap_or("(no output)")
        .to_string()
}

fn stem(p: &Path) -> String {
    p.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn git_head(dir: &Path) -> String {
    Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "not a git checkout".into())
}

/// Runs `f` over `items` on a pool of `jobs` threads; results in the order of `items`.
fn parallel<T: Send + Sync, R: Send>(
    items: Vec<T>,
    jobs: usize,
    f: impl Fn(&T) -> R + Sync + Send,
) -> Vec<(T, R)> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.max(1))
        .build()
        .expect("a thread pool");
    let results: Vec<R> = pool.install(|| items.par_iter().map(&f).collect());
    items.into_iter().zip(results).collect()
}

/// stub_fun.h from intrinsics.txt; register/tilingdata_base.h (the tiling macros as plain
/// structs) and kernel_tiling/kernel_tiling.h (every `*_tilingdata.h` of the devkit, whose
/// structs the adv API names at global scope and in AscendC::tiling).
fn write_stubs(root: &Path, devkit: &Path, stubs: &Path) -> Result<(), String> {
    let list = root.join("xtask/headers/intrinsics.txt");
    let text = std::fs::read_to_string(&list).map_err(|e| format!("{}: {e}", list.display()))?;
    let stub_fun = stub_fun(&text).map_err(|e| format!("{}: {e}", list.display()))?;
    let adv = devkit.join("include/adv_api");
    let mut tilingdata = Vec::new();
    for entry in walkdir::WalkDir::new(&adv)
        .into_iter()
        .flatten()
        .map(|e| e.into_path())
    {
        if entry.to_string_lossy().ends_with("_tilingdata.h")
            && std::fs::read_to_string(&entry).is_ok_and(|t| t.contains("BEGIN_TILING_DATA_DEF"))
        {
            tilingdata.push(
                entry
                    .strip_prefix(&adv)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned(),
            );
        }
    }
    tilingdata.sort();
    let mut kernel_tiling = String::from("#pragma once\n#include \"register/tilingdata_base.h\"\n");
    for f in &tilingdata {
        let _ = writeln!(kernel_tiling, "#include \"{f}\"");
    }
    kernel_tiling.push_str(
        "using namespace optiling;\nnamespace AscendC { namespace tiling { using namespace ::optiling; } }\n",
    );
    let tilingdata_base = "#pragma once\n#include <cstdint>\n\
        #define BEGIN_TILING_DATA_DEF(name) struct name {\n\
        #define TILING_DATA_FIELD_DEF(type, field) type field = {};\n\
        #define TILING_DATA_FIELD_DEF_ARR(type, n, field) type field[n] = {};\n\
        #define TILING_DATA_FIELD_DEF_STRUCT(type, field) type field = {};\n\
        #define END_TILING_DATA_DEF };\n\
        #define REGISTER_TILING_DATA_CLASS(...)\n";
    for (path, body) in [
        ("stub_fun.h", stub_fun.as_str()),
        ("register/tilingdata_base.h", tilingdata_base),
        ("kernel_tiling/kernel_tiling.h", kernel_tiling.as_str()),
    ] {
        let p = stubs.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).map_err(|e| e.to_string())?;
        std::fs::write(&p, body).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    Ok(())
}

/// The C++ of intrinsics.txt: `enum NAME:`, `void:`, `value:` and `convert:` sections,
/// each followed by indented names.
fn stub_fun(list: &str) -> Result<String, String> {
    let mut out = String::from(
        "// Generated by `cargo xtask check-headers` from xtask/headers/intrinsics.txt.\n#pragma once\n#include <cstdint>\n\
         struct StubValue { template <class T> operator T() const { return T(); } };\n",
    );
    let mut section: Option<String> = None;
    let mut names: Vec<&str> = Vec::new();
    let flush =
        |section: &Option<String>, names: &mut Vec<&str>, out: &mut String| -> Result<(), String> {
            let Some(s) = section else { return Ok(()) };
            match s.as_str() {
                "void" | "value" | "convert" => {
                    let ret = match s.as_str() {
                        "void" => "void",
                        "value" => "int64_t",
                        _ => "StubValue",
                    };
                    for n in names.iter() {
                        let _ = writeln!(
                            out,
                            "template <class... A> inline {ret} {n}(A...) {{ return {ret}(); }}"
                        );
                    }
                }
                e => match e.strip_prefix("enum ") {
                    Some(name) => {
                        let _ = writeln!(out, "enum {name} {{ {} }};", names.join(", "));
                    }
                    None => return Err(format!("unknown section `{e}:`")),
                },
            }
            names.clear();
            Ok(())
        };
    for line in list.lines() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        if line.starts_with(char::is_whitespace) {
            names.extend(line.split_whitespace());
        } else {
            flush(&section, &mut names, &mut out)?;
            section = Some(line.trim().trim_end_matches(':').to_string());
        }
    }
    flush(&section, &mut names, &mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markings_give_their_core_types() {
        let k = |m: &str| format!("extern \"C\" __global__ {m} void k(GM_ADDR x)\n");
        assert_eq!(cores_of(&k("__vector__")), Some(vec![Core::Aiv]));
        assert_eq!(cores_of(&k("__cube__")), Some(vec![Core::Aic]));
        assert_eq!(
            cores_of(&k("__mix__(1, 2)")),
            Some(vec![Core::Aic, Core::Aiv])
        );
        assert_eq!(cores_of(&k("__aicore__")), None);
    }

    #[test]
    fn the_stub_list_renders_every_section() {
        let s = stub_fun("# c\nenum pipe_t:\n    PIPE_S PIPE_V\nvoid:\n    set_flag\nvalue:\n    get_block_idx\nconvert:\n    conv_f322f16o\n").unwrap();
        assert!(s.contains("enum pipe_t { PIPE_S, PIPE_V };"), "{s}");
        assert!(s.contains("inline void set_flag(A...)"), "{s}");
        assert!(s.contains("inline int64_t get_block_idx(A...)"), "{s}");
        assert!(s.contains("inline StubValue conv_f322f16o(A...)"), "{s}");
        assert!(stub_fun("weird:\n    x\n").is_err());
    }

    #[test]
    fn the_device_spelling_defines_the_core_type_macros_as_constexpr() {
        let p = prelude_text(Mode {
            core: Core::Aic,
            device_macros: true,
        });
        assert!(p.contains("#define ASCEND_IS_AIV constexpr(g_checkCoreType == AscendC::AIV)"));
        assert!(p.contains("g_checkCoreType = AscendC::AIC"));
        assert!(
            !prelude_text(Mode {
                core: Core::Aiv,
                device_macros: false
            })
            .contains("#define")
        );
    }
}
