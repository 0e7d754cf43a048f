"""The exported schema artifacts are usable by other-language teams.

* the OpenAPI document validates as OpenAPI 3.1 and every example validates against its schema;
* the TypeScript declarations type-check (`tsc --noEmit --strict`) on every canonical
  envelope/response output of the conformance vectors;
* the pydantic models load every such output.
"""
import json
import pathlib
import subprocess
import sys

import jsonschema
import pytest
from openapi_spec_validator import validate

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "generated" / "python"))
import e2a_models  # noqa: E402

ENVELOPE_FNS = {"envelope.from_dict", "acp.envelope_from_jsonrpc", "a2a.envelope_from_send_message",
                "legacy.envelope_from_agent_fields", "legacy.fallback_envelope"}
RESPONSE_FNS = {"response.from_dict", "wire.encode_agent_response", "wire.encode_agent_chunk",
                "wire.encode_json_parse_error", "legacy.response_from_agent_response",
                "legacy.response_from_agent_chunk"}


def outputs(fns):
    cases = json.loads((ROOT / "tests/conformance/vectors.json").read_text())["cases"]
    return [c["expect"]["output"] for c in cases if c["fn"] in fns and "output" in c["expect"]]


def test_openapi_document_is_valid_openapi_31():
    doc = json.loads((ROOT / "generated/openapi.json").read_text())
    assert doc["openapi"].startswith("3.1")
    validate(doc)


def test_openapi_examples_validate_against_their_schemas():
    doc = json.loads((ROOT / "generated/openapi.json").read_text())
    checked = 0

    def walk(node):
        nonlocal checked
        if isinstance(node, dict):
            if "schema" in node and "examples" in node:
                for ex in node["examples"].values():
                    if "$ref" in ex:
                        ex = doc["components"]["examples"][ex["$ref"].rsplit("/", 1)[1]]
                    schema = dict(node["schema"], components=doc["components"])
                    jsonschema.Draft202012Validator(schema).validate(ex["value"])
                    checked += 1
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(doc["paths"])
    walk(doc["components"]["responses"])
    assert checked >= 3


@pytest.mark.parametrize("fns,model", [(ENVELOPE_FNS, "E2AEnvelope"), (RESPONSE_FNS, "E2AResponse")])
def test_pydantic_models_load_canonical_outputs(fns, model):
    cls = getattr(e2a_models, model)
    outs = outputs(fns)
    assert len(outs) > 50
    for o in outs:
        m = cls.model_validate(o)
        assert m.model_dump(mode="json", by_alias=True)["protocol_version"] == o["protocol_version"]


def test_pydantic_models_reject_wrong_types():
    o = outputs({"envelope.from_dict"})[0]
    bad = dict(o, request_id={"x": 1})
    with pytest.raises(Exception):
        e2a_models.E2AEnvelope.model_validate(bad)


def test_typescript_declarations_typecheck_canonical_outputs(tmp_path):
    tsc = ROOT / "tools/ts/node_modules/.bin/tsc"
    if not tsc.exists():
        pytest.fail("tsc missing: run `cargo xtask setup`")
    decl = ROOT / "generated/ts/e2a.d.ts"
    src = tmp_path / "check.ts"
    src.write_text(
        f'import type {{ E2AEnvelope, E2AResponse }} from "{decl.with_suffix("").with_suffix("")}";\n'
        f"export const envelopes: E2AEnvelope[] = {json.dumps(outputs(ENVELOPE_FNS))};\n"
        f"export const responses: E2AResponse[] = {json.dumps(outputs(RESPONSE_FNS))};\n"
        # a wrong type must not type-check: the declarations are not `any`
        "// @ts-expect-error is_stream is a boolean\n"
        f"export const bad: E2AEnvelope = {{ ...envelopes[0], is_stream: \"yes\" }};\n"
    )
    r = subprocess.run([str(tsc), "--noEmit", "--strict", "--target", "es2020", "--moduleResolution", "node",
                        str(src)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


TEN_KEYS = {"protocol_version": "1.0", "response_id": "r1", "request_id": "req_1", "sequence": 0,
            "is_final": False, "status": "in_progress", "response_kind": "e2a.chunk",
            "timestamp": "2026-03-29T12:00:00+00:00", "provenance": {"source_protocol": "e2a"},
            "body": {"delta_kind": "text", "delta": "Hello"}}


def test_pydantic_follows_the_protocol_required_sets():
    env = e2a_models.E2AEnvelope(method="x")
    assert env.method == "x" and env.params == {} and env.is_stream is False
    assert e2a_models.E2AResponse.model_validate(TEN_KEYS).sequence == 0
    missing = {k: v for k, v in TEN_KEYS.items() if k != "response_id"}
    with pytest.raises(Exception):
        e2a_models.E2AResponse.model_validate(missing)


def test_typescript_follows_the_protocol_required_sets(tmp_path):
    tsc = ROOT / "tools/ts/node_modules/.bin/tsc"
    if not tsc.exists():
        pytest.fail("tsc missing: run `cargo xtask setup`")
    decl = ROOT / "generated/ts/e2a.d.ts"
    src = tmp_path / "required.ts"
    missing = {k: v for k, v in TEN_KEYS.items() if k != "response_id"}
    src.write_text(
        f'import type {{ E2AEnvelope, E2AResponse }} from "{decl.with_suffix("").with_suffix("")}";\n'
        'export const env: E2AEnvelope = { method: "chat.send", params: { query: "hi" } };\n'
        f"export const chunk: E2AResponse = {json.dumps(TEN_KEYS)};\n"
        "// @ts-expect-error response_id is required\n"
        f"export const bad: E2AResponse = {json.dumps(missing)};\n"
    )
    r = subprocess.run([str(tsc), "--noEmit", "--strict", "--target", "es2020", "--moduleResolution", "node",
                        str(src)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


DIALECT = json.loads((ROOT / "tests/exports/dialect.json").read_text())



# What each dialect model must refuse: an object without its required fields, or for the
# models whose fields are all optional, a field of the wrong type.
NOT_OF_THE_DIALECT = {
    "PlanApprovalRequiredBody": {"input_kind": "sometimes"},
    "AnswerResult": {"content": ["not", "text"]},
}

@pytest.mark.parametrize("model", sorted(DIALECT))
def test_pydantic_models_carry_the_gateway_dialect(model):
    """The gateway's own frames (tool calls and results, artifacts, the pause, the direct
    reply) load into the pydantic models and dump back unchanged."""
    cls = getattr(e2a_models, model)
    for sample in DIALECT[model]:
        dumped = cls.model_validate(sample).model_dump(mode="json", by_alias=True, exclude_none=True)
        assert dumped == sample, model
    with pytest.raises(Exception):
        cls.model_validate(NOT_OF_THE_DIALECT.get(model, {"unexpected": "no required field"}))


def test_typescript_declarations_carry_the_gateway_dialect(tmp_path):
    tsc = ROOT / "tools/ts/node_modules/.bin/tsc"
    if not tsc.exists():
        pytest.fail("tsc missing: run `cargo xtask setup`")
    decl = ROOT / "generated/ts/e2a.d.ts"
    # json-schema-to-typescript spells the A2A types `A2A…` (`A2aStreamResponse` → `A2AStreamResponse`)
    names = {n: n.replace("A2a", "A2A", 1) for n in sorted(DIALECT)}
    src = tmp_path / "dialect.ts"
    src.write_text(
        f'import type {{ {", ".join(names.values())} }} from "{decl.with_suffix("").with_suffix("")}";\n'
        + "".join(f"export const {n[0].lower() + n[1:]}: {t}[] = {json.dumps(DIALECT[n])};\n" for n, t in names.items())
        + "// @ts-expect-error an artifact piece needs its parts\n"
        + 'export const bad: ArtifactDelta = { artifact_id: "a" };\n'
        + "// @ts-expect-error a pause asks for approval or input\n"
        + 'export const bad2: PausedResult = { state: "input_required", input_kind: "sometimes" };\n'
        + "// @ts-expect-error a status update names its task's context and its status\n"
        + 'export const bad3: A2AStreamResponse = { statusUpdate: { taskId: "t" } };\n'
    )
    r = subprocess.run([str(tsc), "--noEmit", "--strict", "--target", "es2020", "--moduleResolution", "node",
                        str(src)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
