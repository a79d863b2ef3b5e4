"""No API key, bearer token or Authorization value reaches a DataFrame or an export."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from nbagent import (
    AssistantAgent,
    CreateResult,
    FunctionCall,
    ReplayChatCompletionClient,
    RequestUsage,
    Trace,
    load_jsonl,
    load_parquet,
)
from nbagent import redact as redact_module
from nbagent.redact import REDACTED, mask, redact

from .helpers import BEARER, KEY, KeyedClient, PiecesClient, calls, tool_agent

SECRETS = (KEY, "eyJhbGciOiJIUzI1NiJ9", "hunter2-token-value")


async def leaky_trace() -> AssistantAgent:
    """A run whose task, tool arguments, tool result, thought and streamed answer hold secrets."""

    async def echo(header: str) -> str:
        """Echo."""
        return f"got {header}"

    answers = [
        calls(("c1", "echo", json.dumps({"header": f"Authorization: {BEARER}"}))),
        CreateResult(
            finish_reason="stop",
            content=f"your key is {KEY} ok",
            usage=RequestUsage(prompt_tokens=1, completion_tokens=1),
            thought=f"the key {KEY} must stay secret",
        ),
    ]
    pieces = ["your key is sk-", KEY[3:15], KEY[15:], " ok"]
    agent = AssistantAgent(
        "leaky", PiecesClient(answers, pieces), tools=[echo], reflect_on_tool_use=True, model_client_stream=True
    )
    await agent.run(task=f"use {KEY} and Authorization=hunter2-token-value")
    return agent


def all_text(df: pd.DataFrame) -> str:
    return df.astype("object").to_json(orient="records", date_format="iso", default_handler=str)


async def test_no_secret_in_any_frame() -> None:
    agent = await leaky_trace()
    trace = agent.trace
    frames = [trace.events_df(), trace.llm_calls_df(), trace.tool_calls_df(), trace.runs_df(), agent.context_df()]
    for df in frames:
        dumped = all_text(df)
        for secret in SECRETS:
            assert secret not in dumped
    chunks = trace.events_df()
    chunks = chunks[chunks["kind"] == "ModelClientStreamingChunkEvent"]
    assert "".join(chunks["text"]) == "your key is [REDACTED] ok"
    assert trace.tool_calls_df()["arguments"].iloc[0] == {"header": "Authorization: [REDACTED]"}
    assert "[REDACTED]" in trace.runs_df()["task"].iloc[0]


async def test_no_secret_in_any_export(tmp_path: Path) -> None:
    agent = await leaky_trace()
    trace = agent.trace
    trace.to_parquet(tmp_path / "pq")
    trace.to_jsonl(tmp_path / "trace.jsonl")
    trace.to_otlp_json(tmp_path / "otlp.json")
    trace.to_otlp_json(tmp_path / "otlp-content.json", content=True)  # the messages too
    (tmp_path / "trace.html").write_text(trace._repr_html_())
    blobs = [path.read_bytes() for path in tmp_path.rglob("*") if path.is_file()]
    assert len(blobs) == 17  # six Parquet tables (the context ones too), six JSON lines, schema.json, trace.json,
    # 2 OTLP, HTML
    for blob in blobs:
        for secret in SECRETS:
            assert secret.encode() not in blob
    for loaded in (load_parquet(tmp_path / "pq"), load_jsonl(tmp_path / "trace.jsonl")):
        assert KEY not in all_text(loaded.events_df())


async def test_custom_hook_and_no_redaction() -> None:
    agent = tool_agent("calc", "the password is swordfish")
    agent.trace = Trace(owner=agent, redact=lambda text: text.replace("swordfish", "*****"))
    agent.recorders = [agent.trace]
    await agent.run(task="what is the password? swordfish?")
    assert agent.trace.runs_df()["final_text"].iloc[0] == "the password is *****"
    assert agent.trace.runs_df()["task"].iloc[0] == "what is the password? *****?"
    assert list(agent.context_df()["text"]) == ["what is the password? *****?", "the password is *****"]
    raw = tool_agent("calc", f"key {KEY}")
    raw.trace = Trace(owner=raw, redact=None)
    raw.recorders = [raw.trace]
    await raw.run(task="show")
    assert raw.trace.runs_df()["final_text"].iloc[0] == f"key {KEY}"


async def test_secret_split_over_chunks_that_one_chunk_redaction_misses() -> None:
    answers = [CreateResult(finish_reason="stop", content=f"k={KEY}", usage=RequestUsage())]
    agent = AssistantAgent(
        "split", PiecesClient(answers, ["k=s", "k-proj-abcd", "efghijklmnop0123456789"]), model_client_stream=True
    )
    await agent.run(task="go")
    events = agent.trace.events_df()
    chunks = list(events[events["kind"] == "ModelClientStreamingChunkEvent"]["text"])
    assert chunks == ["k=[REDACTED]", "", ""]


async def test_secret_named_arguments_and_the_clients_own_key_are_masked_in_every_frame() -> None:
    """A ``password`` argument, and a key given only to the client (no known pattern), reach no frame."""
    from nbagent import AssistantAgent, CreateResult

    def login(user: str, password: str) -> str:
        """Log in."""
        return f"welcome {user}; your key is {client_key}"

    client_key = "azure" + "0f1e2d3c4b5a69788796a5b4c3d2e1f0"
    client = KeyedClient(
        [
            CreateResult(
                finish_reason="function_calls",
                content=[
                    FunctionCall(id="c1", name="login", arguments='{"user": "bob", "password": "hunter2hunter2"}'),
                ],
            ),
        ],
        client_key,
    )
    agent = AssistantAgent("a", client, tools=[login])
    await agent.run(task="log me in")
    trace = agent.trace
    frames = [trace.events_df(), trace.llm_calls_df(), trace.tool_calls_df(), trace.runs_df(), agent.context_df()]
    dumped = "\n".join(frame.to_json(default_handler=str, date_format="iso") for frame in frames)
    assert "hunter2hunter2" not in dumped and client_key not in dumped
    assert "[REDACTED]" in dumped
    request = trace.events_df().query("kind == 'ToolCallRequestEvent'")["text"].iloc[0]
    assert request == 'login({"user": "bob", "password": "[REDACTED]"})'


async def test_key_whose_first_chunk_alone_matches_leaves_no_tail_in_chunks_or_exports(tmp_path: Path) -> None:
    """The first chunk holds enough of the key to be masked alone; the rest of the key must go too."""
    answers = [CreateResult(finish_reason="stop", content=f"k={KEY} ok", usage=RequestUsage())]
    agent = AssistantAgent(
        "split", PiecesClient(answers, ["k=" + KEY[:14], KEY[14:] + " ok"]), model_client_stream=True
    )
    await agent.run(task="go")
    events = agent.trace.events_df()
    assert list(events[events["kind"] == "ModelClientStreamingChunkEvent"]["text"]) == ["k=[REDACTED] ok", ""]
    agent.trace.to_parquet(tmp_path / "pq")
    agent.trace.to_jsonl(tmp_path / "trace.jsonl")
    blobs = [path.read_bytes() for path in tmp_path.rglob("*") if path.is_file()]
    assert len(blobs) == 14 and not any(KEY[14:].encode() in blob for blob in blobs)
    assert KEY[14:] not in all_text(load_parquet(tmp_path / "pq").events_df())


async def test_a_detached_agents_client_key_stays_masked_in_the_shared_trace() -> None:
    client_key = "azure" + "0f1e2d3c4b5a69788796a5b4c3d2e1f0"
    client = KeyedClient([f"the key is {client_key}"], client_key)
    agent = AssistantAgent("b", client)
    shared = Trace()
    with shared.recording(agent):
        await agent.run(task="show")
    assert shared.runs_df()["final_text"].iloc[0] == "the key is [REDACTED]"
    del agent
    assert shared.runs_df()["final_text"].iloc[0] == "the key is [REDACTED]"


async def test_api_key_header_values_are_masked() -> None:
    headers = "{'api-key': 'abcdef0123456789abcdef', 'X-Api-Key': 'zzzz0123456789zzzz'} api_key=q1w2e3r4t5y6u7i8"
    agent = AssistantAgent("h", ReplayChatCompletionClient([f"headers: {headers}"]))
    await agent.run(task="x")
    assert agent.trace.runs_df()["final_text"].iloc[0] == (
        "headers: {'api-key': '[REDACTED]', 'X-Api-Key': '[REDACTED]'} api_key=[REDACTED]"
    )


async def test_a_key_the_model_puts_in_a_tool_name_reaches_no_frame_or_export(tmp_path: Path) -> None:
    """A prompt-injected model may exfiltrate a key as the name of a tool call (unknown tool: an error result)."""
    agent = tool_agent("calc", calls(("c1", KEY, '{"a": 1}')), "done", reflect_on_tool_use=True)
    await agent.run(task="go")
    trace = agent.trace
    assert list(trace.tool_calls_df()["tool_name"]) == ["[REDACTED]"]
    assert agent.context_df()["tool_calls"].iloc[1] == [{"id": "c1", "name": "[REDACTED]", "arguments": '{"a": 1}'}]
    assert list(agent.context_df()["source"]) == ["user", "calc", "[REDACTED]", "calc"]
    trace.to_parquet(tmp_path / "pq")
    trace.to_jsonl(tmp_path / "trace.jsonl")
    trace.to_otlp_json(tmp_path / "otlp.json")
    trace.to_otlp_json(tmp_path / "otlp-content.json", content=True)
    (tmp_path / "trace.html").write_text(trace._repr_html_())
    frames = [trace.events_df(), trace.llm_calls_df(), trace.tool_calls_df(), trace.runs_df(), agent.context_df()]
    assert not any(KEY in all_text(df) for df in frames)
    blobs = [path.read_bytes() for path in tmp_path.rglob("*") if path.is_file()]
    assert len(blobs) == 17 and not any(KEY.encode() in blob for blob in blobs)


def test_token_shapes_are_masked_at_a_words_start_only_whatever_surrounds_them() -> None:
    """The token shapes start with their literal (the word's start checked after it): each masked at
    the start of a text, after a space, a quote or a non-ASCII letter's neighbour, never inside a word;
    a scheme in any case, its credential's case change kept case-sensitive; dotted-capital I (whose
    lower case is longer) before a bearer token."""
    tokens = [
        "Bearer " + "abcDEF123456",
        "BEARER Zm9vYmFyYmF6",
        "basic   dXNlcjpwYXNz",
        "sk-" + "abcdefghij",
        "AKIA" + "ABCDEFGHIJKLMNOP",
        "ghp_" + "a" * 22,
        "xoxb-" + "1234567890a",
        "AIza" + "b" * 35,
        "hf_" + "c" * 21,
    ]
    for token in tokens:
        for before, after in (("", ""), ("see ", " now"), ('{"v": "', '"}'), ("\u0130 ", " \u0130"), ("_x_ " * 50, "")):
            assert redact(before + token + after) == before + REDACTED + after, (before, token)
        assert redact("x" + token) == "x" + token  # inside a word: no token
        assert redact("\u00e9" + token) == "\u00e9" + token  # a non-ASCII letter is a word character too
    for text in ("Basic arithmetic", "bearer tokens.", "Bearer abcdefghij", "a basic idea " * 1000):
        assert redact(text) == text
    assert redact("Bearer Bearer " + "abcDEF123456") == f"Bearer {REDACTED}"
    assert (
        mask("{'api_key': 'abcdefgh12', 'x': 'Basic dXNlcjpwYXNz'}")
        == f"{{'api_key': '{REDACTED}', 'x': '{REDACTED}'}}"
    )


# Pieces a random text is made of: plain words, each mark a secret pattern starts with (both cases),
# near misses, whole secrets of every shape, and characters outside ASCII (the prefilter steps aside).
_PIECES = [
    "lorem ",
    "ipsum ",
    "dolor\n",
    "sit ",
    "amet",
    "0123",
    " ",
    "-",
    "_",
    ":",
    "/",
    "@",
    "=",
    '"',
    "sk-",
    "SK-",
    "gh",
    "ghp_",
    "hf_",
    "xox",
    "xoxb-",
    "AKIA",
    "akia",
    "AIza",
    "://",
    "http://u:p@h/x",
    "Bearer ",
    "bearer ",
    "BASIC ",
    "Basic ",
    "authorization: ",
    "AUTHORIZATION=",
    "api_key=",
    "Api-Key: ",
    "apikey ",
    "X-API-KEY:",
    "abcdEFGH1234567890",
    "proxy-",
    "Proxy-Authorization: token ",
    "Authorization = ",
    "x-goog-",
    "my_",
    "--",
    "__",
    "api",
    "API",
    "key",
    "KEY",
    "'",
    ";",
    "[REDACTED]",
    "x-api_key: ",
    "git+ssh://",
    "a.b-c://",
    "9://",
    "://x:y@z",
    "u:p@",
    "?api_key=abcdefgh123&x=1",
    "sk-" + "abcdefgh12345678",
    "ghp_" + "a1" * 12,
    "AKIA" + "ABCDEFGHIJKLMNOP",
    "hunter2-token-value",
    "é",
    "\u212a",
    "İ",
]


@given(
    pieces=st.lists(st.sampled_from(_PIECES), max_size=60),
    secrets=st.lists(st.sampled_from(["hunter2-token-value", "zzzzzz9", "quux-secret", "ÉÉÉÉÉÉ"]), max_size=3),
)
@settings(max_examples=600, deadline=None)
def test_the_prefilter_changes_no_result(pieces: list[str], secrets: list[str]) -> None:
    """mask's fast paths (a long ASCII text lacking a character of every mark and secret is given back
    as it is; Authorization and api-key values looked for only where the words are, URLs where a
    ``://`` is) give what every
    check over the whole text gives, on texts of random pieces with embedded secrets."""
    text = "".join(pieces)
    for padded in (text, text + " lorem ipsum" * (redact_module.FILTER_FROM // 11 + 1)):
        assert mask(padded, secrets) == redact_module.mask_unfiltered(padded, secrets)


def test_the_prefilter_skips_a_long_text_with_no_mark() -> None:
    """A 1 MB text with no character of a mark comes back as it is (the same object) at once; one
    character more and it is scanned (and masked) as before."""
    plain = ("lorem ipsum dolor sit amet " * 40_000)[:1_000_000]
    assert mask(plain, ["hunter2-token-value"]) is plain
    keyed = plain + " sk-" + "abcdefgh12345678"
    assert mask(keyed, []) == plain + " " + REDACTED


@given(
    pieces=st.lists(
        st.sampled_from([*_PIECES, "\n", "\t", "  \n ", "Bearer\n", "key\n", "api-key: \n", '"\n']), max_size=80
    ),
    secrets=st.lists(st.sampled_from(["hunter2-token-value", "zzzzzz9", "quux-secret", "ÉÉÉÉÉÉ"]), max_size=3),
    size=st.integers(min_value=1, max_value=40),
)
@settings(max_examples=600, deadline=None)
def test_masking_in_slices_changes_no_result(pieces: list[str], secrets: list[str], size: int) -> None:
    """A long text is masked in pieces cut where a run of spaces ends and no match can cross (each
    regular expression a short call): the result is the whole text's, on random texts cut every
    ``size`` characters (the slice size made small)."""
    text = "".join(pieces)
    original = redact_module.SLICE
    redact_module.SLICE = size
    try:
        assert mask(text, secrets) == redact_module.mask_unfiltered(text, secrets)
    finally:
        redact_module.SLICE = original


def test_a_long_text_is_masked_in_slices() -> None:
    """A 5 MB text of lines is cut into pieces of about SLICE characters (none much longer), and masked
    as a whole: a key in it and a bearer token whose credential is on the next line."""
    line = "the quick brown fox jumps over the high wall 42\n"
    tail = "abcDEF123456 sk-" + "abcdefgh12345678\n"
    text = line * (5_000_000 // len(line)) + "Bearer\n" + tail
    pieces = redact_module._slices(text)  # noqa: SLF001
    assert "".join(pieces) == text and len(pieces) > 50
    assert max(len(piece) for piece in pieces) < 3 * redact_module.SLICE
    assert (
        mask(text, []) == redact_module.mask_unfiltered(text, []) == text[: -len(tail) - 7] + f"{REDACTED} {REDACTED}\n"
    )
