#!/usr/bin/env python3
"""Seed every fuzz target's corpus from the conformance vectors (inputs as JSON)."""
import hashlib
import json
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent
cases = json.loads((ROOT.parent / "tests/conformance/vectors.json").read_text())["cases"]
functions = [
    "envelope.from_dict", "response.from_dict", "acp.merge_params_to_prompt", "acp.envelope_to_jsonrpc_call",
    "acp.envelope_from_jsonrpc", "a2a.envelope_from_send_message", "acp.response_to_jsonrpc_response",
    "a2a.response_to_stream_payload", "wire.encode_agent_response", "wire.encode_agent_chunk", "wire.parse_unary",
    "wire.parse_chunk", "wire.is_e2a_response", "wire.encode_json_parse_error", "legacy.envelope_from_agent_fields",
    "legacy.fallback_envelope", "legacy.response_from_agent_response", "legacy.response_from_agent_chunk",
    "legacy.response_to_agent_response", "legacy.response_to_agent_chunk", "acp.tool_call_update",
    "acp.tool_result_update", "acp.todo_update", "acp.usage_update", "acp.parse_prompt_blocks",
    "acp.resource_uri_to_path", "acp.session_new_result", "acp.session_list_result", "acp.prompt_result",
]
targets = ["strict_reader", "lenient_reader", "wire_parse", "acp_ingress", "a2a_ingress", "agui_ingress",
           "prompt_blocks", "uri_to_path", "conformance_fns"]
for t in targets:
    d = ROOT / "corpus" / t
    d.mkdir(parents=True, exist_ok=True)
    for c in cases:
        inp = c["input"]
        if t == "uri_to_path":
            if not isinstance(inp, str):
                continue
            data = inp.encode()
        elif t == "conformance_fns":
            data = bytes([functions.index(c["fn"])]) + json.dumps(inp).encode()
        else:
            data = json.dumps(inp).encode()
            out = c["expect"].get("output")
            if isinstance(out, dict):
                (d / hashlib.sha1(json.dumps(out).encode()).hexdigest()).write_bytes(json.dumps(out).encode())
        (d / hashlib.sha1(data).hexdigest()).write_bytes(data)
print("seeded", len(targets), "corpora")
