//! Generates the E2A types from `schema/` with typify (via `e2a-codegen`) into `OUT_DIR`.
//! `generated/` holds the committed copy written by `cargo xtask codegen`; a test checks that
//! both are byte-identical.

use std::path::PathBuf;

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let schema_dir = root.join("schema");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed={}", schema_dir.display());
    match e2a_codegen::schema_paths(&schema_dir) {
        Ok(paths) => {
            for p in paths {
                println!("cargo:rerun-if-changed={}", p.display());
            }
        }
        Err(e) => panic!("e2a build: {e}"),
    }
    let files = match e2a_codegen::generate(&schema_dir) {
        Ok(f) => f,
        Err(e) => panic!("e2a build: cannot generate types from schema/: {e}"),
    };
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    for (name, contents) in [
        ("e2a_types.rs", &files[e2a_codegen::RUST_FILE]),
        ("e2a.schema.json", &files[e2a_codegen::BUNDLE_FILE]),
    ] {
        std::fs::write(out.join(name), contents).unwrap_or_else(|e| panic!("write {name}: {e}"));
    }
}
