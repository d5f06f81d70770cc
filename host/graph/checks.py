"""Validation of single definitions: names, fields, workflows, stamps, roles.

Every check reports through a :data:`Say` callback (which prefixes the plugin and the
definition) and never raises, so the compiler can report every problem at once. Definitions
come from third-party code: attribute types are checked before they are used.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Final

from host.fieldtypes import bound_of, coerce_write, pattern_of
from plugin_api.definitions import (
    SYSTEM_FIELDS,
    Field,
    FieldType,
    Stamp,
    StampSource,
    Transition,
    Workflow,
    WrittenBy,
)
from plugin_api.errors import BadRequest
from plugin_api.identity import ROLE_NAME_PATTERN, is_role_name

Say = Callable[[str], None]
"""Reports one problem about the definition being checked."""

NAME_MAX_LENGTH: Final = 63
TABLE_NAME_MAX_LENGTH: Final = 50
_NAME: Final = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*\Z")
_CURRENCY: Final = re.compile(r"[A-Z]{3}\Z")


def table_name(fqn: str) -> str:
    """The SQL table of an entity: its FQN with dots replaced by double underscores."""
    return fqn.replace(".", "__")


def name_problem(name: object) -> str | None:
    """Why ``name`` is not a valid name (field, transition), or ``None``."""
    if not isinstance(name, str):
        return f"must be a string, got {type(name).__name__}"
    if not _NAME.match(name):
        return "must be lower snake case: [a-z][a-z0-9]*(_[a-z0-9]+)*"
    if len(name) > NAME_MAX_LENGTH:
        return f"is longer than {NAME_MAX_LENGTH} characters"
    return None


def dotted_problem(dotted: object, *, min_parts: int) -> str | None:
    """Why ``dotted`` is not ``min_parts`` or more valid names joined by dots, or ``None``."""
    if not isinstance(dotted, str):
        return f"must be a string, got {type(dotted).__name__}"
    parts = dotted.split(".")
    if len(parts) < min_parts:
        return f"must be {min_parts} or more names joined by dots"
    for part in parts:
        problem = name_problem(part)
        if problem is not None:
            return f"segment {part!r} {problem}"
    return None


def names_of(value: object, what: str, say: Say) -> tuple[str, ...]:
    """``value`` as a tuple of strings; reports (and drops) anything else."""
    if not isinstance(value, tuple):
        say(f"{what} must be a tuple of strings, got {type(value).__name__}")
        return ()
    good = tuple(item for item in value if isinstance(item, str))
    if len(good) != len(value):
        say(f"{what} must hold only strings, got {list(value)!r}")
    return good


def duplicates(names: tuple[str, ...]) -> list[str]:
    """Names occurring more than once, in first-occurrence order."""
    seen: set[str] = set()
    repeated: dict[str, None] = {}
    for name in names:
        if name in seen:
            repeated[name] = None
        seen.add(name)
    return list(repeated)


def fits(field: Field, value: object) -> str | None:
    """Why ``value`` does not fit ``field`` (as a write-shape value), or ``None``."""
    try:
        coerce_write(field, value)
    except BadRequest as exc:
        return exc.message
    except Exception as exc:  # a value the coercion did not anticipate
        return f"{type(exc).__name__}: {exc}"
    return None


# ---------------------------------------------------------------------------------------------
# Fields
# ---------------------------------------------------------------------------------------------


def _check_options(field: Field, say: Say) -> bool:
    options = field.options
    if not isinstance(options, tuple):
        say(f"options must be a tuple of strings, got {type(options).__name__}")
        return False
    if field.type is not FieldType.ENUM:
        if options:
            say("options are only allowed on enum fields")
        return True
    if not options:
        say("an enum field needs at least one option")
        return False
    ok = True
    for option in options:
        if not isinstance(option, str) or not option:
            say(f"option {option!r} must be a non-empty string")
            ok = False
    for option in duplicates(tuple(o for o in options if isinstance(o, str))):
        say(f"option {option!r} is listed twice")
        ok = False
    return ok


def _check_type_options(field: Field, say: Say) -> bool:
    ok = _check_options(field, say)
    max_length = field.max_length
    if max_length is not None:
        if field.type is not FieldType.STRING:
            say("max_length is only allowed on string fields")
        elif not isinstance(max_length, int) or isinstance(max_length, bool) or max_length <= 0:
            say(f"max_length must be a positive integer, got {max_length!r}")
    currency = field.currency
    if field.type is FieldType.MONEY:
        if not isinstance(currency, str) or not _CURRENCY.match(currency):
            say(f"a money field needs a currency of 3 upper-case letters, got {currency!r}")
            ok = False
    elif currency is not None:
        say("currency is only allowed on money fields")
    target = field.target
    if field.type is FieldType.REFERENCE:
        problem = dotted_problem(target, min_parts=2)
        if problem is not None:
            say(f"a reference field needs the FQN of its target entity: target {problem}")
            ok = False
    elif target is not None:
        say("target is only allowed on reference fields")
    return ok


def _positive_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _check_text_rules(field: Field, say: Say) -> bool:
    """``min_length``, ``enforce_max_length`` and ``pattern`` (string fields only)."""
    ok = True
    declared = [
        name
        for name, value in (("min_length", field.min_length), ("pattern", field.pattern))
        if value is not None
    ] + (["enforce_max_length"] if field.enforce_max_length is not False else [])
    if field.type is not FieldType.STRING:
        for name in declared:
            say(f"{name} is only allowed on string fields")
        return not declared
    if field.min_length is not None and not _positive_int(field.min_length):
        say(f"min_length must be a non-negative integer, got {field.min_length!r}")
        ok = False
    if not isinstance(field.enforce_max_length, bool):
        say(f"enforce_max_length must be a bool, got {field.enforce_max_length!r}")
        ok = False
    elif field.enforce_max_length and field.max_length is None:
        say("enforce_max_length needs a max_length")
        ok = False
    if (
        ok
        and field.min_length is not None
        and isinstance(field.max_length, int)
        and field.min_length > field.max_length
    ):
        say(f"min_length {field.min_length} is greater than max_length {field.max_length}")
        ok = False
    if field.pattern is not None:
        try:
            if not isinstance(field.pattern, str):
                raise TypeError(f"must be a string, got {type(field.pattern).__name__}")
            pattern_of(field.pattern)
        except (re.error, TypeError) as exc:
            say(f"pattern {field.pattern!r} is not a regular expression: {exc}")
            ok = False
    return ok


def _check_range_rules(field: Field, say: Say) -> bool:
    """``minimum`` and ``maximum`` (integer and money fields only)."""
    bounds = [(n, v) for n, v in (("minimum", field.minimum), ("maximum", field.maximum))]
    declared = [(name, value) for name, value in bounds if value is not None]
    if field.type not in (FieldType.INTEGER, FieldType.MONEY):
        for name, _value in declared:
            say(f"{name} is only allowed on integer and money fields")
        return not declared
    ok = True
    for name, value in declared:
        if bound_of(field, value) is None:
            expected = "an integer" if field.type is FieldType.INTEGER else "an int or decimal text"
            say(f"{name} must be {expected}, got {value!r}")
            ok = False
    low, high = bound_of(field, field.minimum), bound_of(field, field.maximum)
    if ok and low is not None and high is not None and low > high:
        say(f"minimum {field.minimum!r} is greater than maximum {field.maximum!r}")
        ok = False
    return ok


def _check_rules(field: Field, say: Say) -> bool:
    """The plugin API 1.8 attributes: constraints and ``written_by``."""
    ok = _check_text_rules(field, say)
    ok = _check_range_rules(field, say) and ok
    if field.written_by is not None and not isinstance(field.written_by, WrittenBy):
        say(f"written_by must be a WrittenBy or None, got {field.written_by!r}")
        ok = False
    return ok


def check_field(field: Field, say: Say) -> None:
    """Check one declared field: name, type options, constraints and default."""
    problem = name_problem(field.name)
    if problem is not None:
        say(f"name {problem}")
    elif field.name in SYSTEM_FIELDS:
        say(f"{field.name!r} is a reserved system field ({', '.join(SYSTEM_FIELDS)})")
    if not isinstance(field.type, FieldType):
        say(f"type must be a FieldType, got {field.type!r}")
        return
    if field.label is not None and (not isinstance(field.label, str) or not field.label):
        say(f"label must be a non-empty string or None, got {field.label!r}")
    if not isinstance(field.nullable, bool):
        say(f"nullable must be a bool, got {field.nullable!r}")
        return
    rules = _check_rules(field, say)
    if _check_type_options(field, say) and rules and field.has_default:
        problem = fits(field, field.default)
        if problem is not None:
            say(f"default {field.default!r} does not fit the field: {problem}")


# ---------------------------------------------------------------------------------------------
# Stamps and workflows
# ---------------------------------------------------------------------------------------------


def _check_stamp(
    stamp: Stamp, fields: Mapping[str, Field], state_field: str | None, say: Say
) -> None:
    name = stamp.field
    target = fields.get(name) if isinstance(name, str) else None
    if target is None:
        if name in SYSTEM_FIELDS:
            say(f"stamps system field {name!r}, which only the host writes")
        else:
            say(f"stamps {name!r}, which is not a declared field")
        return
    if name == state_field:
        say(f"stamps the workflow state field {name!r}, which only transitions change")
        return
    source = stamp.source
    if not isinstance(target.type, FieldType):
        return  # reported with the field
    if not isinstance(source, StampSource):
        say(f"stamp of {name!r} has source {source!r}, which is not a StampSource")
    elif source is StampSource.NOW and target.type is not FieldType.DATETIME:
        say(f"stamps {name!r} with now, but it is a {target.type.value} field (needs datetime)")
    elif source is StampSource.ACTOR and target.type is not FieldType.STRING:
        say(f"stamps {name!r} with the actor, but it is a {target.type.value} field (needs string)")
    elif source is StampSource.LITERAL:
        problem = fits(target, stamp.value)
        if problem is not None:
            say(f"stamps {name!r} with {stamp.value!r}, which does not fit: {problem}")
    elif stamp.value is not None:
        say(f"stamp of {name!r} from {source.value} must not carry a value")


def check_stamps(
    stamps: object, fields: Mapping[str, Field], state_field: str | None, say: Say
) -> None:
    """Check the stamps of a create action or a transition."""
    if not isinstance(stamps, tuple):
        say(f"stamps must be a tuple of Stamp, got {type(stamps).__name__}")
        return
    good = []
    for stamp in stamps:
        if isinstance(stamp, Stamp):
            good.append(stamp)
        else:
            say(f"stamp {stamp!r} is not a Stamp")
    for stamp in good:
        _check_stamp(stamp, fields, state_field, say)
    for name in duplicates(tuple(s.field for s in good if isinstance(s.field, str))):
        say(f"stamps {name!r} more than once")


def _check_transition(
    transition: Transition, fields: Mapping[str, Field], state_field: str, say: Say
) -> tuple[str, ...]:
    """Check one transition; return the states it names (sources and target)."""
    where = f"transition {transition.name!r}"
    problem = name_problem(transition.name)
    if problem is not None:
        say(f"{where}: name {problem}")
    sources = names_of(transition.sources, f"{where}: sources", say)
    if isinstance(transition.sources, tuple) and not transition.sources:
        say(f"{where}: needs at least one source state")
    for state in duplicates(sources):
        say(f"{where}: source {state!r} is listed twice")
    target = transition.target
    if not isinstance(target, str):
        say(f"{where}: target must be a string, got {type(target).__name__}")
    check_stamps(transition.stamps, fields, state_field, lambda m: say(f"{where}: {m}"))
    return (*sources, *((target,) if isinstance(target, str) else ()))


def check_workflow(
    workflow: Workflow, fields: Mapping[str, Field], say: Say
) -> dict[str, Transition]:
    """Check a workflow against its entity's fields; return its transitions by name."""
    state_field = workflow.state_field
    field = fields.get(state_field) if isinstance(state_field, str) else None
    if field is None:
        say(f"workflow state field {state_field!r} is not a declared field")
    elif field.type is not FieldType.ENUM:
        say(f"workflow state field {state_field!r} must be an enum field")
        field = None
    elif field.nullable:
        say(f"workflow state field {state_field!r} must not be nullable")
    transitions: dict[str, Transition] = {}
    states: dict[str, None] = {}
    if isinstance(workflow.initial, str):
        states[workflow.initial] = None
    else:
        say(f"workflow initial state must be a string, got {workflow.initial!r}")
    if not isinstance(workflow.transitions, tuple):
        say("workflow transitions must be a tuple of Transition")
        return transitions
    for transition in workflow.transitions:
        if not isinstance(transition, Transition):
            say(f"workflow transition {transition!r} is not a Transition")
            continue
        states.update(dict.fromkeys(_check_transition(transition, fields, state_field, say)))
        if isinstance(transition.name, str):
            if transition.name in transitions:
                say(f"transition {transition.name!r} is defined twice")
            transitions.setdefault(transition.name, transition)
    if field is not None and isinstance(field.options, tuple):
        options = set(field.options)
        if workflow.initial not in options:
            say(f"workflow initial state {workflow.initial!r} is not an option of {state_field!r}")
        if options != set(states):
            missing = sorted(set(states) - options)
            unused = sorted(o for o in options - set(states) if isinstance(o, str))
            say(
                f"options of workflow state field {state_field!r} must equal the workflow's "
                f"states: not options: {missing}; not states: {unused}"
            )
    return transitions


Legacy = Callable[[str, str], None]
"""Reports a breach of a rule an older plugin is not held to, and what it gets instead
(:meth:`host.graph.compat.Gates.warner`)."""


def check_roles(roles: object, say: Say, legacy: Legacy | None = None) -> None:
    """Roles are role names (``X-Actor-Roles`` could carry no other). With ``legacy`` (a
    plugin older than plugin API 1.2), a role that plugin API 1.0 accepted (non-empty, no
    comma, no surrounding whitespace) is reported there instead: it admits nobody."""
    for role in names_of(roles, "roles", say):
        if is_role_name(role):
            continue
        breach = f"role {role!r} is not a role name ({ROLE_NAME_PATTERN})"
        if legacy is not None and role and "," not in role and role == role.strip():
            legacy(breach, "no caller holds the role (without another of the roles: 403)")
        else:
            say(breach)
