"""Langfuse trace exports land as sessions: generations as model calls, tools, agents, usage,
costs and scores. The export follows the public API's trace object (``GET
/api/public/traces/{id}``: the trace with its observations and scores) and the UI download
(``{"trace", "observations"}``); no Langfuse server runs here, so the files are written after
that documented shape."""

from __future__ import annotations

import json

from conftest import FIXTURES
from graphlake.api import connect
from graphlake.demo.trace_shapes import OBSERVATIONS, SCORES, TRACE
from graphlake.pipeline import ingest_path


def _rows(lake, sql):
    return connect(lake).sql(sql).to_pylist()


def _usage(lake, node_id: str) -> dict[str, float]:
    """label -> value of the usage annotations of one node."""
    q = f"SELECT label, value FROM annotations WHERE kind = 'usage' AND target_id = '{node_id}'"
    return {a["label"]: a["value"] for a in _rows(lake, q)}


def test_an_api_trace_with_observations_and_scores_lands_whole(tmp_path):
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({**TRACE, "observations": OBSERVATIONS, "scores": SCORES}))
    stats, _ = ingest_path("traces", path, tmp_path / "lake")
    lake = tmp_path / "lake"
    nodes = {n["label"]: n for n in _rows(lake, "SELECT * FROM nodes")}
    # the trace and the four readable observations, and the user's question as a human turn
    assert set(nodes) == {"support-agent", "support", "plan", "queue_status", "answer",
                          "user message"}  # fmt: skip
    assert (nodes["plan"]["actor_type"], nodes["plan"]["actor"]) == ("ai", "gpt-4o")
    assert nodes["queue_status"]["actor"] == "tool:queue_status"
    assert (nodes["support"]["actor_type"], nodes["support"]["actor"]) == ("ai", "support")
    assert nodes["user message"]["detail"] == "My export to PDF fails, can you help?"
    assert json.loads(nodes["plan"]["attrs"])["langfuse.modelParameters"] == {"temperature": 0}
    assert json.loads(nodes["queue_status"]["attrs"])["level"] == "WARNING"
    [reject] = _rows(lake, "SELECT record_ref, reason FROM rejects")
    assert reject["record_ref"] == "observations[4]" and "not a time" in reject["reason"]
    assert stats.rejected["nodes"] == 1

    parents = {
        (e["src"], e["dst"])
        for e in _rows(lake, "SELECT src, dst FROM edges WHERE kind = 'parent'")
    }
    assert ("lf-trace-1", "obs-agent") in parents and ("obs-agent", "obs-tool") in parents
    events = _rows(lake, "SELECT kind, text, payload FROM events")
    [call] = [e for e in events if e["kind"] == "tool_call"]
    assert json.loads(call["payload"]) == {"printer": "plotter-1"}
    [result] = [e for e in events if e["kind"] == "tool_result"]
    assert json.loads(result["payload"]) == {"locked": True}
    texts = {e["text"] for e in events if e["kind"] == "message"}
    assert "Unlock the plotter queue, then export again." in texts

    usage = _rows(lake, "SELECT target_id, label, value FROM annotations WHERE kind = 'usage'")
    got = {(u["target_id"], u["label"]): u["value"] for u in usage}
    assert got[("obs-gen-1", "input_tokens")] == 31 and got[("obs-gen-2", "output_tokens")] == 12
    assert got[("obs-gen-1", "cost_total")] == 0.0017
    scores = _rows(lake, "SELECT target_kind, target_id, label, value, text FROM annotations "
                         "WHERE kind = 'score' ORDER BY label")  # fmt: skip
    assert scores == [
        {
            "target_kind": "node",
            "target_id": "obs-gen-2",
            "label": "correct",
            "value": 1.0,
            "text": "True",
        },  # fmt: skip
        {
            "target_kind": "session",
            "target_id": "lf-trace-1",
            "label": "helpfulness",
            "value": 0.9,
            "text": "solved",
        },  # fmt: skip
    ]
    [session] = _rows(lake, "SELECT * FROM sessions")
    assert session["session_id"] == "lf-trace-1" and session["duration_s"] == 4.1
    kept = json.loads(session["attrs"])
    assert kept["conversation_id"] == "chat-9"


def test_the_ui_download_and_json_lines_read_the_same(tmp_path):
    ui = tmp_path / "ui.json"
    ui.write_text(json.dumps({"trace": TRACE, "observations": OBSERVATIONS[:4]}))
    lines = tmp_path / "many.jsonl"
    second = {**TRACE, "id": "lf-trace-2"}
    obs2 = [{**o, "traceId": "lf-trace-2"} for o in OBSERVATIONS[:4]]
    lines.write_text(
        json.dumps({"trace": TRACE, "observations": OBSERVATIONS[:4]}) + "\n"
        + json.dumps({"trace": second, "observations": obs2}) + "\n"
    )  # fmt: skip
    ingest_path("langfuse", ui, tmp_path / "a")
    ingest_path("langfuse", lines, tmp_path / "b")
    q = (
        "SELECT node_id, actor, label, t_start, t_end FROM nodes "
        "WHERE session_id = 'lf-trace-1' ORDER BY 1"
    )
    assert _rows(tmp_path / "a", q) == _rows(tmp_path / "b", q) and _rows(tmp_path / "a", q)
    assert len(_rows(tmp_path / "b", "SELECT * FROM sessions")) == 2


def test_an_otel_file_is_not_a_langfuse_export(tmp_path):
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"resourceSpans": []}))
    ingest_path("langfuse", path, tmp_path / "lake")
    [reject] = _rows(tmp_path / "lake", "SELECT reason FROM rejects")
    assert "not a Langfuse export" in reject["reason"]


def test_messages_sent_as_json_text_read_as_the_messages(tmp_path):
    """The SDKs often send a generation's input and output as JSON *text*; Langfuse's UI
    decodes it, and so does the reader: the same rows as the same messages sent as JSON."""

    def text(v):
        return json.dumps(v) if isinstance(v, list | dict) else v

    as_text = [
        {
            **o,
            **(
                {k: text(o.get(k)) for k in ("input", "output")}
                if o.get("type") == "GENERATION"
                else {}
            ),
        }
        for o in OBSERVATIONS
    ]
    got = {}
    for name, observations in (("json", OBSERVATIONS), ("text", as_text)):
        path = tmp_path / name / "trace.json"
        path.parent.mkdir()
        path.write_text(json.dumps({**TRACE, "observations": observations, "scores": SCORES}))
        ingest_path("traces", path, tmp_path / f"lake-{name}")
        got[name] = _rows(
            tmp_path / f"lake-{name}",
            "SELECT actor_type, actor, kind, text FROM events ORDER BY seq, event_id",
        )
    assert got["text"] == got["json"]
    assert not any(e["text"] and e["text"].startswith('[{"') for e in got["text"])


REAL = FIXTURES / "samples" / "langfuse" / "openai-assistants-2024-05-29.json"


def _deep_parse_json(value):
    """Langfuse's own ``deepParseJson`` (packages/shared/src/utils/json.ts), written again
    here from its source for the independent parse: text that parses is replaced by what it
    holds, recursively, except a number."""
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return value
        return value if type(parsed) in (int, float) else _deep_parse_json(parsed)
    if isinstance(value, list):
        return [_deep_parse_json(v) for v in value]
    if isinstance(value, dict):
        return {k: _deep_parse_json(v) for k, v in value.items()}
    return value


def test_a_real_export_with_json_encoded_twice_reads_as_langfuse_shows_it(tmp_path):
    """A real Langfuse export (the seeder's OpenAI Assistants trace, Python SDK of May 2024):
    the trace's input and output are JSON text holding JSON text, ``metadata`` is JSON text.
    Each lands as Langfuse's UI decodes it, equal to an independent parse of the file."""
    doc = json.loads(REAL.read_text())
    trace, observations = doc["trace"], doc["observations"]
    ingest_path("traces", REAL, tmp_path / "lake")
    lake = tmp_path / "lake"
    [session] = _rows(lake, "SELECT session_id FROM sessions")
    assert session["session_id"] == trace["id"]
    nodes = _rows(lake, "SELECT node_id FROM nodes WHERE node_id <> 'user message'")
    assert {o["id"] for o in observations} <= {n["node_id"] for n in nodes}
    # the trace's turns: the question as the person asked it, the answer as text
    asked = _deep_parse_json(trace["input"])
    answer = _deep_parse_json(trace["output"])
    assert asked == {"args": [observations[0]["input"][1]["content"]], "kwargs": {}}
    texts = [e["text"] for e in _rows(lake, "SELECT text FROM events WHERE kind = 'message'")]
    assert json.dumps(asked, sort_keys=True) in texts and answer in texts
    assert not any(t.startswith('"') for t in texts), texts
    # the generation's own messages, as sent
    gen = observations[0]
    for m in gen["input"]:
        assert m["content"] in texts
    assert texts.count(gen["output"]) == 2  # the generation's answer and the trace's
    # metadata held as JSON text is kept decoded; usage and cost as the API gives them
    attrs = {
        n["node_id"]: json.loads(n["attrs"])
        for n in _rows(lake, "SELECT node_id, attrs FROM nodes WHERE attrs IS NOT NULL")
    }
    assert attrs[trace["id"]]["langfuse.metadata"] == _deep_parse_json(trace["metadata"]) == {}
    assert attrs[observations[1]["id"]]["langfuse.input"] == observations[1]["input"]
    usage = _usage(lake, gen["id"])
    assert usage["input_tokens"] == gen["usageDetails"]["input"]
    assert usage["cost_total"] == gen["costDetails"]["total"]


def test_text_is_decoded_as_langfuse_decodes_it():
    from graphlake.ingest.langfuse import deep_parse

    for value in ["42", "4.5", '"42"', '"\\"hi\\""', '{"n": "7", "m": "[1, 2]"}', "not json",
                  '[true, null, "x"]', {"a": '{"b": "3"}'}, ["[]", "{}"]]:  # fmt: skip
        assert deep_parse(value) == _deep_parse_json(value), value
    assert deep_parse("42") == "42" and deep_parse('"\\"hi\\""') == "hi"


def test_a_real_pydantic_ai_export_reads_its_generation_answer(tmp_path):
    """A real Langfuse export of a pydantic-ai run (the seeder's, OTel through Langfuse's SDK
    3.0): the generation's ``output`` is a GenAI ``gen_ai.choice`` event (``{index, message:
    {role, content}}``), the trace's input and output are JSON text, its ``metadata`` too. The
    answer lands as the model's message, equal to an independent parse."""
    path = REAL.with_name("pydantic-ai-trace-2025-06-06.json")
    doc = json.loads(path.read_text())
    trace, observations = doc["trace"], doc["observations"]
    gen = next(o for o in observations if o["type"] == "GENERATION")
    ingest_path("traces", path, tmp_path / "lake")
    lake = tmp_path / "lake"
    said = _rows(lake, f"SELECT actor, actor_type, channel, text, payload FROM events "
                       f"WHERE node_id = '{gen['id']}' ORDER BY seq")  # fmt: skip
    assert [(e["actor_type"], e["text"]) for e in said] == [
        *[(("human" if m["role"] == "user" else m["role"]), m["content"]) for m in gen["input"]],
        ("ai", gen["output"]["message"]["content"]),
    ]
    assert said[-1]["actor"] == gen["model"] and said[-1]["channel"] == "output"
    assert json.loads(said[-1]["payload"]) == gen["output"]  # the whole choice is kept
    texts = {e["text"] for e in _rows(lake, "SELECT text FROM events WHERE kind = 'message'")}
    assert {_deep_parse_json(trace["input"]), _deep_parse_json(trace["output"])} <= texts
    root = json.loads(
        _rows(lake, f"SELECT attrs FROM nodes WHERE node_id = '{trace['id']}'")[0]["attrs"]
    )
    assert root["langfuse.metadata"] == _deep_parse_json(trace["metadata"])
    assert root["langfuse.userId"] == trace["userId"] and root["langfuse.tags"] == trace["tags"]
    [session] = _rows(lake, "SELECT attrs FROM sessions")
    assert json.loads(session["attrs"])["conversation_id"] == trace["sessionId"]


def test_a_real_openai_agents_export_reads_responses_api_items(tmp_path):
    """A real Langfuse export of an OpenAI Agents SDK run (OpenInference 1.3.0, September
    2025): each generation's ``input`` is a list of Responses API items (a user message, a
    ``function_call``, its ``function_call_output``) and its ``output`` a ``response`` object
    whose ``output`` holds a ``message`` with ``output_text`` parts, or a ``function_call``.
    Each item is a message of its speaker, equal to an independent parse; the evaluator's
    scores are the session's."""
    path = REAL.with_name("openai-agents-2025-09-30.json")
    doc = json.loads(path.read_text())
    trace, observations = doc["trace"], doc["observations"]
    ingest_path("traces", path, tmp_path / "lake")
    lake = tmp_path / "lake"
    speaker = {"user": "human", "assistant": "ai", "tool": "tool"}

    def expected(item, role=None):
        kind = item.get("type")
        role = item.get("role") or ("tool" if kind == "function_call_output" else "assistant")
        if kind == "function_call_output":
            text = item["output"]
        elif isinstance(item.get("content"), list):
            text = "\n".join(p["text"] for p in item["content"] if p["type"] == "output_text")
        else:
            text = item.get("content")
        return speaker[role], text

    for gen in (o for o in observations if o["type"] == "GENERATION"):
        said = _rows(lake, f"SELECT actor_type, channel, text FROM events WHERE node_id LIKE "
                           f"'{gen['id']}%' AND kind = 'message' ORDER BY seq")  # fmt: skip
        want = [(*expected(i), "input") for i in gen["input"]]
        want += [(*expected(i), "output") for i in gen["output"]["output"]]
        assert [(e["actor_type"], e["text"], e["channel"]) for e in said] == want
    [tool] = [o for o in observations if o["type"] == "TOOL"]
    [result] = _rows(lake, f"SELECT payload FROM events WHERE kind = 'tool_result' "
                           f"AND node_id = '{tool['id']}'")  # fmt: skip
    assert json.loads(result["payload"]) == tool["output"]
    scores = _rows(lake, "SELECT target_kind, label, value, text FROM annotations "
                         "WHERE kind = 'score' ORDER BY label")  # fmt: skip
    assert scores == [
        {"target_kind": "session", "label": s["name"], "value": s["value"], "text": s["comment"]}
        for s in sorted(trace["scores"], key=lambda s: s["name"])
    ]


def test_a_message_whose_content_is_json_text_keeps_its_text(tmp_path):
    """Only the text around a generation's messages is decoded: a user who asked in JSON is
    quoted as they typed it, not turned into an object with no text."""
    asked = '{"query": "plotter queue", "limit": 3}'
    gen = {**OBSERVATIONS[1], "input": json.dumps([{"role": "user", "content": asked}])}
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({**TRACE, "observations": [gen]}))
    ingest_path("traces", path, tmp_path / "lake")
    said = _rows(tmp_path / "lake", "SELECT text FROM events WHERE channel = 'input'")
    assert asked in [e["text"] for e in said]  # (beside the trace's own question)


#: LangChain's message types and the chat role of each, written again here from
#: langchain_core.messages (``_message_from_dict``, ``convert_to_openai_messages``)
_LANGCHAIN = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool",
              "AIMessageChunk": "assistant", "HumanMessageChunk": "user"}  # fmt: skip
_SPEAKER = {"user": "human", "assistant": "ai", "system": "system", "tool": "tool"}


def _said(message: dict) -> tuple[str, str | None]:
    """(actor type, text) of one chat or LangChain message, parsed independently: text, the
    text parts of a list, or a value that is not text (a tool's result or definition) as the
    JSON Langfuse shows."""
    role = message.get("role") or _LANGCHAIN[message["type"]]
    content = message.get("content")
    if isinstance(content, list) and all("type" in p for p in content):
        content = "\n".join(p["text"] for p in content if p.get("type") == "text")
    elif isinstance(content, list | dict):
        content = json.dumps(content, sort_keys=True, ensure_ascii=False)
    return _SPEAKER[role], content


def test_a_real_langchain_generation_answers_with_its_message_chunk(tmp_path):
    """A real Langfuse export of a LangChain call to Gemini on Vertex AI (Langfuse SDK 3.3.4,
    September 2025): the generation's ``output`` is LangChain's ``AIMessageChunk`` as its
    fields (``{content, type, additional_kwargs, response_metadata, ...}``, no ``role``). It
    landed as an answer of raw JSON; now it is the model's message, the chunk kept whole, and
    every message equals an independent parse."""
    path = REAL.with_name("google-vertex-tools-langchain-2025-09-19.json")
    [gen] = json.loads(path.read_text())["observations"]
    ingest_path("traces", path, tmp_path / "lake")
    q = "SELECT actor, actor_type, channel, text, payload FROM events WHERE node_id LIKE "
    said = _rows(tmp_path / "lake", f"{q}'{gen['id']}%' ORDER BY seq")
    want = [(*_said(m), "input") for m in gen["input"]] + [(*_said(gen["output"]), "output")]
    assert [(e["actor_type"], e["text"], e["channel"]) for e in said] == want
    assert said[-1]["text"] == gen["output"]["content"] and said[-1]["actor"] == gen["model"]
    kept = json.loads(said[-1]["payload"])
    assert {k: v for k, v in kept.items() if k != "role"} == gen["output"]
    # no usageDetails / costDetails here: the API's flat fields say the same
    assert _usage(tmp_path / "lake", gen["id"]) == {
        "input_tokens": gen["inputUsage"], "output_tokens": gen["outputUsage"],
        "total_tokens": gen["totalUsage"], "cost_input": gen["inputCost"],
        "cost_output": gen["outputCost"], "cost_total": gen["totalCost"],
    }  # fmt: skip


def test_a_real_export_of_a_traces_list_reads_as_the_single_trace_export(tmp_path):
    """The same Vertex AI trace exported as ``{traces: [...], observations: [...]}`` (each
    observation naming its trace by ``traceId``) was rejected whole as "not a Langfuse
    export"; now it lands with the rows of the ``{trace, observations}`` export of it."""
    ingest_path("traces", REAL.with_name("google-vertex-tools-2025-09-19.json"), tmp_path / "a")
    ingest_path(
        "traces", REAL.with_name("google-vertex-tools-langchain-2025-09-19.json"), tmp_path / "b"
    )
    for q in (
        "SELECT node_id, actor_type, actor, label, t_start, t_end FROM nodes ORDER BY node_id",
        "SELECT event_id, actor_type, kind, text, payload FROM events ORDER BY event_id",
        "SELECT session_id, started_at, duration_s FROM sessions",
        "SELECT target_id, label, value FROM annotations ORDER BY target_id, label",
    ):
        assert _rows(tmp_path / "a", q) == _rows(tmp_path / "b", q) != []
    assert not _rows(tmp_path / "a", "SELECT * FROM rejects")


def test_an_observation_of_no_trace_in_a_traces_list_is_a_reject(tmp_path):
    doc = json.loads(REAL.with_name("google-vertex-tools-2025-09-19.json").read_text())
    stray = {**doc["observations"][0], "id": "stray", "traceId": "no-such-trace"}
    doc["observations"] += [stray, "not an observation"]
    path = tmp_path / "traces.json"
    path.write_text(json.dumps(doc))
    ingest_path("traces", path, tmp_path / "lake")
    reject, odd = _rows(
        tmp_path / "lake", "SELECT record_ref, reason, raw FROM rejects ORDER BY record_ref"
    )
    assert reject["record_ref"] == "observations[1]" and "names no trace" in reject["reason"]
    assert "'no-such-trace'" in reject["reason"]
    assert json.loads(reject["raw"])["id"] == "stray"
    assert odd["record_ref"] == "observations[2]" and "is not an object" in odd["reason"]
    assert len(_rows(tmp_path / "lake", "SELECT * FROM sessions")) == 1


def test_a_real_llamaindex_export_reads_its_question_and_answer(tmp_path):
    """A real Langfuse export of a LlamaIndex query (OpenInference llama_index 4.3.0 through
    Langfuse's SDK 3.0, June 2025): the trace's input and output are JSON string literals,
    its metadata JSON text; the generation's input is ``{args: [question]}`` and its output
    the answer as text; usage details carry dotted keys. Equal to an independent parse."""
    path = REAL.with_name("llamaindex-2025-06-05.json")
    doc = json.loads(path.read_text())
    trace, observations = doc["trace"], doc["observations"]
    gen = next(o for o in observations if o["type"] == "GENERATION")
    stats, _ = ingest_path("traces", path, tmp_path / "lake")
    lake = tmp_path / "lake"
    assert not stats.rejected
    nodes = {n["node_id"] for n in _rows(lake, "SELECT node_id FROM nodes")}
    assert {trace["id"], *(o["id"] for o in observations)} <= nodes
    said = _rows(lake, "SELECT node_id, actor_type, text FROM events ORDER BY seq")
    question, answer = _deep_parse_json(trace["input"]), _deep_parse_json(trace["output"])
    assert question == "What is Langfuse?" and answer == gen["output"]
    assert [(e["actor_type"], e["text"]) for e in said] == [
        ("human", question),
        ("human", json.dumps(gen["input"], sort_keys=True)),  # as Langfuse shows it: JSON
        ("ai", gen["output"]),
        ("ai", answer),
    ]
    usage = _usage(lake, gen["id"])
    assert usage["input_tokens"] == gen["usageDetails"]["input"]
    assert usage["output_tokens"] == gen["usageDetails"]["output"]
    assert usage["cost_total"] == gen["costDetails"]["total"]
    root = json.loads(
        _rows(lake, f"SELECT attrs FROM nodes WHERE node_id = '{trace['id']}'")[0]["attrs"]
    )
    assert root["langfuse.metadata"] == _deep_parse_json(trace["metadata"])
    assert root["langfuse.metadata"]["email"] == "user@langfuse.com"


def _ingested_clean(name: str, tmp_path):
    """(trace, observations, lake) of one real export ingested alone, with no reject."""
    path = REAL.with_name(name)
    doc = json.loads(path.read_text())
    stats, _ = ingest_path("traces", path, tmp_path / "lake")
    assert not stats.rejected
    return doc["trace"], doc["observations"], tmp_path / "lake"


def _messages_of(lake, node_id: str) -> list[dict]:
    """The message events of a node and its human turns, in order."""
    q = "SELECT actor_type, channel, text FROM events WHERE kind = 'message' AND node_id LIKE "
    return _rows(lake, f"{q}'{node_id}%' ORDER BY seq")


def _genai_said(message: dict) -> tuple[str, str | None]:
    """(actor type, text) of a GenAI semconv message (``{role, parts}``), parsed
    independently: text parts' ``content``, a ``tool_call_response``'s ``response``
    (pydantic-ai's ``result``); a message of tool responses only is the tool's."""
    parts = message["parts"]
    texts = [
        p["content"] if p["type"] == "text" else p.get("response", p.get("result"))
        for p in parts
        if p["type"] in ("text", "tool_call_response")
    ]
    tools = all(p["type"] == "tool_call_response" for p in parts)
    return "tool" if tools else _SPEAKER[message["role"]], "\n".join(texts) if texts else None


def test_a_real_microsoft_agent_framework_export_reads_genai_parts(tmp_path):
    """A real Langfuse export of a Microsoft Agent Framework run (OpenTelemetry GenAI
    semantic conventions, agent_framework 1.0.0b251007, October 2025): messages are
    ``{role, parts}`` with ``text``, ``tool_call`` and ``tool_call_response`` parts. The tool's
    answer (a ``tool_call_response``'s ``response``) landed as a tool message with no text;
    now it is the text, and every generation's messages equal an independent parse."""
    trace, observations, lake = _ingested_clean("microsoft-agent-2025-10-14.json", tmp_path)
    for gen in (o for o in observations if o["type"] == "GENERATION"):
        said = _messages_of(lake, gen["id"])
        want = [(*_genai_said(m), "input") for m in gen["input"]]
        want += [(*_genai_said(m), "output") for m in gen["output"]]
        assert [(e["actor_type"], e["text"], e["channel"]) for e in said] == want
        assert _usage(lake, gen["id"])["cost_total"] == gen["costDetails"]["total"]
    [tool] = [o for o in observations if o["type"] == "TOOL"]
    calls = _rows(lake, f"SELECT kind, payload FROM events WHERE node_id = '{tool['id']}' "
                        "AND kind IN ('tool_call', 'tool_result') ORDER BY seq")  # fmt: skip
    assert [(c["kind"], json.loads(c["payload"])) for c in calls] == [
        ("tool_call", tool["input"]),
        ("tool_result", tool["output"]),
    ]
    # the trace's own input and output: GenAI messages in JSON text in JSON text
    asked = _deep_parse_json(trace["input"])[0]["parts"][0]["content"]
    humans = _rows(lake, "SELECT detail FROM nodes WHERE actor_type = 'human'")
    assert [h["detail"] for h in humans] == [asked] == ["What's the weather like in Portland?"]
    scores = _rows(lake, "SELECT label, value, text FROM annotations WHERE kind = 'score' "
                         "ORDER BY label")  # fmt: skip
    assert scores == [
        {"label": s["name"], "value": s["value"], "text": s["comment"]}
        for s in sorted(trace["scores"], key=lambda s: s["name"])
    ]


def test_a_real_langgraph_export_reads_langchain_messages_everywhere(tmp_path):
    """A real Langfuse export of a LangGraph agent (Langfuse SDK 3.3.0, August 2025): the
    trace's input and output are ``{messages: [...]}`` of LangChain messages (``type`` human,
    ai with ``tool_calls``, tool) in JSON text in JSON text, and each graph step's span holds
    them too. The trace's messages landed as one assistant message of raw JSON; now each is a
    message of its role. The generations' messages, the scores and the steps' kept input
    equal an independent parse."""
    trace, observations, lake = _ingested_clean("langgraph-2025-08-22.json", tmp_path)
    said = _messages_of(lake, trace["id"])
    # two layers of JSON text around the messages; a message's own content is as it was said
    # (the tool's result is JSON text, and stays that text)
    asked = json.loads(json.loads(trace["input"]))["messages"]
    answered = json.loads(json.loads(trace["output"]))["messages"]
    assert [(e["actor_type"], e["text"], e["channel"]) for e in said] == [
        *[(*_said(m), "input") for m in asked],
        *[(*_said(m), "output") for m in answered],
    ]
    assert [_LANGCHAIN[m["type"]] for m in answered] == ["user", "assistant", "tool", "assistant"]
    assert not any(e["text"] and e["text"].startswith('{"messages"') for e in said)
    for gen in (o for o in observations if o["type"] == "GENERATION"):
        got = _messages_of(lake, gen["id"])
        want = [(*_said(m), "input") for m in gen["input"]] + [(*_said(gen["output"]), "output")]
        assert [(e["actor_type"], e["text"], e["channel"]) for e in got] == want
        assert _usage(lake, gen["id"])["total_tokens"] == gen["usageDetails"]["total"]
    steps = {
        n["node_id"]: json.loads(n["attrs"])
        for n in _rows(lake, "SELECT node_id, attrs FROM nodes WHERE actor_type = 'system'")
    }
    for o in observations:
        if o["type"] == "SPAN":
            assert steps[o["id"]]["langfuse.input"] == _deep_parse_json(o["input"])
            assert steps[o["id"]]["langfuse.metadata"] == o["metadata"]
    scores = _rows(lake, "SELECT label, value, text FROM annotations WHERE kind = 'score' "
                         "ORDER BY label")  # fmt: skip
    assert scores == [
        {"label": s["name"], "value": s["value"], "text": s["comment"]}
        for s in sorted(trace["scores"], key=lambda s: s["name"])
    ]


def _gemini_said(content: dict) -> tuple[str, str | None]:
    """(actor type, text) of a Gemini ``Content``, parsed independently after google-genai's
    types: ``model`` is the model, function responses are the tool's, text parts joined."""
    parts = content["parts"]
    if all("function_response" in p for p in parts):
        return "tool", "\n".join(
            json.dumps(p["function_response"]["response"], sort_keys=True, ensure_ascii=False)
            for p in parts
        )
    texts = [p["text"] for p in parts if "text" in p]
    return _SPEAKER.get(content["role"], "ai"), "\n".join(texts) if texts else None


def test_a_real_google_adk_export_reads_gemini_contents(tmp_path):
    """A real Langfuse export of a Google ADK agent (OpenInference google_adk 0.1.3, ADK
    1.12, Gemini 2.0 Flash, August 2025): each generation's ``input`` is ADK's ``LlmRequest``
    (``{model, config: {system_instruction, tools}, contents: [{parts, role}]}``, parts of
    ``text``, ``function_call`` and ``function_response``) and its ``output`` an
    ``LlmResponse`` (``{content, finish_reason, usage_metadata}``); the trace's input is the
    run's ``new_message``, its output ADK's event. Each landed as one message of raw JSON;
    now they are the messages, equal to an independent parse."""
    trace, observations, lake = _ingested_clean("google-adk-2025-08-28.json", tmp_path)
    for gen in (o for o in observations if o["type"] == "GENERATION"):
        system = gen["input"]["config"]["system_instruction"]
        want = [("system", system, "input")]
        want += [(*_gemini_said(c), "input") for c in gen["input"]["contents"]]
        want += [(*_gemini_said(gen["output"]["content"]), "output")]
        got = _messages_of(lake, gen["id"])
        assert [(e["actor_type"], e["text"], e["channel"]) for e in got] == want
        assert _usage(lake, gen["id"])["total_tokens"] == gen["usageDetails"]["total"]
    run, event = json.loads(json.loads(trace["input"])), json.loads(json.loads(trace["output"]))
    said = _messages_of(lake, trace["id"])
    assert (
        [(e["actor_type"], e["text"]) for e in said]
        == [
            _gemini_said(run["new_message"]),
            _gemini_said(event["content"]),
        ]
        == [("human", "hi"), ("ai", "Hello Langfuse 👋!\n")]
    )
    kept = json.loads(_rows(lake, "SELECT payload FROM events WHERE channel = 'output' AND "
                                  f"node_id = '{trace['id']}'")[0]["payload"])  # fmt: skip
    assert kept["response"] == {k: v for k, v in event.items() if k != "content"}
    scores = _rows(lake, "SELECT label, value FROM annotations WHERE kind = 'score' ORDER BY label")
    assert scores == [
        {"label": s["name"], "value": s["value"]}
        for s in sorted(trace["scores"], key=lambda s: s["name"])
    ]


def test_a_real_google_genai_export_reads_text_contents_and_candidates(tmp_path):
    """A real Langfuse export of one google-genai ``generate_content`` call (OpenInference
    google_genai 0.1.5, Gemini 2.5 Flash, August 2025): the input is the SDK's shorthand
    ``{model, contents: "What is Langfuse?"}`` and the output a ``GenerateContentResponse``
    (``{candidates: [{content: {parts, role}, finish_reason, index}], usage_metadata,
    sdk_http_response, ...}``). Both landed as raw JSON; now the question is the person's and
    the candidate's text the model's, equal to an independent parse."""
    trace, [gen], lake = _ingested_clean("google-gemini-2025-08-01.json", tmp_path)
    [candidate] = gen["output"]["candidates"]
    answer = "".join(p["text"] for p in candidate["content"]["parts"])
    want = [("human", gen["input"]["contents"], "input"), ("ai", answer, "output")]
    got = _messages_of(lake, gen["id"])
    assert [(e["actor_type"], e["text"], e["channel"]) for e in got] == want
    said = _messages_of(lake, trace["id"])
    request, response = (
        json.loads(json.loads(trace["input"])),
        json.loads(json.loads(trace["output"])),
    )
    assert [(e["actor_type"], e["text"]) for e in said] == [
        ("human", request["contents"]),
        ("ai", response["candidates"][0]["content"]["parts"][0]["text"]),
    ]
    q = f"SELECT payload FROM events WHERE channel = 'output' AND node_id = '{gen['id']}'"
    kept = json.loads(_rows(lake, q)[0]["payload"])
    assert kept["response"] == {k: v for k, v in gen["output"].items() if k != "candidates"}
    assert kept["candidate"] == {"finish_reason": "STOP", "index": 0}
    q = f"SELECT payload FROM events WHERE channel = 'input' AND node_id LIKE '{gen['id']}%'"
    assert json.loads(_rows(lake, q)[0]["payload"])["request"] == gen["input"]
    usage = _usage(lake, gen["id"])
    assert (
        usage["completion_details.reasoning"] == gen["usageDetails"]["completion_details.reasoning"]
    )
    assert usage["cost_total"] == gen["costDetails"]["total"]


def test_a_real_pydantic_ai_tool_run_reads_its_tools_answers(tmp_path):
    """An excerpt of a real Langfuse export of a pydantic-ai 1.26 agent calling three tools
    (OpenTelemetry GenAI messages through Langfuse's SDK 3.10, December 2025): the tools'
    answers come back as ``tool_call_response`` parts that pydantic-ai writes with ``result``
    (not the semantic conventions' ``response``), in a message it files under ``user``. They
    landed as a person's turn with no text; now they are the tool speaking its results, and
    every message equals an independent parse."""
    trace, observations, lake = _ingested_clean(
        "pydantic-ai-tools-2025-12-04.excerpt.json", tmp_path
    )
    [gen] = [o for o in observations if o["type"] == "GENERATION"]
    want = [(*_genai_said(m), "input") for m in gen["input"]]
    want += [(*_genai_said(m), "output") for m in gen["output"]]
    got = _messages_of(lake, gen["id"])
    assert [(e["actor_type"], e["text"], e["channel"]) for e in got] == want
    assert ("tool", "\n".join(p["result"] for p in gen["input"][3]["parts"]), "input") in want
    people = _rows(lake, "SELECT detail FROM nodes WHERE actor_type = 'human' ORDER BY node_id")
    asked = [p["content"] for m in gen["input"] if m["role"] == "user" for p in m["parts"]
             if p["type"] == "text"]  # fmt: skip
    assert sorted(p["detail"] for p in people) == sorted(
        [json.dumps(_deep_parse_json(trace["input"]), sort_keys=True), *asked]
    )  # the person asked twice (the trace's call, the prompt); the tools' answers are not theirs
    assert _usage(lake, gen["id"])["cost_total"] == gen["costDetails"]["total"]


def test_a_real_autogen_export_keeps_its_flattened_prompt_as_langfuse_shows_it(tmp_path):
    """A real Langfuse export of an AutoGen chat (Langfuse's SDK 3.0, June 2025): the
    generation's input is one text, the conversation flattened as "system: ...\\nuser: ..."
    by AutoGen's instrumentation, and Langfuse shows it as that text; it lands as that text
    (no roles guessed out of it), the answer as the model's, usage as given."""
    trace, observations, lake = _ingested_clean("autogen-2025-06-06.json", tmp_path)
    [gen] = [o for o in observations if o["type"] == "GENERATION"]
    got = _messages_of(lake, gen["id"])
    assert [(e["actor_type"], e["text"], e["channel"]) for e in got] == [
        ("human", gen["input"], "input"),
        ("ai", gen["output"], "output"),
    ]
    said = _messages_of(lake, trace["id"])
    assert [e["text"] for e in said] == [
        _deep_parse_json(trace["input"]),
        _deep_parse_json(trace["output"]),
    ]
    usage = _usage(lake, gen["id"])
    assert {k: usage[f"{k}_tokens"] for k in ("input", "output", "total")} == gen["usageDetails"]
    assert usage["cost_total"] == gen["costDetails"]["total"]
    kept = json.loads(
        _rows(lake, f"SELECT attrs FROM nodes WHERE node_id = '{gen['id']}'")[0]["attrs"]
    )
    assert (
        kept["langfuse.modelParameters"]["stop_sequences"]
        == gen["modelParameters"]["stop_sequences"]
    )
