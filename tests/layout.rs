//! The source tree's architecture, checked (docs/architecture.md, "Where things are"):
//! - the folders are layers ([`LAYERS`], top to bottom): a folder imports only folders on lower
//!   layers, never one on its own layer or above, so no import runs up and no two folders import
//!   each other;
//! - no import cycle between modules (a module and its own submodules count as one unit, as a
//!   folder's `mod.rs` and its files do);
//! - the pure core (`src/domain`, `src/model`, `src/acquire`, `src/analysis`) uses no async
//!   runtime, HTTP client, progress bar, command-line parser, file system or clock.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `src/` with its module path (`src/a/b.rs` → `a::b`, `src/a/mod.rs` → `a`).
fn modules() -> Vec<(String, PathBuf)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    walk(&src, &mut files);
    files
        .into_iter()
        .filter(|p| !p.ends_with("main.rs"))
        .map(|p| {
            let rel = p.strip_prefix(&src).unwrap().with_extension("");
            let mut parts: Vec<String> = rel.iter().map(|s| s.to_string_lossy().into_owned()).collect();
            if parts.last().is_some_and(|l| l == "mod" || l == "lib") {
                parts.pop();
            }
            (parts.join("::"), p)
        })
        .collect()
}

/// The code of a file without comments and without its `#[cfg(test)]` items (test modules and
/// test-only helpers may reach anywhere; the layers hold for what the binary runs).
fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<&str> = text
        .lines()
        .map(|l| match l.find("//") {
            Some(i) if !l[..i].contains('"') => &l[..i],
            _ => l,
        })
        .collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim() == "#[cfg(test)]" {
            // Skip the item that follows: up to the line that closes its first `{`.
            let mut depth = 0i32;
            let mut opened = false;
            i += 1;
            while i < lines.len() {
                depth += lines[i].matches('{').count() as i32 - lines[i].matches('}').count() as i32;
                opened |= lines[i].contains('{');
                i += 1;
                if (opened && depth <= 0) || (!opened && lines[i - 1].trim_end().ends_with(';')) {
                    break;
                }
            }
            continue;
        }
        out.push(lines[i]);
        i += 1;
    }
    out.join("\n")
}

/// The modules a file refers to: every `crate::a::b…` path resolved to its longest known module,
/// and `super::…` / `self::…` resolved against the file's own module.
fn references(module: &str, code: &str, known: &BTreeSet<String>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut rest = code;
    while let Some(i) = rest.find("::") {
        // The path that ends at this `::`: walk back over `ident::ident::`.
        let before = &rest[..i];
        let start = before.rfind(|c: char| !(is_ident(c) || c == ':')).map_or(0, |j| j + 1);
        let head = &before[start..];
        let after = &rest[i + 2..];
        let tail_len = after.find(|c: char| !(is_ident(c) || c == ':')).unwrap_or(after.len());
        let full = format!("{head}::{}", &after[..tail_len]);
        rest = &after[tail_len..];
        let segs: Vec<&str> = full.split("::").filter(|s| !s.is_empty()).collect();
        let (mut base, tail): (Vec<String>, &[&str]) = match segs.first() {
            Some(&"crate") => (Vec::new(), &segs[1..]),
            Some(&"super") => {
                let mut b: Vec<String> = module.split("::").map(String::from).collect();
                let mut t = &segs[..];
                while t.first() == Some(&"super") {
                    b.pop();
                    t = &t[1..];
                }
                (b, t)
            }
            _ => continue,
        };
        let mut best = None;
        for s in tail {
            base.push((*s).to_string());
            let m = base.join("::");
            if known.contains(&m) {
                best = Some(m);
            }
        }
        if let Some(m) = best {
            out.insert(m);
        }
    }
    out
}

fn related(a: &str, b: &str) -> bool {
    a == b || a.starts_with(&format!("{b}::")) || b.starts_with(&format!("{a}::"))
}

#[test]
fn no_import_cycles_between_modules() {
    let mods = modules();
    let known: BTreeSet<String> = mods.iter().map(|(m, _)| m.clone()).collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (m, p) in &mods {
        let refs = references(m, &code(p), &known);
        graph.insert(m.clone(), refs.into_iter().filter(|r| !related(m, r)).collect());
    }
    // Depth-first search for a back edge; report the cycle it closes.
    fn dfs(
        n: &str,
        g: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(n.to_string(), 1);
        stack.push(n.to_string());
        for t in g.get(n).into_iter().flatten() {
            match state.get(t.as_str()).copied().unwrap_or(0) {
                1 => {
                    let i = stack.iter().position(|s| s == t).unwrap();
                    let mut c = stack[i..].to_vec();
                    c.push(t.clone());
                    return Some(c);
                }
                0 => {
                    if let Some(c) = dfs(t, g, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(n.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in graph.keys() {
        if state.get(n.as_str()).copied().unwrap_or(0) == 0 {
            let cycle = dfs(n, &graph, &mut state, &mut Vec::new());
            assert!(cycle.is_none(), "import cycle: {}", cycle.unwrap().join(" → "));
        }
    }
    // The check sees real imports: the run loop uses the scheduler and the dispatcher, and
    // commands use the run.
    assert!(graph["run::live"].contains("run::schedule") && graph["run::live"].contains("run::dispatch"));
    assert!(graph["commands::run"].contains("run::live"));
}

/// The folders of `src/` as layers, top to bottom. A folder may import a folder on a lower
/// layer only: never one on its own layer (folders side by side do not import each other) or
/// above. `main.rs` (the binary) sits above them all.
const LAYERS: &[&[&str]] = &[
    &["cli"],
    &["commands"],
    &["sweep"],
    &["run"],
    &["report"],
    &["config"],
    &["judge", "store"],
    &["analysis"],
    &["acquire"],
    &["model"],
    &["domain"],
];

fn layer_of(folder: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&folder))
}

/// The folder (first path segment) of a module path.
fn folder(module: &str) -> &str {
    module.split("::").next().unwrap_or(module)
}

#[test]
fn every_import_runs_down_the_folder_layers() {
    let mods = modules();
    let known: BTreeSet<String> = mods.iter().map(|(m, _)| m.clone()).collect();
    let mut upward = Vec::new();
    let mut edges: BTreeSet<(String, String)> = BTreeSet::new();
    for (m, p) in &mods {
        if m.is_empty() {
            continue; // lib.rs: the module list
        }
        let from = folder(m);
        let Some(lf) = layer_of(from) else {
            panic!("src/{from} is in no layer of LAYERS: place it there (tests/layout.rs)");
        };
        for r in references(m, &code(p), &known) {
            let to = folder(&r);
            if to == from {
                continue;
            }
            let lt = layer_of(to).unwrap_or_else(|| panic!("src/{to} is in no layer of LAYERS"));
            edges.insert((from.to_owned(), to.to_owned()));
            if lt <= lf {
                upward.push(format!("{m} imports {r}"));
            }
        }
    }
    assert!(upward.is_empty(), "imports that do not run down the layers:\n{}", upward.join("\n"));
    let mutual: Vec<_> = edges.iter().filter(|(a, b)| edges.contains(&(b.clone(), a.clone()))).collect();
    assert!(mutual.is_empty(), "folders that import each other: {mutual:?}");
    // The check sees real imports.
    for (a, b) in [("run", "config"), ("report", "analysis"), ("config", "judge"), ("model", "domain")] {
        assert!(edges.contains(&(a.to_owned(), b.to_owned())), "{a} → {b} not seen: {edges:?}");
    }
}

#[test]
fn the_pure_core_has_no_io_runtime_clock_or_command_line() {
    let forbidden = [
        "tokio",
        "reqwest",
        "indicatif",
        "std::fs",
        "fs::read",
        "fs::write",
        "File::",
        "Instant",
        "SystemTime",
        "clap",
    ];
    let mut bad = Vec::new();
    for (m, p) in modules() {
        if !["domain", "model", "acquire", "analysis"].iter().any(|c| m == *c || m.starts_with(&format!("{c}::"))) {
            continue;
        }
        let code = code(&p);
        for f in forbidden {
            if code.contains(f) {
                bad.push(format!("{m} uses {f}"));
            }
        }
    }
    assert!(bad.is_empty(), "the pure core must stay pure: {bad:?}");
}
