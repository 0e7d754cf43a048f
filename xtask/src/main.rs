//! `cargo xtask codegen | check-drift | setup` — see `xtask/src/lib.rs`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

const USAGE: &str = "usage: cargo xtask <command> [--skip-external] [--root DIR]

  codegen       regenerate every artifact (generated/, docs tables, OpenAPI, TS, Python) from schema/
  check-drift   lint schema/ and fail with a diff when any committed artifact differs from schema/
  setup         install the pinned TypeScript and Python generators (npm ci, .venv)

  --skip-external   leave out the TypeScript and Python exports (no Node/Python needed)";

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut opts = xtask::Options::default();
    let mut root: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    if let Some(i) = args.iter().position(|a| a == "--skip-external") {
        args.remove(i);
        opts.skip_external = true;
    }
    if let Some(i) = args.iter().position(|a| a == "--root") {
        args.remove(i);
        if i < args.len() {
            root = PathBuf::from(args.remove(i));
        }
    }
    let result = match args.first().map(String::as_str) {
        Some("codegen") => xtask::codegen(&root, opts).map(|written| {
            for w in &written {
                println!("wrote {w}");
            }
            println!(
                "codegen: {} file(s) rewritten; everything matches schema/",
                written.len()
            );
            true
        }),
        Some("check-drift") => xtask::check_drift(&root, opts).map(|(lint, drifts)| {
            for p in &lint {
                eprintln!("schema lint: {p}");
            }
            for d in &drifts {
                eprintln!("drift: {} differs from what schema/ generates", d.path);
                eprint!("{}", d.diff);
            }
            if !drifts.is_empty() {
                eprintln!(
                    "\ncheck-drift: {} file(s) drifted: {}.\nFix: run `cargo xtask codegen` and commit the result.",
                    drifts.len(),
                    drifts.iter().map(|d| d.path.as_str()).collect::<Vec<_>>().join(", ")
                );
            } else if lint.is_empty() {
                println!("check-drift: schema lint clean; every artifact matches schema/");
            }
            lint.is_empty() && drifts.is_empty()
        }),
        Some("setup") => xtask::setup(&root).map(|()| {
            println!("setup: tools installed");
            true
        }),
        _ => {
            eprintln!("{USAGE}");
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
