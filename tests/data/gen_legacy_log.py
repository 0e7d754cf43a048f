#!/usr/bin/env python3
"""Generate a legacy agent-server log of about SIZE bytes (default 1 GB) on stdout:
AgentRequest lines (epoch-float timestamps, metadata), streamed AgentResponseChunk lines with
the completion sentinel, unary AgentResponse lines. Usage: gen_legacy_log.py [SIZE_BYTES]"""
import json
import sys

size = int(sys.argv[1]) if len(sys.argv) > 1 else 1 << 30
out = sys.stdout
written = 0
i = 0
while written < size:
    rid = f"req-{i:09d}"
    lines = [{"request_id": rid, "channel_id": "feishu", "session_id": f"s-{i % 997}", "req_method": "chat.send",
              "params": {"content": "List desktop files", "mode": "plan", "query": "List desktop files"},
              "is_stream": i % 5 != 0, "timestamp": 1774524781.15 + i, "metadata": {"feishu_open_id": f"ou_{i}"}}]
    if i % 5 == 0:
        lines.append({"request_id": rid, "channel_id": "feishu", "ok": True, "payload": {"history": ["a", "b"]},
                      "metadata": {"m": i}})
    else:
        for k in range(4):
            lines.append({"request_id": rid, "channel_id": "feishu", "is_complete": False,
                          "payload": {"event_type": "chat.delta", "content": f"part {k} of the answer ",
                                      "source_chunk_type": "llm_reasoning" if k == 0 else "llm"}})
        lines.append({"request_id": rid, "channel_id": "feishu", "is_complete": True, "payload": {"is_complete": True}})
    text = "".join(json.dumps(l) + "\n" for l in lines)
    out.write(text)
    written += len(text)
    i += 1
