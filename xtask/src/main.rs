//! `cargo xtask codegen` regenerates every artifact under `generated/` from `schema/`;
//! `cargo xtask check-drift` regenerates in memory, compares with the committed files and
//! fails with a unified diff naming each drifted file and the command that fixes it.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("codegen") => codegen(&root()),
        Some("check-drift") => check_drift(&root()),
        _ => {
            eprintln!("usage: cargo xtask <codegen|check-drift>\n\n  codegen      regenerate generated/ from schema/\n  check-drift  fail if generated/ differs from what schema/ produces");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

fn codegen(root: &Path) -> Result<bool, String> {
    let files = e2a_codegen::generate_all(root).map_err(|e| e.to_string())?;
    for (rel, contents) in &files {
        let path = root.join(rel);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        let old = std::fs::read_to_string(&path).unwrap_or_default();
        if old != *contents {
            std::fs::write(&path, contents).map_err(|e| format!("{}: {e}", path.display()))?;
            println!("wrote {rel}");
        }
    }
    println!("codegen: {} artifacts up to date", files.len());
    Ok(true)
}

fn check_drift(root: &Path) -> Result<bool, String> {
    let lint = e2a_codegen::lint_dir(&root.join("schema")).map_err(|e| e.to_string())?;
    if !lint.is_empty() {
        for p in &lint {
            eprintln!("schema lint: {p}");
        }
        return Ok(false);
    }
    let files = e2a_codegen::generate_all(root).map_err(|e| e.to_string())?;
    let mut drifted = 0;
    for (rel, want) in &files {
        let have = std::fs::read_to_string(root.join(rel))
            .unwrap_or_default()
            .replace("\r\n", "\n");
        if have != *want {
            drifted += 1;
            eprintln!("drift: {rel} differs from what schema/ generates");
            let diff = similar::TextDiff::from_lines(&have, want);
            eprint!(
                "{}",
                diff.unified_diff()
                    .context_radius(2)
                    .header(&format!("a/{rel} (committed)"), &format!("b/{rel} (generated)"))
            );
        }
    }
    if drifted > 0 {
        eprintln!("\ncheck-drift: {drifted} file(s) drifted. Fix: run `cargo xtask codegen` and commit the result.");
        return Ok(false);
    }
    println!("check-drift: {} artifacts match schema/", files.len());
    Ok(true)
}
