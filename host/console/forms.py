"""Action forms drawn from a ViewSchema ``inputs`` list, and the inputs a submitted form
means. Values are written as the API takes them; the API validates them (its 400 is shown
next to the form), the console only shapes them."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["changed_inputs", "filter_params", "form_inputs", "widget_value"]

Descriptor = Mapping[str, Any]
FIELD = "in."
"""The prefix of an input's form field name (``in.title``)."""

_LOCAL_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?$")
_UTC_DATETIME = re.compile(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?)(\.\d+)?Z$")


def _value(descriptor: Descriptor, text: str) -> object:
    """The input value of one non-empty form field."""
    kind = descriptor["type"]
    if kind == "integer":
        try:
            return int(text)
        except ValueError:
            return text  # the API says what an integer is
    if kind == "boolean":
        return text == "true"
    if kind == "money":
        currency = (descriptor.get("typeOptions") or {}).get("currency")
        return {"amount": text, "currency": currency}
    if kind == "datetime" and _LOCAL_DATETIME.match(text):
        return text + ("Z" if text.count(":") == 2 else ":00Z")  # the form's time is UTC
    return text


def _read(descriptor: Descriptor, form: Mapping[str, str]) -> tuple[bool, object]:
    """(given, value): an empty field is null when nullable, else not given."""
    text = form.get(FIELD + descriptor["name"], "")
    if descriptor["type"] != "string":
        text = text.strip()
    if text == "":
        return (True, None) if descriptor.get("nullable") else (False, None)
    return True, _value(descriptor, text)


def form_inputs(inputs: Sequence[Descriptor], form: Mapping[str, str]) -> dict[str, object]:
    """The inputs of a create (or other) form: every field given."""
    values: dict[str, object] = {}
    for descriptor in inputs:
        given, value = _read(descriptor, form)
        if given:
            values[descriptor["name"]] = value
    return values


def changed_inputs(
    inputs: Sequence[Descriptor], form: Mapping[str, str], initial: Mapping[str, Any]
) -> dict[str, object]:
    """The inputs of an update form: only the fields whose value differs from
    ``initialValues`` (compared as the form shows them)."""
    values: dict[str, object] = {}
    for descriptor in inputs:
        name = descriptor["name"]
        shown = widget_value(descriptor, initial.get(name))
        if form.get(FIELD + name, "") == shown:
            continue
        given, value = _read(descriptor, form)
        if given or shown != "":
            values[name] = value
    return values


def widget_value(descriptor: Descriptor, value: Any) -> str:
    """How a row value is shown in its form control (``""`` for null)."""
    if value is None:
        return ""
    kind = descriptor["type"]
    if kind == "money" and isinstance(value, Mapping):
        return str(value.get("amount", ""))
    if kind == "boolean":
        return "true" if value else "false"
    if kind == "datetime" and isinstance(value, str):
        match = _UTC_DATETIME.match(value)
        if match:
            return match.group(1)
    return str(value)


def filter_params(args: Mapping[str, str], filters: Sequence[Descriptor]) -> list[tuple[str, str]]:
    """The API's ``filter.<field>.<op>`` parameters of the console's filter controls
    (``f.<field>.op`` and ``f.<field>.v``), for the declared filters only."""
    params = []
    for descriptor in filters:
        field = descriptor["field"]
        value = args.get(f"f.{field}.v", "").strip()
        operator = args.get(f"f.{field}.op", "eq")
        if value == "" or operator not in descriptor["operators"]:
            continue
        if _LOCAL_DATETIME.match(value):
            value += "Z" if value.count(":") == 2 else ":00Z"
        params.append((f"filter.{field}.{operator}", value))
    return params
