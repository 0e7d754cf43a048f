//! Snapshot tests of the generator: every directory under `tests/fixtures/` is a tiny
//! `schema/`-like directory; `e2a_codegen::generate` runs on it and each output file is compared
//! with the committed copy under `tests/snapshots/<fixture>/` (same relative paths as under
//! `generated/`). Fixtures named `error_*` must fail; their error message is compared with
//! `tests/snapshots/<fixture>/error.txt`.
//!
//! Bless new or changed output with `EXPECTORATE=overwrite cargo test -p e2a-codegen --test generate`
//! and review it with `git diff codegen/tests/snapshots`. See `tests/README.md`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// File name of the expected error message of an `error_*` fixture.
const ERROR_FILE: &str = "error.txt";

fn tests_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests")
}

fn overwrite() -> bool {
    std::env::var_os("EXPECTORATE").is_some_and(|v| v == "overwrite")
}

/// Every fixture directory name, sorted.
fn fixtures() -> Vec<String> {
    let dir = tests_dir().join("fixtures");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.expect("fixture dir entry"))
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Every file under `dir`, as `/`-separated paths relative to `dir`.
fn files_under(dir: &Path) -> BTreeSet<String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeSet<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for e in entries {
            let p = e.expect("snapshot dir entry").path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p.strip_prefix(root).expect("under root");
                let parts: Vec<String> = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                out.insert(parts.join("/"));
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(dir, dir, &mut out);
    out
}

/// What `generate` gives for one fixture: output path → contents, the error message as
/// `error.txt` for a failure. Absolute paths in messages are replaced by `<fixture>`.
fn actual_outputs(name: &str) -> Result<Vec<(String, String)>, String> {
    let dir = tests_dir().join("fixtures").join(name);
    match e2a_codegen::generate(&dir) {
        Ok(files) => Ok(files.into_iter().collect()),
        Err(e) => {
            let msg = e.to_string().replace(&dir.display().to_string(), "<fixture>");
            Err(format!("{msg}\n"))
        }
    }
}

/// Checks one fixture; returns a description of each problem that is not a content diff
/// (content diffs panic inside expectorate, which prints the diff first).
fn check_fixture(name: &str) -> Vec<String> {
    let snap_dir = tests_dir().join("snapshots").join(name);
    let expect_error = name.starts_with("error_");
    let outputs = match (actual_outputs(name), expect_error) {
        (Ok(files), false) => files,
        (Err(msg), true) => vec![(ERROR_FILE.to_string(), msg)],
        (Ok(files), true) => {
            let names: Vec<&str> = files.iter().map(|(k, _)| k.as_str()).collect();
            return vec![format!(
                "{name}: expected `generate` to fail (fixture name starts with `error_`), \
                 but it succeeded with {names:?}"
            )];
        }
        (Err(msg), false) => {
            return vec![format!(
                "{name}: `generate` failed: {msg}(rename the fixture to `error_…` if that is intended)"
            )]
        }
    };
    let mut problems = Vec::new();
    let wanted: BTreeSet<String> = outputs.iter().map(|(k, _)| k.clone()).collect();
    for stale in files_under(&snap_dir).difference(&wanted) {
        let path = snap_dir.join(stale);
        if overwrite() {
            std::fs::remove_file(&path).unwrap_or_else(|e| panic!("remove {}: {e}", path.display()));
        } else {
            problems.push(format!(
                "{name}: {} is no longer generated (EXPECTORATE=overwrite removes it)",
                path.display()
            ));
        }
    }
    for (rel, contents) in &outputs {
        let path = snap_dir.join(rel);
        if overwrite() {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("mkdir {}: {e}", parent.display()));
            }
        } else if !path.exists() {
            problems.push(format!(
                "{name}: no snapshot {} yet (EXPECTORATE=overwrite writes it)",
                path.display()
            ));
            continue;
        }
        if std::fs::read_to_string(&path).is_ok_and(|old| old != *contents) {
            // Names the file above the diff expectorate prints.
            println!("\n=== {name}: {rel} (- committed snapshot, + generated now)");
        }
        let result = std::panic::catch_unwind(|| expectorate::assert_contents(&path, contents));
        if result.is_err() {
            problems.push(format!("{name}: {rel} differs from {} (diff above)", path.display()));
        }
    }
    problems
}

#[test]
fn fixtures_match_snapshots() {
    let names = fixtures();
    assert!(!names.is_empty(), "no fixtures under tests/fixtures");
    let mut problems = Vec::new();
    for name in &names {
        problems.extend(check_fixture(name));
    }
    // A snapshot directory whose fixture was deleted or renamed.
    let snaps = tests_dir().join("snapshots");
    if let Ok(entries) = std::fs::read_dir(&snaps) {
        for e in entries {
            let e = e.expect("snapshot entry");
            let n = e.file_name().to_string_lossy().into_owned();
            if e.path().is_dir() && !names.contains(&n) {
                if overwrite() {
                    std::fs::remove_dir_all(e.path()).expect("remove stale snapshot dir");
                } else {
                    problems.push(format!(
                        "snapshots/{n} has no fixture (EXPECTORATE=overwrite removes it)"
                    ));
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{} snapshot problem(s):\n  {}\nIf the new output is intended, bless it with\n  \
         EXPECTORATE=overwrite cargo test -p e2a-codegen --test generate\nand review `git diff codegen/tests/snapshots`.",
        problems.len(),
        problems.join("\n  ")
    );
}

/// Every successful fixture's Rust output is compiled by `tests/compile/main.rs`; this test
/// fails when a fixture is added without its `include!` line there.
#[test]
fn every_rust_snapshot_is_compiled() {
    let compile = tests_dir().join("compile").join("main.rs");
    let text = std::fs::read_to_string(&compile).unwrap_or_else(|e| panic!("read {}: {e}", compile.display()));
    let missing: Vec<String> = fixtures()
        .into_iter()
        .filter(|n| !n.starts_with("error_"))
        .filter(|n| !text.contains(&format!("fixture!({n});")))
        .collect();
    assert!(
        missing.is_empty(),
        "tests/compile/main.rs does not include the Rust snapshot of {missing:?}; add\n{}",
        missing
            .iter()
            .map(|n| format!("    fixture!({n});"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// The generator is deterministic: two runs on the same fixture give the same bytes.
#[test]
fn generation_is_deterministic() {
    for name in fixtures().iter().filter(|n| !n.starts_with("error_")) {
        assert_eq!(actual_outputs(name), actual_outputs(name), "{name}");
    }
}
