"""Users' own components as AutoGen 0.7.5 declares them (issue 28.2), checked against AutoGen's.

The component classes below are AutoGen's documentation example written twice, once on AutoGen's
``ComponentBase``/``Component`` and once on nbagent's (only the imports differ); their dumps are
compared, and nbagent's round-trip through JSON, alone and nested in an agent's config. A config
still runs nothing unless the user opts in: a user's class is found only among the modules already
imported, and a ``FunctionTool`` config's source code needs ``allow_source_code=True``.
"""

from __future__ import annotations

import json
import types
import warnings
from typing import Any

import autogen_core
import pytest
from pydantic import BaseModel

import nbagent
from nbagent import (
    AssistantAgent,
    BaseTool,
    CancellationToken,
    Component,
    ComponentBase,
    ComponentLoader,
    ComponentModel,
    FunctionTool,
    Memory,
    MemoryContent,
    ReplayChatCompletionClient,
    is_component_class,
    load_component,
)
from nbagent.memory import MemoryQueryResult


class Config(BaseModel):
    value: str


class AgComponent(autogen_core.ComponentBase[Config], autogen_core.Component[Config]):
    """A component of the user's own.

    Args:
        value: what it holds.
    """

    component_type = "custom"
    component_config_schema = Config

    def __init__(self, value: str) -> None:
        self.value = value

    def _to_config(self) -> Config:
        return Config(value=self.value)

    @classmethod
    def _from_config(cls, config: Config) -> AgComponent:
        return cls(value=config.value)


class MyComponent(ComponentBase[Config], Component[Config]):
    """A component of the user's own.

    Args:
        value: what it holds.
    """

    component_type = "custom"
    component_config_schema = Config

    def __init__(self, value: str) -> None:
        self.value = value

    def _to_config(self) -> Config:
        return Config(value=self.value)

    @classmethod
    def _from_config(cls, config: Config) -> MyComponent:
        return cls(value=config.value)


class JustComponent(Component[Config]):
    """Only ``Component[Config]``: AutoGen needs ``ComponentBase`` too, nbagent's is whole."""

    component_type = "custom"
    component_config_schema = Config

    def __init__(self, value: str) -> None:
        self.value = value

    def _to_config(self) -> Config:
        return Config(value=self.value)

    @classmethod
    def _from_config(cls, config: Config) -> JustComponent:
        return cls(config.value)


def test_the_dump_equals_autogens_but_for_the_class() -> None:
    ours, theirs = MyComponent("x").dump_component(), AgComponent("x").dump_component()
    mine = ours.model_dump()
    autogens = theirs.model_dump()
    assert mine.pop("provider") == f"{__name__}.MyComponent" and autogens.pop("provider") == f"{__name__}.AgComponent"
    assert mine.pop("label") == "MyComponent" and autogens.pop("label") == "AgComponent"
    assert mine == autogens
    assert mine["description"] == "A component of the user's own." and mine["config"] == {"value": "x"}


def test_a_users_component_round_trips_through_json() -> None:
    text = MyComponent("hello").dump_component().model_dump_json()
    for loaded in (
        MyComponent.load_component(json.loads(text)),
        ComponentLoader.load_component(ComponentModel.model_validate_json(text), MyComponent),
        load_component(text),
        Component.load_component(text),
    ):
        assert isinstance(loaded, MyComponent) and loaded.value == "hello"
    assert JustComponent.load_component(JustComponent("y").dump_component()).value == "y"
    with pytest.raises(TypeError, match="not a ChatCompletionClient"):
        nbagent.ChatCompletionClient.load_component(text)


def test_autogens_dump_of_the_users_component_loads_into_its_class() -> None:
    theirs = AgComponent("from autogen").dump_component().model_dump()
    theirs["provider"] = f"{__name__}.MyComponent"  # the same user code, on nbagent's classes
    loaded = load_component(theirs)
    assert isinstance(loaded, MyComponent) and loaded.value == "from autogen"


def test_is_component_class_as_autogen() -> None:
    for cls in (MyComponent, JustComponent, FunctionTool, AssistantAgent):
        assert is_component_class(cls)
    assert autogen_core.is_component_class(AgComponent)
    for ours, theirs in ((int, int), (Config, Config), (ComponentBase, autogen_core.ComponentBase)):
        assert not is_component_class(ours) and not autogen_core.is_component_class(theirs)
    assert not is_component_class(ComponentLoader)


class Overridden(Component[Config]):
    """A component with a provider string of its own."""

    component_type = "custom"
    component_config_schema = Config
    component_provider_override = "my_library.Widget"

    def __init__(self, value: str) -> None:
        self.value = value

    def _to_config(self) -> Config:
        return Config(value=self.value)

    @classmethod
    def _from_config(cls, config: Config) -> Overridden:
        return cls(config.value)


def test_component_provider_override_names_and_finds_the_class() -> None:
    dumped = Overridden("w").dump_component()
    assert dumped.provider == "my_library.Widget"
    loaded = load_component(dumped.model_dump_json())  # found by its provider, no module imported
    assert isinstance(loaded, Overridden) and loaded.value == "w"


class Versioned(Component[Config]):
    """Version 2 of a config that was ``{"old": ...}`` in version 1."""

    component_type = "custom"
    component_version = 2
    component_config_schema = Config

    def __init__(self, value: str) -> None:
        self.value = value

    def _to_config(self) -> Config:
        return Config(value=self.value)

    @classmethod
    def _from_config(cls, config: Config) -> Versioned:
        return cls(config.value)

    @classmethod
    def _from_config_past_version(cls, config: dict[str, Any], version: int) -> Versioned:
        assert version == 1
        return cls(config["old"])


def test_an_older_config_goes_to_from_config_past_version() -> None:
    old = {
        "provider": f"{__name__}.Versioned",
        "component_type": "custom",
        "component_version": 1,
        "config": {"old": "v1"},
    }
    assert load_component(old).value == "v1"
    assert Versioned("v2").dump_component().component_version == 2


def test_a_class_of_a_module_not_imported_is_not_loaded() -> None:
    config = {"provider": "some_module_never_imported.Thing", "component_type": "custom", "config": {}}
    with pytest.raises(ValueError, match="is not imported; a config never makes nbagent import a module"):
        load_component(config)


class KeywordConfig(BaseModel):
    keywords: dict[str, str]


class KeywordMemory(Memory, Component[KeywordConfig]):
    """Memory that answers by keyword."""

    component_type = "memory"
    component_config_schema = KeywordConfig

    def __init__(self, keywords: dict[str, str]) -> None:
        self.keywords = dict(keywords)

    async def query(self, query: Any = "", cancellation_token: CancellationToken | None = None, **kwargs: Any) -> Any:
        text = query if isinstance(query, str) else getattr(query, "content", "")
        hits = [
            MemoryContent(content=fact, mime_type="text/plain") for word, fact in self.keywords.items() if word in text
        ]
        return MemoryQueryResult(results=hits)

    async def add(self, content: MemoryContent, cancellation_token: CancellationToken | None = None) -> None:
        self.keywords[str(content.content)] = str(content.content)

    async def clear(self) -> None:
        self.keywords.clear()

    def _to_config(self) -> KeywordConfig:
        return KeywordConfig(keywords=self.keywords)

    @classmethod
    def _from_config(cls, config: KeywordConfig) -> KeywordMemory:
        return cls(config.keywords)


class ScaleArgs(BaseModel):
    value: int


class ScaleConfig(BaseModel):
    factor: int


class Scale(BaseTool[ScaleArgs, int], Component[ScaleConfig]):
    """Multiply by a factor."""

    component_config_schema = ScaleConfig

    def __init__(self, factor: int) -> None:
        super().__init__(ScaleArgs, int, "scale", f"Multiply a value by {factor}.")
        self.factor = factor

    async def run(self, args: ScaleArgs, cancellation_token: Any) -> int:
        return args.value * self.factor

    def _to_config(self) -> ScaleConfig:
        return ScaleConfig(factor=self.factor)

    @classmethod
    def _from_config(cls, config: ScaleConfig) -> Scale:
        return cls(config.factor)


async def test_users_components_nest_in_the_agents_config_and_come_back() -> None:
    agent = AssistantAgent(
        "helper",
        ReplayChatCompletionClient(["ok"]),
        tools=[Scale(3)],
        memory=[KeywordMemory({"tea": "The user likes green tea."})],
    )
    text = agent.dump_component().model_dump_json()
    config = json.loads(text)["config"]
    assert config["memory"][0]["provider"] == f"{__name__}.KeywordMemory"
    tool = config["workbench"][0]["config"]["tools"][0]
    assert tool["provider"] == f"{__name__}.Scale" and tool["config"] == {"factor": 3}
    loaded = AssistantAgent.load_component(text)
    memory = loaded._memory[0]  # noqa: SLF001 (the loaded agent's memory, to check its class)
    assert isinstance(memory, KeywordMemory) and memory.keywords == {"tea": "The user likes green tea."}
    result = await loaded.run(task="Some tea?")
    assert result.messages[-1].content == "ok"
    scale = next(iter(loaded._workbench[0].tools))  # noqa: SLF001
    assert isinstance(scale, Scale) and await scale.run_json({"value": 2}) == 6


def test_a_function_tool_in_a_loaded_config_still_needs_permission() -> None:
    def double(value: int) -> int:
        return value * 2

    text = (
        AssistantAgent("a", ReplayChatCompletionClient([]), tools=[Scale(2), double]).dump_component().model_dump_json()
    )
    with pytest.raises(nbagent.SourceCodeNotAllowedError):
        load_component(text)
    assert isinstance(load_component(text, functions=[double]), AssistantAgent)


def test_a_component_class_missing_its_class_variables_warns_at_definition_as_autogens() -> None:
    def define(base: Any, component: Any, with_type: bool) -> type:
        body: dict[str, Any] = {
            "__init__": lambda self, value: setattr(self, "value", value),
            "_to_config": lambda self: Config(value=self.value),
            "_from_config": classmethod(lambda cls, config: cls(config.value)),
        }
        if with_type:
            body["component_type"] = "custom"
        bases = (base[Config], component[Config])
        return types.new_class("MyInvalidMissingAttrs", bases, exec_body=lambda space: space.update(body))

    for base, component in ((ComponentBase, Component), (autogen_core.ComponentBase, autogen_core.Component)):
        with pytest.warns(UserWarning) as caught:
            define(base, component, with_type=False)
        assert sorted(str(w.message) for w in caught) == [
            "Class variable 'component_config_schema' must be defined in MyInvalidMissingAttrs to be a valid component",
            "Class variable 'component_type' must be defined in MyInvalidMissingAttrs to be a valid component",
        ], base
        with pytest.warns(UserWarning, match="'component_config_schema' must be defined"):
            define(base, component, with_type=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a whole class, and a base implementing no _from_config, warn nothing

        class Fine(ComponentBase[Config], Component[Config]):
            component_type = "custom"
            component_config_schema = Config

            @classmethod
            def _from_config(cls, config: Config) -> Fine:
                return cls()

        class Base(Component[Config]):
            """A base its subclasses make whole."""

    assert is_component_class(Fine) and is_component_class(Base)


class _Info(BaseModel):
    info: str


class _Info2(BaseModel):
    info2: str


class UpgradedComponent(ComponentBase[_Info2], Component[_Info2]):
    component_type = "custom"
    component_config_schema = _Info2
    component_version = 2

    def __init__(self, info: str) -> None:
        self.info = info

    def _to_config(self) -> _Info2:
        return _Info2(info2=self.info)

    @classmethod
    def _from_config(cls, config: _Info2) -> UpgradedComponent:
        return cls(config.info2)


def test_a_users_component_in_a_module_named_autogen_something_is_loaded_by_nbagent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 40.5: a module of the user's whose name starts with ``autogen`` (AutoGen's own
    ``autogen_test_utils``) holding nbagent components is not AutoGen's: nbagent's loader builds them."""
    module = types.ModuleType("autogen_mine")

    class Mine(ComponentBase[_Info], Component[_Info]):
        component_type = "custom"
        component_config_schema = _Info

        def __init__(self, info: str) -> None:
            self.info = info

        def _to_config(self) -> _Info:
            return _Info(info=self.info)

        @classmethod
        def _from_config(cls, config: _Info) -> Mine:
            return cls(config.info)

    Mine.__module__, Mine.__qualname__ = "autogen_mine", "Mine"
    module.Mine = Mine  # type: ignore[attr-defined]
    monkeypatch.setitem(__import__("sys").modules, "autogen_mine", module)
    dumped = Mine("x").dump_component()
    assert dumped.provider == "autogen_mine.Mine"
    loaded = load_component(json.loads(dumped.model_dump_json()))
    assert type(loaded) is Mine and loaded.info == "x"


def test_an_older_config_the_current_schema_refuses_is_autogens_not_implemented_error() -> None:
    """Issue 40.5: a class on version 2 without ``_from_config_past_version`` given a version-1 config:
    read with the current schema when it fits, else AutoGen's ``NotImplementedError``."""

    old = ComponentModel(provider="nbagent.x", component_version=1, config={"info": "test"})
    with pytest.raises(NotImplementedError, match="_from_config_past_version is not implemented"):
        UpgradedComponent.load_component({**old.model_dump(), "provider": f"{__name__}.UpgradedComponent"})
    fits = {**old.model_dump(), "provider": f"{__name__}.UpgradedComponent", "config": {"info2": "kept"}}
    assert UpgradedComponent.load_component(fits).info == "kept"
