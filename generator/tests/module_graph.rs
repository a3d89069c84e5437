//! The generator's modules depend on each other in one direction: no cycles. Every
//! `crate::…` and `super::…` path in a module's source (imports and inline paths), and
//! every path through one of its child modules, is an edge to the deepest module it
//! names; `mod` declarations are not. Run with `--nocapture` to print the graph, one
//! line per module.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

type Graph = BTreeMap<String, BTreeSet<String>>;

/// Module path (`crate::stages::kind`) → source text, for every file under `src/`.
fn modules() -> BTreeMap<String, String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    walkdir::WalkDir::new(&src)
        .into_iter()
        .map(|e| e.expect("readable src/"))
        .filter(|e| e.path().extension().is_some_and(|x| x == "rs"))
        .map(|e| {
            let rel = e.path().strip_prefix(&src).unwrap().with_extension("");
            let mut parts: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
                parts.pop();
            }
            let name = ["crate".to_owned()]
                .into_iter()
                .chain(parts)
                .collect::<Vec<_>>();
            (name.join("::"), fs::read_to_string(e.path()).unwrap())
        })
        .collect()
}

/// The identifier paths following each occurrence of `prefix` (`crate::` or `super::`),
/// segments up to the first non-identifier (`{`, `;`, `(`…).
fn paths<'a>(text: &'a str, prefix: &str) -> Vec<Vec<&'a str>> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find(prefix) {
        let before = rest[..i].chars().last();
        rest = &rest[i + prefix.len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
            continue; // part of a longer path or `$crate::`
        }
        let mut segs = Vec::new();
        let mut s = rest;
        loop {
            let end = s
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(s.len());
            if end == 0 {
                break;
            }
            segs.push(&s[..end]);
            match s[end..].strip_prefix("::") {
                Some(next) => s = next,
                None => break,
            }
        }
        out.push(segs);
    }
    out
}

fn graph() -> Graph {
    let mods = modules();
    let names: BTreeSet<&str> = mods.keys().map(String::as_str).collect();
    let deepest = |segs: &[&str]| -> String {
        (1..=segs.len())
            .rev()
            .map(|n| segs[..n].join("::"))
            .find(|p| names.contains(p.as_str()))
            .unwrap_or_else(|| "crate".into())
    };
    let mut g = Graph::new();
    for (name, text) in &mods {
        // Only code: skip comment lines (doc links name modules without using them) and
        // the unit tests at the end (their `super` is the module itself).
        let text = text.split("#[cfg(test)]").next().unwrap_or_default();
        let code: String = text
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        let parent = name.rsplit_once("::").map_or("crate", |(p, _)| p);
        let mut edges = BTreeSet::new();
        for segs in paths(&code, "crate::") {
            edges.insert(deepest(&[&["crate"], &segs[..]].concat()));
        }
        for segs in paths(&code, "super::") {
            let base: Vec<&str> = parent.split("::").collect();
            edges.insert(deepest(&[&base[..], &segs[..]].concat()));
        }
        // Children named relative to this module (`hc_pre::HcPre` in the registry).
        for child in mods
            .keys()
            .filter(|c| c.rsplit_once("::").is_some_and(|(p, _)| p == name))
        {
            let short = child.rsplit_once("::").unwrap().1;
            if paths(&code, &format!("{short}::")).iter().any(|_| true) {
                edges.insert(child.clone());
            }
        }
        edges.remove(name);
        g.insert(name.clone(), edges);
    }
    g
}

/// A cycle of `g`, if any (depth-first).
fn cycle(g: &Graph) -> Option<Vec<String>> {
    fn visit(g: &Graph, n: &str, stack: &mut Vec<String>, done: &mut BTreeSet<String>) -> bool {
        if let Some(i) = stack.iter().position(|s| s == n) {
            stack.drain(..i);
            stack.push(n.to_owned());
            return true;
        }
        if done.contains(n) {
            return false;
        }
        stack.push(n.to_owned());
        for m in g.get(n).into_iter().flatten() {
            if visit(g, m, stack, done) {
                return true;
            }
        }
        stack.pop();
        done.insert(n.to_owned());
        false
    }
    let mut done = BTreeSet::new();
    for n in g.keys() {
        let mut stack = Vec::new();
        if visit(g, n, &mut stack, &mut done) {
            return Some(stack);
        }
    }
    None
}

#[test]
fn the_module_graph_has_no_cycles() {
    let g = graph();
    for (m, edges) in &g {
        let e: Vec<&str> = edges
            .iter()
            .map(|e| e.trim_start_matches("crate::"))
            .collect();
        println!("{:<32} {}", m.trim_start_matches("crate::"), e.join(", "));
    }
    assert!(g.len() > 20, "the walk found the modules: {g:?}");
    if let Some(c) = cycle(&g) {
        panic!("module cycle: {}", c.join(" -> "));
    }
}

/// The check sees a cycle when there is one.
#[test]
fn a_cycle_is_found() {
    let mut g = graph();
    g.get_mut("crate::plan")
        .unwrap()
        .insert("crate::variant".into());
    let c = cycle(&g).expect("plan -> variant -> plan");
    assert!(c.first() == c.last() && c.len() > 2, "{c:?}");
}
