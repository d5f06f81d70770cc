"""The public condition API (plugin API 1.6): one ``Condition`` and one ``Operator`` for read
policies, list filters and the data API, with the old spellings kept as documented aliases.

That the aliases still work end to end is shown through HTTP elsewhere: a read policy
returning ``RowCondition`` (tests/http/test_http_access.py) and ``ctx.data.find`` with
``Condition(op=...)`` (tests/runtime/test_runtime_data.py)."""

from __future__ import annotations

import pytest

import plugin_api
from plugin_api import OPERATORS, Condition, Filter, FilterOperator, Operator, RowCondition
from plugin_api.access import RowCondition as AccessRowCondition
from plugin_api.data import Condition as DataCondition
from plugin_api.listing import FilterOperator as ListingFilterOperator


def test_the_old_names_are_the_same_objects() -> None:
    assert RowCondition is Condition is AccessRowCondition is DataCondition
    assert FilterOperator is Operator is ListingFilterOperator
    assert tuple(member.value for member in Operator) == OPERATORS
    assert {"Condition", "Operator", "RowCondition", "FilterOperator"} <= set(plugin_api.__all__)


def test_operator_and_its_old_name_op_spell_the_same_condition() -> None:
    new = Condition(field="title", operator=Operator.LT, value="m")
    assert Condition(field="title", operator="lt", value="m") == new
    assert Condition(field="title", op="lt", value="m") == new
    assert RowCondition(field="title", op=Operator.LT, value="m") == new
    assert new.op == "lt" and new.operator is Operator.LT
    assert Condition(field="state").operator is Operator.EQ


def test_giving_both_spellings_differently_is_refused() -> None:
    with pytest.raises(TypeError, match="operator once"):
        Condition(field="title", operator="gt", op="lt")


def test_an_unknown_operator_is_kept_for_the_host_to_report() -> None:
    odd = Condition(field="title", operator="like", value="%")
    assert odd.operator == "like" and odd.op == "like"


def test_a_list_value_becomes_a_tuple_and_conditions_hash() -> None:
    condition = Condition(field="level", operator="in", value=[1, 2])
    assert condition.value == (1, 2)
    assert len({condition, Condition(field="level", operator=Operator.IN, value=(1, 2))}) == 1


def test_filter_declarations_take_the_one_operator_enum() -> None:
    declared = Filter(field="state", operators=("eq", Operator.IN, "nope"))
    assert declared.operators == (Operator.EQ, Operator.IN, "nope")
