//! `gen`, `gen --check` and `diff`: the generator's pipeline and the tree
//! comparison, reported for people.

use std::path::{Path, PathBuf};

use kernelgen::tree::{self, ChangeKind, TreeReport};
use kernelgen::{GenError, Generation};

use crate::style::Style;

const FIX: &str = "run `cargo xtask gen` to update generated/";

fn render_and_compare(root: &Path, specs: &[PathBuf]) -> Result<(Generation, TreeReport), u8> {
    let cwd = std::env::current_dir().unwrap_or_default();
    let specs: Vec<PathBuf> = specs.iter().map(|p| cwd.join(p)).collect();
    let generation = kernelgen::generate(root, &specs).map_err(|e| report_error(&e))?;
    let report = tree::compare(root, &generation.files, &generation.scope)
        .map_err(|e| report_error(&GenError::Io(e)))?;
    Ok((generation, report))
}

fn report_error(e: &GenError) -> u8 {
    eprintln!("{e}");
    if let GenError::Specs(errors) = e {
        eprintln!("error: {} spec error(s); nothing was written", errors.len());
    }
    e.exit_code()
}

pub fn gen_command(root: &Path, check: bool, specs: &[PathBuf]) -> u8 {
    let (generation, report) = match render_and_compare(root, specs) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let style = Style::detect();
    if check {
        return check_report(&style, &report, generation.files.len());
    }
    if !report.foreign.is_empty() {
        list_foreign(&report);
        eprintln!("error: nothing written: move or delete the files above first");
        return 1;
    }
    if let Err(e) = tree::apply(root, &report) {
        return report_error(&GenError::Io(e));
    }
    let count = |k| report.of_kind(k).count();
    println!(
        "gen: {} files from {} variants: {} updated, {} created, {} removed",
        generation.files.len(),
        generation.variants.len(),
        count(ChangeKind::Stale),
        count(ChangeKind::Missing),
        count(ChangeKind::Orphan),
    );
    list_drafts(&generation);
    0
}

/// The variants of draft specs and their stages without kernels (`run` refuses them).
fn list_drafts(generation: &Generation) {
    for v in generation
        .variants
        .iter()
        .filter(|v| !v.kernels.missing.is_empty())
    {
        let stages: Vec<&str> = v.kernels.missing.iter().map(|u| u.stage).collect();
        println!(
            "  draft {}: no kernels yet for {}",
            v.plan.variant,
            stages.join(", ")
        );
    }
}

fn check_report(style: &Style, report: &TreeReport, files: usize) -> u8 {
    if report.is_clean() {
        println!("gen --check: generated/ is up to date ({files} files)");
        return 0;
    }
    for c in report.of_kind(ChangeKind::Stale) {
        println!("{} {}", style.bold("stale:"), c.path);
        print!("{}", style.diff(&c.unified_diff()));
    }
    for c in report.of_kind(ChangeKind::Missing) {
        println!("{} {}", style.bold("missing:"), c.path);
    }
    for c in report.of_kind(ChangeKind::Orphan) {
        println!(
            "{} {} (no spec produces it)",
            style.bold("orphaned:"),
            c.path
        );
    }
    list_foreign(report);
    let count = |k| report.of_kind(k).count();
    eprintln!(
        "error: generated/ is out of date: {} stale, {} missing, {} orphaned, {} unknown; {FIX}",
        count(ChangeKind::Stale),
        count(ChangeKind::Missing),
        count(ChangeKind::Orphan),
        report.foreign.len(),
    );
    1
}

fn list_foreign(report: &TreeReport) {
    for path in &report.foreign {
        eprintln!(
            "error: {path} has no @generated marker: gen did not write it and will not delete it"
        );
    }
}

pub fn diff_command(root: &Path, stat: bool) -> u8 {
    let (_, report) = match render_and_compare(root, &[]) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let style = Style::detect();
    if stat {
        let width = report
            .changes
            .iter()
            .map(|c| c.path.len())
            .max()
            .unwrap_or(0);
        let (mut ins, mut del) = (0, 0);
        for c in &report.changes {
            let (i, d) = c.line_counts();
            ins += i;
            del += d;
            let scale = |n: usize| n.min(40);
            println!(
                " {:width$} | {:5} {}{}",
                c.path,
                i + d,
                style.plus(scale(i)),
                style.minus(scale(d))
            );
        }
        println!(
            " {} files changed, {ins} insertions(+), {del} deletions(-)",
            report.changes.len()
        );
    } else {
        for c in &report.changes {
            print!("{}", style.diff(&c.unified_diff()));
        }
    }
    list_foreign(&report);
    0
}
