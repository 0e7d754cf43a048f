//! The `e2a` binary on the files in `tests/data/`: exit codes, messages with line numbers and
//! pointers, and outputs that pass validation.

use assert_cmd::Command;
use serde_json::Value;

fn data(name: &str) -> String {
    format!("{}/../tests/data/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn e2a() -> Command {
    Command::cargo_bin("e2a").expect("binary")
}

fn stdout(cmd: &mut Command) -> (i32, String, String) {
    let out = cmd.output().expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn demo_shows_one_answer_in_four_protocols() {
    let (code, out, err) = stdout(e2a().arg("demo"));
    assert_eq!(code, 0, "{err}");
    // what each line shows, its columns' padding aside
    let words = out.split_whitespace().collect::<Vec<_>>().join(" ");
    for needle in [
        "E2A · POST /v1/e2a/requests",
        "A2A · POST /a2a",
        "AG-UI · POST /agui",
        "ACP · stdio of e2a acp",
        "tool call get_weather {\"city\":\"Oslo\"}",
        "TOOL_CALL_START get_weather",
        "tool_call Get Weather {\"city\":\"Oslo\"}",
        "artifact forecast.md Tomorrow: 6 °C, light rain.",
        "COMPLETED It is 4 °C and clear in Oslo.",
        "RUN_FINISHED success",
        "stopReason end_turn",
    ] {
        assert!(words.contains(needle), "demo output lacks {needle}:\n{out}");
    }
}

#[test]
fn validate_exit_codes_and_locations() {
    let (code, _, _) = stdout(e2a().args(["validate", &data("valid.jsonl")]));
    assert_eq!(code, 0);
    let (code, out, _) = stdout(e2a().args(["validate", &data("invalid.jsonl")]));
    assert_eq!(code, 1);
    assert!(out.contains("invalid.jsonl:1: /is_stream: expected boolean"), "{out}");
    assert!(out.contains("invalid.jsonl:1: /request_id:"), "{out}");
    assert!(out.contains("invalid.jsonl:3: stream: request r1: gap"), "{out}");
    assert!(
        out.contains("invalid.jsonl:4: stream: request r2: stream ended without a final frame"),
        "{out}"
    );
    let (code, _, err) = stdout(e2a().args(["validate", "/no/such/file"]));
    assert_eq!(code, 2, "{err}");
    let (code, _, _) = stdout(e2a().arg("validate"));
    assert_eq!(code, 2, "usage error");
}

#[test]
fn validate_lenient_reports_rules_and_json_format() {
    let f = data("legacy_envelopes.jsonl");
    assert_eq!(
        stdout(e2a().args(["validate", &f])).0,
        1,
        "legacy shape is not strict-valid"
    );
    let (code, out, _) = stdout(e2a().args(["validate", "--lenient", &f]));
    assert_eq!(code, 0);
    assert!(out.contains("legacy rules applied: req_method, channel_id"), "{out}");
    let (code, out, _) = stdout(e2a().args(["validate", "--format", "json", &data("invalid.jsonl")]));
    assert_eq!(code, 1);
    let lines: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).expect("JSON")).collect();
    assert!(lines.iter().any(|l| l["pointer"] == "/is_stream" && l["line"] == 1));
    assert_eq!(lines.last().unwrap()["summary"]["valid"], false);
}

#[test]
fn validate_modes_follow_the_protocol_required_set() {
    // The ten keys §12.4 requires, as a Go or TypeScript service writes a stream.
    let chunk = r#"{"protocol_version":"1.0","response_id":"r1","request_id":"req_1","sequence":0,"is_final":false,"status":"in_progress","response_kind":"e2a.chunk","timestamp":"2026-03-29T12:00:00+00:00","provenance":{"source_protocol":"e2a"},"body":{"delta_kind":"text","delta":"Hello"}}"#;
    let last = chunk
        .replace(
            r#""sequence":0,"is_final":false,"status":"in_progress","response_kind":"e2a.chunk""#,
            r#""sequence":1,"is_final":true,"status":"succeeded","response_kind":"e2a.complete""#,
        )
        .replace(r#"{"delta_kind":"text","delta":"Hello"}"#, r#"{"result":{}}"#);
    let stream = format!("{chunk}\n{last}\n");
    let (code, out, _) = stdout(e2a().args(["validate", "-"]).write_stdin(stream.clone()));
    assert_eq!(code, 0, "{out}");
    let (code, out, _) = stdout(e2a().args(["validate", "--canonical", "-"]).write_stdin(stream));
    assert_eq!(code, 1);
    assert!(out.contains("-:1: /acp_meta: missing"), "{out}");

    let no_id = chunk.replace(r#""response_id":"r1","#, "");
    let (code, out, _) = stdout(e2a().args(["validate", "-"]).write_stdin(no_id));
    assert_eq!(code, 1);
    assert!(out.contains("-:1: /response_id: missing required property"), "{out}");
    let string_seq = chunk.replace(r#""sequence":0"#, r#""sequence":"1""#);
    let (code, out, _) = stdout(e2a().args(["validate", "-"]).write_stdin(string_seq));
    assert_eq!(code, 1);
    assert!(out.contains("-:1: /sequence: expected integer"), "{out}");
}

#[test]
fn validate_reads_stdin() {
    let text = std::fs::read_to_string(data("valid.jsonl")).unwrap();
    let (code, _, _) = stdout(e2a().args(["validate", "-"]).write_stdin(text));
    assert_eq!(code, 0);
}

#[test]
fn migrate_converts_rejects_and_validates() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("e2a.jsonl");
    let rejects = dir.path().join("rejects.jsonl");
    let (code, _, err) = stdout(e2a().args([
        "migrate",
        &data("legacy_agent_server.log"),
        "-o",
        out.to_str().unwrap(),
        "--rejects",
        rejects.to_str().unwrap(),
    ]));
    assert_eq!(code, 1, "some lines are rejected: {err}");
    let summary: Value = serde_json::from_str(err.lines().last().unwrap()).unwrap();
    assert_eq!(summary["migrated"]["agent_response_chunks"], 3);
    assert_eq!(summary["rejected"], 2);
    assert_eq!(summary["legacy_rules"]["req_method"], 2);
    let rej: Vec<Value> = std::fs::read_to_string(&rejects)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rej.len(), 2);
    assert_eq!(rej[1]["line"], 8);
    assert!(rej[1]["reason"].as_str().unwrap().contains("/ok"));
    let (code, _, _) = stdout(e2a().args(["validate", out.to_str().unwrap()]));
    assert_eq!(code, 0, "migrated output is strict-valid with valid streams");
}

#[test]
fn convert_directions() {
    let (code, out, _) = stdout(e2a().args(["convert", "--from", "acp", "--to", "e2a", &data("acp_requests.jsonl")]));
    assert_eq!(code, 0);
    let first: Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    assert_eq!(first["provenance"]["source_protocol"], "acp");
    assert_eq!(first["session_id"], "s1");
    // a real ACP request names its session `sessionId`
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("acp.jsonl");
    std::fs::write(
        &real,
        r#"{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"sess-9","prompt":[{"type":"text","text":"hi"}]}}"#,
    )
    .unwrap();
    let (code, out, _) = stdout(e2a().args(["convert", "--from", "acp", "--to", "e2a", &real.display().to_string()]));
    assert_eq!(code, 0);
    let env: Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    assert_eq!(env["session_id"], "sess-9", "{env}");
    let (code, out, _) = stdout(e2a().args(["convert", "--from", "e2a", "--to", "a2a", &data("valid.jsonl")]));
    assert_eq!(code, 0);
    assert!(
        out.contains("TASK_STATE_COMPLETED") && out.contains("SendStreamingMessage"),
        "{out}"
    );
    let (code, out, _) = stdout(e2a().args(["convert", "--from", "e2a", "--to", "legacy", &data("valid.jsonl")]));
    assert_eq!(code, 0);
    assert!(out.contains("\"is_complete\":true"), "{out}");
    let (code, _, err) = stdout(e2a().args(["convert", "--from", "e2a", "--to", "e2a", &data("invalid.jsonl")]));
    assert_eq!(code, 1);
    assert!(err.contains("invalid.jsonl:1: /is_stream: expected boolean"), "{err}");
}

#[test]
fn objects_keep_their_key_order() {
    // the Python reference keeps a dict's insertion order; so does every build of e2a
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("order.jsonl");
    std::fs::write(
        &input,
        r#"{"request_id":"r1","method":"chat.send","params":{"zeta":1,"alpha":2,"mid":{"y":1,"b":2}},"channel_context":{"z":1,"a":2}}"#,
    )
    .unwrap();
    let (code, out, err) =
        stdout(e2a().args(["convert", "--from", "e2a", "--to", "e2a", &input.display().to_string()]));
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(r#""params":{"zeta":1,"alpha":2,"mid":{"y":1,"b":2}}"#),
        "{out}"
    );
    assert!(out.contains(r#""channel_context":{"z":1,"a":2}"#), "{out}");
}

#[test]
fn redact_strips_secrets() {
    let (code, out, err) = stdout(e2a().args(["redact", &data("secrets.jsonl")]));
    assert_eq!(code, 1, "a non-JSON line was withheld");
    assert!(!out.contains("SECRET"), "{out}");
    assert!(out.contains("keep"));
    assert!(err.contains("secrets.jsonl:2"), "{err}");
}

#[test]
fn conformance_driver_answers_every_line() {
    let input = "{\"id\":\"a\",\"fn\":\"envelope.from_dict\",\"input\":{\"channel_id\":\"web\"}}\n{\"id\":\"b\",\"fn\":\"nope\",\"input\":{}}\nnot json\n";
    let (code, out, _) = stdout(e2a().arg("conformance-driver").write_stdin(input));
    assert_eq!(code, 0);
    let answers: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(answers.len(), 3);
    assert_eq!(answers[0]["output"]["channel"], "web");
    assert!(answers[1]["error"].is_string());
    assert!(answers[2]["error"].is_string());
}

#[test]
fn completions_and_help() {
    let (code, out, _) = stdout(e2a().args(["completions", "bash"]));
    assert_eq!(code, 0);
    assert!(out.contains("e2a"));
    for sub in ["demo", "validate", "convert", "migrate", "redact", "conformance-driver"] {
        let (code, out, _) = stdout(e2a().args([sub, "--help"]));
        assert_eq!(code, 0);
        assert!(out.contains("Example"), "{sub} --help has examples");
    }
}

#[test]
fn acp_refuses_what_its_agent_cannot_use() {
    let refused = [
        vec!["acp", "--agent", "acp:some-agent --stdio", "--approve", "*"],
        vec!["acp", "--agent", "acp:some-agent --stdio", "--mode", "code"],
        vec!["acp", "--agent", "acp:some-agent --stdio", "--store", "memory"],
        vec!["acp", "--agent", "echo", "--store", "postgres://e2a@127.0.0.1/e2a"],
        vec!["acp", "--agent", "echo", "--config-option", "model="],
    ];
    for args in refused {
        let (code, out, err) = stdout(e2a().args(&args).write_stdin(""));
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}: stdout is for protocol frames only: {out}");
        assert!(!err.trim().is_empty(), "{args:?}: no reason given");
    }
}

#[test]
fn acp_serves_a_named_agent_of_a_config_file() {
    let dir = tempfile::tempdir().expect("dir");
    let config = dir.path().join("e2a.toml");
    std::fs::write(&config, "[agents.echoer]\nagent = \"echo\"\n").expect("write");
    let config = config.to_str().expect("utf-8");
    let lines = [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}"#,
    ];
    let input = format!("{}\n", lines.join("\n"));
    let (code, out, err) = stdout(
        e2a()
            .args(["acp", "--config", config, "--agent", "echoer", "--store", "memory"])
            .write_stdin(input),
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(r#""id":2"#) && out.contains("sessionId"), "{out}");
    // a name the file does not have is refused with the names it has
    let (code, out, err) = stdout(
        e2a()
            .args(["acp", "--config", config, "--agent", "writer"])
            .write_stdin(""),
    );
    assert_eq!(code, 2);
    assert!(out.is_empty());
    assert!(err.contains("no agent `writer`") && err.contains("echoer"), "{err}");
}

/// `e2a config check` runs every check `e2a serve` runs when it starts and reports every
/// problem in one pass: fed the same broken files, both print the same lines (a schema error,
/// a reference, a secret, an agent that cannot be built, a missing script) and exit 2; a file
/// both accept, `config check` says ok.
#[test]
fn config_check_reports_what_serve_refuses_all_at_once() {
    let dir = tempfile::tempdir().expect("dir");
    let script = format!("{}/src/demo/script.json", env!("CARGO_MANIFEST_DIR"));
    let broken = [
        (
            "broken.toml",
            "agent = \"script:missing.json\"\n[server]\nbind = \"127.0.0.1:0\"\ntoken_file = \"no-token\"\n\
             max_streams = \"many\"\n[agents.w]\nagent = \"a2a:ftp://x\"\n[agents.g]\ngroup = {members = [\"nobody\"]}\n",
            vec![
                "server.max_streams: expected integer",
                "agents.g.group.members[0]: no agent \"nobody\"",
                "server.token_file: cannot read token file",
                "agents.w.agent: remote A2A agent URL must start with http:// or https://",
                "agent: cannot read script",
            ],
        ),
        (
            "store.toml",
            "[store]\nurl = \"mysql://db\"\n[log]\nframes = \"no/such/dir/frames.log\"\n",
            vec!["store.url", "log.frames: no directory"],
        ),
    ];
    for (name, text, want) in broken {
        let path = dir.path().join(name);
        std::fs::write(&path, text).expect("write");
        let (code, _, checked) = stdout(e2a().args(["config", "check"]).arg(&path));
        assert_eq!(code, 2, "{checked}");
        for line in &want {
            assert!(checked.contains(line), "{name}: no {line:?} in\n{checked}");
        }
        assert_eq!(checked.lines().count(), want.len(), "one line per problem:\n{checked}");
        let (code, _, served) = stdout(e2a().args(["serve", "--config"]).arg(&path));
        assert_eq!(code, 2, "{served}");
        assert_eq!(served.trim_start_matches("e2a serve: "), checked, "{name}");
    }
    let good = dir.path().join("good.toml");
    std::fs::write(
        &good,
        format!("agent = \"script:{script}\"\n[agents.e]\nagent = \"echo\"\n"),
    )
    .expect("write");
    let (code, out, err) = stdout(e2a().args(["config", "check"]).arg(&good));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("ok (1 named agent(s)"), "{out}");
}

/// `contrib/systemd`: its config passes `e2a config check` (with its token file beside it), and
/// the unit passes `systemd-analyze verify` without a warning (where systemd is installed), its
/// `e2a` the binary under test.
#[test]
fn the_systemd_unit_and_its_config_are_valid() {
    let contrib = format!("{}/../contrib/systemd", env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().expect("dir");
    std::fs::copy(format!("{contrib}/e2a.toml"), dir.path().join("e2a.toml")).expect("copy");
    std::fs::write(dir.path().join("token"), "a-token-for-the-test\n").expect("token");
    let (code, out, err) = stdout(e2a().args(["config", "check"]).arg(dir.path().join("e2a.toml")));
    assert_eq!(code, 0, "{out}{err}");
    let unit = std::fs::read_to_string(format!("{contrib}/e2a.service")).expect("unit");
    let bin = assert_cmd::cargo::cargo_bin("e2a");
    let unit = unit.replace("/usr/local/bin/e2a", &bin.display().to_string());
    let path = dir.path().join("e2a.service");
    std::fs::write(&path, unit).expect("write");
    match std::process::Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .arg(&path)
        .output()
    {
        Ok(out) => {
            let said = String::from_utf8_lossy(&out.stderr);
            assert!(
                out.status.success() && said.trim().is_empty(),
                "systemd-analyze verify: {said}"
            );
        }
        Err(e) => eprintln!("systemd-analyze not run ({e}): the unit is not verified here"),
    }
}
