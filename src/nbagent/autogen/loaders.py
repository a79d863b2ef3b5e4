"""nbagent's components in AutoGen's configs: dumped as AutoGen's ``ComponentModel``, loaded by AutoGen's loader.

AutoGen's teams, ``SocietyOfMindAgent`` and ``AgentTool`` hold their parts' dumps in pydantic fields
typed with AutoGen's ``ComponentModel``, and AutoGen's loader builds only classes of its component
protocol. So once AutoGen is imported:

* a dump of nbagent's is a :class:`SharedComponentModel`: nbagent's ``ComponentModel`` and AutoGen's
  at once (the same fields), which both libraries' configs take;
* AutoGen's loader resolves ``nbagent.X`` (a provider of nbagent's) through its ``WELL_KNOWN_PROVIDERS``
  (AutoGen's one registry of provider names, in ``autogen_core._component_config``: nbagent adds its
  own names, never changes AutoGen's; ``tests/autogen_compat/test_seam_dumps.py`` fails if it moves)
  to ``nbagent.autogen.loaders.X``: a class of AutoGen's protocol, made on first use, whose
  ``_from_config`` builds nbagent's ``X``. AutoGen checks what it built against the interface it
  loads (``ChatAgent``: nbagent's agent is a virtual one).

The JSON is the same whichever library dumps or loads it: ``provider`` stays ``nbagent.X``.

And the other way, nbagent's ``load_component`` of AutoGen's config of a component nbagent has no
class for (a ``RoundRobinGroupChat``, ``SelectorGroupChat`` or ``Swarm`` dumped by AutoGen, a
termination condition): :func:`load_autogens` gives AutoGen's component, its parts that nbagent
loads (agents, model clients, tools, contexts, memory) nbagent's, built under the load's settings.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
import types
from typing import Any

from autogen_core import Component as AgComponent
from autogen_core import ComponentBase as AgComponentBase
from autogen_core import ComponentLoader as AgComponentLoader
from autogen_core import ComponentModel as AgComponentModel
from autogen_core import _component_config as ag_config

from ..components import ComponentModel, known_providers, provider_class

_PREFIX = "nbagent."


class SharedComponentModel(ComponentModel, AgComponentModel):
    """A component's dump that is nbagent's ``ComponentModel`` and AutoGen's: the same fields."""


def shared(model: ComponentModel) -> SharedComponentModel:
    """``model`` as a :class:`SharedComponentModel` (its provider made known to AutoGen's loader)."""
    if isinstance(model, SharedComponentModel):
        return model
    _known_to_autogen(model.provider)
    return SharedComponentModel.model_construct(**{name: getattr(model, name) for name in ComponentModel.model_fields})


def _known_to_autogen(provider: str) -> None:
    if provider.startswith(_PREFIX) and provider_class(provider) is not None:
        ag_config.WELL_KNOWN_PROVIDERS.setdefault(provider, f"{__name__}.{provider[len(_PREFIX) :]}")


def make_known() -> None:
    """Every provider ``nbagent.X`` nbagent loads, made known to AutoGen's loader."""
    for provider in known_providers():
        _known_to_autogen(provider)


_MADE: dict[str, type[Any]] = {}


def __getattr__(name: str) -> type[Any]:
    """``nbagent.autogen.loaders.X``: the AutoGen component class that builds nbagent's ``X``."""
    made = _MADE.get(name)
    if made is not None:
        return made
    built = provider_class(_PREFIX + name)
    if built is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}: nbagent has no component {name!r}")

    def from_config(cls: type[Any], config: Any) -> Any:
        return built._from_config(config)  # noqa: SLF001 AutoGen's component protocol

    def from_past(cls: type[Any], config: dict[str, Any], version: int) -> Any:
        return built._from_config_past_version(config, version)  # noqa: SLF001 AutoGen's component protocol

    def to_config(self: Any) -> Any:
        raise TypeError(f"{name} of {__name__} only loads nbagent's {name}: dump nbagent's object")

    body = {
        "__module__": __name__,
        "__doc__": f"Builds nbagent's {name} for AutoGen's loader.",
        "component_type": built.component_type,
        "component_config_schema": built.component_config_schema,
        "component_version": built.component_version,
        "_from_config": classmethod(from_config),
        "_from_config_past_version": classmethod(from_past),
        "_to_config": to_config,
    }
    made = types.new_class(name, (AgComponentBase[Any], AgComponent[Any]), exec_body=lambda space: space.update(body))
    _MADE[name] = made
    return made


# The parts of AutoGen's configs nbagent builds: agents (AutoGen's teams take nbagent's), and tools and
# workbenches, which run code or commands only as the load's settings allow. A team's own model client
# (a selector's) stays AutoGen's: AutoGen checks it is its ChatCompletionClient.
_OURS = frozenset({"agent", "tool", "workbench"})


def load_autogens(model: ComponentModel, importable: frozenset[str]) -> Any:
    """AutoGen's component of ``model`` (an ``autogen_*`` provider nbagent has no class for), built by
    AutoGen's loader; each agent, tool or workbench of its config that nbagent loads is nbagent's (its
    provider rewritten to ``nbagent.X``), so nbagent's loader builds it with the load's settings. The
    modules of the packages ``importable`` are imported if need be, any other must be already."""
    where = "load_component"
    _autogen_class(model.provider, where, importable)
    config = _with_counterparts(model.config, f"{where}: {model.provider}", importable)
    return AgComponentLoader.load_component({**model.model_dump(), "config": config})


def _autogen_class(provider: str, where: str, importable: frozenset[str]) -> type[Any]:
    """The AutoGen component class ``provider`` names: of a package ``importable`` or of a module
    already imported (a config makes nbagent import no other module)."""
    path = ag_config.WELL_KNOWN_PROVIDERS.get(provider, provider)
    module_name, _, class_name = path.rpartition(".")
    module = sys.modules.get(module_name)
    if module is None and module_name.split(".")[0] in importable:  # AutoGen's code, not the config's
        with contextlib.suppress(ImportError):
            module = importlib.import_module(module_name)
    if module is None:
        root = module_name.split(".")[0]
        ours = ", ".join(name for name in known_providers() if name.split(".")[0] == root)
        raise ValueError(
            f"{where}: nbagent has no counterpart of {provider!r}, and AutoGen's own is built only from a module "
            f"already imported ({module_name!r} is not): a config never makes nbagent import a module; import "
            f"{module_name} first if you trust the config. The providers nbagent loads from {root}: {ours or 'none'}"
        )
    value = getattr(module, class_name, None)
    if not (isinstance(value, type) and issubclass(value, AgComponentBase)):
        raise TypeError(f"{where}: {provider!r} is not one of AutoGen's component classes")
    return value


def _with_counterparts(value: Any, where: str, importable: frozenset[str]) -> Any:
    """``value`` (a config, or part of one) with each nested component nbagent loads named as nbagent's;
    every other nested component must be AutoGen's, of a module already imported."""
    if isinstance(value, list):
        return [_with_counterparts(item, where, importable) for item in value]
    if not isinstance(value, dict):
        return value
    provider = value.get("provider")
    if isinstance(provider, str) and isinstance(value.get("config"), dict):
        ours = provider_class(provider)
        if ours is not None and ours.component_type in _OURS:  # nbagent's loader builds it (called back)
            canonical = provider if provider.startswith(_PREFIX) else known_providers()[provider]
            _known_to_autogen(canonical)
            return {**value, "provider": canonical}
        _autogen_class(provider, where, importable)
        return {**value, "config": _with_counterparts(value["config"], where, importable)}
    return {key: _with_counterparts(item, where, importable) for key, item in value.items()}


make_known()  # here, not at autogen_core's import alone: this module's own import may be what imports it
