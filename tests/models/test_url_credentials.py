"""A URL's user:password@ and the environment's key (issue 31, points 2 and 3).

``http://user:pw@host/v1``: httpx turned the userinfo into a Basic header that silently replaced the
given key, and the password was in the client's repr, every error and the trace. Now the password
never leaves the client (it is sent as an explicit Basic header; reprs, errors and dumps name the
clean URL), and a URL's credentials besides a key are refused. A loaded config never sends the
environment's ``OPENAI_API_KEY`` to another host than the one it is for.
"""

from __future__ import annotations

import base64
import json
import warnings
from typing import Any

import pytest

from nbagent import AssistantAgent, load_component
from nbagent.messages import UserMessage
from nbagent.models import ModelConnectionError, ModelServerError, OpenAIChatCompletionClient

from ..ports import refusing_port
from .chat_server import ChatServer, Reply

PASSWORD = "pw-" + "Vq83hZ0s"  # made at run time: no secret-looking literal in the repository
ENV_KEY = "sk-" + "env-0123456789abcdef"
USER = [UserMessage(content="hi", source="user")]


def with_userinfo(url: str, user: str = "alice", password: str = PASSWORD) -> str:
    return url.replace("http://", f"http://{user}:{password}@")


def test_url_credentials_and_a_key_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    url = with_userinfo("http://127.0.0.1:9/v1")
    with pytest.raises(ValueError, match=r"user name and password .* api_key gives a key .* api_key=''") as given:
        OpenAIChatCompletionClient("m", base_url=url, api_key="sk-" + "given-0123456789")
    monkeypatch.setenv("OPENAI_API_KEY", ENV_KEY)
    with pytest.raises(ValueError, match="OPENAI_API_KEY from the environment gives a key") as from_env:
        OpenAIChatCompletionClient("m", base_url=url)
    with pytest.raises(ValueError, match="Authorization of its own") as header:
        OpenAIChatCompletionClient("m", base_url=url, api_key="", default_headers={"authorization": "Token x"})
    for error in (given, from_env, header):
        assert PASSWORD not in str(error.value) and "alice" not in str(error.value)
        assert "http://127.0.0.1:9/v1" in str(error.value)


async def test_url_credentials_are_sent_as_basic_auth_and_never_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", ENV_KEY)
    with ChatServer() as server:
        client = OpenAIChatCompletionClient("m", base_url=with_userinfo(server.base_url), api_key="", max_retries=0)
        server.script(Reply.text("ok"), Reply.error(500, f"upstream refused alice:{PASSWORD}"))
        assert (await client.create(USER)).content == "ok"
        with pytest.raises(ModelServerError) as failed:
            await client.create(USER)
        token = base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
        assert [request.headers.get("authorization") for request in server.requests] == [f"Basic {token}"] * 2
        texts = [repr(client), str(client.base_url), str(failed.value), repr(failed.value)]
        texts.append(client.dump_component().model_dump_json())
        assert client.base_url == server.base_url + "/"
        assert client.dump_component(include_secrets=True).config["base_url"] == with_userinfo(server.base_url)
        await client.close()
    with refusing_port() as port:
        down = OpenAIChatCompletionClient(
            "m", base_url=with_userinfo(f"http://127.0.0.1:{port}/v1"), api_key="", max_retries=0
        )
        with pytest.raises(ModelConnectionError) as refused:
            await down.create(USER)
    texts += [str(refused.value), repr(down)]
    await down.close()
    for text in texts:
        assert PASSWORD not in text and token not in text and "alice:" not in text, text


def client_config(base_url: str | None, **config: Any) -> dict[str, Any]:
    """An OpenAI client's config as AutoGen writes one (its provider name)."""
    fields: dict[str, Any] = {"model": "gpt-4o", **config}
    if base_url is not None:
        fields["base_url"] = base_url
    return {"provider": "autogen_ext.models.openai.OpenAIChatCompletionClient", "config": fields}


async def test_a_loaded_config_never_sends_the_environment_key_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", ENV_KEY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with ChatServer() as server:
        for config in (client_config(server.base_url), client_config(server.base_url, api_key="**********")):
            with pytest.raises(ValueError, match=r"OPENAI_API_KEY .* is for api\.openai\.com") as refused:
                load_component(config)
            assert server.base_url in str(refused.value) and ENV_KEY not in str(refused.value)
            agent = {
                "provider": "nbagent.AssistantAgent",
                "config": {"name": "a", "model_client": config},
            }
            with pytest.raises(ValueError, match="never sends it to another host"):
                load_component(json.dumps(agent))  # nested in an agent's config too
        assert server.requests == []
        # An explicit key, or none: loaded and sent as the config says.
        explicit = load_component(client_config(server.base_url, api_key="sk-" + "server-own-0123456"))
        keyless = load_component(client_config(server.base_url, api_key=""))
        server.script(Reply.text("a"), Reply.text("b"), Reply.text("c"))
        await explicit.create(USER)
        await keyless.create(USER)
        # The environment says its key is this server's: the config may use it.
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from_env = load_component(client_config(server.base_url))
        await from_env.create(USER)
        sent = [request.headers.get("authorization") for request in server.requests]
        assert sent == ["Bearer " + "sk-" + "server-own-0123456", None, f"Bearer {ENV_KEY}"]
        for client in (explicit, keyless, from_env):
            await client.close()
    # A config naming OpenAI itself (or no base_url) may use the environment's key, as before.
    monkeypatch.delenv("OPENAI_BASE_URL")
    assert isinstance(load_component(client_config("https://api.openai.com/v1")), OpenAIChatCompletionClient)
    assert isinstance(load_component(client_config(None)), OpenAIChatCompletionClient)
    assert isinstance(AssistantAgent("a", load_component(client_config(None))), AssistantAgent)
