"""Issue 9, item 6 (clients and cassettes): an API key given to the client, or set in the
environment, appears in no event, error, trace DataFrame, export, cassette, saved state or repr."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nbagent import AssistantAgent, dump_message
from nbagent.models import (
    ModelAuthenticationError,
    ModelBadRequestError,
    OpenAIChatCompletionClient,
    RecordingChatCompletionClient,
)
from nbagent.redact import redact, redact_data

from .chat_server import ChatServer, Reply

PASSED_KEY = "sk-passed-6a1f0c9e8d7b2a4c3e5f"
ENV_KEY = "sk-environment-0b9a8c7d6e5f4a3b"
HEADER_TOKEN = "org-token-5e4d3c2b1a0f9e8d"
SECRETS = (PASSED_KEY, ENV_KEY, HEADER_TOKEN)


async def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


async def test_keys_reach_the_server_and_nothing_else(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", ENV_KEY)
    with ChatServer(api_key=PASSED_KEY) as server:
        client = OpenAIChatCompletionClient(
            "gpt-4o",
            base_url=server.base_url,
            api_key=PASSED_KEY,
            max_retries=0,
            default_headers={"api-key": HEADER_TOKEN, "X-Title": "secrets test"},
        )
        recorder = RecordingChatCompletionClient(client, tmp_path / "run.cassette.json")
        agent = AssistantAgent("agent", recorder, tools=[add], reflect_on_tool_use=True, model_client_stream=True)
        server.script(Reply.call(("add", {"a": 1, "b": 2})), Reply.text("It is 3."))
        items = [item async for item in agent.run_stream(task="1+2?")]
        server.script(
            Reply.error(400, f"Invalid header value Bearer {PASSED_KEY} with api-key {HEADER_TOKEN} and env {ENV_KEY}")
        )
        with pytest.raises(ModelBadRequestError) as bad_request:
            await agent.run(task="again")
        wrong = OpenAIChatCompletionClient("gpt-4o", base_url=server.base_url, api_key=ENV_KEY + "x", max_retries=0)
        with pytest.raises(ModelAuthenticationError) as unauthorised:
            await wrong.create([])
        assert server.requests[0].headers["authorization"] == f"Bearer {PASSED_KEY}"
        assert server.requests[0].headers["api-key"] == HEADER_TOKEN
        await client.close()
        await wrong.close()

    agent.trace.to_jsonl(tmp_path / "trace.jsonl")
    outputs = {
        "events": json.dumps([dump_message(item) for item in items[:-1]]),
        "errors": f"{bad_request.value} {unauthorised.value!r}",
        "state": json.dumps(await agent.save_state()),
        "trace frames": "".join(
            frame.to_json(default_handler=str, date_format="iso")
            for frame in (
                agent.trace.events_df(),
                agent.trace.llm_calls_df(),
                agent.trace.tool_calls_df(),
                agent.trace.runs_df(),
            )
        ),
        "trace export": "".join(path.read_text() for path in sorted((tmp_path / "trace.jsonl").iterdir())),
        "cassette": (tmp_path / "run.cassette.json").read_text(),
        "reprs": f"{agent!r} {client!r} {recorder!r} {wrong!r}",
        "records": repr(agent.trace.items),
    }
    assert (
        "HTTP 400: Invalid header value Bearer [REDACTED] with api-key [REDACTED] and env [REDACTED]"
        in outputs["errors"]
    )
    assert "[REDACTED]" in outputs["cassette"] and "[REDACTED]" in outputs["trace frames"]
    assert "It is 3." in outputs["events"] and "It is 3." in outputs["trace frames"]
    leaks = [(name, secret) for name, text in outputs.items() for secret in SECRETS if secret in text]
    assert leaks == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("key sk-" + "proj-AbCdEf0123456789 end", "key [REDACTED] end"),
        ("Authorization: Bearer eyJhbGciOi.JIUzI1NiJ9.x", "Authorization: [REDACTED]"),
        ("aws AKIAABCDEFGHIJKLMNOP here", "aws [REDACTED] here"),
        ("gh ghp_abcdefghijklmnopqrstuvwxyz0123 x", "gh [REDACTED] x"),
        ("google AIzaSyA-1234567890abcdefghijklmnopqrstu", "google [REDACTED]"),
        ("hf hf_abcdefghijklmnopqrstuvwx", "hf [REDACTED]"),
        ("a task about skiing and sk-1 is fine", "a task about skiing and sk-1 is fine"),
        (
            "scheme in any case: bearer abcdef123456 and BASIC dXNlcjpwYXNz",
            "scheme in any case: [REDACTED] and [REDACTED]",
        ),
        ("header basic dXNlcjpwYXNzd29yZA== sent", "header [REDACTED] sent"),
        # Words after the scheme names stay text: no digit, no inner symbol, no case change.
        (
            "Basic arithmetic first. Bearer tokens expire; Bearer tokens.",
            "Basic arithmetic first. Bearer tokens expire; Bearer tokens.",
        ),
    ],
)
def test_redact_patterns(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_redact_data_blanks_secret_named_fields_and_literal_values() -> None:
    data = {
        "api_key": "abc",
        "headers": {"Authorization": "xyz", "X-Title": "demo"},
        "max_tokens": 5,
        "notes": ["my password is hunter2-long", None],
    }
    assert redact_data(data, ["hunter2-long"]) == {
        "api_key": "[REDACTED]",
        "headers": {"Authorization": "[REDACTED]", "X-Title": "demo"},
        "max_tokens": 5,
        "notes": ["my password is [REDACTED]", None],
    }


def test_secrets_is_public(tmp_path: Path) -> None:
    from nbagent.models import ReplayChatCompletionClient

    client = OpenAIChatCompletionClient("m", api_key="sk-test-secrets-1234567890", base_url="http://127.0.0.1:9/v1")
    assert "sk-test-secrets-1234567890" in client.secrets
    assert isinstance(client.secrets, tuple)
    assert ReplayChatCompletionClient(["x"]).secrets == ()
    assert "sk-test-secrets-1234567890" in RecordingChatCompletionClient(client, tmp_path / "c.json").secrets
