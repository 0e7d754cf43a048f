//! A planted secret never appears in any `Debug`, `Display`, log line or error message of the
//! public types that can carry it.

use e2a::acp::{self, JsonRpcIngress};
use e2a::legacy::{self, AgentResponse};
use e2a::stream::{ResponseStream, StreamValidator};
use e2a::{wire, E2AEnvelope, E2AResponse, Limits, ResponseBody};
use serde_json::{json, Value};

const SECRET: &str = "tok-PLANTED-7f3a";

fn planted_envelope() -> Value {
    json!({
        "request_id": "r1", "method": "session/prompt", "session_id": "s1",
        "params": {"text": "hi", "api_key": SECRET, "nested": [{"access_token": SECRET}]},
        "metadata": {"password": SECRET},
        "channel_context": {"client_secret": SECRET},
        "acp_meta": {"authorization": SECRET},
        "auth": {"bearer_token": SECRET, "api_key_ref": SECRET, "credential_ref": SECRET,
                 "extra_headers": {"Authorization": format!("Bearer {SECRET}"), "Cookie": SECRET, "X-Api-Key": SECRET},
                 "_meta": {"refresh_token": SECRET}}
    })
}

fn assert_clean(what: &str, text: &str) {
    assert!(!text.contains(SECRET), "{what} leaks the secret: {text}");
}

#[test]
fn envelope_and_response_printing_is_redacted() {
    let read = E2AEnvelope::read(
        &planted_envelope().to_string(),
        &e2a::ReadOptions::lenient().with_limits(Limits::default()),
    )
    .unwrap();
    let env = read.value.clone();
    assert_clean("Debug(E2AEnvelope)", &format!("{env:?}"));
    assert_clean("Display(E2AEnvelope)", &format!("{env}"));
    assert_clean("Debug(Lenient)", &format!("{read:?}"));
    assert_clean("Debug(E2AAuth)", &format!("{:?}", env.auth));
    assert_clean(
        "Debug(SecretString)",
        &format!(
            "{:?} {}",
            env.auth.as_ref().unwrap().bearer_token,
            env.auth.as_ref().unwrap().bearer_token.as_ref().unwrap()
        ),
    );
    // the wire keeps the real values
    assert!(env.to_json().contains(SECRET));

    let mut stream = ResponseStream::for_request(&env);
    assert_clean("Debug(ResponseStream)", &format!("{stream:?}"));
    let mut chunk = e2a::E2AResponse::from(stream.text("x"));
    chunk.body.insert("token".into(), SECRET.into());
    chunk.metadata.insert("api_key".into(), SECRET.into());
    assert_clean("Debug(E2AResponse)", &format!("{chunk:?}"));
    assert_clean("Display(E2AResponse)", &format!("{chunk}"));
    assert_clean("Debug(ResponseBody)", &format!("{:?}", chunk.typed_body().unwrap()));
    assert_clean("log line", &e2a::log::log_line(&chunk, 1 << 20));
    let fin = stream.fail(
        "E2A.X",
        "boom",
        json!({"password": SECRET}).as_object().unwrap().clone(),
    );
    assert_clean("Debug(final)", &format!("{fin:?}"));
    if let ResponseBody::Error(b) = fin.to_record().typed_body().unwrap() {
        assert_clean("Debug(ErrorBody)", &format!("{b:?}"));
    }
    let mut v = StreamValidator::new();
    v.push(&chunk);
    assert_clean("Debug(StreamValidator)", &format!("{v:?}"));
}

#[test]
fn adapters_and_legacy_records_print_redacted() {
    let env = E2AEnvelope::from_value(&planted_envelope()).unwrap();
    let call = acp::envelope_to_jsonrpc_call(&env).unwrap();
    assert!(
        call.to_value().to_string().contains(SECRET),
        "the call carries params verbatim"
    );
    let ingress = JsonRpcIngress::from_value(&json!({"method": "m", "params": {"api_key": SECRET}})).unwrap();
    assert_clean(
        "Debug(envelope from ACP)",
        &format!("{:?}", acp::envelope_from_jsonrpc(&ingress)),
    );
    let resp = AgentResponse::from_value(&json!({"request_id": "r", "channel_id": "c", "payload": {"token": SECRET}}))
        .unwrap();
    assert_clean("Debug(AgentResponse)", &format!("{resp:?}"));
    let frame = legacy::response_from_agent_response(&resp, "x", 0, None);
    assert_clean("Debug(frame)", &format!("{frame:?}"));
    let parsed = wire::parse_unary(&frame.to_value()).unwrap();
    assert_clean("Debug(parsed AgentResponse)", &format!("{parsed:?}"));
}

#[test]
fn errors_never_quote_secrets() {
    let cases = [
        json!({"request_id": SECRET, "is_stream": SECRET}),
        json!({"auth": {"bearer_token": 5, "extra_headers": {"Authorization": [SECRET]}}}),
        json!({"identity_origin": SECRET}),
        json!({"timestamp": [SECRET]}),
        json!({"params": SECRET}),
    ];
    for c in cases {
        let err = E2AEnvelope::from_value(&c).unwrap_err();
        assert_clean("lenient error", &format!("{err} {err:?}"));
        let err = e2a::E2AEnvelope::read_value(&c, &e2a::ReadOptions::canonical())
            .map(|r| r.value)
            .unwrap_err();
        assert_clean("strict error", &format!("{err} {err:?}"));
    }
    let err = E2AEnvelope::from_json(&format!("{{\"token\": \"{SECRET}\" oops}}")).unwrap_err();
    assert_clean("JSON error", &format!("{err} {err:?}"));
    let err = E2AResponse::from_value(&json!({"sequence": SECRET})).unwrap_err();
    assert_clean("response error", &format!("{err}"));
}
