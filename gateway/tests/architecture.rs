//! The rooms of the workspace and what may import what (`gateway/ARCHITECTURE.md`), checked on
//! the sources: a module's imports are its `crate::…` and `super::…` paths (comments and its
//! `#[cfg(test)]` part aside). In `gateway/src` every room imports only rooms listed before it
//! in [`GATEWAY_ROOMS`]; in every crate no two modules import each other, directly or round a
//! circle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The rooms of `gateway/src` (its top-level modules, `lib` the crate root), lowest first: a
/// room may import the rooms before it, never one after it.
const GATEWAY_ROOMS: &[&str] = &[
    "json",
    "maps",
    "packed",
    "protocol",
    "stop",
    "agent",
    "web",
    "frame_log",
    "config",
    "store",
    "runs",
    "pipeline",
    "backends",
    "tasks",
    "bindings",
    "lib",
    "reload",
    "config_file",
];

/// A module path inside its crate (`[]` is the crate root).
type Module = Vec<String>;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every module of the crate whose sources are in `dir`, with its source text.
fn modules(dir: &Path) -> BTreeMap<Module, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("a source dir") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(dir).expect("inside").with_extension("");
                let mut module: Module = rel.iter().map(|c| c.to_string_lossy().into_owned()).collect();
                if module.last().is_some_and(|l| l == "mod" || l == "lib" || l == "main") {
                    module.pop();
                }
                out.insert(module, std::fs::read_to_string(&path).expect("a source"));
            }
        }
    }
    out
}

/// The source without its comments and its tests (a `#[cfg(test)] mod`).
fn code(source: &str) -> String {
    let end = source
        .match_indices("#[cfg(test)]")
        .map(|(i, m)| i + m.len())
        .find(|&i| source[i..].trim_start().starts_with("mod "))
        .map_or(source.len(), |i| i - "#[cfg(test)]".len());
    source[..end]
        .lines()
        .map(|l| l.find("//").map_or(l, |i| &l[..i]))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The paths after each `prefix` (`crate::`, `super::`), group imports (`{a, b::c}`) split.
fn paths_after(code: &str, prefix: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let word = |c: char| c.is_alphanumeric() || c == '_';
    for (i, _) in code.match_indices(prefix) {
        if code[..i].chars().next_back().is_some_and(|c| word(c) || c == '$') {
            continue;
        }
        let rest = &code[i + prefix.len()..];
        let mut path = Vec::new();
        let mut s = rest;
        loop {
            let len = s.find(|c: char| !word(c)).unwrap_or(s.len());
            if len == 0 {
                if let Some(group) = s.strip_prefix('{') {
                    let inner = &group[..group.find('}').unwrap_or(group.len())];
                    for item in inner.split(',') {
                        let mut p = path.clone();
                        p.extend(
                            item.trim()
                                .split("::")
                                .map(|x| x.trim().to_string())
                                .filter(|x| !x.is_empty()),
                        );
                        out.push(p);
                    }
                    path.clear();
                }
                break;
            }
            path.push(s[..len].to_string());
            s = &s[len..];
            match s.strip_prefix("::") {
                Some(next) => s = next,
                None => break,
            }
        }
        if !path.is_empty() {
            out.push(path);
        }
    }
    out
}

/// The module a path names: its longest prefix that is a module.
fn resolve(mods: &BTreeMap<Module, String>, path: &[String]) -> Module {
    (0..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|m| mods.contains_key(m))
        .unwrap_or_default()
}

/// What each module imports (other modules of its crate).
fn imports(dir: &Path) -> BTreeMap<Module, BTreeSet<Module>> {
    let mods = modules(dir);
    let mut out = BTreeMap::new();
    for (module, source) in &mods {
        let code = code(source);
        let mut deps = BTreeSet::new();
        for p in paths_after(&code, "crate::") {
            deps.insert(resolve(&mods, &p));
        }
        // `super::` from `a/b` is `a::…`
        let parent = &module[..module.len().saturating_sub(1)];
        for p in paths_after(&code, "super::") {
            let mut full = parent.to_vec();
            full.extend(p);
            deps.insert(resolve(&mods, &full));
        }
        deps.remove(module);
        out.insert(module.clone(), deps);
    }
    out
}

fn name(m: &Module) -> String {
    if m.is_empty() {
        "lib".into()
    } else {
        m.join("/")
    }
}

/// The modules that import each other round a circle (strongly connected, more than one).
fn circles(graph: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<String>> {
    // every module reachable from each, then the groups that reach each other
    let reach = |from: &Module| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.clone()];
        while let Some(m) = stack.pop() {
            for d in graph.get(&m).into_iter().flatten() {
                if seen.insert(d.clone()) {
                    stack.push(d.clone());
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&Module, BTreeSet<Module>> = graph.keys().map(|m| (m, reach(m))).collect();
    let mut done = BTreeSet::new();
    let mut out = Vec::new();
    for m in graph.keys() {
        if done.contains(m) || !reaches[m].contains(m) {
            continue;
        }
        let group: Vec<Module> = graph
            .keys()
            .filter(|o| reaches[m].contains(*o) && reaches[*o].contains(m))
            .cloned()
            .collect();
        done.extend(group.iter().cloned());
        out.push(group.iter().map(name).collect());
    }
    out
}

#[test]
fn no_module_imports_itself_round_a_circle() {
    for dir in ["src", "gateway/src", "cli/src", "codegen/src", "xtask/src"] {
        let path = workspace().join(dir);
        if !path.is_dir() {
            continue;
        }
        let found = circles(&imports(&path));
        assert!(found.is_empty(), "{dir}: modules that import each other: {found:?}");
    }
}

#[test]
fn every_gateway_room_imports_only_the_rooms_below_it() {
    let graph = imports(&workspace().join("gateway/src"));
    let room = |m: &Module| m.first().cloned().unwrap_or_else(|| "lib".into());
    let rank = |r: &str| GATEWAY_ROOMS.iter().position(|x| *x == r);
    let mut wrong = Vec::new();
    for (module, deps) in &graph {
        let from = room(module);
        let Some(at) = rank(&from) else {
            wrong.push(format!(
                "{}: room `{from}` is not in GATEWAY_ROOMS (nor ARCHITECTURE.md)",
                name(module)
            ));
            continue;
        };
        for dep in deps {
            let to = room(dep);
            if to != from && rank(&to).is_none_or(|r| r > at) {
                wrong.push(format!(
                    "{} imports {} ({from} may not import {to})",
                    name(module),
                    name(dep)
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "imports that run back up:\n{}", wrong.join("\n"));
}

/// The checker itself finds what it is for: a circle, and a path inside a group import.
#[test]
fn the_checker_sees_group_imports_and_circles() {
    let paths = paths_after("use crate::{a::B, c};\nlet x = crate::d::e(); // crate::f\n", "crate::");
    assert!(paths.contains(&vec!["a".to_string(), "B".to_string()]), "{paths:?}");
    assert!(paths.contains(&vec!["c".to_string()]), "{paths:?}");
    assert!(paths.contains(&vec!["d".to_string(), "e".to_string()]), "{paths:?}");
    let m = |s: &str| vec![s.to_string()];
    let graph: BTreeMap<Module, BTreeSet<Module>> = [
        (m("a"), [m("b")].into_iter().collect()),
        (m("b"), [m("a")].into_iter().collect()),
        (m("c"), [m("a")].into_iter().collect()),
    ]
    .into_iter()
    .collect();
    assert_eq!(circles(&graph), vec![vec!["a".to_string(), "b".to_string()]]);
}
