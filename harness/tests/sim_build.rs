//! Building kernels for the sim: compiler diagnostics surface with file and line, and the
//! content-hash cache reuses a build only when nothing that feeds it changed.

use std::path::Path;
use std::time::Instant;

use harness::kernel_library::{BuildSpec, CoreMode, GmArg, SimError, SimLibrary};
use sha2::{Digest, Sha256};

const GOOD: &str = r#"#include "kernel_operator.h"
#include "extra.h"
using namespace AscendC;
extern "C" __global__ __aicore__ void fill(GM_ADDR y)
{
    GlobalTensor<int32_t> g;
    g.SetGlobalBuffer((__gm__ int32_t*)y);
    g.SetValue(0, kValue);
}
"#;

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

fn run_fill(lib: &SimLibrary) -> i32 {
    let mut y = vec![0i32; 1];
    lib.launch("fill", CoreMode::Aiv, 1, &mut [GmArg::new("y", &mut y)])
        .unwrap();
    y[0]
}

#[test]
fn compiler_errors_carry_file_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("broken.cpp");
    write(
        tmp.path(),
        "broken.cpp",
        "#include \"kernel_operator.h\"\nextern \"C\" void k(GM_ADDR x)\n{\n    undeclared_call(x);\n}\n",
    );
    // the kernel fails to compile before the model is built, so a fresh cache costs little
    let spec = BuildSpec::new([&src]).cache_dir(tmp.path().join("cache"));
    match SimLibrary::build(&spec) {
        Err(e @ SimError::Compile { .. }) => {
            let text = e.to_string();
            assert!(
                text.contains("broken.cpp:4:"),
                "diagnostic names file:line: {text}"
            );
            assert!(text.contains("undeclared_call"), "{text}");
        }
        Err(e) => panic!("expected a compile error, got {e}"),
        Ok(_) => panic!("a broken kernel must not build"),
    }
}

#[test]
fn cache_key_covers_sources_and_included_headers() {
    // fixed paths and the default cache: reruns hit the cache (and the model's objects are
    // shared with every other build) without changing what this test checks
    let dir = std::env::temp_dir().join("harness-sim-build-test");
    let inc = dir.join("inc");
    std::fs::create_dir_all(&inc).unwrap();
    write(&dir, "fill.cpp", GOOD);
    write(&inc, "extra.h", "constexpr int32_t kValue = 7;\n");
    let spec = BuildSpec::new([dir.join("fill.cpp")]).include_dir(&inc);

    let first = SimLibrary::build(&spec).unwrap();
    assert_eq!(run_fill(&first), 7);
    let t = Instant::now();
    let again = SimLibrary::build(&spec).unwrap();
    assert_eq!(
        again.path(),
        first.path(),
        "same inputs, same cached library"
    );
    assert!(
        t.elapsed().as_secs_f64() < 1.0,
        "a cache hit does not recompile"
    );

    // touching a header's content (not its mtime) changes the key
    write(&inc, "extra.h", "constexpr int32_t kValue = 8;\n");
    let changed = SimLibrary::build(&spec).unwrap();
    assert_ne!(changed.path(), first.path());
    assert_eq!(run_fill(&changed), 8);
}

#[test]
fn a_damaged_cache_entry_is_named_and_rebuilt_and_stale_build_folders_are_swept() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let inc = tmp.path().join("inc");
    std::fs::create_dir_all(&inc).unwrap();
    write(tmp.path(), "fill.cpp", GOOD);
    write(&inc, "extra.h", "constexpr int32_t kValue = 5;\n");
    let spec = BuildSpec::new([tmp.path().join("fill.cpp")])
        .include_dir(&inc)
        .cache_dir(&cache);
    let first = SimLibrary::build(&spec).unwrap();
    let lib = first.path().to_path_buf();
    drop(first);

    // Cut in half, as a full disk or an interrupted copy would leave it.
    let len = std::fs::metadata(&lib).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&lib)
        .unwrap()
        .set_len(len / 2)
        .unwrap();
    // A builder killed mid-build left its folder; a running one (this process) keeps its own.
    let dead = cache.join(".objects.tmp-4194305-1");
    let live = cache.join(format!(".objects.tmp-{}-1", std::process::id()));
    for d in [&dead, &live] {
        std::fs::create_dir_all(d).unwrap();
    }

    let mut notes = Vec::new();
    let again = SimLibrary::build_noting(&spec, &mut |m| notes.push(m.to_string())).unwrap();
    assert_eq!(again.path(), lib, "rebuilt in place");
    assert_eq!(run_fill(&again), 5);
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].contains(&lib.display().to_string()) && notes[0].contains("damaged"),
        "the note names the entry and what is wrong: {}",
        notes[0]
    );
    assert!(!dead.exists(), "a dead builder's folder is swept");
    assert!(live.exists(), "a running builder's folder is kept");

    // Intact now: used as it is, with nothing to say.
    notes.clear();
    let third = SimLibrary::build_noting(&spec, &mut |m| notes.push(m.to_string())).unwrap();
    assert_eq!(run_fill(&third), 5);
    assert!(notes.is_empty(), "{notes:?}");
    drop((again, third));

    // Bytes that match their digest but are no library: the loader's message is the note.
    let junk = b"not a shared object";
    std::fs::remove_file(&lib).unwrap(); // a new file: the old one may still be mapped
    std::fs::write(&lib, junk).unwrap();
    let sum: String = Sha256::digest(junk)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    std::fs::write(lib.with_extension("so.sha256"), sum).unwrap();
    let fourth = SimLibrary::build_noting(&spec, &mut |m| notes.push(m.to_string())).unwrap();
    assert_eq!(run_fill(&fourth), 5);
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].contains("does not load"), "{}", notes[0]);
}
