//! Spec → validated plan → per-TP plan and stage list → kernel plan → rendered files.
//!
//! [`generate`] runs the whole pipeline in memory: it reads every spec under
//! `specs/`, validates all of them (nothing is rendered unless all are valid),
//! plans a [`variant::Variant`] per spec and TP degree, and renders the files. The
//! [`tree`] module compares the result with `generated/` and is the only code
//! that writes there. Modules depend on each other in one direction (README
//! "Generator modules"; `xtask/tests/workspace_graph.rs` checks).

pub mod budget;
pub mod chip;
pub mod derive;
pub mod diag;
pub mod kernel_plan;
pub mod plan;
pub mod render;
pub mod spec;
pub mod stages;
pub mod tree;
pub mod validate;
pub mod variant;

use std::collections::BTreeSet;
use std::fmt;
use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use diag::SpecError;
use render::GeneratedFile;
use stages::Spec;
use tree::Scope;
use variant::Variant;

pub const SPECS_DIR: &str = "specs";

#[derive(Debug)]
pub enum GenError {
    /// Invalid specs, or a `--spec` that names no spec file (exit code 2).
    Specs(Vec<SpecError>),
    /// Bad arguments (exit code 2).
    Usage(String),
    /// A template failed to render: a bug in a template, not in a spec.
    Render(askama::Error),
    Io(io::Error),
}

impl GenError {
    /// The documented exit code: 2 for bad specs or arguments, 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        match self {
            GenError::Specs(_) | GenError::Usage(_) => 2,
            GenError::Render(_) | GenError::Io(_) => 1,
        }
    }
}

impl fmt::Display for GenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GenError::Specs(errors) => {
                for (i, e) in errors.iter().enumerate() {
                    if i > 0 {
                        writeln!(f)?;
                    }
                    write!(f, "{e}")?;
                }
                Ok(())
            }
            GenError::Usage(msg) => write!(f, "error: {msg}"),
            GenError::Render(e) => write!(f, "error: a template failed to render: {e}"),
            GenError::Io(e) => write!(f, "error: {e}"),
        }
    }
}

impl From<io::Error> for GenError {
    fn from(e: io::Error) -> Self {
        GenError::Io(e)
    }
}

/// The in-memory result of a run.
#[derive(Debug)]
pub struct Generation {
    /// Every variant of every spec, sorted by name.
    pub variants: Vec<Variant>,
    /// The files of the selected specs and the index, sorted by path.
    pub files: Vec<GeneratedFile>,
    pub scope: Scope,
}

/// Validates every spec under `root/specs` and renders the files of `selection`
/// (spec paths, absolute or relative to `root`; empty = all specs).
pub fn generate(root: &Path, selection: &[PathBuf]) -> Result<Generation, GenError> {
    let all = discover(root)?;
    let scope = select(root, &all, selection)?;
    let mut specs = Vec::with_capacity(all.len());
    let mut errors = Vec::new();
    for path in &all {
        match read_spec(root, path) {
            Ok(s) => specs.push(s),
            Err(e) => errors.push(e),
        }
    }
    let mut variants = Vec::new();
    for s in &specs {
        match variant::build(s) {
            Ok(v) => variants.extend(v),
            Err(e) => errors.extend(e),
        }
    }
    errors.extend(duplicate_names(&specs));
    if !errors.is_empty() {
        // Per file, top to bottom (the sort is stable: same-place errors keep their order).
        errors.sort_by(|a, b| (&a.file, a.loc).cmp(&(&b.file, b.loc)));
        return Err(GenError::Specs(errors));
    }
    variants.sort_by(|a, b| a.plan.variant.cmp(&b.plan.variant));
    let blocks = read_blocks(root)?;
    let files = render::render(&variants, &blocks)
        .map_err(GenError::Render)?
        .into_iter()
        .filter(|f| scope.covers(&f.owner))
        .collect();
    Ok(Generation {
        variants,
        files,
        scope,
    })
}

/// Parses one spec file; `path` is relative to `root`.
pub fn read_spec(root: &Path, path: &str) -> Result<Spec, SpecError> {
    let text = fs::read_to_string(root.join(path)).map_err(|e| SpecError {
        file: path.to_owned(),
        loc: None,
        message: format!("cannot read the spec: {e}"),
        rule: "a spec is a readable UTF-8 YAML file".into(),
        source_line: None,
    })?;
    spec::parse(path, &text)
}

/// The kernel building blocks under `blocks/`, sorted by path.
pub fn read_blocks(root: &Path) -> io::Result<Vec<render::Block>> {
    let dir = root.join(render::BLOCKS_DIR);
    let mut out = Vec::new();
    for path in tree::files(&dir)? {
        let text = fs::read_to_string(dir.join(&path))?;
        out.push(render::Block { path, text });
    }
    Ok(out)
}

/// Every `*.yaml` under `specs/`, repo-relative, sorted.
fn discover(root: &Path) -> io::Result<Vec<String>> {
    Ok(tree::files(&root.join(SPECS_DIR))?
        .into_iter()
        .filter(|p| p.ends_with(".yaml"))
        .map(|p| format!("{SPECS_DIR}/{p}"))
        .collect())
}

fn select(root: &Path, all: &[String], selection: &[PathBuf]) -> Result<Scope, GenError> {
    if selection.is_empty() {
        return Ok(Scope::All);
    }
    let mut chosen = BTreeSet::new();
    let mut missing = Vec::new();
    for p in selection {
        let rel = repo_relative(root, p).ok_or_else(|| {
            GenError::Usage(format!(
                "--spec {} is not a file under {SPECS_DIR}/ of this repository",
                p.display()
            ))
        })?;
        if all.contains(&rel) {
            chosen.insert(rel);
        } else if !rel.starts_with(&format!("{SPECS_DIR}/")) || !rel.ends_with(".yaml") {
            return Err(GenError::Usage(format!(
                "--spec {rel} is not a .yaml file under {SPECS_DIR}/"
            )));
        } else {
            missing.push(SpecError {
                file: rel,
                loc: None,
                message: "spec file not found".into(),
                rule: "--spec names an existing YAML file under specs/".into(),
                source_line: None,
            });
        }
    }
    if missing.is_empty() {
        Ok(Scope::Specs(chosen))
    } else {
        Err(GenError::Specs(missing))
    }
}

/// `p` as a normalised `/`-separated path relative to `root`, if it lies inside.
fn repo_relative(root: &Path, p: &Path) -> Option<String> {
    let rel = if p.is_absolute() {
        let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        let parent = p.parent()?.canonicalize().ok()?;
        parent.strip_prefix(&root).ok()?.join(p.file_name()?)
    } else {
        p.to_path_buf()
    };
    let mut parts = Vec::new();
    for c in rel.components() {
        match c {
            Component::Normal(s) => parts.push(s.to_string_lossy().into_owned()),
            Component::CurDir => {}
            _ => return None,
        }
    }
    Some(parts.join("/"))
}

fn duplicate_names(specs: &[Spec]) -> Vec<SpecError> {
    let mut errors = Vec::new();
    for (i, s) in specs.iter().enumerate() {
        let name = &s.file.name;
        if let Some(first) = specs[..i].iter().find(|o| o.file.name.value == name.value) {
            errors.push(diag::located(
                &s.path,
                &s.text,
                diag::Loc::of(name),
                format!("spec name `{}` is also used by {}", name.value, first.path),
                "spec names are unique: they name the generated variants".into(),
            ));
        }
    }
    errors
}
