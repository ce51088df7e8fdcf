"""What every descriptor is built of: the strict, frozen base model and a tool's Argument."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

ArgType = Literal["string", "integer", "number", "boolean", "object", "array"]
InputMode = Literal["json", "none"]


def _variable_pattern(value: str) -> str:
    """A name, ``*`` standing for any characters (``AWS_*``); never shown in the error (a
    secret written here by mistake, ``KEY=sk-...``, would land in a CI log)."""
    if not re.fullmatch(r"[A-Za-z_*][A-Za-z0-9_*]*", value):
        raise ValueError("give a variable's name, * standing for any characters (AWS_*)")
    if not value.strip("*"):
        raise ValueError("'*' alone would pass the whole environment: name what it needs")
    return value


PassEnv = Annotated[
    list[Annotated[str, AfterValidator(_variable_pattern)]], Field(default_factory=list)
]
"""``pass_env``: the caller's variables a process gets when they are set, by name or glob
(``AWS_*``), beyond what every process inherits (``toolctl.descriptor_env.INHERITED``)."""


def _a_directory(value: str) -> str:
    if "\x00" in value:  # no path holds one: the process would fail to start, or crash
        raise ValueError("a directory's name holds no NUL")
    return value


Cwd = Annotated[str | None, AfterValidator(lambda v: v if v is None else _a_directory(v))]
"""A process's working directory (``cwd``), relative to the file that gives it."""


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
    items: ArgType | None = None
    """An array's item type: ``items = "number"`` (or JSON Schema's ``{ type = "number" }``),
    to which each repeated ``--arg`` value is converted."""
    allow_option: bool = False
    """Whether a value starting with ``-`` may fill a whole argv item (an option)."""

    @field_validator("items", mode="before")
    @classmethod
    def _items_as_schema(cls, value: Any) -> Any:
        if isinstance(value, dict) and list(value) == ["type"]:
            return value["type"]  # JSON Schema's form, of one type
        return value

    @model_validator(mode="after")
    def _values_of_its_type(self) -> Argument:
        """An ``enum`` or ``default`` no call could pass is refused when the file is read,
        not at every `run` (``type = "integer"`` with ``default = "3"``)."""
        if self.items is not None and self.type != "array":
            raise ValueError(f"items declares an array's items; type is {self.type}")
        for value in self.enum or ():
            if not self._fits(value):
                raise ValueError(f"enum value {value!r} is not of type {self._shown_type}")
        if self.default is not None:
            if not self._fits(self.default):
                raise ValueError(f"default {self.default!r} is not of type {self._shown_type}")
            if self.enum is not None and self.default not in self.enum:
                raise ValueError(f"default {self.default!r} is not one of enum {self.enum!r}")
        return self

    def _fits(self, value: Any) -> bool:
        if not of_type(value, self.type):
            return False
        return self.items is None or all(of_type(item, self.items) for item in value)

    @property
    def _shown_type(self) -> str:
        return f"array of {self.items}" if self.items is not None else self.type

    def schema_property(self) -> dict[str, Any]:
        prop: dict[str, Any] = {"type": self.type}
        if self.items is not None:
            prop["items"] = {"type": self.items}
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
