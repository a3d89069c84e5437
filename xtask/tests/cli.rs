//! `cargo xtask gen | gen --check | diff` end to end, on a copy of specs/ in a
//! temporary repository root.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use tempfile::TempDir;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// A temporary root with the real specs and kernel building blocks and an empty generated/.
fn scratch() -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&repo().join("specs"), &dir.path().join("specs"));
    let blocks = "blocks";
    copy_dir(&repo().join(blocks), &dir.path().join(blocks));
    dir
}

fn xtask(root: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(args)
        .arg("--root")
        .arg(root)
        .current_dir(root)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn code(out: &Output) -> i32 {
    out.status.code().expect("exited")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Every file under generated/ with its bytes.
fn snapshot(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        for e in entries {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else {
                out.insert(p.clone(), fs::read(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(&root.join("generated"), &mut out);
    out
}

fn generated(root: &TempDir) -> Output {
    let out = xtask(root.path(), &["gen"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    out
}

#[test]
fn gen_writes_everything_then_is_a_byte_identical_no_op() {
    let root = scratch();
    let first = generated(&root);
    let committed = snapshot(&repo()).len();
    assert!(
        stdout(&first).contains(&format!("0 updated, {committed} created, 0 removed")),
        "{}",
        stdout(&first)
    );
    let before = snapshot(root.path());
    assert_eq!(before.len(), committed);
    let second = generated(&root);
    assert!(stdout(&second).contains("0 updated, 0 created, 0 removed"));
    assert_eq!(snapshot(root.path()), before);
    // The fresh tree equals the committed one.
    let committed = snapshot(&repo());
    let strip = |s: BTreeMap<PathBuf, Vec<u8>>, base: &Path| -> BTreeMap<PathBuf, Vec<u8>> {
        s.into_iter()
            .map(|(p, b)| (p.strip_prefix(base).unwrap().to_path_buf(), b))
            .collect()
    };
    assert_eq!(strip(before, root.path()), strip(committed, &repo()));
    let check = xtask(root.path(), &["gen", "--check"]);
    assert_eq!(code(&check), 0, "{}", stdout(&check));
}

#[test]
fn check_names_an_edited_file_with_a_diff() {
    let root = scratch();
    generated(&root);
    let edited = root.path().join("generated/host/swa_tp2.rs");
    let text = fs::read_to_string(&edited).unwrap();
    fs::write(
        &edited,
        text.replace(
            "pub const LOCAL_T: usize = 256;",
            "pub const LOCAL_T: usize = 255;",
        ),
    )
    .unwrap();
    let out = xtask(root.path(), &["gen", "--check"]);
    assert_eq!(code(&out), 1);
    let shown = stdout(&out);
    assert!(
        shown.contains("stale: generated/host/swa_tp2.rs"),
        "{shown}"
    );
    assert!(shown.contains("--- a/generated/host/swa_tp2.rs"), "{shown}");
    assert!(
        shown.contains("-pub const LOCAL_T: usize = 255;"),
        "{shown}"
    );
    assert!(
        shown.contains("+pub const LOCAL_T: usize = 256;"),
        "{shown}"
    );
    assert!(!shown.contains('\x1b'), "NO_COLOR is respected");
    assert!(
        stderr(&out).contains("1 stale, 0 missing, 0 orphaned"),
        "{}",
        stderr(&out)
    );
    // Check never writes.
    assert!(fs::read_to_string(&edited).unwrap().contains("= 255;"));
}

#[test]
fn orphans_are_reported_then_removed_and_missing_files_listed() {
    let root = scratch();
    generated(&root);
    let gen_dir = root.path().join("generated");
    // An orphan alone in its directory: gen removes both.
    fs::create_dir_all(gen_dir.join("ascendc/old_tp1")).unwrap();
    let orphan = gen_dir.join("ascendc/old_tp1/old.rs");
    fs::copy(gen_dir.join("host/swa_tp1.rs"), &orphan).unwrap();
    fs::remove_file(gen_dir.join("host/hca_tp4.rs")).unwrap();
    let out = xtask(root.path(), &["gen", "--check"]);
    assert_eq!(code(&out), 1);
    assert!(
        stdout(&out).contains("orphaned: generated/ascendc/old_tp1/old.rs"),
        "{}",
        stdout(&out)
    );
    assert!(
        stdout(&out).contains("missing: generated/host/hca_tp4.rs"),
        "{}",
        stdout(&out)
    );
    let fixed = generated(&root);
    assert!(
        stdout(&fixed).contains("0 updated, 1 created, 1 removed"),
        "{}",
        stdout(&fixed)
    );
    assert!(!orphan.exists() && !gen_dir.join("ascendc/old_tp1").exists());
    assert_eq!(code(&xtask(root.path(), &["gen", "--check"])), 0);
}

#[test]
fn a_file_without_the_marker_is_an_error_and_never_deleted() {
    let root = scratch();
    generated(&root);
    let foreign = root.path().join("generated/host/notes.txt");
    fs::write(&foreign, "hand-written\n").unwrap();
    let stale = root.path().join("generated/host/swa_tp1.rs");
    fs::write(&stale, "// stale\n").unwrap();
    let before = snapshot(root.path());
    let check = xtask(root.path(), &["gen", "--check"]);
    assert_eq!(code(&check), 1);
    assert!(stderr(&check).contains("generated/host/notes.txt has no @generated marker"));
    let out = xtask(root.path(), &["gen"]);
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).contains("nothing written"), "{}", stderr(&out));
    assert_eq!(snapshot(root.path()), before);
}

#[test]
fn an_invalid_spec_writes_nothing_and_exits_2() {
    let root = scratch();
    generated(&root);
    // Make gen want to write something, then break an unrelated spec.
    let stale = root.path().join("generated/host/swa_tp4.rs");
    fs::write(
        &stale,
        "// @generated by cargo xtask gen from specs/swa.yaml (spec 0) — do not edit\n",
    )
    .unwrap();
    let spec = root.path().join("specs/test/hca_small.yaml");
    let text = fs::read_to_string(&spec).unwrap();
    fs::write(&spec, text.replace("o_groups: 4", "o_groups: 3")).unwrap();
    let line = 1 + text
        .lines()
        .position(|l| l.contains("o_groups: 4"))
        .unwrap();
    let expected = format!(
        "specs/test/hca_small.yaml:{line}:13: error: heads 8 is not divisible by o_groups 3 (rule: "
    );
    let before = snapshot(root.path());
    for args in [&["gen"][..], &["gen", "--check"], &["diff"]] {
        let out = xtask(root.path(), args);
        assert_eq!(code(&out), 2, "{args:?}");
        let err = stderr(&out);
        assert!(err.starts_with(&expected), "{err}");
        assert_eq!(snapshot(root.path()), before, "{args:?} wrote");
    }
}

#[test]
fn spec_selection_touches_only_that_spec() {
    let root = scratch();
    generated(&root);
    let swa = root.path().join("generated/host/swa_tp1.rs");
    let hca = root.path().join("generated/host/hca_tp1.rs");
    let swa_text = fs::read_to_string(&swa).unwrap();
    let hca_text = fs::read_to_string(&hca).unwrap();
    fs::write(&swa, swa_text.replace("pub const TP: usize = 1;", "")).unwrap();
    fs::write(&hca, hca_text.replace("pub const TP: usize = 1;", "")).unwrap();
    // An orphan of another spec stays too.
    let orphan = root.path().join("generated/host/gone_tp1.rs");
    fs::write(
        &orphan,
        "// @generated by cargo xtask gen from specs/gone.yaml (spec 0) — do not edit\n",
    )
    .unwrap();
    let out = xtask(root.path(), &["gen", "--spec", "specs/hca.yaml"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(fs::read_to_string(&hca).unwrap(), hca_text);
    assert_ne!(fs::read_to_string(&swa).unwrap(), swa_text);
    assert!(orphan.exists());

    let missing = xtask(root.path(), &["gen", "--spec", "specs/nope.yaml"]);
    assert_eq!(code(&missing), 2);
    assert!(
        stderr(&missing).starts_with("specs/nope.yaml: error: spec file not found (rule: "),
        "{}",
        stderr(&missing)
    );
    let outside = xtask(root.path(), &["gen", "--spec", "Cargo.toml"]);
    assert_eq!(code(&outside), 2);
}

#[test]
fn diff_shows_pending_changes_and_a_stat() {
    let root = scratch();
    generated(&root);
    let file = root.path().join("generated/host/csa_tp1.rs");
    let text = fs::read_to_string(&file).unwrap();
    fs::write(
        &file,
        text.replace("pub const LAYER: &str = \"csa\";\n", ""),
    )
    .unwrap();
    let diff = xtask(root.path(), &["diff"]);
    assert_eq!(code(&diff), 0);
    assert!(
        stdout(&diff).contains("+pub const LAYER: &str = \"csa\";"),
        "{}",
        stdout(&diff)
    );
    let stat = xtask(root.path(), &["diff", "--stat"]);
    assert_eq!(code(&stat), 0);
    assert!(
        stdout(&stat).contains("generated/host/csa_tp1.rs |     1 +"),
        "{}",
        stdout(&stat)
    );
    assert!(stdout(&stat).contains("1 files changed, 1 insertions(+), 0 deletions(-)"));
    // diff never writes.
    assert!(
        !fs::read_to_string(&file)
            .unwrap()
            .contains("pub const LAYER: &str = \"csa\";")
    );
}

#[test]
fn bad_arguments_exit_2_and_help_explains_the_commands() {
    let root = scratch();
    assert_eq!(code(&xtask(root.path(), &["gen", "--bogus"])), 2);
    assert_eq!(code(&xtask(root.path(), &["frobnicate"])), 2);
    let help = xtask(root.path(), &["gen", "--help"]);
    assert_eq!(code(&help), 0);
    assert!(stdout(&help).contains("--check") && stdout(&help).contains("--spec <FILE>"));
}
