"""Component configs: ``dump_component()`` and ``load_component()``, in AutoGen's declarative format.

A component (the agent, a model client, a model context, a tool, a workbench, a memory, a handoff)
dumps itself as a :class:`ComponentModel`: ``provider`` (which class), ``component_type``,
``version``/``component_version``, ``description``, ``label`` and ``config`` (what its constructor
needs), a JSON-ready structure. ``load_component()`` builds the component again. The format is
AutoGen 0.7.5's, and a config that names AutoGen's providers (``autogen_agentchat.agents.AssistantAgent``,
``autogen_ext.models.openai.OpenAIChatCompletionClient``, ``autogen_core.tools.FunctionTool``...) loads
into nbagent's classes: each class lists the AutoGen providers it stands for (``component_aliases``).

Two things a config can hold are handled with care:

- **Secrets.** An API key (or a header or environment variable named like a secret) enters a
  dumped config only with ``dump_component(include_secrets=True)``. AutoGen writes a key given to
  its client as a ``SecretStr`` (``"**********"`` in JSON); nbagent leaves it out, and a client
  loaded without one reads it from the environment as a new client does. Without
  ``include_secrets=True`` every string of the dump also goes through
  :func:`~nbagent.redact.redact_config_text` (keys masked, URLs' ``user:password@`` stripped, their
  secret query parameters masked).
- **Code.** A ``FunctionTool``'s config holds its function's source code, and loading it runs that
  code. It is loaded only with ``load_component(..., allow_source_code=True)`` (for a config from a
  source you trust), or from the functions you pass, ``load_component(..., functions=[my_tool])``,
  which runs nothing from the config. A provider that is neither nbagent's nor AutoGen's is looked up
  among the modules already imported: a config never makes nbagent import a module.
- **Commands.** An ``McpWorkbench`` config over stdio names a program the workbench starts (with the
  user's rights) on first use. It is loaded only with ``load_component(..., allow_commands=True)``;
  otherwise :class:`CommandNotAllowedError` names the command line it would have run.

Each class keeps its own ``_to_config`` / ``_from_config`` next to it; this module holds the
machinery (AutoGen's ``Component`` protocol), and what configs of several classes share.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import inspect
import json
import sys
import textwrap
import warnings
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, Literal, Self, Union, cast, overload

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, create_model
from typing_extensions import TypeVar

from . import _check as check
from .hooks import Hook
from .messages import StructuredMessage
from .redact import redact_config_text

__all__ = [
    "Alias",
    "Component",
    "ComponentBase",
    "ComponentFromConfig",
    "ComponentLoader",
    "ComponentSchemaType",
    "ComponentToConfig",
    "ComponentModel",
    "CommandNotAllowedError",
    "ComponentType",
    "SourceCodeNotAllowedError",
    "StructuredMessageFactory",
    "dump_nested",
    "ImportFromModule",
    "include_secrets",
    "is_component_class",
    "is_component_instance",
    "load_component",
    "load_nested",
    "schema_to_model",
]

ComponentType = str
"""The logical kind of a component: ``"agent"``, ``"model"``, ``"tool"``, ``"workbench"``,
``"memory"``, ``"chat_completion_context"``, ``"handoff"``..."""

MASKED_SECRET = "**********"
"""How pydantic writes a ``SecretStr`` in JSON, so what an AutoGen config exported as JSON holds
where its client's API key was."""

T = TypeVar("T")


class ComponentModel(BaseModel):
    """Everything needed to build a component again: AutoGen's ``ComponentModel``, field for field."""

    provider: str
    """The class to build (``nbagent.AssistantAgent``, or an AutoGen provider nbagent stands for)."""
    component_type: ComponentType | None = None
    version: int | None = None
    """The version of the config's format; ``None``: the loading class's current one."""
    component_version: int | None = None
    description: str | None = None
    label: str | None = None
    """A human-readable name; by default the class name."""
    config: dict[str, Any]
    """What the class's ``_from_config`` is given, validated by its ``component_config_schema``."""


DUMPED: Hook[[ComponentModel], ComponentModel] = Hook("dumped")
"""A component's dump as a model another library's configs also take (AutoGen's teams validate their
participants' dumps as AutoGen's ``ComponentModel``): the same fields in a class both take; ``None``:
nbagent's as it is (registered by :mod:`nbagent.autogen` once AutoGen is imported)."""

FOREIGN_COMPONENT: Hook[[ComponentModel], object] = Hook("foreign component")
"""A config whose provider nbagent has no class for but an adapter builds (AutoGen's teams and
termination conditions, with nbagent's counterparts of their parts), under the load's settings
(``allow_source_code``, ``allow_commands``, ``functions``); ``None``: not its library's."""


class SourceCodeNotAllowedError(ValueError):
    """A config holds Python source code (a ``FunctionTool``'s) and loading it was not allowed."""


class CommandNotAllowedError(ValueError):
    """A config names a program to start (a stdio MCP server's command) and loading it was not allowed."""


# --------------------------------------------------------------------------- what one dump or load allows

_INCLUDE_SECRETS: ContextVar[bool] = ContextVar("nbagent_include_secrets", default=False)
_ALLOW_SOURCE: ContextVar[bool] = ContextVar("nbagent_allow_source_code", default=False)
_ALLOW_COMMANDS: ContextVar[bool] = ContextVar("nbagent_allow_commands", default=False)
_FUNCTIONS: ContextVar[Mapping[str, Callable[..., Any]] | None] = ContextVar("nbagent_functions", default=None)


def include_secrets() -> bool:
    """Whether the dump in progress was asked for secrets (``dump_component(include_secrets=True)``):
    a ``_to_config`` writes an API key only then."""
    return _INCLUDE_SECRETS.get()


@contextlib.contextmanager
def _set(var: ContextVar[T], value: T | None) -> Iterator[None]:
    """``var`` set to ``value`` for the block; ``None`` leaves it as the enclosing call set it."""
    if value is None:
        yield
        return
    reset = var.set(value)
    try:
        yield
    finally:
        var.reset(reset)


def _function_map(functions: Sequence[Callable[..., Any]] | Mapping[str, Callable[..., Any]] | None) -> Any:
    if functions is None:
        return None
    where = "load_component"
    if isinstance(functions, Mapping):
        for key, value in functions.items():
            check.string(where, "functions key", key)
            check.function(where, f"functions[{key!r}]", value)
        return dict(functions)
    items = check.sequence(where, "functions", functions, "a list of functions or a dict of tool name to function")
    found: dict[str, Callable[..., Any]] = {}
    for index, func in enumerate(items):
        check.function(where, f"functions[{index}]", func)
        found[getattr(func, "__name__", f"function_{index}")] = func
    return found


# --------------------------------------------------------------------------- the registry of providers

_PROVIDERS: dict[str, type[Any]] = {}
_PENDING_MODULES: list[Callable[[], object]] = []


def register_component_modules(load: Callable[[], object]) -> None:
    """``load`` imports modules of components that ``import nbagent`` leaves for their first use (MCP,
    the cassette and Azure clients): it runs, once, before a provider string is looked for in vain and
    before every provider is listed, so that a config names them as it names the others."""
    _PENDING_MODULES.append(load)


def _providers() -> dict[str, type[Any]]:
    """Every provider registered, the pending modules' too (imported now)."""
    while _PENDING_MODULES:
        _PENDING_MODULES.pop(0)()
    return _PROVIDERS


def _provider_of(cls: type) -> str:
    override = cls.__dict__.get("component_provider_override")
    if isinstance(override, str):
        return override
    return f"{cls.__module__}.{cls.__qualname__}"


_LOADED_AS: dict[int, tuple[str, str | None, str | None]] = {}
"""``(provider, description, label)`` of a config naming one of a class's ``component_aliases`` (AutoGen's
provider), by the id of the component it built (while it lives): its dumps name that provider, so that
AutoGen's dump-load-dump round trips hold (:func:`_remember_loaded_as`)."""


def _remember_loaded_as(instance: object, loaded: ComponentModel) -> None:
    """Let ``instance``, built from ``loaded`` under another provider than its class's own, dump as ``loaded``
    names it (an object that cannot be weakly referenced dumps as its class's, as it is not remembered)."""
    try:
        weakref.finalize(instance, _LOADED_AS.pop, id(instance), None)
    except TypeError:
        return
    _LOADED_AS[id(instance)] = (loaded.provider, loaded.description, loaded.label)


def provider_class(provider: str) -> type[Any] | None:
    """The nbagent class a provider string builds (``nbagent.X`` or an alias), ``None`` if none."""
    return _PROVIDERS.get(provider) or _providers().get(provider)


def known_providers() -> dict[str, str]:
    """Every provider string nbagent loads, with the nbagent class it builds (``nbagent.X``)."""
    return {provider: _provider_of(cls) for provider, cls in sorted(_providers().items())}


def _resolve(provider: str) -> type[Any]:
    """The class a provider string names: nbagent's (or the AutoGen provider it stands for), else a
    :class:`Component` subclass of a module already imported."""
    found = provider_class(provider)
    if found is not None:
        return found
    module_name, _, class_name = provider.rpartition(".")
    if not module_name:
        raise ValueError(f"load_component: provider {provider!r} is not a dotted path (module.Class)")
    root = module_name.split(".")[0]
    ours = sorted(name for name in _providers() if name.split(".")[0] == root and root != "nbagent")
    if ours:  # a package nbagent stands in for (AutoGen's): the providers of it nbagent loads
        raise ValueError(
            f"load_component: nbagent has no counterpart of {provider!r}. The providers it loads from "
            f"{root}: {', '.join(ours)}"
        )
    module = sys.modules.get(module_name)
    if module is None:
        raise ValueError(
            f"load_component: no component {provider!r}: it is not one of nbagent's (nor AutoGen's that nbagent "
            f"loads), and its module {module_name!r} is not imported; a config never makes nbagent import a "
            "module: import it first if you trust it"
        )
    value = getattr(module, class_name, None)
    if not (isinstance(value, type) and is_component_class(value)):
        raise TypeError(f"load_component: {provider!r} is not a component class (a subclass of nbagent's Component)")
    return value


# --------------------------------------------------------------------------- the protocol


def _description_of(cls: type) -> str | None:
    """AutoGen's default description: the class's own docstring up to its first blank line (or its
    ``Args:``/``Parameters:``/``Attributes:`` section)."""
    doc = cls.__doc__
    if not doc:
        return None
    text = doc.strip()
    for marker in ("\n\nArgs:", "\n\nParameters:", "\n\nAttributes:", "\n\n"):
        text = text.split(marker)[0]
    return text.strip()


def _reveal(value: Any) -> Any:
    """A dumped config with every ``SecretStr`` written out (only for ``include_secrets=True``)."""
    if isinstance(value, SecretStr):
        return value.get_secret_value()
    if isinstance(value, dict):
        return {key: _reveal(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_reveal(item) for item in value]
    return value


def _hide(value: Any) -> Any:
    """A dumped config without any secret ``SecretStr`` (a ``_to_config`` should not write one by
    default); an empty one (``api_key=""``: send no key) is no secret and stays, as ``""``."""
    if isinstance(value, dict):
        return {key: _hide(item) for key, item in value.items() if not _is_secret(item)}
    if isinstance(value, list):
        return [_hide(item) for item in value if not _is_secret(item)]
    if isinstance(value, SecretStr):
        return ""
    if isinstance(value, str):  # a key in a URL, an argument, a header value...
        return redact_config_text(value)
    return value


def _is_secret(value: Any) -> bool:
    return isinstance(value, SecretStr) and value.get_secret_value() != ""


# The config types of AutoGen's generic classes; by default (a bare ``Component``) any config.
ConfigT = TypeVar("ConfigT", bound=BaseModel, default=Any)
FromConfigT = TypeVar("FromConfigT", bound=BaseModel, contravariant=True, default=Any)
ToConfigT = TypeVar("ToConfigT", bound=BaseModel, covariant=True, default=Any)


class ComponentToConfig(Generic[ToConfigT]):
    """The dumping half of AutoGen's component protocol: the class variables, ``_to_config()`` and
    :meth:`dump_component`. ``component_provider_override`` is the class's provider string
    (``nbagent.X``); ``component_aliases`` the other providers it loads (AutoGen's).
    ``component_version`` is the config format's version: an older config goes to
    ``_from_config_past_version``."""

    __slots__ = ()  # a mixin: classes with slots of their own (the model contexts) keep them

    component_type: ClassVar[ComponentType]
    component_version: ClassVar[int] = 1
    component_provider_override: ClassVar[str | None] = None
    component_description: ClassVar[str | None] = None
    component_label: ClassVar[str | None] = None
    component_aliases: ClassVar[tuple[str, ...]] = ()
    """Other provider strings (AutoGen's) whose configs this class loads."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = cls.__dict__
        provider = own.get("component_provider_override")
        if isinstance(provider, str):
            _PROVIDERS[provider] = cls
        for alias in own.get("component_aliases", ()):
            _PROVIDERS[alias] = cls

    def _to_config(self) -> ToConfigT:
        """The config that builds a component like this one."""
        raise NotImplementedError(f"{type(self).__name__} does not support dumping to config")

    def dump_component(self, *, include_secrets: bool | None = None) -> ComponentModel:
        """This component as a :class:`ComponentModel` (``.model_dump_json()`` for its JSON).

        ``include_secrets=True`` writes API keys and secret headers into the config (into the
        nested components' too); by default none is written.
        """
        cls = type(self)
        provider = _provider_of(cls)
        if "<locals>" in provider:
            raise TypeError(f"Cannot dump component with local class: {provider}")
        if not hasattr(cls, "component_type"):
            raise AttributeError(f"{cls.__name__}: component_type not defined")
        check.boolean(f"{cls.__name__}.dump_component", "include_secrets", include_secrets, none=True)
        with _set(_INCLUDE_SECRETS, include_secrets):
            config = self._to_config().model_dump(exclude_none=True)
            config = _reveal(config) if _INCLUDE_SECRETS.get() else _hide(config)
        # loaded from a config naming AutoGen's provider: dumped under it (its description and label too)
        provider, description, label = _LOADED_AS.get(id(self), (provider, None, None))
        model = ComponentModel(
            provider=provider,
            component_type=self.component_type,
            version=self.component_version,
            component_version=self.component_version,
            description=description or self.component_description or _description_of(cls),
            label=label or self.component_label or cls.__name__,
            config=config,
        )
        return DUMPED(model) or model


class ComponentFromConfig(Generic[FromConfigT]):
    """The building half of AutoGen's component protocol: ``_from_config(config)`` and
    ``_from_config_past_version(config, version)``."""

    __slots__ = ()

    @classmethod
    def _from_config(cls, config: FromConfigT) -> Self:
        """A new component from its validated config."""
        raise NotImplementedError(f"{cls.__name__} does not support loading from config")

    @classmethod
    def _from_config_past_version(cls, config: dict[str, Any], version: int) -> Self:
        """A new component from a config of an older ``component_version``: by default read with the
        current schema (nbagent's schemas accept the older fields AutoGen's configs had); a config the
        current schema refuses raises AutoGen's ``NotImplementedError`` (the class must implement this)."""
        schema: type[BaseModel] = getattr(cls, "component_config_schema")  # noqa: B009 (set by the subclass)
        try:
            current = schema.model_validate(config)
        except ValidationError as error:
            raise NotImplementedError(
                f"Tried to load component {cls} which is on version {getattr(cls, 'component_version', 1)} "
                f"with a config on "
                f"version {version} but _from_config_past_version is not implemented (and the config does not "
                f"validate with the current {schema.__name__})"
            ) from error
        return cls._from_config(current)  # type: ignore[arg-type]


class ComponentSchemaType(Generic[ConfigT]):
    """The class variable ``component_config_schema``: the pydantic model of the config."""

    __slots__ = ()

    component_config_schema: ClassVar[type[BaseModel]]
    required_class_vars: ClassVar[list[str]] = ["component_config_schema", "component_type"]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Warn, as AutoGen does, when a component class (one that implements ``_from_config``) is
        defined without its class variables; the bases it implements the protocol for need none, and
        a variable the class body declares (``component_config_schema: ClassVar[...]``) is set later."""
        super().__init_subclass__(**kwargs)
        if "_from_config" in cls.__dict__:
            declared = cls.__dict__.get("__annotations__", {})
            for var in cls.required_class_vars:
                if not hasattr(cls, var) and var not in declared:
                    warnings.warn(
                        f"Class variable '{var}' must be defined in {cls.__name__} to be a valid component",
                        stacklevel=2,
                    )


class ComponentLoader:
    """AutoGen's ``load_component``, on any class: ``ChatCompletionClient.load_component(config)``."""

    __slots__ = ()

    @overload
    @classmethod
    def load_component(
        cls,
        model: ComponentModel | Mapping[str, Any] | str,
        expected: None = None,
        *,
        allow_source_code: bool | None = None,
        allow_commands: bool | None = None,
        functions: Sequence[Callable[..., Any]] | Mapping[str, Callable[..., Any]] | None = None,
    ) -> Self: ...

    @overload
    @classmethod
    def load_component(
        cls,
        model: ComponentModel | Mapping[str, Any] | str,
        expected: type[T],
        *,
        allow_source_code: bool | None = None,
        allow_commands: bool | None = None,
        functions: Sequence[Callable[..., Any]] | Mapping[str, Callable[..., Any]] | None = None,
    ) -> T: ...

    @classmethod
    def load_component(
        cls,
        model: ComponentModel | Mapping[str, Any] | str,
        expected: type[Any] | None = None,
        *,
        allow_source_code: bool | None = None,
        allow_commands: bool | None = None,
        functions: Sequence[Callable[..., Any]] | Mapping[str, Callable[..., Any]] | None = None,
    ) -> Any:
        """Build the component a config describes (a :class:`ComponentModel`, its dict or its JSON).

        Called on a class (``ChatCompletionClient.load_component(config)``), the component must be
        an instance of it; ``expected`` names another class to check. ``allow_source_code=True``
        lets a ``FunctionTool`` config run its source code; ``functions`` gives the tools' functions
        instead (by tool name, or a list matched by function name), which runs nothing.
        ``allow_commands=True`` lets an ``McpWorkbench`` config name a stdio server's command (started
        on the workbench's first use).
        """
        wanted = cls if expected is None else expected
        check.boolean("load_component", "allow_source_code", allow_source_code, none=True)
        check.boolean("load_component", "allow_commands", allow_commands, none=True)
        with (
            _set(_ALLOW_SOURCE, allow_source_code),
            _set(_ALLOW_COMMANDS, allow_commands),
            _set(_FUNCTIONS, _function_map(functions)),
        ):
            return _load(model, wanted)


class ComponentBase(ComponentToConfig[ConfigT], ComponentLoader, Generic[ConfigT]):
    """AutoGen's ``ComponentBase[Config]``: dumping and loading (the base of abstract component
    classes: ``class Memory(ABC, ComponentBase[BaseModel])``)."""

    __slots__ = ()


class Component(
    ComponentFromConfig[ConfigT],
    ComponentSchemaType[ConfigT],
    ComponentToConfig[ConfigT],
    ComponentLoader,
    Generic[ConfigT],
):
    """AutoGen's component protocol, whole: a class that dumps itself as a :class:`ComponentModel`
    and loads from one, ``Component[Config]`` for a config model ``Config``.

    A component class sets ``component_type`` and ``component_config_schema`` (its config model)
    and implements ``_to_config()`` and the classmethod ``_from_config(config)``. AutoGen's
    spellings also work: ``class Mine(ComponentBase[Config], Component[Config])``. Its provider is
    ``module.Class``; loading one looks the class up among the modules already imported.
    """

    __slots__ = ()


def is_component_class(cls: type) -> bool:
    """Whether ``cls`` is a whole component class (AutoGen's four parts: to and from config, the
    config schema, the loader)."""
    return isinstance(cls, type) and all(
        issubclass(cls, part) for part in (ComponentFromConfig, ComponentToConfig, ComponentSchemaType, ComponentLoader)
    )


def is_component_instance(value: Any) -> bool:
    """Whether ``value`` is an instance of a whole component class."""
    return is_component_class(type(value))


def _as_model(model: Any) -> ComponentModel:
    if isinstance(model, ComponentModel):
        return model
    if isinstance(model, str):
        try:
            data = json.loads(model)
        except json.JSONDecodeError as error:
            raise ValueError(f"load_component: the text is not a JSON component config: {error}") from None
        return ComponentModel.model_validate(data)
    if isinstance(model, Mapping):
        return ComponentModel.model_validate(dict(model))
    dump = getattr(model, "model_dump", None)
    if callable(dump) and isinstance(getattr(model, "provider", None), str):  # AutoGen's ComponentModel
        return ComponentModel.model_validate(dump())
    raise check.wrong_type(
        "load_component", "model", "a ComponentModel, its dict or its JSON text", model, "dump_component() makes one"
    )


def _load(model: Any, wanted: type[Any]) -> Any:
    loaded = _as_model(model)
    if provider_class(loaded.provider) is None:
        built = FOREIGN_COMPONENT(loaded)
        if built is not None:
            if not isinstance(built, wanted):
                raise TypeError(
                    f"load_component: the config builds a {type(built).__name__} ({loaded.provider}), "
                    f"not a {wanted.__name__}"
                )
            return built
    component_class = _resolve(loaded.provider)
    for name in ("component_config_schema", "component_type"):
        if not hasattr(component_class, name):
            raise AttributeError(f"load_component: {component_class.__name__}: {name} not defined")
    if isinstance(wanted, type) and not issubclass(component_class, wanted):
        raise TypeError(
            f"load_component: the config builds a {component_class.__name__} ({loaded.provider}), "
            f"not a {wanted.__name__}"
        )
    version = loaded.component_version or component_class.component_version
    try:
        if version < component_class.component_version:
            instance = component_class._from_config_past_version(loaded.config, version)  # noqa: SLF001 AutoGen's component protocol
        else:
            config = component_class.component_config_schema.model_validate(loaded.config)
            instance = component_class._from_config(config)  # noqa: SLF001 AutoGen's component protocol
    except ValidationError as error:
        error.add_note(f"while loading the config of {loaded.provider} (an nbagent {component_class.__name__})")
        raise
    if not isinstance(instance, wanted):
        raise TypeError(f"load_component: expected a {wanted.__name__}, got a {type(instance).__name__}")
    if loaded.provider != _provider_of(component_class) and type(instance) is component_class:
        _remember_loaded_as(instance, loaded)
    return instance


def load_component(
    model: ComponentModel | Mapping[str, Any] | str,
    expected: type[T] | None = None,
    *,
    allow_source_code: bool = False,
    allow_commands: bool = False,
    functions: Sequence[Callable[..., Any]] | Mapping[str, Callable[..., Any]] | None = None,
) -> Any:
    """Build any component from its config (``ComponentModel``, dict or JSON text): nbagent's or AutoGen's providers.

    ``expected`` checks the kind (``load_component(config, ChatCompletionClient)``).
    ``allow_source_code=True`` lets a ``FunctionTool`` config run its source code (trusted configs
    only); ``functions=[...]`` gives the tools' functions instead. ``allow_commands=True`` lets an
    ``McpWorkbench`` config start the program its stdio server names (trusted configs only).
    """
    return ComponentLoader.load_component(
        model,
        expected or object,
        allow_source_code=allow_source_code,
        allow_commands=allow_commands,
        functions=functions,
    )


# --------------------------------------------------------------------------- helpers for _to_config / _from_config


def dump_nested(component: Any) -> ComponentModel:
    """A nested component's :class:`ComponentModel` (an AutoGen object's own dump, converted), with the
    enclosing dump's ``include_secrets``."""
    if isinstance(component, ComponentToConfig):
        return component.dump_component()
    dump = getattr(component, "dump_component", None)
    if callable(dump):  # an AutoGen component handed to nbagent (a memory, a workbench, a client)
        return _as_model(dump())
    raise TypeError(f"{type(component).__name__} cannot be dumped to a component config (no dump_component)")


def load_nested(model: ComponentModel | Mapping[str, Any], expected: Any) -> Any:
    """A nested component, loaded with the enclosing load's permissions (source code, functions);
    ``expected`` is the class it must be an instance of (an abstract one: ``ChatCompletionClient``)."""
    return _load(model, expected)


# --------------------------------------------------------------------------- commands and source code


def command_from_config(where: str, command_line: str) -> None:
    """Refuse a config that would start a program (``command_line``, its secrets masked) unless the
    load was given ``allow_commands=True``."""
    if _ALLOW_COMMANDS.get():
        return
    raise CommandNotAllowedError(
        f"{where}: loading this config needs allow_commands=True (only for a config from a source you trust; or "
        "give the agent a workbench you made yourself, McpWorkbench(StdioServerParams(...))): its stdio MCP "
        f"server is a program that would run with your rights on the workbench's first use: {command_line}"
    )


def function_source(func: Callable[..., Any], tool_name: str) -> str:
    """The source code of a tool's function, dedented, decorators left out (what AutoGen's config holds)."""
    target = inspect.unwrap(func)
    if getattr(target, "__name__", "") == "<lambda>":
        raise TypeError(f"FunctionTool {tool_name!r} cannot be dumped: a lambda has no source code of its own")
    try:
        source = textwrap.dedent(inspect.getsource(target))
    except (OSError, TypeError):
        raise TypeError(
            f"FunctionTool {tool_name!r} cannot be dumped: the source code of {target!r} is not available "
            "(a builtin, a callable object or a function defined in an interactive prompt)"
        ) from None
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    node = tree.body[0] if tree.body else None
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.decorator_list:
        lines = source.splitlines(keepends=True)
        return "".join(lines[node.lineno - 1 :])
    return source


@dataclass(frozen=True)
class Alias:
    """``import name as alias`` among a ``FunctionTool``'s ``global_imports`` (AutoGen's ``Alias``)."""

    name: str
    alias: str


@dataclass(frozen=True, init=False)
class ImportFromModule:
    """``from module import a, b as c`` among a ``FunctionTool``'s ``global_imports`` (AutoGen's):
    ``ImportFromModule("os", ["path"])``, ``ImportFromModule("numpy", [Alias("array", "arr")])``."""

    module: str
    imports: tuple[str | Alias, ...]

    def __init__(self, module: str, imports: Sequence[str | Alias]) -> None:
        check.string("ImportFromModule", "module", module, empty=False)
        items = tuple(check.sequence("ImportFromModule", "imports", imports, "a list of names (str or Alias)"))
        for index, item in enumerate(items):
            check.instance("ImportFromModule", f"imports[{index}]", item, (str, Alias), "a name (str) or an Alias")
        object.__setattr__(self, "module", module)
        object.__setattr__(self, "imports", items)


Import = str | ImportFromModule | Alias
"""One of a ``FunctionTool``'s ``global_imports`` (AutoGen's ``Import``)."""


def _getter(item: Any) -> Callable[..., Any]:
    """``item.get`` for a mapping, attribute access otherwise (AutoGen's dataclasses)."""
    if isinstance(item, Mapping):
        return item.get
    return lambda key, default=None: getattr(item, key, default)


def import_statement(item: Any) -> str:
    """One of AutoGen's ``global_imports`` (``"math"``, ``{"module": "os", "imports": ["path"]}``,
    ``{"name": "numpy", "alias": "np"}``, or its ``ImportFromModule``/``Alias`` objects) as a statement."""
    if isinstance(item, str):
        return f"import {item}"
    get = _getter(item)
    module = get("module")
    if isinstance(module, str):
        names = []
        for name in get("imports") or ():
            if isinstance(name, str):
                names.append(name)
            else:
                alias = _getter(name)
                names.append(f"{alias('name')} as {alias('alias')}")
        return f"from {module} import {', '.join(names)}"
    name, alias = get("name"), get("alias")
    if isinstance(name, str) and isinstance(alias, str):
        return f"import {name} as {alias}"
    raise ValueError(f"not an import of global_imports: {item!r}")


def dump_import(item: Any) -> Any:
    """One of ``global_imports`` as JSON-ready data (AutoGen's dataclasses become dicts)."""
    if isinstance(item, (str, dict)):
        return item
    module = getattr(item, "module", None)
    if isinstance(module, str):
        return {"module": module, "imports": [dump_import(name) for name in getattr(item, "imports", ())]}
    name, alias = getattr(item, "name", None), getattr(item, "alias", None)
    if isinstance(name, str) and isinstance(alias, str):
        return {"name": name, "alias": alias}
    raise ValueError(f"not an import of global_imports: {item!r}")


def function_from_config(tool_name: str, source_code: str, global_imports: Sequence[Any]) -> Callable[..., Any]:
    """The function of a ``FunctionTool`` config: one given to ``load_component(functions=...)``, or,
    only with ``allow_source_code=True``, the config's source code run (its imports first)."""
    given = _FUNCTIONS.get() or {}
    def_name = _def_name(source_code)
    for key in (tool_name, def_name):
        if key is not None and key in given:
            return given[key]
    if not _ALLOW_SOURCE.get():
        raise SourceCodeNotAllowedError(
            f"FunctionTool {tool_name!r}: its config holds Python source code, and loading it would run that "
            "code. Only for a config from a source you trust, pass allow_source_code=True to load_component(); "
            f"or pass the function itself, load_component(config, functions=[{def_name or tool_name}]), "
            "which runs nothing from the config"
        )
    namespace: dict[str, Any] = {"__builtins__": builtins, "__name__": f"nbagent_loaded_tool_{tool_name}"}
    for item in global_imports:
        statement = import_statement(item)
        try:
            exec(statement, namespace)  # noqa: S102 (allowed by the caller: allow_source_code=True)
        except ImportError as error:
            raise ImportError(f"FunctionTool {tool_name!r}: {statement!r} failed: {error}") from error
    if def_name is None:
        raise ValueError(f"FunctionTool {tool_name!r}: its source code defines no function")
    try:
        exec(compile(source_code, f"<FunctionTool {tool_name}>", "exec"), namespace)  # noqa: S102
    except Exception as error:
        raise ValueError(f"FunctionTool {tool_name!r}: could not compile and load its function: {error}") from error
    func = namespace.get(def_name)
    if not callable(func):
        raise TypeError(f"FunctionTool {tool_name!r}: {def_name!r} is not a function")
    return cast(Callable[..., Any], func)


def _def_name(source_code: str) -> str | None:
    try:
        tree = ast.parse(source_code)
    except SyntaxError:
        return None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return node.name
    return None


# --------------------------------------------------------------------------- pydantic models from JSON schemas

_SIMPLE: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool, "null": type(None)}


def schema_to_model(schema: Mapping[str, Any], name: str | None = None) -> type[BaseModel]:
    """A pydantic model class for a JSON schema (``model_json_schema()``'s output): the fields, their
    types (nested objects, ``$defs`` references, arrays, unions, enums), defaults and descriptions.

    Used to load a structured agent's ``output_content_type`` from its config, as AutoGen does.
    """
    return _SchemaModels(schema).model(schema, name or str(schema.get("title") or "GeneratedModel"))


class _SchemaModels:
    """The models built for one JSON schema and its ``$defs`` (each built once)."""

    def __init__(self, root: Mapping[str, Any]) -> None:
        self.defs: dict[str, Any] = dict(root.get("$defs") or root.get("definitions") or {})
        self.built: dict[str, type[BaseModel]] = {}

    def model(self, node: Mapping[str, Any], name: str) -> type[BaseModel]:
        if name in self.built:
            return self.built[name]
        required = set(node.get("required") or ())
        fields: dict[str, Any] = {}
        for field_name, field_schema in (node.get("properties") or {}).items():
            spec = field_schema if isinstance(field_schema, Mapping) else {}
            annotation = self.type(spec, f"{name}_{field_name}")
            default: Any = ... if field_name in required else spec.get("default")
            if default is None:
                annotation = annotation | None
            fields[field_name] = (annotation, Field(default, description=spec.get("description")))
        extra: Literal["forbid", "ignore"] = "forbid" if node.get("additionalProperties") is False else "ignore"
        created: type[BaseModel] = create_model(name, __config__=ConfigDict(extra=extra), **fields)
        self.built[name] = created
        return created

    def type(self, node: Any, hint: str) -> Any:
        if not isinstance(node, Mapping):
            return Any
        ref = node.get("$ref")
        if isinstance(ref, str):
            key = ref.rsplit("/", 1)[-1]
            return self.type(self.defs[key], key) if key in self.defs else Any
        if "const" in node:
            return Literal[node["const"]]
        if isinstance(node.get("enum"), list) and node["enum"]:
            return Literal[tuple(node["enum"])]
        for key in ("anyOf", "oneOf"):
            if isinstance(node.get(key), list) and node[key]:
                return _union([self.type(option, hint) for option in node[key]])
        kind = node.get("type")
        if isinstance(kind, list):
            return _union([self.type({**node, "type": item}, hint) for item in kind])
        if kind == "array":
            return list[self.type(node.get("items"), hint)]  # type: ignore[misc]
        if kind == "object" or (kind is None and "properties" in node):
            return self.object(node, hint)
        return _SIMPLE.get(kind, Any) if isinstance(kind, str) else Any

    def object(self, node: Mapping[str, Any], hint: str) -> Any:
        if node.get("properties"):
            return self.model(node, str(node.get("title") or hint))
        values = node.get("additionalProperties")
        return dict[str, self.type(values, hint) if isinstance(values, Mapping) else Any]  # type: ignore[misc]


def _union(types: list[Any]) -> Any:
    unique = list(dict.fromkeys(types))
    return unique[0] if len(unique) == 1 else Union[tuple(unique)]  # noqa: UP007 (built at run time)


# --------------------------------------------------------------------------- the structured answer's type


class StructureMessageConfig(BaseModel):
    """The config of an agent's structured answer (AutoGen's name, typo included)."""

    json_schema: dict[str, Any]
    format_string: str | None = None
    content_model_name: str


class StructuredMessageFactory(Component):
    """The type of a structured agent's answer (``output_content_type``) and its ``format_string``, as a component.

    Made from a pydantic model class (``input_model``) or from a JSON schema (a class is built for
    it), as AutoGen's factory is. ``ContentModel`` is the class; ``StructuredMessage`` the message type.
    """

    component_type = "structured_message"
    component_config_schema = StructureMessageConfig
    component_provider_override = "nbagent.components.StructuredMessageFactory"
    component_aliases = ("autogen_agentchat.messages.StructuredMessageFactory",)

    def __init__(
        self,
        json_schema: Mapping[str, Any] | None = None,
        input_model: type[BaseModel] | None = None,
        format_string: str | None = None,
        content_model_name: str | None = None,
    ) -> None:
        if input_model is not None:
            self.ContentModel = input_model
        elif json_schema is not None:
            self.ContentModel = schema_to_model(json_schema, content_model_name)
        else:
            raise ValueError("StructuredMessageFactory needs a json_schema or an input_model")
        self.format_string = format_string
        self.StructuredMessage = StructuredMessage[self.ContentModel]  # type: ignore[name-defined]

    def _to_config(self) -> StructureMessageConfig:
        return StructureMessageConfig(
            json_schema=self.ContentModel.model_json_schema(),
            format_string=self.format_string,
            content_model_name=self.ContentModel.__name__,
        )

    @classmethod
    def _from_config(cls, config: StructureMessageConfig) -> Self:
        return cls(
            json_schema=config.json_schema,
            format_string=config.format_string,
            content_model_name=config.content_model_name,
        )
