"""What every descriptor is built of: the strict, frozen base model and a tool's Argument."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, model_validator

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

    @model_validator(mode="after")
    def _values_of_its_type(self) -> Argument:
        """An ``enum`` or ``default`` no call could pass is refused when the file is read,
        not at every `run` (``type = "integer"`` with ``default = "3"``)."""
        for value in self.enum or ():
            if not of_type(value, self.type):
                raise ValueError(f"enum value {value!r} is not of type {self.type}")
        if self.default is not None:
            if not of_type(self.default, self.type):
                raise ValueError(f"default {self.default!r} is not of type {self.type}")
            if self.enum is not None and self.default not in self.enum:
                raise ValueError(f"default {self.default!r} is not one of enum {self.enum!r}")
        return self

    def schema_property(self) -> dict[str, Any]:
        prop: dict[str, Any] = {"type": self.type}
        if self.description:
            prop["description"] = self.description
        if self.enum is not None:
            prop["enum"] = self.enum
        if self.default is not None:
            prop["default"] = self.default
        return prop


def of_type(value: Any, kind: ArgType) -> bool:
    """Whether a TOML or JSON value is of a JSON Schema type (a bool is no number)."""
    if kind in ("number", "integer"):
        number = int if kind == "integer" else (int, float)
        return isinstance(value, number) and not isinstance(value, bool)
    return isinstance(value, {"string": str, "boolean": bool, "object": dict, "array": list}[kind])
