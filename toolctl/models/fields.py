"""What every descriptor is built of: the strict, frozen base model and a tool's Argument."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
)

ArgType = Literal["string", "integer", "number", "boolean", "object", "array"]
InputMode = Literal["json", "none"]


def aliased(*names: str) -> Any:
    return Field(validation_alias=AliasChoices(*names))


class DescriptorModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Argument(DescriptorModel):
    """One argument an LLM (or a person) supplies, TrustGraph style."""

    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_-]*$")
    type: ArgType = "string"
    description: str = ""
    required: bool = Field(default=True, strict=True)  # "yes" is no answer
    default: Any = None
    enum: list[Any] | None = None
    allow_option: bool = False
    """Whether a value starting with ``-`` may fill a whole argv item (an option)."""

    def schema_property(self) -> dict[str, Any]:
        prop: dict[str, Any] = {"type": self.type}
        if self.description:
            prop["description"] = self.description
        if self.enum is not None:
            prop["enum"] = self.enum
        if self.default is not None:
            prop["default"] = self.default
        return prop
