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
"""

from __future__ import annotations

import types
from typing import Any

from autogen_core import Component as AgComponent
from autogen_core import ComponentBase as AgComponentBase
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

    def to_config(self: Any) -> Any:
        raise TypeError(f"{name} of {__name__} only loads nbagent's {name}: dump nbagent's object")

    body = {
        "__module__": __name__,
        "__doc__": f"Builds nbagent's {name} for AutoGen's loader.",
        "component_type": built.component_type,
        "component_config_schema": built.component_config_schema,
        "component_version": built.component_version,
        "_from_config": classmethod(from_config),
        "_to_config": to_config,
    }
    made = types.new_class(name, (AgComponentBase[Any], AgComponent[Any]), exec_body=lambda space: space.update(body))
    _MADE[name] = made
    return made
