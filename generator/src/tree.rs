//! The rendered files against `generated/` on disk: what is stale, missing or
//! orphaned, the only code that writes there, and diffs for people.

use std::collections::BTreeSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use similar::{Algorithm, ChangeTag, TextDiff};

use crate::render::{BLOCKS_DIR, GeneratedFile, INDEX_OWNER, SHARED_OWNER, owner_of};

pub const GENERATED_DIR: &str = "generated";

/// Which generated files a run may touch: all, or those of some specs (plus the index).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    All,
    Specs(BTreeSet<String>),
}

impl Scope {
    pub fn covers(&self, owner: &str) -> bool {
        match self {
            Scope::All => true,
            Scope::Specs(specs) => {
                owner == INDEX_OWNER
                    || owner.starts_with(SHARED_OWNER)
                    || owner.starts_with(&format!("{BLOCKS_DIR}/"))
                    || specs.contains(owner)
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    /// On disk with other content.
    Stale,
    /// Rendered but not on disk.
    Missing,
    /// On disk with the marker but no longer rendered.
    Orphan,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub kind: ChangeKind,
    pub path: String,
    pub old: String,
    pub new: String,
}

impl Change {
    /// A unified diff (git-style headers, 3 lines of context).
    pub fn unified_diff(&self) -> String {
        let diff = TextDiff::configure()
            .algorithm(Algorithm::Histogram)
            .diff_lines(&self.old, &self.new);
        let (a, b) = match self.kind {
            ChangeKind::Stale => (format!("a/{}", self.path), format!("b/{}", self.path)),
            ChangeKind::Missing => ("/dev/null".into(), format!("b/{}", self.path)),
            ChangeKind::Orphan => (format!("a/{}", self.path), "/dev/null".into()),
        };
        diff.unified_diff()
            .context_radius(3)
            .header(&a, &b)
            .to_string()
    }

    /// (inserted, deleted) lines.
    pub fn line_counts(&self) -> (usize, usize) {
        let diff = TextDiff::configure()
            .algorithm(Algorithm::Histogram)
            .diff_lines(&self.old, &self.new);
        diff.iter_all_changes()
            .fold((0, 0), |(i, d), c| match c.tag() {
                ChangeTag::Insert => (i + 1, d),
                ChangeTag::Delete => (i, d + 1),
                ChangeTag::Equal => (i, d),
            })
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TreeReport {
    pub changes: Vec<Change>,
    /// Files under `generated/` without the marker: not ours, never touched.
    pub foreign: Vec<String>,
}

impl TreeReport {
    pub fn is_clean(&self) -> bool {
        self.changes.is_empty() && self.foreign.is_empty()
    }

    pub fn of_kind(&self, kind: ChangeKind) -> impl Iterator<Item = &Change> {
        self.changes.iter().filter(move |c| c.kind == kind)
    }
}

fn normalise(text: &str) -> String {
    text.replace("\r\n", "\n")
}

/// Compares `files` (already restricted to `scope`) with the tree under `root`.
pub fn compare(root: &Path, files: &[GeneratedFile], scope: &Scope) -> io::Result<TreeReport> {
    let mut report = TreeReport::default();
    let rendered: BTreeSet<&str> = files.iter().map(|f| f.path.as_str()).collect();
    for f in files {
        match fs::read(root.join(&f.path)) {
            Ok(bytes) => {
                let old = normalise(&String::from_utf8_lossy(&bytes));
                if old != f.content {
                    report.changes.push(Change {
                        kind: ChangeKind::Stale,
                        path: f.path.clone(),
                        old,
                        new: f.content.clone(),
                    });
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => report.changes.push(Change {
                kind: ChangeKind::Missing,
                path: f.path.clone(),
                old: String::new(),
                new: f.content.clone(),
            }),
            Err(e) => return Err(annotate(e, &f.path)),
        }
    }
    for path in walk(root, GENERATED_DIR)? {
        if rendered.contains(path.as_str()) {
            continue;
        }
        let bytes = fs::read(root.join(&path)).map_err(|e| annotate(e, &path))?;
        let text = String::from_utf8_lossy(&bytes);
        match owner_of(&text) {
            Some(owner) if scope.covers(owner) => report.changes.push(Change {
                kind: ChangeKind::Orphan,
                path,
                old: normalise(&text),
                new: String::new(),
            }),
            Some(_) => {}
            None => report.foreign.push(path),
        }
    }
    report.changes.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(report)
}

/// Files under `root/dir` (none if it does not exist), repo-relative with `/`, sorted.
fn walk(root: &Path, dir: &str) -> io::Result<Vec<String>> {
    if !root.join(dir).exists() {
        return Ok(Vec::new());
    }
    let files = files(&root.join(dir)).map_err(|e| annotate(e, dir))?;
    Ok(files.into_iter().map(|p| format!("{dir}/{p}")).collect())
}

/// The files below `dir`, relative to it with `/`, sorted.
pub(crate) fn files(dir: &Path) -> io::Result<Vec<String>> {
    let mut out = Vec::new();
    for entry in walkdir::WalkDir::new(dir) {
        let entry = entry.map_err(io::Error::from)?;
        if entry.file_type().is_file() {
            let rel = entry
                .path()
                .strip_prefix(dir)
                .expect("below the walked dir");
            let parts: Vec<_> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect();
            out.push(parts.join("/"));
        }
    }
    out.sort();
    Ok(out)
}

/// Brings the tree in line with the report: writes stale and missing files
/// (each atomically), removes orphans and the directories they leave empty.
pub fn apply(root: &Path, report: &TreeReport) -> io::Result<()> {
    for c in &report.changes {
        let path = root.join(&c.path);
        match c.kind {
            ChangeKind::Stale | ChangeKind::Missing => {
                write_atomic(&path, &c.new).map_err(|e| annotate(e, &c.path))?
            }
            ChangeKind::Orphan => {
                fs::remove_file(&path).map_err(|e| annotate(e, &c.path))?;
                prune_empty_dirs(root, path.parent());
            }
        }
    }
    Ok(())
}

/// Temp file beside the target, then rename: readers see the old or the new file, never half.
fn write_atomic(path: &Path, content: &str) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    let tmp: PathBuf = dir.join(format!(".{name}.gen-tmp"));
    fs::write(&tmp, content)?;
    fs::rename(&tmp, path).inspect_err(|_| {
        let _ = fs::remove_file(&tmp);
    })
}

fn prune_empty_dirs(root: &Path, mut dir: Option<&Path>) {
    let top = root.join(GENERATED_DIR);
    while let Some(d) = dir {
        if d == top || !d.starts_with(&top) || fs::remove_dir(d).is_err() {
            break;
        }
        dir = d.parent();
    }
}

fn annotate(e: io::Error, path: &str) -> io::Error {
    io::Error::new(e.kind(), format!("{path}: {e}"))
}
