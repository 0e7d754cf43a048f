//! The served routes and the OpenAPI document cannot drift: every E2A operation of
//! `generated/openapi.json` (tag `E2A`) is in `e2a_gateway::bindings::e2a_http::ROUTES` with the same request and response
//! media types and status codes, and the other way round; a live server answers each route with
//! a documented status and media type. (The other operations — A2A, AG-UI, the gateway's own,
//! the callbacks — are checked against a live `e2a serve --a2a --agui` by schemathesis:
//! `schemathesis.sh`.)

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use common::*;
use e2a_gateway::bindings::e2a_http::ROUTES;
use e2a_gateway::{Auth, GatewayConfig};
use serde_json::{json, Value};

type Responses = BTreeMap<u16, Vec<String>>;

fn document() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../generated/openapi.json");
    let text = std::fs::read_to_string(path).expect("generated/openapi.json");
    serde_json::from_str(&text).expect("openapi json")
}

fn resolve<'a>(doc: &'a Value, v: &'a Value) -> &'a Value {
    match v.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix('#')) {
        Some(p) => doc.pointer(p).expect("resolvable $ref"),
        None => v,
    }
}

fn keys(v: Option<&Value>) -> Vec<String> {
    let mut k: Vec<String> = v
        .and_then(Value::as_object)
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    k.sort();
    k
}

/// The tags of an operation.
fn tags(op: &Value) -> Vec<&str> {
    op["tags"]
        .as_array()
        .map(|t| t.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// (path, METHOD) → (request media types, responses) of the E2A operations, as the document says.
fn documented() -> BTreeMap<(String, String), (Vec<String>, Responses)> {
    let doc = document();
    let mut out = BTreeMap::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("path item") {
            if !tags(op).contains(&"E2A") {
                continue;
            }
            let request = keys(op.pointer("/requestBody/content"));
            let mut responses = Responses::new();
            for (status, r) in op["responses"].as_object().expect("responses") {
                let r = resolve(&doc, r);
                responses.insert(status.parse().expect("numeric status"), keys(r.get("content")));
            }
            out.insert((path.clone(), method.to_uppercase()), (request, responses));
        }
    }
    out
}

fn served() -> BTreeMap<(String, String), (Vec<String>, Responses)> {
    ROUTES
        .iter()
        .map(|r| {
            let mut request: Vec<String> = r.request.iter().map(|s| s.to_string()).collect();
            request.sort();
            let responses = r
                .responses
                .iter()
                .map(|(s, m)| {
                    let mut m: Vec<String> = m.iter().map(|s| s.to_string()).collect();
                    m.sort();
                    (*s, m)
                })
                .collect();
            ((r.path.to_string(), r.method.to_string()), (request, responses))
        })
        .collect()
}

/// Every operation has one declared tag, and the document describes every route the root
/// gateway serves besides E2A's: A2A's HTTP+JSON and JSON-RPC, AG-UI, the callbacks of
/// delegation, the index and the metrics.
#[test]
fn every_operation_has_one_tag_and_every_route_is_described() {
    let doc = document();
    let declared: Vec<&str> = doc["tags"]
        .as_array()
        .expect("tags")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(declared, ["E2A", "A2A", "Gateway", "AG-UI", "Delegation"]);
    let mut a2a = Vec::new();
    let mut others = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("path item") {
            let t = tags(op);
            assert!(t.len() == 1 && declared.contains(&t[0]), "{method} {path}: tags {t:?}");
            let route = format!("{} {path}", method.to_uppercase());
            match t[0] {
                "A2A" => a2a.push(route),
                "E2A" => {}
                _ => others.push(route),
            }
        }
    }
    others.sort();
    assert_eq!(
        others,
        [
            "GET /",
            "GET /metrics",
            "GET /ui",
            "GET /ui/api/activity",
            "GET /ui/api/runs/{id}/frames",
            "POST /agui",
            "POST /callbacks/tasks/{id}"
        ],
        "the gateway's own routes, the inspector, AG-UI and the callbacks"
    );
    a2a.sort();
    assert_eq!(
        a2a,
        [
            "DELETE /tasks/{id}/pushNotificationConfigs/{configId}",
            "GET /.well-known/agent-card.json",
            "GET /extendedAgentCard",
            "GET /tasks",
            "GET /tasks/{id}",
            "GET /tasks/{id}/pushNotificationConfigs",
            "GET /tasks/{id}/pushNotificationConfigs/{configId}",
            "GET /tasks/{id}:subscribe",
            "POST /a2a",
            "POST /message:send",
            "POST /message:stream",
            "POST /tasks/{id}/pushNotificationConfigs",
            "POST /tasks/{id}:cancel",
            "POST /tasks/{id}:subscribe",
        ],
        "the A2A operations: HTTP+JSON, and JSON-RPC as one"
    );
}

#[test]
fn served_routes_equal_the_openapi_document() {
    let doc = documented();
    let served = served();
    assert_eq!(
        doc.keys().collect::<Vec<_>>(),
        served.keys().collect::<Vec<_>>(),
        "operations (path, method)"
    );
    for (op, want) in &doc {
        assert_eq!(&served[op], want, "media types and statuses of {op:?}");
    }
}

#[tokio::test]
async fn a_live_server_answers_every_route_as_documented() {
    let config = GatewayConfig {
        auth: Auth::token("t0ken"),
        ..fast_config()
    };
    let server = start(Arc::new(script()), config).await;
    let doc = documented();
    let c = client();
    // the run the run resource's routes name
    let run_id = envelope("weather")["request_id"].as_str().expect("id").to_string();
    let submitted = c
        .post(server.url("/v1/e2a/runs"))
        .header("authorization", "Bearer t0ken")
        .header("content-type", "application/json")
        .body(json!({"method": "chat.send", "request_id": run_id, "params": {"query": "weather"}}).to_string())
        .send()
        .await
        .expect("send");
    assert_eq!(submitted.status().as_u16(), 202);
    let streams: &[&str] = &["application/json", "text/event-stream", "application/x-ndjson"];
    for r in ROUTES {
        let (_, responses) = &doc[&(r.path.to_string(), r.method.to_string())];
        let path = r.path.replace("{id}", &run_id);
        let accepts: &[&str] = match (r.method, r.path) {
            (_, "/v1/e2a/runs/{id}/frames") | ("POST", "/v1/e2a/requests") => streams,
            ("POST", _) => &["application/json"],
            _ => &["*/*"],
        };
        // a new run is accepted, not answered
        let expected = match (r.method, r.path) {
            ("POST", "/v1/e2a/runs" | "/v1/e2a/runs/{id}:replay") => 202,
            _ => 200,
        };
        for accept in accepts {
            let url = server.url(&path);
            let req = match r.method {
                "POST" => c
                    .post(&url)
                    .header("content-type", "application/json")
                    .body(envelope("weather").to_string()),
                _ => c.get(&url),
            };
            let resp = req
                .header("authorization", "Bearer t0ken")
                .header("accept", *accept)
                .send()
                .await
                .expect("send");
            let status = resp.status().as_u16();
            let ctype = resp.headers()["content-type"].to_str().expect("ascii").to_string();
            assert_eq!(status, expected, "{} {} ({accept})", r.method, r.path);
            assert!(
                responses[&status].contains(&ctype),
                "{} {} answered {ctype}, documented {:?}",
                r.method,
                r.path,
                responses[&status]
            );
            if *accept != "application/json" && *accept != "*/*" {
                assert_eq!(&ctype, accept, "the stream is in the media type asked for");
            }
        }
        // a method the document does not list is refused with 405
        let other = if r.method == "POST" && !doc.contains_key(&(r.path.to_string(), "GET".to_string())) {
            c.get(server.url(&path))
        } else {
            c.delete(server.url(&path))
        };
        let resp = other
            .header("authorization", "Bearer t0ken")
            .send()
            .await
            .expect("send");
        assert_eq!(resp.status().as_u16(), 405, "{}", r.path);
    }
}
