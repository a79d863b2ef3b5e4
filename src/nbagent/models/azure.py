"""``AzureOpenAIChatCompletionClient``: a model deployed on Azure OpenAI, through the SDK's ``AsyncAzureOpenAI``.

Everything but the connection is :class:`~nbagent.models.openai.OpenAIChatCompletionClient`'s (the
request, streaming, errors, retries, usage, secrets); the SDK's Azure client builds Azure's URLs
(``{azure_endpoint}/openai/deployments/{deployment}/chat/completions?api-version=...``) and sends
the key as Azure's ``api-key`` header, or a Microsoft Entra ID token (``azure_ad_token`` or
``azure_ad_token_provider``) as a bearer token.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Self
from urllib.parse import urlsplit

from .. import _check as check
from ..components import MASKED_SECRET, include_secrets
from ..redact import redact_config_text
from .info import ModelInfo
from .openai import (
    OpenAIChatCompletionClient,
    OpenAIChatCompletionClientConfig,
    _sdk,
    known_model,
    sdk_http_client,
)

__all__ = ["AzureOpenAIChatCompletionClient", "AzureOpenAIChatCompletionClientConfig"]

TokenProvider = Callable[[], str | Awaitable[str]]


class AzureOpenAIChatCompletionClientConfig(OpenAIChatCompletionClientConfig):
    """AutoGen's Azure client config: the OpenAI client's, with the endpoint, deployment and API version."""

    azure_endpoint: str
    azure_deployment: str | None = None
    api_version: str
    azure_ad_token: str | None = None
    azure_ad_token_provider: Any = None
    """AutoGen dumps its ``AzureTokenProvider`` component here; nbagent loads no code from a config:
    pass ``azure_ad_token_provider=`` to the constructor instead."""


class AzureOpenAIChatCompletionClient(OpenAIChatCompletionClient):
    """A model deployed on Azure OpenAI (AutoGen's ``AzureOpenAIChatCompletionClient``).

    Args:
        model: the OpenAI model the deployment serves (``gpt-4o``...): it tells the model's
            capabilities; another name needs ``model_info``.
        azure_endpoint: ``https://<resource>.openai.azure.com/``.
        azure_deployment: the deployment's name; by default ``model``.
        api_version: Azure's API version (``2024-06-01``...).
        api_key: the resource's key; by default ``AZURE_OPENAI_API_KEY``. Or, instead of a key,
        azure_ad_token / azure_ad_token_provider: a Microsoft Entra ID token, or a function
            (sync or async) that gives a fresh one for each request.

    The other arguments are :class:`OpenAIChatCompletionClient`'s.
    """

    provider = "azure.ai.openai"
    component_config_schema = AzureOpenAIChatCompletionClientConfig  # type: ignore[assignment]  # a subclass
    component_provider_override = "nbagent.AzureOpenAIChatCompletionClient"
    key_variable = "AZURE_OPENAI_API_KEY"
    component_aliases = (
        "autogen_ext.models.openai.AzureOpenAIChatCompletionClient",
        "azure_openai_chat_completion_client",  # AutoGen's well-known provider names
        "AzureOpenAIChatCompletionClient",
    )

    def __init__(
        self,
        model: str,
        *,
        azure_endpoint: str,
        api_version: str,
        azure_deployment: str | None = None,
        api_key: str | None = None,
        azure_ad_token: str | None = None,
        azure_ad_token_provider: TokenProvider | None = None,
        default_headers: Mapping[str, str] | None = None,
        timeout: float | None = 60.0,
        max_retries: int = 2,
        model_info: ModelInfo | None = None,
        parallel_tool_calls: bool | None = None,
        **create_args: Any,
    ) -> None:
        where = "AzureOpenAIChatCompletionClient"
        check.string(where, "model", model, empty=False)
        check.string(where, "azure_endpoint", azure_endpoint, empty=False)
        _refuse_userinfo(azure_endpoint)
        check.string(where, "api_version", api_version, empty=False)
        check.string(where, "azure_deployment", azure_deployment, none=True)
        check.string(where, "azure_ad_token", azure_ad_token, none=True)
        check.function(where, "azure_ad_token_provider", azure_ad_token_provider, none=True)
        check.mapping(where, "model_info", model_info, "a ModelInfo dict", none=True)
        if model_info is None and not known_model(model):
            raise ValueError("model_info is required when model name is not a valid OpenAI model")
        key = api_key if api_key is not None else os.environ.get("AZURE_OPENAI_API_KEY")
        if not key and azure_ad_token is None and azure_ad_token_provider is None:
            raise ValueError(
                f"{where}: no credentials: pass api_key=... (or set AZURE_OPENAI_API_KEY), azure_ad_token=... "
                "or azure_ad_token_provider=..."
            )
        self._azure: dict[str, Any] = {
            "azure_endpoint": azure_endpoint,
            "azure_deployment": azure_deployment or model,
            "api_version": api_version,
            "azure_ad_token": azure_ad_token,
            "azure_ad_token_provider": azure_ad_token_provider,
        }
        self._azure_key = key or None
        super().__init__(
            model,
            api_key=key or "",
            base_url=azure_endpoint,
            default_headers=default_headers,
            timeout=timeout,
            max_retries=max_retries,
            model_info=model_info,
            parallel_tool_calls=parallel_tool_calls,
            **create_args,
        )
        self._send_args = {}  # the SDK's Azure client sends the key or the token itself
        self._secrets = (*self._secrets, *([azure_ad_token] if azure_ad_token else []))
        self._config_args.pop("base_url", None)

    def _new_sdk_client(self) -> Any:
        sdk = _sdk()
        args = self._client_args
        return sdk.AsyncAzureOpenAI(
            **self._azure,
            api_key=self._azure_key,
            default_headers=args["default_headers"],
            timeout=args["timeout"],
            max_retries=args["max_retries"],
            http_client=sdk_http_client(),
        )

    def __repr__(self) -> str:
        endpoint = self._azure["azure_endpoint"]
        return (
            f"AzureOpenAIChatCompletionClient(model={self.model_name!r}, "
            f"azure_endpoint={redact_config_text(endpoint)!r})"
        )

    def _to_config(self) -> AzureOpenAIChatCompletionClientConfig:
        base = super()._to_config().model_dump(exclude_none=True)
        base.pop("base_url", None)
        if self._azure["azure_ad_token_provider"] is not None:
            raise TypeError(
                "AzureOpenAIChatCompletionClient with an azure_ad_token_provider cannot be dumped: a function is not "
                "a config (pass it again when the client is made)"
            )
        token = self._azure["azure_ad_token"] if include_secrets() else None
        return AzureOpenAIChatCompletionClientConfig(
            **base,
            azure_endpoint=str(self._azure["azure_endpoint"]),
            azure_deployment=self._azure["azure_deployment"],
            api_version=str(self._azure["api_version"]),
            azure_ad_token=token,
        )

    @classmethod
    def _from_config(cls, config: OpenAIChatCompletionClientConfig) -> Self:
        """The client a config describes (the OpenAI client's rules for its key and fields)."""
        if getattr(config, "azure_ad_token_provider", None) is not None:
            raise ValueError(
                "AzureOpenAIChatCompletionClient config: its azure_ad_token_provider is not loaded (a config runs no "
                "code); make the client in code with azure_ad_token_provider=..."
            )
        key = config.api_key.get_secret_value() if config.api_key is not None else None
        if key is None or key == MASKED_SECRET:
            _check_environment_key(getattr(config, "azure_endpoint", None))
        return super()._from_config(config)


def _refuse_userinfo(azure_endpoint: str) -> None:
    """Refuse an endpoint with a ``user:password@``: Azure OpenAI authenticates with the ``api-key``
    header or an Entra ID token, and the URL's credentials would otherwise be shown by ``repr`` and
    sent as a second ``Authorization`` beside the token."""
    try:
        parts = urlsplit(azure_endpoint)
        has_userinfo = parts.username is not None or parts.password is not None
    except ValueError as error:
        raise ValueError(f"AzureOpenAIChatCompletionClient: azure_endpoint is not a URL ({error})") from None
    if has_userinfo:
        clean = urlsplit(redact_config_text(azure_endpoint))
        shown = clean._replace(netloc=clean.netloc.rpartition("@")[2]).geturl()
        raise ValueError(
            f"AzureOpenAIChatCompletionClient: azure_endpoint ({shown}) holds a user name or password; Azure "
            "OpenAI authenticates with api_key (its api-key header) or an Entra ID token (azure_ad_token, "
            "azure_ad_token_provider): take them out of azure_endpoint"
        )


_AZURE_HOSTS = (".openai.azure.com", ".cognitiveservices.azure.com", ".services.ai.azure.com")


def _check_environment_key(azure_endpoint: object) -> None:
    """Refuse a loaded config without a key whose ``azure_endpoint`` is not where the environment's
    ``AZURE_OPENAI_API_KEY`` is for (``AZURE_OPENAI_ENDPOINT``'s host, else an Azure OpenAI host): a
    config from elsewhere never sends that key to a server of its choosing."""
    if not os.environ.get("AZURE_OPENAI_API_KEY") or not isinstance(azure_endpoint, str):
        return
    home = os.environ.get("AZURE_OPENAI_ENDPOINT")
    try:
        host = (urlsplit(azure_endpoint).hostname or "").lower()
        home_host = (urlsplit(home).hostname or "").lower() if home else ""
    except ValueError:
        host, home_host = "", "?"
    if (host == home_host) if home else host.endswith(_AZURE_HOSTS):
        return
    where = redact_config_text(azure_endpoint)
    raise ValueError(
        f"AzureOpenAIChatCompletionClient config: it has no api_key and names azure_endpoint {where}, so "
        "AZURE_OPENAI_API_KEY from the environment would be sent there, but that key is for "
        f"{home_host or 'an Azure OpenAI host'} (AZURE_OPENAI_ENDPOINT, else *.openai.azure.com): a loaded config "
        "never sends it to another host. Put that endpoint's key in the config's api_key, or make the client in "
        "code with api_key=..."
    )
