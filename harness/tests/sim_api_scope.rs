//! The sim declares what the public Ascend C headers declare, where they declare them.
//! `harness/sim/api_scope.cpp` is the table (name and scope); here it is held against the
//! sim: every line compiles, every name the sim's headers declare outside `AscendC::sim` is
//! in it, and a global-only name does not compile as `AscendC::NAME`. `cargo xtask
//! check-headers` holds the same table against the devkit.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use harness::kernel_library::{BuildSpec, SimError, SimLibrary, model_include_dir};

fn table_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("sim/api_scope.cpp")
}

/// `(global, name)` for each `using ::NAME;` / `using AscendC::NAME;` line of the table.
fn table() -> Vec<(bool, String)> {
    let text = std::fs::read_to_string(table_path()).unwrap();
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("using ")?.strip_suffix(';'))
        .map(|n| match n.strip_prefix("::") {
            Some(g) => (true, g.to_string()),
            None => (false, n.strip_prefix("AscendC::").unwrap().to_string()),
        })
        .collect()
}

/// Compiles `src` against the sim's headers only (syntax), returning the compiler's stderr.
fn syntax_check(src: &str) -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("probe.cpp");
    std::fs::write(&file, src).unwrap();
    let out = Command::new("c++")
        .args(["-std=c++17", "-fsyntax-only", "-I"])
        .arg(model_include_dir())
        .arg(&file)
        .output()
        .expect("a C++ compiler (c++) on PATH");
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

#[test]
fn every_line_of_the_table_compiles_against_the_sim() {
    let src = std::fs::read_to_string(table_path()).unwrap();
    if let Err(e) = syntax_check(&src) {
        panic!("api_scope.cpp does not compile against the sim:\n{e}");
    }
    assert!(table().len() > 100, "the table lists the sim's names");
}

#[test]
fn global_only_names_are_not_in_namespace_ascendc() {
    let globals: Vec<String> = table()
        .into_iter()
        .filter_map(|(g, n)| g.then_some(n))
        .collect();
    assert!(globals.iter().any(|n| n == "GetTPipePtr"));
    let mut src = String::from("#include \"kernel_operator.h\"\n");
    for n in &globals {
        src.push_str(&format!("using AscendC::{n};\n"));
    }
    let errors = syntax_check(&src).expect_err("global-only names must not be in AscendC");
    // one error per line: line 2 + i holds globals[i]
    for (i, n) in globals.iter().enumerate() {
        let at = format!("probe.cpp:{}:", i + 2);
        assert!(
            errors
                .lines()
                .any(|l| l.contains(&at) && l.contains("error")),
            "AscendC::{n} compiles against the sim, but the public headers declare it only at global scope:\n{errors}"
        );
    }
}

#[test]
fn every_name_the_sim_declares_is_in_the_table() {
    let listed: BTreeSet<String> = table().into_iter().map(|(_, n)| n).collect();
    let declared = sim_public_names(&model_include_dir());
    assert!(
        declared.contains("DataCopy") && declared.contains("GetTPipePtr"),
        "the walk finds the sim's names: {declared:?}"
    );
    let missing: Vec<&String> = declared.difference(&listed).collect();
    assert!(
        missing.is_empty(),
        "the sim declares names that harness/sim/api_scope.cpp does not list (check them against \
         the public headers, then list them, or move them into AscendC::sim): {missing:?}"
    );
}

/// A kernel that spells a global API inside `AscendC::` does not build on the sim, as it
/// does not on the device (the bug the sim once hid: `AscendC::GetTPipePtr()`).
#[test]
fn a_kernel_calling_a_name_in_the_wrong_namespace_does_not_build() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("wrong_scope.cpp");
    std::fs::write(
        &src,
        "#include \"kernel_operator.h\"\n\
         extern \"C\" __global__ __vector__ void k(GM_ADDR x)\n\
         {\n\
         \x20   AscendC::TPipe pipe;\n\
         \x20   (void)AscendC::GetTPipePtr()->FetchEventID<AscendC::HardEvent::V_S>();\n\
         }\n",
    )
    .unwrap();
    let spec = BuildSpec::new([&src]).cache_dir(tmp.path().join("cache"));
    match SimLibrary::build(&spec) {
        Err(e @ SimError::Compile { .. }) => {
            let text = e.to_string();
            assert!(text.contains("wrong_scope.cpp:5:"), "{text}");
            assert!(text.contains("GetTPipePtr"), "{text}");
        }
        Err(e) => panic!("expected a compile error, got {e}"),
        Ok(_) => panic!("AscendC::GetTPipePtr() must not build"),
    }
}

/// The names the sim's headers declare at namespace scope outside `AscendC::sim`: a walk
/// over braces and semicolons of the comment-free text, keeping declarations whose
/// enclosing scopes are all namespaces, and the ops its `SIM_*_OP(NAME, …)` macro lines define.
fn sim_public_names(include: &Path) -> BTreeSet<String> {
    let mut files = vec![include.join("kernel_operator.h")];
    let mut sims: Vec<PathBuf> = std::fs::read_dir(include.join("sim"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    sims.sort();
    files.extend(sims);
    let mut names = BTreeSet::new();
    for f in files {
        let text = strip_comments(&std::fs::read_to_string(&f).unwrap());
        // SIM_BINARY_OP(Add, …) lines define the op NAME; their arguments are no declarations
        let (ops, rest): (Vec<&str>, Vec<&str>) = text
            .lines()
            .partition(|l| l.starts_with("SIM_") && l.contains('('));
        for op in ops {
            let args = op.split_once('(').unwrap().1;
            names.insert(args.split([',', ')']).next().unwrap().trim().to_string());
        }
        walk(&rest.join("\n"), &mut names);
    }
    names
}

fn strip_comments(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            i += 2;
            while i + 1 < b.len() && !b[i..].starts_with(b"*/") {
                i += 1;
            }
            i += 2;
        } else if b[i] == b'"' || b[i] == b'\'' {
            let q = b[i];
            i += 1;
            while i < b.len() && b[i] != q {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    // preprocessor lines (macro bodies included) declare nothing at namespace scope
    let mut kept = String::new();
    let mut continued = false;
    for line in out.lines() {
        let directive = continued || line.trim_start().starts_with('#');
        continued = directive && line.trim_end().ends_with('\\');
        if !directive {
            kept.push_str(line);
            kept.push('\n');
        }
    }
    kept
}

/// Scope kinds on the walk's stack.
#[derive(PartialEq)]
enum Scope {
    Namespace(String),
    Other,
}

fn walk(text: &str, names: &mut BTreeSet<String>) {
    let mut stack: Vec<Scope> = Vec::new();
    let mut head = String::new();
    let public = |stack: &[Scope]| {
        stack
            .iter()
            .all(|s| matches!(s, Scope::Namespace(n) if n != "sim"))
    };
    for c in text.chars() {
        match c {
            '{' => {
                let h = head.trim().to_string();
                let scope = match h.strip_prefix("namespace") {
                    Some(rest) if !rest.contains('=') => Scope::Namespace(rest.trim().to_string()),
                    _ => Scope::Other,
                };
                if scope == Scope::Other && public(&stack) {
                    declared_name(&h, names);
                }
                stack.push(scope);
                head.clear();
            }
            '}' => {
                stack.pop();
                head.clear();
            }
            ';' => {
                if public(&stack) {
                    declared_name(head.trim(), names);
                }
                head.clear();
            }
            _ => head.push(c),
        }
    }
}

/// The name a namespace-scope declaration head introduces (none for a using-directive, a
/// member defined out of line, a forward declaration's template header or an expression).
fn declared_name(head: &str, names: &mut BTreeSet<String>) {
    let h = head.split_whitespace().collect::<Vec<_>>().join(" ");
    if h.is_empty() || h.starts_with("using namespace") || h.starts_with("extern \"\"") {
        return;
    }
    let h = strip_template_headers(&h);
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    // class / struct / enum NAME [: base]
    for kw in ["enum class ", "class ", "struct ", "enum ", "union "] {
        if let Some(pos) = h
            .find(kw)
            .filter(|&p| p == 0 || !is_ident(h.as_bytes()[p - 1] as char))
        {
            let name: String = h[pos + kw.len()..]
                .chars()
                .take_while(|&c| is_ident(c))
                .collect();
            if !name.is_empty() && !h[..pos].contains('(') {
                names.insert(name);
                return;
            }
        }
    }
    // using NAME = …; using ::NAME;
    if let Some(rest) = h.strip_prefix("using ") {
        let name = rest
            .split(['=', ' '])
            .next()
            .unwrap()
            .trim_start_matches("::");
        if !name.contains("::") {
            names.insert(name.to_string());
        }
        return;
    }
    // a function (NAME before the first parenthesis of the parameter list) or a variable
    let decl = match h.find('(') {
        Some(p) => &h[..p],
        None => h.split('=').next().unwrap(),
    };
    let name = decl
        .trim_end()
        .rsplit([' ', '*', '&', '>'])
        .next()
        .unwrap_or("");
    if name.contains("::") || name.starts_with("operator") || name.is_empty() {
        return; // a member defined out of line, or an operator
    }
    if name.chars().all(is_ident) && !name.chars().next().unwrap().is_ascii_digit() {
        names.insert(name.to_string());
    }
}

/// `template <…> X` → `X` (nested angle brackets included), repeatedly.
fn strip_template_headers(h: &str) -> &str {
    let mut h = h.trim_start();
    while let Some(rest) = h.strip_prefix("template") {
        let rest = rest.trim_start();
        if !rest.starts_with('<') {
            break;
        }
        let mut depth = 0;
        let mut end = rest.len();
        for (i, c) in rest.char_indices() {
            match c {
                '<' => depth += 1,
                '>' => {
                    depth -= 1;
                    if depth == 0 {
                        end = i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        h = rest[end..].trim_start();
    }
    h
}
