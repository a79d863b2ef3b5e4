"""The secrets of issue 31's matrix and the scripted server that echoes them back.

Seven secrets, one per way a secret reaches nbagent; the server echoes all of them (bare, no name or
shape around them) in its answers, thoughts, tool arguments and errors, so every artefact gets the
chance to leak each. Used by ``test_secrets_matrix.py`` in the test process and, through the
environment, in a real kernel (saved notebook).
"""

from __future__ import annotations

import json
import os
import secrets as random
from typing import Any

from tests.models.chat_server import ChatServer, Reply

ENV = "NBAGENT_TEST_SECRETS"  # the secrets, as JSON, for a kernel's notebook


def new_secrets() -> dict[str, str]:
    """Fresh values (made at run time; none has a shape the patterns know but the ``sk-`` one)."""
    hexa = random.token_hex
    return {
        "api key": "kq" + hexa(12),  # api_key= of the main client
        "bearer token": "gw" + hexa(12),  # Authorization: Bearer ... of a keyless gateway client
        "URL password": "pw" + hexa(12),  # http://user:<password>@host/v1
        "header key": "hk" + hexa(12),  # default_headers X-Portkey-Api-Key, echoed by the server
        "extra_headers key": "xh" + hexa(12),  # the create argument extra_headers={"api-key": ...}
        "env key": "ev" + hexa(12),  # OPENAI_API_KEY (with OPENAI_BASE_URL naming the server)
        "sk- shaped key": "sk-" + "proj-" + hexa(12),  # held by nobody: masked by its shape
    }


def echo(values: dict[str, str]) -> str:
    """Every secret, bare."""
    return "echo: " + " | ".join(values.values())


def responder(values: dict[str, str]) -> Any:
    """Answers by the conversation: a task with ERROR gets a 400 echoing every secret; TOOL gets a call
    of ``lookup`` whose arguments and thought hold them; a tool result or any other task, a streamed
    answer holding them (its reasoning too)."""
    text = echo(values)

    def answer(body: Any) -> Reply:
        last = body["messages"][-1]
        content = last.get("content") if isinstance(last.get("content"), str) else ""
        if last["role"] == "user" and "ERROR" in content:
            return Reply.error(400, f"refused: {text}")
        if last["role"] == "user" and "TOOL" in content and body.get("tools"):
            arguments = {"query": text, "token": values["api key"], "api_key": values["env key"]}
            return Reply.call(("lookup", arguments), content=f"thinking {text}", pieces=5)
        return Reply.text(f"The answer. {text}", reasoning=f"reasoning {text}", pieces=5)

    return answer


def start_server(values: dict[str, str]) -> ChatServer:
    return ChatServer(responder=responder(values)).start()


def user_url(base_url: str, values: dict[str, str]) -> str:
    return base_url.replace("http://", f"http://alice:{values['URL password']}@")


def clients(base_url: str, values: dict[str, str]) -> dict[str, Any]:
    """The four clients, one per way their secrets come: key and headers, URL, gateway token, environment
    (the caller sets ``OPENAI_API_KEY`` to the env key and ``OPENAI_BASE_URL`` to ``base_url``)."""
    from nbagent import OpenAIChatCompletionClient

    return {
        "keyed": OpenAIChatCompletionClient(
            "gpt-4o",
            base_url=base_url,
            api_key=values["api key"],
            default_headers={"X-Portkey-Api-Key": values["header key"]},
            extra_headers={"api-key": values["extra_headers key"]},
            max_retries=0,
        ),
        "url": OpenAIChatCompletionClient("gpt-4o", base_url=user_url(base_url, values), api_key="", max_retries=0),
        "gateway": OpenAIChatCompletionClient(
            "gpt-4o",
            base_url=base_url,
            api_key="",
            default_headers={"Authorization": f"Bearer {values['bearer token']}"},
            max_retries=0,
        ),
        "env": OpenAIChatCompletionClient("gpt-4o", max_retries=0),  # OPENAI_API_KEY to OPENAI_BASE_URL
    }


def lookup(query: str, token: str, api_key: str) -> str:
    """Look something up (echoes what it was given)."""
    return f"found {query} with {token} and {api_key}"


def from_environment() -> dict[str, str]:
    values: dict[str, str] = json.loads(os.environ[ENV])
    return values
