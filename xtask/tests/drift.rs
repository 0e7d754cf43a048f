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
    // the config file's tables live in the gateway's README
    std::fs::create_dir_all(dir.path().join("gateway")).unwrap();
    std::fs::copy(repo.join("gateway/README.md"), dir.path().join("gateway/README.md")).unwrap();
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
        "\"e2a gateway: E2A over HTTP and A2A 1.0 HTTP+JSON\"",
        "\"e2a gateway (edited)\"",
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

#[test]
fn a_new_legacy_alias_or_default_in_schema_changes_the_reader_and_docs() {
    let (_d, root) = scratch();
    // a new legacy alias of `user_id`, and a new default of `protocol_version`
    edit(
        &root,
        "schema/envelope.json",
        r#""user_id": {"description": "End-user id.", "type": ["string", "null"], "default": null}"#,
        r#""user_id": {"description": "End-user id.", "type": ["string", "null"], "default": null, "x-e2a-aliases": [{"key": "uid", "rule": "channel_id"}]}"#,
    );
    edit(
        &root,
        "schema/response.json",
        r#""x-e2a-default": "in_progress""#,
        r#""x-e2a-default": "succeeded""#,
    );
    let drifts = drifted(&root);
    assert!(
        drifts.contains(&"generated/rust/e2a_types.rs".to_string()),
        "{drifts:?}"
    );
    assert!(drifts.contains(&"docs/protocol.md".to_string()), "{drifts:?}");
    codegen(&root, OPTS).unwrap();
    assert!(drifted(&root).is_empty());
    let rust = std::fs::read_to_string(root.join("generated/rust/e2a_types.rs")).unwrap();
    assert!(
        rust.contains(r#"c.f.opt_str((35, "uid"))?"#) || rust.contains(r#""uid"))?"#),
        "reader reads the alias"
    );
    assert!(
        rust.contains(r#""uid""#) && rust.contains("E2A_ENVELOPE_KEYS"),
        "key table knows it"
    );
    assert!(rust.contains(r#"c.f.str_or((18, "status"), "succeeded")"#) || rust.contains(r#""status"), "succeeded")"#));
    let docs = std::fs::read_to_string(root.join("docs/protocol.md")).unwrap();
    assert!(
        docs.contains("`uid` is read when `user_id` is absent or null"),
        "docs list the rule"
    );
}
