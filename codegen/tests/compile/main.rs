//! Compiles every committed Rust snapshot of `tests/generate.rs` (and runs a few checks of what
//! the generator promises), so a snapshot that does not build fails `cargo test -p e2a-codegen`.
//!
//! Each snapshot is `include!`d in its own module, as `src/lib.rs` of `e2a` does with the real
//! output; `secret` and `redact` below stand in for the `e2a` items the generated code names
//! (`crate::secret::SecretString`, `crate::secret::SecretHeaders`,
//! `crate::redact::debug_redacted`); the canonical writer's runtime (`crate::write`) is e2a's
//! own `src/write.rs`, compiled here as it is. When the generator starts calling another hand-written
//! item of `e2a` by path, add a stand-in with the same signature here.
//!
//! A new successful fixture needs one `fixture!(name);` line below (`tests/generate.rs`
//! checks that none is missing).

#[allow(dead_code)] // the fixtures use only some of it
#[path = "../../../src/frame/head.rs"]
mod frame;
mod redact;
mod secret;
mod taxonomy;
#[allow(dead_code)] // the fixtures call only some of its writes
#[path = "../../../src/write.rs"]
mod write;

/// `pub mod $name { include!("../snapshots/$name/rust/e2a_types.rs"); }`, with the lint
/// allowances `e2a` puts on its generated module.
macro_rules! fixture {
    ($name:ident) => {
        #[allow(dead_code, missing_docs, clippy::all, clippy::pedantic)]
        pub mod $name {
            include!(concat!("../snapshots/", stringify!($name), "/rust/e2a_types.rs"));
        }
    };
}

fixture!(closed_enums);
fixture!(defaults);
fixture!(descriptions);
fixture!(frames);
fixture!(nullable_optional);
fixture!(open_enums);
fixture!(refs_across_files);
fixture!(secrets);
fixture!(taxonomy_table);
fixture!(write_all_keys);

use serde_json::json;

#[test]
fn closed_enums_all_and_as_str_agree_with_serde() {
    use closed_enums::{Method, Single};
    let wire: Vec<&str> = Method::ALL.iter().map(|m| m.as_str()).collect();
    assert_eq!(
        wire,
        ["session/prompt", "chat.send", "tool_call", "ZETA"],
        "schema order"
    );
    for m in Method::ALL {
        assert_eq!(serde_json::to_value(m).expect("serialize"), json!(m.as_str()));
        assert_eq!(m.as_str().parse::<Method>().expect("parse"), m);
    }
    assert_eq!(Single::ALL.map(Single::as_str), ["only"]);
}

#[test]
fn defaults_fill_omitted_fields() {
    use defaults::{E2AEnvelope, Mode, E2A_PROTOCOL_VERSION};
    let env: E2AEnvelope = serde_json::from_value(json!({})).expect("every field has a default");
    assert_eq!(env, E2AEnvelope::default());
    assert_eq!(env.protocol_version, E2A_PROTOCOL_VERSION);
    assert_eq!(E2A_PROTOCOL_VERSION, "1.0");
    assert_eq!((env.is_stream, env.retries, env.mode), (false, 3, Mode::Fast));
    assert!(env.tags.is_empty() && env.params.is_empty() && env.channel.is_none());
}

#[test]
fn nullable_and_optional_fields() {
    use nullable_optional::Record;
    let r: Record = serde_json::from_value(json!({"id": "a", "note": null, "parent": {"id": "b", "note": "n"}}))
        .expect("optional fields may be omitted, nullable ones null");
    assert_eq!(r.id, "a");
    assert!(r.note.is_none() && r.count.is_none() && r.label.is_none());
    assert_eq!(r.parent.as_ref().and_then(|p| p.note.as_deref()), Some("n"));
    assert!(
        serde_json::from_value::<Record>(json!({"note": null})).is_err(),
        "`id` is required"
    );
    assert!(
        serde_json::from_value::<Record>(json!({"id": "a", "note": null, "x": 1})).is_err(),
        "additionalProperties: false"
    );
}

#[test]
fn refs_across_files_resolve() {
    use refs_across_files::Order;
    let o: Order = serde_json::from_value(json!({"customer": {"id": "c1"}, "lines": [{"sku": "s1"}]})).expect("order");
    assert_eq!(o.customer.id, "c1");
    assert_eq!(o.lines[0].sku, "s1");
}

#[test]
fn secrets_are_replaced_and_debug_is_redacted() {
    use secrets::Credentials;
    let v = json!({"token": "tok-1", "api_key": "key-2", "headers": {"x-api-key": "hdr-3"}});
    let c: Credentials = serde_json::from_value(v.clone()).expect("credentials");
    let token: &secret::SecretString = &c.token;
    assert_eq!(token.expose(), "tok-1");
    let headers: Option<&secret::SecretHeaders> = c.headers.as_ref();
    assert_eq!(headers.map(|h| h.0.len()), Some(1));
    assert_eq!(
        serde_json::to_value(&c).expect("serialize"),
        v,
        "secrets are serialized verbatim"
    );
    let dbg = format!("{c:?}");
    assert!(dbg.starts_with("Credentials "), "{dbg}");
    for secret in ["tok-1", "key-2", "hdr-3"] {
        assert!(!dbg.contains(secret), "{dbg}");
    }
}

#[test]
fn descriptions_compile_as_doc_comments() {
    let d = descriptions::Documented {
        field: "f".into(),
        titled: None,
    };
    assert_eq!(format!("{d:?}"), "Documented {field}");
    assert_eq!(descriptions::Kind::ALL.len(), 2);
}

#[test]
fn write_all_keys_serializes_every_key_and_defaults_from_the_schema() {
    use write_all_keys::Canonical;
    let all = json!({"count": 0, "inner": {"flag": true}, "kind": "plain", "note": null, "tags": []});
    assert_eq!(serde_json::to_value(Canonical::default()).expect("serialize"), all);
    let read: Canonical = serde_json::from_value(all).expect("canonical form reads back");
    assert_eq!(read, Canonical::default());
    // the generated writer writes what the derived Serialize writes
    let c = Canonical {
        note: Some("a \"quoted\"\nline".into()),
        ..Canonical::default()
    };
    for v in [Canonical::default(), c] {
        assert_eq!(write::to_json(&v), serde_json::to_string(&v).expect("serialize"));
    }
}

#[test]
fn open_enums_keep_unknown_values_and_defaults_come_from_x_e2a_default() {
    use open_enums::{Frame, Kind, Status};
    assert_eq!(Kind::from("e2a.chunk"), Kind::E2aChunk);
    assert_eq!(
        Kind::ALL.map(|k| k.as_str().to_string()),
        ["e2a.chunk", "acp.session_update"]
    );
    let odd: Status = serde_json::from_value(json!("paused")).expect("any string");
    assert_eq!(odd, Status::Other("paused".into()));
    assert!(!odd.is_known() && Status::Succeeded.is_known());
    assert_eq!(serde_json::to_value(&odd).expect("serialize"), json!("paused"));
    assert!(serde_json::from_value::<Status>(json!(1)).is_err());
    let d = Frame::default();
    assert_eq!(
        (d.status, d.kind, d.sequence),
        (Status::InProgress, Kind::Other(String::new()), 0)
    );
    // required on the wire even though they have an x-e2a-default
    assert!(serde_json::from_value::<Frame>(json!({"status": "succeeded", "kind": "e2a.chunk"})).is_err());
}

#[test]
fn error_table_rows_follow_the_schema() {
    use taxonomy_table::{ErrorKind, ERROR_TABLE};
    assert_eq!(ERROR_TABLE.len(), ErrorKind::ALL.len());
    assert_eq!(ERROR_TABLE[0].kind, ErrorKind::NotFound);
    assert_eq!(
        (
            ERROR_TABLE[0].acp_code,
            ERROR_TABLE[0].a2a_code,
            ERROR_TABLE[0].http_status
        ),
        (-32002, -32001, 404)
    );
    assert_eq!(ERROR_TABLE[1].a2a_task_state, None);
}

#[test]
fn frames_write_the_record_they_are() {
    use frames::{Ask, ChunkBody, DoneBody, Frame, FrameBody, FrameHead, Kind, Reply};
    let ask: Ask = serde_json::from_value(json!({"ask_id": "a1", "tags": {"t": 1}, "question": "q"})).expect("ask");
    let head = frame::Head::new(FrameHead::echoing(&ask));
    assert_eq!(
        (head.ask_id.as_deref(), head.version.as_str()),
        (Some("a1"), "1.0"),
        "echoed; the stream's own at its default"
    );
    let bodies = [
        FrameBody::Chunk(ChunkBody { text: "He\"llo".into() }),
        FrameBody::Done(DoneBody {
            result: None,
            extra: [("own".to_string(), json!([1]))].into_iter().collect(),
        }),
        FrameBody::Raw(json!({"z": 1, "a": 2}).as_object().cloned().expect("object")),
    ];
    for (seq, body) in bodies.into_iter().enumerate() {
        let f = Frame {
            head: head.clone(),
            body,
            kind: Kind::Chunk,
            seq: seq as u64,
        };
        let record = Reply::from(f.clone());
        let text = crate::write::to_json(&f);
        assert_eq!(text, serde_json::to_string(&record).expect("serialize"));
        assert_eq!(
            Reply::from(Frame::from(record.clone())),
            record,
            "record → frame → record"
        );
        assert!(frame::Head::ptr_eq(&f.head, &head), "frames share their head");
    }
    assert_eq!(FrameBody::Chunk(ChunkBody { text: String::new() }).body_of(), ["chunk"]);
}
