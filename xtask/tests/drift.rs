//! `check-drift` catches every kind of drift and `codegen` repairs it, on a scratch copy of
//! the repository (Rust-generated artifacts; the TS/Python exports are checked in CI).

use std::path::{Path, PathBuf};

use xtask::{check_drift, codegen, Options};

const OPTS: Options = Options { skip_external: true };

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dst = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dst);
        } else {
            std::fs::copy(e.path(), dst).unwrap();
        }
    }
}

fn scratch() -> (tempfile::TempDir, PathBuf) {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
    let dir = tempfile::tempdir().unwrap();
    for d in ["schema", "api", "docs", "generated"] {
        copy_dir(&repo.join(d), &dir.path().join(d));
    }
    let root = dir.path().to_path_buf();
    (dir, root)
}

fn drifted(root: &Path) -> Vec<String> {
    let (lint, drifts) = check_drift(root, OPTS).unwrap();
    assert!(lint.is_empty(), "{lint:?}");
    drifts.iter().map(|d| d.path.clone()).collect()
}

fn edit(root: &Path, rel: &str, from: &str, to: &str) {
    let p = root.join(rel);
    let text = std::fs::read_to_string(&p).unwrap();
    assert!(text.contains(from), "{rel} lacks {from:?}");
    std::fs::write(p, text.replacen(from, to, 1)).unwrap();
}

#[test]
fn clean_checkout_has_no_drift() {
    let (_d, root) = scratch();
    assert!(drifted(&root).is_empty());
}

#[test]
fn schema_description_change_drifts_then_codegen_restores() {
    let (_d, root) = scratch();
    edit(
        &root,
        "schema/envelope.json",
        "Tracing id, distinct from `request_id`.",
        "Tracing id (edited).",
    );
    let d = drifted(&root);
    for f in [
        "generated/rust/e2a_types.rs",
        "generated/schema/e2a.schema.json",
        "generated/openapi.json",
        "docs/protocol.md",
    ] {
        assert!(d.iter().any(|x| x == f), "{f} not reported: {d:?}");
    }
    let (_, drifts) = check_drift(&root, OPTS).unwrap();
    assert!(
        drifts.iter().any(|x| x.diff.contains("+    ///Tracing id (edited).")),
        "diff shows the new doc comment"
    );
    codegen(&root, OPTS).unwrap();
    assert!(drifted(&root).is_empty());
}

#[test]
fn added_property_drifts() {
    let (_d, root) = scratch();
    edit(
        &root,
        "schema/response.json",
        r#""plan_path": {"description": "Plan file path.", "type": ["string", "null"]}"#,
        r#""plan_path": {"description": "Plan file path.", "type": ["string", "null"]}, "plan_owner": {"description": "Who owns the plan.", "type": ["string", "null"]}"#,
    );
    assert!(drifted(&root).contains(&"generated/rust/e2a_types.rs".to_string()));
    codegen(&root, OPTS).unwrap();
    assert!(std::fs::read_to_string(root.join("generated/rust/e2a_types.rs"))
        .unwrap()
        .contains("pub plan_owner"));
    assert!(drifted(&root).is_empty());
}

#[test]
fn hand_edits_of_generated_files_tables_and_openapi_drift() {
    let (_d, root) = scratch();
    edit(
        &root,
        "generated/rust/e2a_types.rs",
        "pub struct E2AEnvelope {",
        "pub struct E2AEnvelope { // hand edit",
    );
    edit(
        &root,
        "generated/openapi.json",
        "\"E2A over HTTP\"",
        "\"E2A over HTTP (edited)\"",
    );
    edit(&root, "docs/protocol.md", "| `request_id` |", "| `request_ID` |");
    let d = drifted(&root);
    for f in [
        "generated/rust/e2a_types.rs",
        "generated/openapi.json",
        "docs/protocol.md",
    ] {
        assert!(d.iter().any(|x| x == f), "{f} not reported: {d:?}");
    }
    codegen(&root, OPTS).unwrap();
    assert!(drifted(&root).is_empty());
}

#[test]
fn hand_written_prose_is_kept() {
    let (_d, root) = scratch();
    edit(
        &root,
        "docs/protocol.md",
        "## Canonical form",
        "## Canonical form (prose edited by hand)",
    );
    assert!(drifted(&root).is_empty(), "prose outside the markers is not generated");
}

#[test]
fn lint_catches_undescribed_properties() {
    let (_d, root) = scratch();
    edit(
        &root,
        "schema/response.json",
        r#""plan_path": {"description": "Plan file path.", "#,
        r#""plan_path": {"#,
    );
    let (lint, _) = check_drift(&root, OPTS).unwrap();
    assert!(
        lint.iter()
            .any(|l| l.contains("plan_path") && l.contains("description")),
        "{lint:?}"
    );
}
