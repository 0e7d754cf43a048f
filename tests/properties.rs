//! Property tests: canonical → lenient → canonical is the identity, every value the API can
//! build validates against the schema, and strict and lenient readers agree on canonical input.

use e2a::{E2AAuth, E2AEnvelope, E2AResponse, IdentityOrigin, JsonRpcId, SecretHeaders, SecretString};
use proptest::prelude::*;
use serde_json::{Map, Value};

fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (-1e9f64..1e9).prop_map(Value::from),
        ".{0,8}".prop_map(Value::String),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    json_leaf().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(".{0,6}", inner, 0..4).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn map() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::btree_map("[a-z_]{1,6}", json_value(), 0..4).prop_map(|m| m.into_iter().collect())
}

fn opt_str() -> impl Strategy<Value = Option<String>> {
    prop::option::of(".{0,10}")
}

fn origin() -> impl Strategy<Value = IdentityOrigin> {
    prop::sample::select(IdentityOrigin::ALL.to_vec())
}

fn rpc_id() -> impl Strategy<Value = Option<JsonRpcId>> {
    prop::option::of(prop_oneof![
        any::<i64>().prop_map(JsonRpcId::Integer),
        ".{0,6}".prop_map(JsonRpcId::String)
    ])
}

fn auth() -> impl Strategy<Value = Option<E2AAuth>> {
    prop::option::of(
        (
            opt_str(),
            opt_str(),
            prop::collection::btree_map("[A-Za-z-]{1,8}", ".{0,8}", 0..3),
            map(),
        )
            .prop_map(|(method_id, token, headers, meta)| E2AAuth {
                method_id,
                bearer_token: token.map(SecretString::from),
                api_key_ref: None,
                credential_ref: None,
                extra_headers: SecretHeaders(headers.into_iter().map(|(k, v)| (k, SecretString::from(v))).collect()),
                meta,
            }),
    )
}

prop_compose! {
    fn envelope()(
        ids in (opt_str(), rpc_id(), opt_str(), opt_str(), opt_str(), opt_str()),
        who in (origin(), opt_str(), opt_str(), prop::option::of(map()), opt_str()),
        agent in (prop::option::of("[a-z]{1,6}"), prop::option::of("[a-z]{1,6}"), prop::option::of("[a-z]{1,6}")),
        call in (opt_str(), map(), opt_str(), any::<bool>(), prop::collection::vec(".{0,6}", 0..3)),
        ctx in (auth(), map(), map(), map()),
        ts in prop::option::of("[0-9T:+-]{0,25}"),
    ) -> E2AEnvelope {
        let mut e = E2AEnvelope::default();
        (e.request_id, e.jsonrpc_id, e.correlation_id, e.task_id, e.context_id, e.session_id) = ids;
        (e.identity_origin, e.channel, e.user_id, e.agent_ref, e.chat_id) = who;
        (e.agent_id, e.service_id, e.workspace_key) = agent;
        (e.method, e.params, e.ext_method, e.is_stream, e.expected_output_modes) = call;
        (e.auth, e.channel_context, e.a2a_metadata, e.acp_meta) = ctx;
        e.timestamp = ts;
        e
    }
}

prop_compose! {
    fn response()(
        ids in (opt_str(), opt_str(), any::<u32>(), any::<bool>(), rpc_id()),
        kind in prop::sample::select(e2a::ResponseKind::ALL.to_vec()),
        status in prop::sample::select(e2a::ResponseStatus::ALL.to_vec()),
        body in map(), metadata in map(), projections in map(),
        who in (origin(), opt_str(), prop::option::of(map())),
    ) -> E2AResponse {
        let mut r = E2AResponse::new(kind, Value::Object(body));
        (r.response_id, r.request_id) = (ids.0, ids.1);
        r.sequence = u64::from(ids.2);
        r.is_final = ids.3;
        r.jsonrpc_id = ids.4;
        r.status = status.as_str().into();
        r.metadata = metadata;
        r.projections = projections;
        (r.identity_origin, r.channel, r.agent_ref) = who;
        r
    }
}

prop_compose! {
    fn chunk_body()(
        delta in prop::option::of(json_value()),
        kind in prop::sample::select(e2a::types::DeltaKind::ALL.to_vec()),
        texts in (opt_str(), opt_str(), opt_str()),
        values in prop::collection::vec(prop::option::of(json_value()), 5),
        extra in prop_oneof![3 => Just(Map::new()), 1 => map()],
    ) -> e2a::types::ChunkBody {
        let mut b = e2a::types::ChunkBody::delta(kind, Value::Null);
        b.delta = delta;
        (b.event_type, b.mime_type, b.source_chunk_type) = texts;
        let mut v = values.into_iter();
        (b.member_name, b.rid, b.role, b.team_id, b.team_name) = (v.next().flatten(), v.next().flatten(), v.next().flatten(), v.next().flatten(), v.next().flatten());
        b.extra = extra;
        b
    }
}

prop_compose! {
    /// A tool call, its own keys at times clashing with its fields.
    fn tool_call()(
        id in ".{0,6}",
        texts in (opt_str(), opt_str()),
        values in (prop::option::of(json_value()), prop::option::of(json_value())),
        extra in prop_oneof![2 => Just(Map::new()), 1 => map(), 1 => clash("name|status|tool_call_id|result")],
    ) -> e2a::types::ToolCall {
        e2a::types::ToolCall { tool_call_id: id, name: texts.0, status: texts.1, arguments: values.0, result: values.1, extra }
    }
}

prop_compose! {
    /// An artifact piece.
    fn artifact()(
        id in ".{0,6}",
        flags in (any::<bool>(), any::<bool>()),
        kind in prop::option::of(prop::sample::select(vec![e2a::types::ArtifactKind::Text, e2a::types::ArtifactKind::FileUrl, e2a::types::ArtifactKind::Data])),
        name in opt_str(),
        parts in prop::collection::vec(map(), 0..3),
        extra in prop_oneof![2 => Just(Map::new()), 1 => clash("append|kind|parts")],
    ) -> e2a::types::ArtifactDelta {
        e2a::types::ArtifactDelta { artifact_id: id, append: flags.0, last_chunk: flags.1, kind, name, parts, extra }
    }
}

prop_compose! {
    /// An answer's result: its content, artifacts and tool calls.
    fn answer_result()(
        texts in (opt_str(), opt_str()),
        artifacts in prop::collection::vec(artifact(), 0..3),
        tool_calls in prop::collection::vec(tool_call(), 0..3),
        extra in prop_oneof![2 => Just(Map::new()), 1 => map(), 1 => clash("content|tool_calls|stopReason")],
    ) -> e2a::types::AnswerResult {
        e2a::types::AnswerResult { content: texts.0, stop_reason: texts.1, artifacts, tool_calls, extra }
    }
}

/// One member of its own whose name is one of `names` (`|`-separated): a clash with a field.
fn clash(names: &'static str) -> impl Strategy<Value = Map<String, Value>> {
    (names, json_value()).prop_map(|(k, v)| Map::from_iter([(k, v)]))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// A chunk body's object with its values moved in (generated `into_object`) is the map
    /// serde writes, key order included, whatever its own keys say.
    #[test]
    fn chunk_body_into_object_is_its_serialization(b in chunk_body(), clash in prop::option::of(("delta|delta_kind|event_type|rid|x", json_value()))) {
        let mut b = b;
        if let Some((k, v)) = clash { b.extra.insert(k, v); }
        let written = e2a::response::body_map(&b);
        let moved = b.into_object();
        prop_assert_eq!(serde_json::to_string(&moved).ok(), serde_json::to_string(&written).ok());
    }

    /// A struct moved into its JSON object (generated `into_object`: nested structs, arrays
    /// of them, options, string enums, own members) is the object serde writes, key order
    /// included.
    #[test]
    fn structs_into_object_are_their_serialization(result in answer_result(), paused in (any::<bool>(), opt_str(), prop::option::of(any::<bool>()), map())) {
        // (the value serde makes: a member of its own named as a field is one key)
        let written = serde_json::to_value(&result).ok().map(|v| v.to_string());
        prop_assert_eq!(Some(Value::Object(result.into_object()).to_string()), written);
        let (approval, prompt, resumable, extra) = paused;
        let input_kind = Some(if approval { e2a::types::PauseKind::Approval } else { e2a::types::PauseKind::Input });
        let paused = e2a::types::PausedResult { state: e2a::types::PausedResultState::InputRequired, input_kind, prompt, resumable, extra };
        let written = serde_json::to_value(&paused).ok().map(|v| v.to_string());
        prop_assert_eq!(Some(Value::Object(paused.into_object()).to_string()), written);
    }

    #[test]
    fn envelope_canonical_roundtrip_and_schema(env in envelope()) {
        let canonical = env.to_value();
        // every value the API builds validates against the schema
        let strict = e2a::E2AEnvelope::read_value(&canonical, &e2a::ReadOptions::canonical()).map(|r| r.value).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&strict, &env);
        // canonical → lenient → canonical is the identity
        let lenient = E2AEnvelope::from_value(&canonical).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(lenient.to_value(), canonical);
    }

    #[test]
    fn response_canonical_roundtrip_and_schema(resp in response()) {
        let canonical = resp.to_value();
        let strict = e2a::E2AResponse::read_value(&canonical, &e2a::ReadOptions::canonical()).map(|r| r.value).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&strict, &resp);
        let lenient = E2AResponse::from_value(&canonical).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(lenient.to_value(), canonical);
    }

    #[test]
    fn generated_writer_writes_what_serde_writes(
        env in envelope(),
        resp in response(),
        tricky in prop::collection::vec(prop::option::of("[a-z\"\\\\\\x00-\\x1f\\x7f é🎉/<>]{0,8}"), 6),
    ) {
        // the canonical writer (`e2a::write`, generated) against the derived Serialize
        prop_assert_eq!(env.to_json(), serde_json::to_string(&env).unwrap());
        prop_assert_eq!(resp.to_json(), serde_json::to_string(&resp).unwrap());
        let mut resp = resp;
        (resp.channel, resp.session_id, resp.timestamp, resp.user_id) =
            (tricky[0].clone(), tricky[1].clone(), tricky[2].clone(), tricky[3].clone());
        resp.status = tricky[4].clone().unwrap_or_default().into();
        resp.response_kind = tricky[5].clone().unwrap_or_default().into();
        resp.provenance.converter = tricky[0].clone();
        prop_assert_eq!(resp.to_json(), serde_json::to_string(&resp).unwrap());
    }

    #[test]
    fn text_and_value_paths_agree(m in map(), env in envelope()) {
        // the fast path (JSON text straight into the struct) and the Value path read the same
        for v in [Value::Object(m), env.to_value()] {
            let text = v.to_string();
            let (a, b) = (E2AEnvelope::from_json(&text), E2AEnvelope::from_value(&v));
            prop_assert_eq!(a.is_ok(), b.is_ok());
            if let (Ok(a), Ok(b)) = (a, b) { prop_assert_eq!(a, b); }
            let (a, b) = (E2AResponse::from_json(&text), E2AResponse::from_value(&v));
            prop_assert_eq!(a.is_ok(), b.is_ok());
            if let (Ok(a), Ok(b)) = (a, b) { prop_assert_eq!(a, b); }
        }
    }

    #[test]
    fn lenient_reader_never_panics(v in json_value(), extra in map()) {
        let _ = E2AEnvelope::from_value(&v);
        let _ = E2AResponse::from_value(&v);
        let _ = E2AEnvelope::from_value(&Value::Object(extra.clone()));
        let _ = E2AResponse::from_value(&Value::Object(extra));
    }

    #[test]
    fn strict_typed_fast_path_agrees_with_the_schema_validator(
        env in envelope(),
        resp in response(),
        drops in prop::collection::vec(0usize..40, 0..4),
        sets in prop::collection::vec((0usize..40, json_value()), 0..3),
        extra in prop::option::of(("[a-z]{1,4}", json_leaf())),
    ) {
        // Mutations of valid messages: keys dropped, values replaced by any JSON, an unknown key.
        // The strict text path decodes into the generated types; the value path runs the
        // jsonschema validator first. They must accept and reject the same messages.
        for base in [env.to_value(), resp.to_value()] {
            let mut m = base.as_object().cloned().unwrap_or_default();
            let keys: Vec<String> = m.keys().cloned().collect();
            for d in &drops { m.remove(&keys[d % keys.len()]); }
            for (i, v) in &sets {
                // integral floats (`5.0`) are integers to JSON Schema but not to serde; skip them
                if v.as_f64().is_some_and(|f| f.fract() == 0.0 && !v.is_i64()) { continue; }
                m.insert(keys[i % keys.len()].clone(), v.clone());
            }
            if let Some((k, v)) = &extra { m.insert(format!("x_{k}"), v.clone()); }
            let v = Value::Object(m);
            let text = v.to_string();
            let strict = e2a::ReadOptions::strict();
            if base.get("response_kind").is_some() {
                let (a, b) = (E2AResponse::read(&text, &strict), E2AResponse::read_value(&v, &strict));
                prop_assert_eq!(a.is_ok(), b.is_ok(), "{}", text);
                if let (Ok(a), Ok(b)) = (a, b) { prop_assert_eq!(a.value, b.value); }
            } else {
                let (a, b) = (E2AEnvelope::read(&text, &strict), E2AEnvelope::read_value(&v, &strict));
                prop_assert_eq!(a.is_ok(), b.is_ok(), "{}", text);
                if let (Ok(a), Ok(b)) = (a, b) { prop_assert_eq!(a.value, b.value); }
            }
        }
    }
}

mod a2a_writer {
    //! The generated writers of the A2A types (what the gateway stores and sends for every task
    //! event) against their derived `Serialize`.
    use super::{json_value, map};
    use e2a::types::{
        A2aArtifact, A2aMessage, A2aPart, A2aRole, A2aStreamResponse, A2aTask, A2aTaskArtifactUpdateEvent,
        A2aTaskState, A2aTaskStatus, A2aTaskStatusUpdateEvent,
    };
    use proptest::prelude::*;

    fn text() -> impl Strategy<Value = String> {
        "[a-zA-Z0-9 \"\\\\\\x00-\\x1f\\x7f é🎉/]{0,10}"
    }

    fn opt_text() -> impl Strategy<Value = Option<String>> {
        prop::option::of(text())
    }

    fn part() -> impl Strategy<Value = A2aPart> {
        (
            opt_text(),
            prop::option::of(json_value()),
            opt_text(),
            map(),
            opt_text(),
            opt_text(),
            opt_text(),
        )
            .prop_map(|(text, data, media_type, metadata, url, filename, raw)| A2aPart {
                data,
                filename,
                media_type,
                metadata,
                raw,
                text,
                url,
            })
    }

    fn message() -> impl Strategy<Value = A2aMessage> {
        (
            opt_text(),
            prop::collection::vec(text(), 0..2),
            text(),
            map(),
            prop::collection::vec(part(), 0..3),
            prop::collection::vec(text(), 0..2),
            prop_oneof![Just(A2aRole::RoleUser), Just(A2aRole::RoleAgent)],
            opt_text(),
        )
            .prop_map(
                |(context_id, extensions, message_id, metadata, parts, reference_task_ids, role, task_id)| A2aMessage {
                    context_id,
                    extensions,
                    message_id,
                    metadata,
                    parts,
                    reference_task_ids,
                    role,
                    task_id,
                },
            )
    }

    fn artifact() -> impl Strategy<Value = A2aArtifact> {
        (
            text(),
            opt_text(),
            prop::collection::vec(text(), 0..2),
            map(),
            opt_text(),
            prop::collection::vec(part(), 0..3),
        )
            .prop_map(
                |(artifact_id, description, extensions, metadata, name, parts)| A2aArtifact {
                    artifact_id,
                    description,
                    extensions,
                    metadata,
                    name,
                    parts,
                },
            )
    }

    fn status() -> impl Strategy<Value = A2aTaskStatus> {
        (
            prop::option::of(message()),
            prop_oneof![
                Just(A2aTaskState::TaskStateWorking),
                Just(A2aTaskState::TaskStateCompleted)
            ],
            opt_text(),
        )
            .prop_map(|(message, state, timestamp)| A2aTaskStatus {
                message,
                state,
                timestamp,
            })
    }

    fn event() -> impl Strategy<Value = A2aStreamResponse> {
        prop_oneof![
            (
                prop::collection::vec(artifact(), 0..2),
                text(),
                prop::collection::vec(message(), 0..2),
                text(),
                map(),
                status()
            )
                .prop_map(|(artifacts, context_id, history, id, metadata, status)| {
                    A2aStreamResponse::Task(A2aTask {
                        artifacts,
                        context_id,
                        history,
                        id,
                        metadata,
                        status,
                    })
                }),
            message().prop_map(A2aStreamResponse::Message),
            (text(), map(), status(), text()).prop_map(|(context_id, metadata, status, task_id)| {
                A2aStreamResponse::StatusUpdate(A2aTaskStatusUpdateEvent {
                    context_id,
                    metadata,
                    status,
                    task_id,
                })
            }),
            (any::<bool>(), artifact(), text(), any::<bool>(), map(), text()).prop_map(
                |(append, artifact, context_id, last_chunk, metadata, task_id)| {
                    A2aStreamResponse::ArtifactUpdate(A2aTaskArtifactUpdateEvent {
                        append,
                        artifact,
                        context_id,
                        last_chunk,
                        metadata,
                        task_id,
                    })
                }
            ),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        #[test]
        fn generated_a2a_writers_write_what_serde_writes(ev in event()) {
            prop_assert_eq!(e2a::write::to_json(&ev), serde_json::to_string(&ev).unwrap());
            if let A2aStreamResponse::Task(t) = &ev {
                prop_assert_eq!(e2a::write::to_json(t), serde_json::to_string(t).unwrap());
            }
        }
    }
}

mod frames {
    //! The generated frame twin (`e2a::frame`): a `Frame` writes the `E2AResponse` it converts
    //! to, byte for byte, and a record converted to a frame and back is the record.

    use super::*;
    use e2a::frame::{Frame, FrameBody, FrameHead, Head};
    use e2a::types::{CompleteBody, ErrorBody, PlanApprovalRequiredBody};

    fn body() -> impl Strategy<Value = FrameBody> {
        prop_oneof![
            chunk_body().prop_map(FrameBody::Chunk),
            (map(), map()).prop_map(|(result, extra)| FrameBody::Complete(CompleteBody { result, extra })),
            (".{0,8}", ".{0,12}", map())
                .prop_map(|(code, message, details)| FrameBody::Error(ErrorBody::new(code, message, details))),
            (opt_str(), any::<bool>()).prop_map(|(q, r)| FrameBody::PlanApprovalRequired(PlanApprovalRequiredBody {
                plan_content: q,
                resumable: Some(r),
                ..PlanApprovalRequiredBody::asking(e2a::types::PauseKind::Input, "", r)
            })),
            map().prop_map(FrameBody::Raw),
        ]
    }

    prop_compose! {
        fn frame()(
            request in envelope(),
            stream in (map(), origin(), opt_str()),
            own in (opt_str(), opt_str(), any::<u64>(), any::<bool>(), map()),
            kind in prop::sample::select(e2a::ResponseKind::ALL.to_vec()),
            status in prop::sample::select(e2a::ResponseStatus::ALL.to_vec()),
            body in body(),
        ) -> Frame {
            let mut head = FrameHead::echoing(&request);
            (head.metadata, head.identity_origin, head.provenance.converter) = stream;
            let (response_id, timestamp, sequence, is_final, projections) = own;
            Frame { head: Head::new(head), body, response_id, timestamp, sequence, is_final, projections, response_kind: kind, status: status.as_str().into() }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        #[test]
        fn a_frame_writes_the_record_it_is(f in frame()) {
            let record = E2AResponse::from(f.clone());
            prop_assert_eq!(e2a::write::to_json(&f), record.to_json());
            prop_assert_eq!(e2a::write::to_json(&f), serde_json::to_string(&record).unwrap());
            // written twice (the head's text cached the first time): the same bytes
            prop_assert_eq!(e2a::write::to_json(&f), record.to_json());
        }

        #[test]
        fn a_record_as_a_frame_and_back_is_the_record(r in response(), env in envelope()) {
            prop_assert_eq!(E2AResponse::from(Frame::from(r.clone())), r.clone());
            prop_assert_eq!(e2a::write::to_json(&Frame::from(r.clone())), r.to_json());
            // with every echoed field of a request set
            let mut echoing = Frame::from(r);
            *echoing.head.make_mut() = FrameHead::echoing(&env);
            let record = E2AResponse::from(echoing.clone());
            prop_assert_eq!(E2AResponse::from(Frame::from(record.clone())), record.clone());
            prop_assert_eq!(e2a::write::to_json(&echoing), record.to_json());
        }

        #[test]
        fn frames_of_one_head_differ_only_in_their_own(f in frame(), seq in any::<u64>(), text in ".{0,8}") {
            let mut next = f.clone();
            next.sequence = seq;
            next.body = FrameBody::Chunk(e2a::types::ChunkBody::delta(e2a::types::DeltaKind::Text, text.as_str()));
            prop_assert!(Head::ptr_eq(&f.head, &next.head));
            prop_assert_eq!(e2a::write::to_json(&next), E2AResponse::from(next.clone()).to_json());
            // a head changed through one frame is that frame's alone
            let before = e2a::write::to_json(&f);
            next.head.make_mut().task_id = Some(format!("{text}!"));
            prop_assert!(!Head::ptr_eq(&f.head, &next.head));
            prop_assert_eq!(e2a::write::to_json(&f), before);
            prop_assert_eq!(e2a::write::to_json(&next), E2AResponse::from(next.clone()).to_json());
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

        /// A stream's frames as text, heads written once: each frame's text is its canonical
        /// JSON, whether it shares the head before it or not.
        #[test]
        fn frame_texts_weave_each_frame_back(
            records in prop::collection::vec(response(), 1..6),
            frames in prop::collection::vec(frame(), 1..4),
            repeats in prop::collection::vec(0usize..4, 1..12),
        ) {
            let mut log = e2a::frame::FrameTexts::new();
            let mut expected = Vec::new();
            // runs of frames sharing one head (a record repeated with other own fields), then another
            for (i, n) in repeats.iter().enumerate() {
                let base = &records[i % records.len()];
                for k in 0..*n {
                    let mut r = base.clone();
                    r.sequence = (i * 10 + k) as u64;
                    r.body.insert("k".into(), Value::from(k));
                    log.push(&r, r.sequence, k + 1 == *n);
                    expected.push(r.to_json());
                }
            }
            for (i, text) in expected.iter().enumerate() {
                prop_assert_eq!(log.text(i), Some(text.clone()));
            }
            prop_assert_eq!(log.text(expected.len()), None);
            // frames (typed bodies, shared heads) as well
            let mut frame_log = e2a::frame::FrameTexts::new();
            for f in &frames {
                frame_log.push(f, f.sequence, f.is_final);
                frame_log.push(f, f.sequence, f.is_final);
            }
            frame_log.shrink_to_fit();
            for (i, f) in frames.iter().enumerate() {
                let json = e2a::write::to_json(f);
                prop_assert_eq!(frame_log.text(2 * i), Some(json.clone()));
                prop_assert_eq!(frame_log.text(2 * i + 1), Some(json.clone()));
            }
        }
    }

    #[test]
    fn a_typed_body_is_the_body_of_its_kind() {
        let body = FrameBody::Chunk(e2a::types::ChunkBody::delta(e2a::types::DeltaKind::Text, "x"));
        assert_eq!(body.body_of(), [e2a::ResponseKind::E2aChunk.as_str()]);
        assert!(FrameBody::Raw(Map::new()).body_of().is_empty());
    }
}

proptest! {
    /// A plain text with at most one byte to escape, anywhere (in a word, in the overlapping
    /// last word the writer reads, in a short text): written as `serde_json` writes it.
    #[test]
    fn any_text_is_escaped_exactly_like_serde_json(
        text in "[a-z é🎉\u{7f}]{0,40}",
        special in proptest::option::of("[\"\\\\\u{0}-\u{1f}]"),
        at in any::<proptest::sample::Index>(),
    ) {
        let mut s = text;
        if let Some(c) = special {
            let places: Vec<usize> = (0..=s.len()).filter(|&i| s.is_char_boundary(i)).collect();
            s.insert_str(places[at.index(places.len())], &c);
        }
        let mut w = e2a::write::JsonWriter::default();
        w.value(s.as_str());
        prop_assert_eq!(w.into_string(), serde_json::to_string(&s).unwrap());
    }
}

proptest! {
    /// `e2a::read::member` finds what `Map::get` finds, in objects small (read member by
    /// member) and large (hashed), for keys present and absent.
    #[test]
    fn a_member_is_found_as_get_finds_it(
        keys in proptest::collection::vec("[a-zA-Z]{0,6}", 0..14),
        key in "[a-zA-Z]{0,6}",
        pick in any::<prop::sample::Index>(),
    ) {
        let object: Map<String, Value> = keys.iter().enumerate().map(|(i, k)| (k.clone(), Value::from(i))).collect();
        prop_assert_eq!(e2a::read::member(&object, &key), object.get(&key));
        if !keys.is_empty() {
            let present = &keys[pick.index(keys.len())];
            prop_assert_eq!(e2a::read::member(&object, present), object.get(present));
            prop_assert!(e2a::read::member(&object, present).is_some());
        }
    }
}
