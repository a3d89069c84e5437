//! The workspace depends on itself in one direction: no crate-level cycle (the
//! `[dependencies]` of the members' Cargo.toml files) and no module-level cycle inside any
//! crate; and the golden's fence holds both ways (the reference side reaches neither the
//! generator, the execution side nor the runner, and the execution side does not reach the
//! reference side). In a crate, every `crate::…` and `super::…` path in a module's source
//! (imports and inline paths), and every path through one of its child modules, is an
//! edge to the deepest module it names; `mod` declarations are not. Run with
//! `--nocapture` to print the graphs.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

type Graph = BTreeMap<String, BTreeSet<String>>;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The members of the workspace: (package name, folder).
fn members() -> Vec<(String, PathBuf)> {
    let root = fs::read_to_string(workspace().join("Cargo.toml")).unwrap();
    let line = root
        .lines()
        .find(|l| l.starts_with("members"))
        .expect("a members list");
    line[line.find('[').unwrap() + 1..line.find(']').unwrap()]
        .split(',')
        .map(|m| m.trim().trim_matches('"').to_string())
        .filter(|m| !m.is_empty())
        .map(|dir| {
            let dir = workspace().join(dir);
            let toml = fs::read_to_string(dir.join("Cargo.toml")).unwrap();
            let name = toml
                .lines()
                .find_map(|l| l.strip_prefix("name = "))
                .expect("a package name")
                .trim_matches('"')
                .to_string();
            (name, dir)
        })
        .collect()
}

/// The package names under `[section]` of a Cargo.toml (`name.workspace = true`,
/// `name = …`, `name = { … }`).
fn section_deps(toml: &str, section: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut inside = false;
    for line in toml.lines().map(str::trim) {
        if line.starts_with('[') {
            inside = line == format!("[{section}]");
            continue;
        }
        if inside && let Some(key) = line.split(['=', '.']).next() {
            let key = key.trim();
            if !key.is_empty() && !key.starts_with('#') {
                out.insert(key.to_string());
            }
        }
    }
    out
}

/// Crate → the workspace crates it depends on (`section`: `dependencies` or
/// `dev-dependencies`).
fn crate_graph(section: &str) -> Graph {
    let members = members();
    let names: BTreeSet<String> = members.iter().map(|(n, _)| n.clone()).collect();
    members
        .iter()
        .map(|(name, dir)| {
            let toml = fs::read_to_string(dir.join("Cargo.toml")).unwrap();
            let deps = section_deps(&toml, section)
                .into_iter()
                .filter(|d| names.contains(d))
                .collect();
            (name.clone(), deps)
        })
        .collect()
}

/// Module path (`crate::stages::kind`) → source text, for every file under `src/` of a
/// library (`lib.rs`) or else a binary (`main.rs`; a crate with both has its binary use the
/// library by name). A module declared from elsewhere (`#[path]`) is an empty leaf.
fn modules(src: &Path) -> BTreeMap<String, String> {
    let root = if src.join("lib.rs").is_file() {
        "lib"
    } else {
        "main"
    };
    let mut mods: BTreeMap<String, String> = walkdir::WalkDir::new(src)
        .into_iter()
        .map(|e| e.expect("readable src/"))
        .filter(|e| e.path().extension().is_some_and(|x| x == "rs"))
        .filter(|e| e.path() != src.join(if root == "lib" { "main.rs" } else { "lib.rs" }))
        .map(|e| {
            let rel = e.path().strip_prefix(src).unwrap().with_extension("");
            let mut parts: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if parts
                .last()
                .is_some_and(|l| l == "mod" || (parts.len() == 1 && l == root))
            {
                parts.pop();
            }
            let name = ["crate".to_owned()]
                .into_iter()
                .chain(parts)
                .collect::<Vec<_>>();
            (name.join("::"), fs::read_to_string(e.path()).unwrap())
        })
        .collect();
    let declared: Vec<String> = mods
        .iter()
        .flat_map(|(m, text)| {
            text.lines()
                .filter_map(|l| {
                    let l = l.trim().trim_start_matches("pub ");
                    l.strip_prefix("mod ")?
                        .strip_suffix(';')
                        .map(|n| format!("{m}::{n}"))
                })
                .collect::<Vec<_>>()
        })
        .collect();
    for m in declared {
        mods.entry(m).or_default();
    }
    mods
}

/// The identifier paths following each occurrence of `prefix` (`crate::` or `super::`),
/// segments up to the first non-identifier (`;`, `(`…); a brace list (`crate::{a, b::C}`)
/// gives one path per item.
fn paths<'a>(text: &'a str, prefix: &str) -> Vec<Vec<&'a str>> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find(prefix) {
        let before = rest[..i].chars().last();
        rest = &rest[i + prefix.len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
            continue; // part of a longer path or `$crate::`
        }
        let (segs, after) = segments(rest);
        match after.strip_prefix('{') {
            Some(list) => {
                for item in top_level_items(list) {
                    let (more, _) = segments(item.trim_start());
                    out.push([&segs[..], &more[..]].concat());
                }
            }
            None => out.push(segs),
        }
    }
    out
}

/// The `a::b::c` segments at the start of `s`, and what follows them.
fn segments(mut s: &str) -> (Vec<&str>, &str) {
    let mut segs = Vec::new();
    loop {
        let end = s
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(s.len());
        if end == 0 {
            return (segs, s);
        }
        segs.push(&s[..end]);
        match s[end..].strip_prefix("::") {
            Some(next) => s = next,
            None => return (segs, &s[end..]),
        }
    }
}

/// The comma-separated items of a brace list up to its closing brace.
fn top_level_items(list: &str) -> Vec<&str> {
    let (mut depth, mut start, mut items) = (0usize, 0usize, Vec::new());
    for (i, c) in list.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                items.push(&list[start..i]);
                return items;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&list[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items
}

/// The names a module re-exports (`pub use dims::{A, B}; pub use error::E;`), each with
/// the module it comes from, or `None` for another crate's: a path through such a name
/// leads to that module, not to the one that re-exports it.
fn reexports(module: &str, code: &str, names: &BTreeSet<&str>) -> BTreeMap<String, Option<String>> {
    let parent = module.rsplit_once("::").map_or("crate", |(p, _)| p);
    let absolute = |segs: &[&str]| -> String {
        let (base, rest) = match segs.first() {
            Some(&"crate") => ("crate", &segs[1..]),
            Some(&"self") => (module, &segs[1..]),
            Some(&"super") => (parent, &segs[1..]),
            _ => (module, segs),
        };
        [base]
            .iter()
            .chain(rest)
            .copied()
            .collect::<Vec<_>>()
            .join("::")
    };
    let mut out = BTreeMap::new();
    for stmt in code.split("pub use ").skip(1) {
        let stmt = &stmt[..stmt.find(';').unwrap_or(stmt.len())];
        let (prefix, after) = segments(stmt.trim());
        let items: Vec<(Vec<&str>, &str)> = match after.strip_prefix('{') {
            Some(list) => top_level_items(list)
                .into_iter()
                .filter_map(|item| {
                    let (segs, _) = segments(item.trim());
                    let (name, from) = segs.split_last()?;
                    Some(([&prefix[..], from].concat(), *name))
                })
                .collect(),
            None => match prefix.split_last() {
                Some((name, from)) => vec![(from.to_vec(), *name)],
                None => Vec::new(),
            },
        };
        for (from, name) in items {
            let source = (!from.is_empty()).then(|| absolute(&from));
            out.insert(
                name.to_string(),
                source.filter(|m| names.contains(m.as_str())),
            );
        }
    }
    out
}

/// The module graph of the crate whose sources are under `src`.
fn module_graph(src: &Path) -> Graph {
    let mods = modules(src);
    let names: BTreeSet<&str> = mods.keys().map(String::as_str).collect();
    let deepest = |segs: &[&str]| -> String {
        (1..=segs.len())
            .rev()
            .map(|n| segs[..n].join("::"))
            .find(|p| names.contains(p.as_str()))
            .unwrap_or_else(|| "crate".into())
    };
    let reexported: BTreeMap<&str, BTreeMap<String, Option<String>>> = mods
        .iter()
        .map(|(m, text)| (m.as_str(), reexports(m, text, &names)))
        .collect();
    // A path through a name its module re-exports leads to where the name comes from.
    let target = |segs: &[&str]| -> Option<String> {
        let module = deepest(segs);
        let depth = module.split("::").count();
        match segs
            .get(depth)
            .and_then(|n| reexported[module.as_str()].get(*n))
        {
            Some(source) => source.clone(),
            None => Some(module),
        }
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
            edges.extend(target(&[&["crate"], &segs[..]].concat()));
        }
        for segs in paths(&code, "super::") {
            let base: Vec<&str> = parent.split("::").collect();
            edges.extend(target(&[&base[..], &segs[..]].concat()));
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
fn no_crate_depends_on_itself_through_others() {
    let g = crate_graph("dependencies");
    for (c, deps) in &g {
        println!(
            "{c:<10} {}",
            deps.iter().cloned().collect::<Vec<_>>().join(", ")
        );
    }
    assert!(g.len() >= 7, "the members were found: {g:?}");
    if let Some(c) = cycle(&g) {
        panic!("crate cycle: {}", c.join(" -> "));
    }
}

#[test]
fn the_goldens_fence_holds_both_ways() {
    let (normal, dev) = (crate_graph("dependencies"), crate_graph("dev-dependencies"));
    // What a crate's code and tests can reach: its dependencies and dev-dependencies, then
    // theirs (normal only: a dependency's dev-dependencies are not built for it).
    let reaches = |from: &str| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo: Vec<String> = [&normal[from], &dev[from]]
            .into_iter()
            .flatten()
            .cloned()
            .collect();
        while let Some(c) = todo.pop() {
            if seen.insert(c.clone()) {
                todo.extend(normal[&c].iter().cloned());
            }
        }
        seen
    };
    let golden = reaches("golden");
    for other in ["kernelgen", "harness", "runner", "xtask"] {
        assert!(!golden.contains(other), "golden reaches {other}");
    }
    let harness = reaches("harness");
    for other in ["golden", "kernelgen", "runner"] {
        assert!(!harness.contains(other), "harness reaches {other}");
    }
}

#[test]
fn no_crate_has_a_module_cycle() {
    for (name, dir) in members() {
        let g = module_graph(&dir.join("src"));
        println!("{name}:");
        for (m, edges) in &g {
            let e: Vec<&str> = edges
                .iter()
                .map(|e| e.trim_start_matches("crate::"))
                .collect();
            println!("  {:<32} {}", m.trim_start_matches("crate::"), e.join(", "));
        }
        assert!(!g.is_empty(), "{name}: the walk found its modules");
        if let Some(c) = cycle(&g) {
            panic!("{name}: module cycle: {}", c.join(" -> "));
        }
    }
}

/// The check sees a cycle when there is one, in modules and in crates.
#[test]
fn a_cycle_is_found() {
    let mut g = module_graph(&workspace().join("generator/src"));
    assert!(g.len() > 20, "the generator's modules: {g:?}");
    g.get_mut("crate::plan")
        .unwrap()
        .insert("crate::variant".into());
    let c = cycle(&g).expect("plan -> variant -> plan");
    assert!(c.first() == c.last() && c.len() > 2, "{c:?}");
    let mut g = crate_graph("dependencies");
    g.get_mut("abi").unwrap().insert("golden".into());
    let c = cycle(&g).expect("abi -> golden -> abi");
    assert!(c.first() == c.last(), "{c:?}");
}
