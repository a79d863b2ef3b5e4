"""Cassettes: record through the real SDK over HTTP, replay offline, secrets never written."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import nbagent
from nbagent import (
    AssistantAgent,
    CancellationToken,
    CreateResult,
    ModelClientStreamingChunkEvent,
    RequestUsage,
    UserMessage,
)
from nbagent.demo import DEMO_CASSETTE, DEMO_TASK, demo_agent
from nbagent.models import (
    CassetteChatCompletionClient,
    CassetteError,
    CassetteExhaustedError,
    CassetteMismatchError,
    ModelServerError,
    OpenAIChatCompletionClient,
    RecordingChatCompletionClient,
    ReplayChatCompletionClient,
    default_model,
)
from nbagent.models.cassette import Cassette, load_cassette
from nbagent.models.default import OFFLINE_ANSWER

from .chat_server import ChatServer, Reply
from .conftest import TEST_KEY
from .demo_recording import record_demo


async def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def shape(items: list[Any]) -> list[tuple[str, Any]]:
    """Events as (type, content) pairs: what a replay must reproduce exactly."""
    out = []
    for item in items:
        content = getattr(item, "content", None)
        if isinstance(content, list):
            content = [c.model_dump() if hasattr(c, "model_dump") else c for c in content]
        out.append((type(item).__name__, content))
    return out


def tool_agent(client: Any) -> AssistantAgent:
    return AssistantAgent("agent", client, tools=[add], reflect_on_tool_use=True, model_client_stream=True)


TOOL_REPLIES = (
    Reply.call(("add", {"a": 2, "b": 3}), reasoning="add them"),
    Reply.text("The sum is 5.", pieces=3, chunk_delay=0.01),
)


async def test_record_then_replay_gives_the_same_events(
    server: ChatServer, client: OpenAIChatCompletionClient, tmp_path: Path
) -> None:
    path = tmp_path / "run.json"
    server.script(*TOOL_REPLIES)
    live = [item async for item in tool_agent(RecordingChatCompletionClient(client, path)).run_stream(task="2+3?")]

    data = json.loads(path.read_text())
    assert (data["format"], data["version"], data["model"], data["provider"]) == (
        "nbagent-cassette",
        1,
        "gpt-4o",
        "openai",
    )
    first, second = data["interactions"]
    assert first["stream"] is True and first["result"]["thought"] == "add them"
    # the reasoning streamed as AutoGen's client streams it, recorded as it came
    assert "".join(c["text"] for c in first["chunks"]) == "<think>add them</think>"
    assert [c["text"] for c in second["chunks"]] == ["The", " su", "m i", "s 5", "."]
    times = [c["t"] for c in second["chunks"]]
    assert times == sorted(times) and all(t >= 0 for t in times) and second["duration_s"] >= times[-1]

    replay = CassetteChatCompletionClient(path)
    offline = [item async for item in tool_agent(replay).run_stream(task="2+3?")]
    assert shape(offline[:-1]) == shape(live[:-1])
    streamed = [c.content for c in offline if isinstance(c, ModelClientStreamingChunkEvent)]
    assert "".join(streamed[:-5]) == "<think>add them</think>"  # the first call's reasoning, as it streamed
    assert streamed[-5:] == ["The", " su", "m i", "s 5", "."]
    assert replay.remaining == 0 and replay.model_name == "gpt-4o" and replay.provider == "openai"
    assert replay.total_usage() == RequestUsage(prompt_tokens=20, completion_tokens=10)
    assert replay.actual_usage() == RequestUsage()


async def test_a_different_request_names_the_call_and_the_first_difference(
    server: ChatServer, client: OpenAIChatCompletionClient, tmp_path: Path
) -> None:
    path = tmp_path / "run.json"
    server.script(*TOOL_REPLIES)
    await tool_agent(RecordingChatCompletionClient(client, path)).run(task="2+3?")
    with pytest.raises(CassetteMismatchError) as caught:
        await tool_agent(CassetteChatCompletionClient(path)).run(task="2+4?")
    assert str(caught.value) == (
        "cassette run.json: request #1 differs from the recording: request.messages[1].content: "
        'recorded "2+3?", got "2+4?"'
    )
    agent = AssistantAgent(
        "agent",
        CassetteChatCompletionClient(path),
        tools=[add],
        model_client_stream=True,
        reflect_on_tool_use=True,
        system_message="Other system message",
    )
    with pytest.raises(
        CassetteMismatchError, match=r"request #1 differs from the recording: request.messages\[0\].content"
    ):
        await agent.run(task="2+3?")
    replay = CassetteChatCompletionClient(path)
    await tool_agent(replay).run(task="2+3?")
    with pytest.raises(CassetteExhaustedError, match=r"cassette run.json: call #3 asked for, but only 2 were recorded"):
        await replay.create([UserMessage(content="more", source="user")])
    unchecked = CassetteChatCompletionClient(path, check_requests=False)
    result = await unchecked.create([UserMessage(content="anything", source="user")])
    assert result.thought == "add them"


async def test_errors_are_recorded_and_raised_again(
    server: ChatServer, client: OpenAIChatCompletionClient, tmp_path: Path
) -> None:
    path = tmp_path / "err.json"
    recorder = RecordingChatCompletionClient(client, path)
    server.script(Reply.error(500, "upstream exploded"))
    with pytest.raises(ModelServerError) as live:
        await recorder.create([UserMessage(content="hi", source="user")])
    with pytest.raises(ModelServerError) as replayed:
        await CassetteChatCompletionClient(path).create([UserMessage(content="hi", source="user")])
    assert (str(replayed.value), replayed.value.status) == (str(live.value), 500)


async def test_secrets_never_reach_the_file(
    server: ChatServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env_key = "sk-env-key-9d8c7b6a5f4e3d2c1b"
    monkeypatch.setenv("OPENAI_API_KEY", env_key)
    header_token = "tok-1234567890abcdef"
    client = OpenAIChatCompletionClient(
        "gpt-4o",
        base_url=server.base_url,
        api_key=TEST_KEY,
        default_headers={"Authorization": f"Bearer {header_token}", "X-Api-Key": "plain-secret-value"},
    )
    path = tmp_path / "secrets.json"
    recorder = RecordingChatCompletionClient(client, path, secrets=["my-own-password-42"])
    server.script(
        Reply.call(("add", {"a": 1, "b": 2, "note": f"key {TEST_KEY}"})),
        Reply.text(
            f"Your key is {env_key}; header Bearer {header_token}; pw my-own-password-42; other sk-"
            "proj-ABCDEFGHIJKLMNOPQRSTUV"
        ),
    )
    agent = AssistantAgent("agent", recorder, tools=[add], reflect_on_tool_use=True)
    result = await agent.run(task=f"my key is {TEST_KEY} and {env_key}, api_key=plain-secret-value")
    assert server.requests[0].headers["x-api-key"] == "plain-secret-value"
    text = path.read_text()
    for secret in (
        TEST_KEY,
        env_key,
        header_token,
        "plain-secret-value",
        "my-own-password-42",
        "sk-" + "proj-ABCDEFGHIJKLMNOPQRSTUV",
    ):
        assert secret not in text
    assert text.count("[REDACTED]") >= 6
    assert "Authorization" not in text and "authorization" not in text
    assert TEST_KEY not in repr(recorder) and env_key not in repr(recorder)
    assert result.messages[-1].content.startswith("Your key is")
    replayed = await AssistantAgent(
        "agent", CassetteChatCompletionClient(path), tools=[add], reflect_on_tool_use=True
    ).run(task=f"my key is {TEST_KEY} and {env_key}, api_key=plain-secret-value")
    assert replayed.messages[-1].content == (
        "Your key is [REDACTED]; header [REDACTED]; pw [REDACTED]; other [REDACTED]"
    )
    await client.close()


def write(tmp_path: Path, content: str) -> Path:
    path = tmp_path / "bad.json"
    path.write_text(content)
    return path


def valid_data() -> dict[str, Any]:
    return {
        "format": "nbagent-cassette",
        "version": 1,
        "model": "m",
        "model_info": {"function_calling": True},
        "recorded_at": "2026-01-01T00:00:00+00:00",
        "interactions": [
            {
                "request": {"messages": [], "tools": [], "tool_choice": "auto", "json_output": None},
                "stream": False,
                "duration_s": 0.1,
                "result": {"finish_reason": "stop", "content": "hi"},
            }
        ],
    }


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda d: "{not json",
            r"bad.json: not JSON: Expecting property name enclosed in double quotes at line 1 column 2",
        ),
        (lambda d: '{"format": NaN}', r"bad.json: not JSON: NaN is not a JSON value"),
        (lambda d: [1, 2], r"bad.json: not an nbagent cassette \(no \"format\": \"nbagent-cassette\"\)"),
        (lambda d: {**d, "version": 7}, r"bad.json: cassette version 7 is not supported \(this nbagent reads 1\)"),
        (
            lambda d: {
                **d,
                "interactions": [{**d["interactions"][0], "error": {"type": "ModelError", "message": "x"}}],
            },
            r"not a valid nbagent cassette: interactions.0: Value error, "
            r"an interaction has exactly one of 'result' and 'error'",
        ),
        (
            lambda d: {**d, "interactions": [{**d["interactions"][0], "chunks": [{"t": -1, "text": "a"}]}]},
            r"not a valid nbagent cassette: interactions.0.chunks.0.t: Input should be greater than or equal to 0",
        ),
        (
            lambda d: {
                **d,
                "interactions": [{**d["interactions"][0], "result": {"finish_reason": "maybe", "content": "x"}}],
            },
            r"not a valid nbagent cassette: interactions.0.result.finish_reason: Input should be",
        ),
        (lambda d: {**d, "pickle": "gASV"}, r"not a valid nbagent cassette: pickle: Extra inputs are not permitted"),
        # A paced replay of a chunk at t=1e999 slept for ever; 100,000 levels raised a bare RecursionError.
        (
            lambda d: json.dumps(
                {**d, "interactions": [{**d["interactions"][0], "chunks": [{"t": 1, "text": "a"}]}]}
            ).replace('"t": 1,', '"t": 1e999,'),
            r"bad.json: not JSON: 1e999 is not a finite number",
        ),
        (
            lambda d: json.dumps({**d, "interactions": [{**d["interactions"][0], "duration_s": 1}]}).replace(
                '"duration_s": 1', '"duration_s": -1e999'
            ),
            r"bad.json: not JSON: -1e999 is not a finite number",
        ),
        (
            lambda d: json.dumps({**d, "model_info": "NEST"}).replace('"NEST"', "[" * 100_000 + "]" * 100_000),
            r"bad.json: not a valid nbagent cassette: nested too deeply",
        ),
        (
            lambda d: json.dumps({**d, "model_info": "NEST"}).replace('"NEST"', "[" * 500 + "]" * 500),
            r"bad.json: not a valid nbagent cassette: nested more than 64 levels deep",
        ),
    ],
)
def test_bad_files_raise_clear_errors(tmp_path: Path, change: Any, message: str) -> None:
    changed = change(valid_data())
    path = write(tmp_path, changed if isinstance(changed, str) else json.dumps(changed))
    with pytest.raises(CassetteError, match=message):
        CassetteChatCompletionClient(path)


def test_missing_file_and_valid_file(tmp_path: Path) -> None:
    with pytest.raises(CassetteError, match=r"nope.json: no such cassette file"):
        load_cassette(tmp_path / "nope.json")
    assert load_cassette(write(tmp_path, json.dumps(valid_data()))).interactions[0].result.content == "hi"


async def test_paced_replay_waits_for_the_recorded_time_and_is_cancellable(tmp_path: Path) -> None:
    data = valid_data()
    data["interactions"][0].update(
        stream=True, duration_s=30.0, chunks=[{"t": 0.0, "text": "h"}, {"t": 30.0, "text": "i"}]
    )
    path = write(tmp_path, json.dumps(data))
    fast = [item async for item in CassetteChatCompletionClient(path).create_stream([])]
    assert fast == ["h", "i", CreateResult(finish_reason="stop", content="hi")]
    token = CancellationToken()
    asyncio.get_running_loop().call_later(0.1, token.cancel)
    seen: list[Any] = []
    with pytest.raises(asyncio.CancelledError):
        async for item in CassetteChatCompletionClient(path, pace=True).create_stream([], cancellation_token=token):
            seen.append(item)
    assert seen == ["h"]


async def test_a_non_streamed_recording_replays_as_one_piece_when_streamed(tmp_path: Path) -> None:
    path = write(tmp_path, json.dumps(valid_data()))
    items = [item async for item in CassetteChatCompletionClient(path).create_stream([])]
    assert items == ["hi", CreateResult(finish_reason="stop", content="hi")]


# --------------------------------------------------------------------------- shipped demo


async def test_shipped_demo_cassette_replays_the_demo_agent() -> None:
    items = [item async for item in demo_agent(pace=False).run_stream(task=DEMO_TASK)]
    assert [type(i).__name__ for i in items if not isinstance(i, ModelClientStreamingChunkEvent)] == [
        "TextMessage",
        "ThoughtEvent",
        "ToolCallRequestEvent",
        "ToolCallExecutionEvent",
        "TextMessage",
        "TaskResult",
    ]
    assert items[-2].content == "Paris has light rain at 18 °C, while Tokyo is sunny at 24 °C."
    reasoning = (
        "<think>Two cities: I will ask the weather tool for both at once.</think>"  # streamed first, as AutoGen does
    )
    streamed = "".join(i.content for i in items if isinstance(i, ModelClientStreamingChunkEvent))
    assert streamed == reasoning + items[-2].content


async def test_shipped_demo_cassette_is_what_the_recording_script_makes(tmp_path: Path) -> None:
    fresh = tmp_path / "demo.json"
    await record_demo(fresh, paced=False)

    def stable(data: dict[str, Any]) -> dict[str, Any]:
        data = {**data, "recorded_at": None}
        for interaction in data["interactions"]:
            interaction["duration_s"] = None
            interaction["chunks"] = [chunk["text"] for chunk in interaction["chunks"]]
        return data

    assert stable(json.loads(fresh.read_text())) == stable(json.loads(DEMO_CASSETTE.read_text()))


# --------------------------------------------------------------------------- default_model


def clear_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "NBAGENT_BASE_URL", "NBAGENT_MODEL", "NBAGENT_API_KEY"):
        monkeypatch.delenv(name, raising=False)


async def test_default_model_offline_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    clear_env(monkeypatch)
    model = nbagent.default_model()
    assert isinstance(model, ReplayChatCompletionClient)
    assert capsys.readouterr().err == (
        "nbagent: no OPENAI_API_KEY or NBAGENT_BASE_URL set, using the offline replay model (scripted answers).\n"
    )
    assert (await model.create([UserMessage(content="hi", source="user")])).content == OFFLINE_ANSWER
    cassette = default_model(cassette=DEMO_CASSETTE)
    assert isinstance(cassette, CassetteChatCompletionClient) and cassette.pace is True
    assert capsys.readouterr().err.endswith("replaying the cassette weather_demo.cassette.json.\n")
    default_model(notice=False)
    assert capsys.readouterr().err == ""


async def test_default_model_openai_and_compatible_server(
    server: ChatServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    clear_env(monkeypatch)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-0000000000000")
    openai_model = default_model()
    assert isinstance(openai_model, OpenAIChatCompletionClient) and openai_model.model_name == "gpt-4o-mini"
    assert "sk-env" not in repr(openai_model)
    monkeypatch.setenv("NBAGENT_MODEL", "gpt-4.1")
    assert default_model().model_name == "gpt-4.1"

    clear_env(monkeypatch)
    monkeypatch.setenv("NBAGENT_BASE_URL", server.base_url)
    with pytest.raises(ValueError, match="NBAGENT_BASE_URL is set .* but no model: set NBAGENT_MODEL"):
        default_model()
    monkeypatch.setenv("NBAGENT_MODEL", "llama3.1")
    local = default_model()
    server.script(Reply.text("hello from the local model"))
    result = await AssistantAgent("agent", local).run(task="hi")
    assert result.messages[-1].content == "hello from the local model"
    assert server.requests[0].body["model"] == "llama3.1"
    assert capsys.readouterr().err == ""
    await local.close()


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_damaged_cassette_is_loaded_or_refused_with_a_cassette_error(tmp_path: Path, data: st.DataObject) -> None:
    cassette = valid_data()
    interaction = cassette["interactions"][0]
    target = data.draw(st.sampled_from([(cassette, k) for k in cassette] + [(interaction, k) for k in interaction]))
    target[0][target[1]] = data.draw(JSON)
    path = write(tmp_path, json.dumps(cassette))
    try:
        loaded = load_cassette(path)
    except CassetteError as error:
        assert str(error).startswith(f"{path}: ")
    else:
        assert Cassette.model_validate(loaded.model_dump(mode="json")) == loaded
