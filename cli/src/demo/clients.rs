//! The demo's four clients, each asking the embedded gateway the question in its protocol and
//! keeping every message it is shown.

use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::{Protocol, Shown, QUESTION};

/// The longest the demo waits for any answer.
const PATIENCE: Duration = Duration::from_secs(30);

/// Asks the gateway at `base` the question as a client of `protocol`.
pub async fn ask(protocol: Protocol, base: &str) -> Result<Shown, String> {
    let asked = async {
        match protocol {
            Protocol::E2a => e2a(base).await,
            Protocol::A2a => a2a(base).await,
            Protocol::Agui => agui(base).await,
            Protocol::Acp => acp(base).await,
        }
    };
    let (how, messages) = tokio::time::timeout(PATIENCE, asked)
        .await
        .map_err(|_| format!("no whole answer within {} s", PATIENCE.as_secs()))??;
    Ok(Shown {
        protocol,
        how,
        messages,
    })
}

/// POSTs `body` to `url` asking for an event stream; the `data` of each event, as JSON.
async fn events(url: &str, headers: &[(&str, &str)], body: &Value) -> Result<Vec<Value>, String> {
    let mut req = reqwest::Client::new()
        .post(url)
        .header("accept", "text/event-stream")
        .json(body);
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    let resp = req.send().await.map_err(|e| e.without_url().to_string())?;
    let status = resp.status();
    let text = resp.text().await.map_err(|e| e.without_url().to_string())?;
    if !status.is_success() {
        return Err(format!("HTTP {}: {text}", status.as_u16()));
    }
    let data = text.split("\n\n").filter_map(|event| {
        let lines: Vec<&str> = event
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(|l| l.strip_prefix(' ').unwrap_or(l))
            .collect();
        (!lines.is_empty()).then(|| lines.join("\n"))
    });
    data.map(|d| serde_json::from_str(&d).map_err(|e| format!("an event is not JSON: {e}")))
        .collect()
}

/// E2A: `chat.send` to the requests route, the frames as SSE.
async fn e2a(base: &str) -> Result<(String, Vec<Value>), String> {
    let path = e2a_gateway::bindings::e2a_http::REQUESTS_PATH;
    let request = e2a::E2AEnvelope::new("chat.send", json!({"query": QUESTION}));
    let frames = events(&format!("{base}{path}"), &[], &request.to_value()).await?;
    Ok((format!("POST {path}, SSE"), frames))
}

/// A2A: `SendStreamingMessage` over JSON-RPC, each event a JSON-RPC response (its `result`
/// kept).
async fn a2a(base: &str) -> Result<(String, Vec<Value>), String> {
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": {"message": {
        "messageId": e2a::stream::new_id(), "role": "ROLE_USER", "parts": [{"text": QUESTION}]}}});
    let responses = events(&format!("{base}/a2a"), &[("A2A-Version", "1.0")], &call).await?;
    let results = responses
        .into_iter()
        .map(|r| match r.get("result") {
            Some(result) => Ok(result.clone()),
            None => Err(format!("the agent answered an error: {r}")),
        })
        .collect::<Result<_, _>>()?;
    Ok(("POST /a2a, JSON-RPC SendStreamingMessage".into(), results))
}

/// AG-UI: a `RunAgentInput` to the AG-UI route, the run's events as SSE.
async fn agui(base: &str) -> Result<(String, Vec<Value>), String> {
    let path = e2a_gateway::bindings::agui::AGUI_PATH;
    let input = json!({"threadId": "demo-thread", "runId": e2a::stream::new_id(), "state": {}, "tools": [],
        "context": [], "forwardedProps": {},
        "messages": [{"id": e2a::stream::new_id(), "role": "user", "content": QUESTION}]});
    let events = events(&format!("{base}{path}"), &[], &input).await?;
    Ok((format!("POST {path}, RunAgentInput"), events))
}

/// ACP: `e2a acp --agent e2a:BASE` spawned (an editor's agent process, relaying to the
/// gateway; no log file: the demo leaves nothing behind), spoken to over its stdio: `initialize`, `session/new`, `session/prompt`; the
/// prompt's `session/update`s and its result kept.
async fn acp(base: &str) -> Result<(String, Vec<Value>), String> {
    let exe = std::env::current_exe().map_err(|e| format!("where is e2a: {e}"))?;
    let mut child = tokio::process::Command::new(exe)
        .args([
            "acp",
            "--agent",
            &format!("e2a:{base}"),
            "--log-file",
            "off",
            "--store",
            "memory",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start e2a acp: {e}"))?;
    let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err("e2a acp has no stdio".into());
    };
    let mut lines = BufReader::new(stdout).lines();
    let mut call = async |id: u64, method: &str, params: Value, kept: &mut Vec<Value>| {
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string() + "\n";
        stdin.write_all(line.as_bytes()).await.map_err(|e| e.to_string())?;
        loop {
            let line = lines.next_line().await.map_err(|e| e.to_string())?;
            let message: Value = serde_json::from_str(&line.ok_or("e2a acp ended early")?)
                .map_err(|e| format!("e2a acp wrote no JSON: {e}"))?;
            if message.get("id") == Some(&json!(id)) && message.get("method").is_none() {
                if let Some(e) = message.get("error") {
                    return Err(format!("{method}: {e}"));
                }
                kept.push(message.clone());
                return Ok(message);
            }
            kept.push(message);
        }
    };
    let mut ignored = Vec::new();
    let client =
        json!({"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false}}});
    call(1, "initialize", client, &mut ignored).await?;
    let cwd = std::env::temp_dir();
    let session = call(2, "session/new", json!({"cwd": cwd, "mcpServers": []}), &mut ignored).await?;
    let id = session.pointer("/result/sessionId").cloned().unwrap_or(Value::Null);
    let mut shown = Vec::new();
    let prompt = json!({"sessionId": id, "prompt": [{"type": "text", "text": QUESTION}]});
    call(3, "session/prompt", prompt, &mut shown).await?;
    drop(child);
    Ok(("stdio of e2a acp --agent e2a:URL, session/prompt".into(), shown))
}
