"""Model info and model clients as AutoGen 0.7.5 defines them (issue 28.3), against AutoGen's own.

``ModelInfo`` as a pydantic field type, ``validate_model_info``, the OpenAI client's "model_info is
required" for a model OpenAI's API does not serve and its acceptance of ``api_key=""``,
``AzureOpenAIChatCompletionClient`` on the SDK's ``AsyncAzureOpenAI`` over real HTTP, and the replay
client's ``count_tokens``, ``remaining_tokens`` and streaming of scripted results.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from autogen_core.models import ModelInfo as AgModelInfo
from autogen_core.models import UserMessage as AgUserMessage
from autogen_core.models import validate_model_info as ag_validate_model_info
from autogen_ext.models.openai import AzureOpenAIChatCompletionClient as AgAzure
from autogen_ext.models.openai import OpenAIChatCompletionClient as AgOpenAI
from autogen_ext.models.replay import ReplayChatCompletionClient as AgReplay
from pydantic import BaseModel

from nbagent import (
    AssistantAgent,
    AzureOpenAIChatCompletionClient,
    CreateResult,
    ModelInfo,
    OpenAIChatCompletionClient,
    ReplayChatCompletionClient,
    SystemMessage,
    UserMessage,
    load_component,
    validate_model_info,
)
from nbagent.models import ModelAuthenticationError
from tests.models.chat_server import ChatServer, Reply

FAKE_KEY = "sk-" + "test-0123456789"  # a fake key, made at run time
FULL: dict[str, Any] = {
    "vision": False,
    "function_calling": True,
    "json_output": True,
    "family": "unknown",
    "structured_output": True,
}


# --------------------------------------------------------------------------- ModelInfo


class Settings(BaseModel):
    """A user's config model holding a ModelInfo (AutoGen's is a typing_extensions.TypedDict)."""

    name: str
    info: ModelInfo


class AgSettings(BaseModel):
    name: str
    info: AgModelInfo


def test_model_info_is_a_pydantic_field_type_as_autogens() -> None:
    ours = Settings(name="local", info=ModelInfo(**FULL))
    theirs = AgSettings(name="local", info=AgModelInfo(**FULL))
    assert ours.model_dump() == theirs.model_dump()
    assert Settings.model_validate_json(ours.model_dump_json()) == ours
    assert Settings.model_json_schema()["$defs"]["ModelInfo"]["properties"].keys() >= FULL.keys()


@pytest.mark.parametrize("missing", ["vision", "function_calling", "json_output", "family"])
def test_validate_model_info_refuses_what_autogen_refuses(missing: str) -> None:
    info = {key: value for key, value in FULL.items() if key != missing}
    with pytest.raises(ValueError) as ours:
        validate_model_info(info)
    with pytest.raises(ValueError) as theirs:
        ag_validate_model_info(info)  # type: ignore[arg-type]
    assert str(ours.value) == str(theirs.value)


def test_validate_model_info_warns_as_autogen_without_structured_output() -> None:
    info = {key: value for key, value in FULL.items() if key != "structured_output"}
    with pytest.warns(UserWarning, match="Missing required field 'structured_output'") as ours:
        validate_model_info(info)
    with pytest.warns(UserWarning) as theirs:
        ag_validate_model_info(info)  # type: ignore[arg-type]
    assert str(ours[0].message) == str(theirs[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        validate_model_info(FULL)


# --------------------------------------------------------------------------- the OpenAI client's constructor


def test_an_unknown_model_without_model_info_is_refused_as_autogen() -> None:
    with pytest.raises(ValueError) as theirs:
        AgOpenAI(model="some-unknown-model", api_key=FAKE_KEY)
    with pytest.raises(ValueError) as ours:
        OpenAIChatCompletionClient(model="some-unknown-model", api_key=FAKE_KEY)
    assert str(ours.value) == str(theirs.value) == "model_info is required when model name is not a valid OpenAI model"
    for model in ("gpt-4o", "gpt-4o-2024-08-06", "gpt-4", "gpt-4-turbo", "o3-mini", "gpt-4.1-nano"):
        AgOpenAI(model=model, api_key=FAKE_KEY)  # known to both
        assert OpenAIChatCompletionClient(model=model, api_key=FAKE_KEY).model_info["family"] != "unknown"
    given = OpenAIChatCompletionClient(model="some-unknown-model", api_key=FAKE_KEY, model_info=ModelInfo(**FULL))
    assert given.model_info["function_calling"] is True
    # nbagent's kept difference: another server (base_url) names its models freely
    local = OpenAIChatCompletionClient(model="llama3.1", base_url="http://127.0.0.1:9/v1", api_key="")
    assert local.model_info["family"] == "unknown"


async def test_an_empty_api_key_is_accepted_and_the_server_refuses_the_request() -> None:
    # AutoGen 0.7.5 passes the key to the SDK as it is; openai 1.x before 2 takes "" (the request then
    # fails), the SDK installed here refuses it at construction. nbagent takes it and sends no key.
    client = OpenAIChatCompletionClient(model="gpt-4o", api_key="")
    assert client.model_name == "gpt-4o"
    with ChatServer(api_key=FAKE_KEY) as server:
        keyless = OpenAIChatCompletionClient(model="gpt-4o", base_url=server.base_url, api_key="")
        with pytest.raises(ModelAuthenticationError):
            await keyless.create([UserMessage(content="hi", source="user")])
        assert "authorization" not in server.requests[0].headers
        await keyless.close()
    await client.close()


# --------------------------------------------------------------------------- Azure


def azure_client(server: ChatServer, **kwargs: Any) -> AzureOpenAIChatCompletionClient:
    endpoint = server.base_url.removesuffix("/v1")
    return AzureOpenAIChatCompletionClient(
        model="gpt-4o", azure_endpoint=endpoint, azure_deployment="my-gpt", api_version="2024-06-01", **kwargs
    )


async def test_azure_client_speaks_azures_routes_and_key_over_http() -> None:
    with ChatServer() as server:
        server.script(Reply.text("hello from azure"), Reply.text("streamed from azure"))
        client = azure_client(server, api_key=FAKE_KEY)
        result = await client.create([UserMessage(content="hi", source="user")])
        assert result.content == "hello from azure"
        chunks = [item async for item in client.create_stream([UserMessage(content="again", source="user")])]
        assert chunks[-1].content == "streamed from azure" and "".join(chunks[:-1]) == "streamed from azure"
        await client.close()
    for request in server.requests:
        assert request.path == "/openai/deployments/my-gpt/chat/completions?api-version=2024-06-01"
        assert request.headers["api-key"] == FAKE_KEY and "authorization" not in request.headers
        assert request.status == 200
    assert FAKE_KEY in client.secrets


async def test_azure_client_sends_an_entra_id_token_from_its_provider() -> None:
    tokens = iter(["token-1", "token-2"])
    with ChatServer() as server:
        server.script(Reply.text("one"), Reply.text("two"))
        client = azure_client(server, azure_ad_token_provider=lambda: next(tokens))
        agent = AssistantAgent("a", client)
        await agent.run(task="first")
        await agent.run(task="second")
        await client.close()
    assert [request.headers["authorization"] for request in server.requests] == ["Bearer token-1", "Bearer token-2"]
    assert all("api-key" not in request.headers for request in server.requests)


def test_azure_client_config_loads_from_autogens_and_keeps_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    # What AutoGen's AzureOpenAIChatCompletionClient(...).dump_component() gives (its dump imports the
    # azure-identity package, not installed here, so it is written out): the key masked.
    dumped: dict[str, Any] = {
        "provider": "autogen_ext.models.openai.AzureOpenAIChatCompletionClient",
        "component_type": "model",
        "version": 1,
        "component_version": 1,
        "config": {
            "model": "gpt-4o",
            "api_key": "**********",
            "azure_endpoint": "https://example-resource.openai.azure.com/",
            "azure_deployment": "my-gpt",
            "api_version": "2024-06-01",
        },
    }
    assert set(dumped["config"]) <= set(AgAzure.component_config_schema.model_fields)
    dumped["config"]["api_key"] = FAKE_KEY  # as a trusted config would hold it
    client = load_component(dumped)
    assert isinstance(client, AzureOpenAIChatCompletionClient)
    assert client.base_url == "https://example-resource.openai.azure.com/openai/deployments/my-gpt/"
    ours = client.dump_component()
    assert ours.provider == dumped["provider"]  # dumped under the provider it was loaded under (issue 40.5)
    assert FAKE_KEY not in ours.model_dump_json()
    assert {"azure_endpoint", "azure_deployment", "api_version", "model"} <= ours.config.keys()
    with pytest.raises(ValueError, match="no credentials"):
        load_component(ours.model_dump())
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", FAKE_KEY)  # the key comes from where it is kept
    again = load_component(ours.model_dump())
    assert isinstance(again, AzureOpenAIChatCompletionClient) and again.base_url == client.base_url


def test_a_loaded_azure_config_never_sends_the_environments_key_to_another_host(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", FAKE_KEY)
    monkeypatch.delenv("AZURE_OPENAI_ENDPOINT", raising=False)
    config: dict[str, Any] = {
        "provider": "autogen_ext.models.openai.AzureOpenAIChatCompletionClient",
        "component_type": "model",
        "config": {"model": "gpt-4o", "azure_endpoint": "http://127.0.0.1:9/", "api_version": "v"},
    }
    for api_key in (None, "**********"):
        if api_key is not None:
            config["config"]["api_key"] = api_key
        with pytest.raises(ValueError, match="AZURE_OPENAI_API_KEY from the environment would be sent there"):
            load_component(config)
    config["config"]["azure_endpoint"] = "https://mine.openai.azure.com/"
    with pytest.warns(UserWarning, match="the key is read from AZURE_OPENAI_API_KEY instead"):
        assert isinstance(load_component(config), AzureOpenAIChatCompletionClient)
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", "https://127.0.0.1:9/")  # the key's own endpoint
    with pytest.raises(ValueError, match="is for 127.0.0.1"):
        load_component(config)
    config["config"]["azure_endpoint"] = "https://127.0.0.1:9/"
    assert isinstance(load_component(config), AzureOpenAIChatCompletionClient)
    config["config"]["api_key"] = FAKE_KEY  # a config with its own key goes where it says
    config["config"]["azure_endpoint"] = "http://127.0.0.1:8/"
    assert isinstance(load_component(config), AzureOpenAIChatCompletionClient)
    AzureOpenAIChatCompletionClient(model="gpt-4o", azure_endpoint="http://127.0.0.1:8/", api_version="v")  # in code


def test_azure_endpoint_with_a_password_is_refused_and_never_shown() -> None:
    """A user:password in azure_endpoint is refused, naming the parameter, without the password
    (it would be shown by repr and sent as a second Authorization beside the Entra ID token)."""
    for credentials in ({"azure_ad_token": FAKE_KEY}, {"api_key": FAKE_KEY}):
        with pytest.raises(ValueError, match="azure_endpoint") as caught:
            AzureOpenAIChatCompletionClient(
                model="gpt-4o",
                azure_endpoint="https://bob:hunter2pass@x.openai.azure.com/",
                api_version="v",
                **credentials,
            )
        assert "hunter2pass" not in str(caught.value) and "https://x.openai.azure.com/" in str(caught.value)
    client = AzureOpenAIChatCompletionClient(
        model="gpt-4o",
        azure_endpoint="https://x.openai.azure.com/?api-key=hunter2pass",
        api_version="v",
        api_key=FAKE_KEY,
    )
    assert "hunter2pass" not in repr(client)


def test_azure_client_needs_credentials_and_a_known_model() -> None:
    with pytest.raises(ValueError, match="no credentials"):
        AzureOpenAIChatCompletionClient(model="gpt-4o", azure_endpoint="https://x.openai.azure.com/", api_version="v")
    with pytest.raises(ValueError, match="model_info is required"):
        AzureOpenAIChatCompletionClient(
            model="house-model", azure_endpoint="https://x.openai.azure.com/", api_version="v", api_key=FAKE_KEY
        )


# --------------------------------------------------------------------------- the replay client


def test_replay_count_tokens_equals_autogens() -> None:
    messages = [
        SystemMessage(content="You are a helpful assistant."),
        UserMessage(content="What is the weather in Paris today?", source="user"),
    ]
    theirs = AgReplay(["x"]).count_tokens([AgUserMessage(content=m.content, source="user") for m in messages])
    assert ReplayChatCompletionClient(["x"]).count_tokens(messages) == theirs == 12
    one = [UserMessage(content="Hello there, how are you today?", source="user")]
    assert ReplayChatCompletionClient(["x"]).count_tokens(one) == 6


async def test_replay_remaining_tokens_as_autogens() -> None:
    client, theirs = ReplayChatCompletionClient(["one two three"]), AgReplay(["one two three"])
    messages = [UserMessage(content="count to three", source="user")]
    assert client.remaining_tokens(messages) == theirs.remaining_tokens([]) == 10_000
    await client.create(messages)
    used = client.total_usage()
    assert client.remaining_tokens(messages) == 10_000 - used.prompt_tokens - used.completion_tokens < 10_000


async def test_replay_streams_scripted_texts_in_pieces_and_scripted_results_whole() -> None:
    result = CreateResult(finish_reason="stop", content="a scripted result", thought="why")
    script: list[Any] = ["Hello there world", result]
    ours, theirs = ReplayChatCompletionClient(script), AgReplay(script)
    messages = [UserMessage(content="hi", source="user")]
    for _ in script:
        mine = [item async for item in ours.create_stream(messages)]
        autogens = [item async for item in theirs.create_stream([AgUserMessage(content="hi", source="user")])]
        assert [item for item in mine if isinstance(item, str)] == [item for item in autogens if isinstance(item, str)]
        assert mine[-1].content == autogens[-1].content
    assert mine == [result]
