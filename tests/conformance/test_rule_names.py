"""Every finding name the grammars give ``conform`` is a rule of the catalogue (``conformance.RULES``):
``conformance.metadata`` keeps only catalogued rules, so a name missing there would be dropped from
the flow's summary without a word. The protocol modules are read as source: each ``conform`` /
``_conform`` call's first argument is a string, a module-level string constant, or one of the
tables the module names its rules in (``DATALESS_RULES``, ``responses_sdk._PAIRS``); the rules
judged at the stream's end with the request come from ``conformance.at_end`` (``AT_END_RULES``), the
ones judged fragment by fragment from ``Accum.tool_args`` (``fragments.RULES``)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from proxai.protocols import conformance, fragments, responses_sdk
from proxai.protocols.conformance import RULES

PROTOCOLS = Path(conformance.__file__).resolve().parent


def _constants(tree: ast.Module) -> dict[str, str]:
    out: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            for target in node.targets:
                if isinstance(target, ast.Name) and isinstance(node.value.value, str):
                    out[target.id] = node.value.value
    return out


def _strings(node: ast.expr) -> list[str] | None:
    """The strings an expression can be: a literal, or a conditional between literals."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.IfExp):
        a, b = _strings(node.body), _strings(node.orelse)
        return None if a is None or b is None else a + b
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):  # "prefix." + ("a" if x else "b")
        a, b = _strings(node.left), _strings(node.right)
        return None if a is None or b is None else [x + y for x in a for y in b]
    return None


def _catalogued(arg: ast.JoinedStr) -> set[str]:
    """An f-string whose computed part is a name (``f"anthropic_messages.{family}_start"``): the
    catalogue's rules it can be, its literal parts in place and a rule-name word for each computed
    part (none: the call is listed as computed)."""
    parts = [re.escape(v.value) if isinstance(v, ast.Constant) else "[a-z_]+" for v in arg.values]
    if not isinstance(arg.values[0], ast.Constant):
        return set()
    return {r for r in RULES if re.fullmatch("".join(parts), r)}


def _locals(func: ast.AST) -> dict[str, list[str]]:
    """The names a function binds to strings only (``rule = "a" if x else "b"``)."""
    out: dict[str, list[str]] = {}
    for node in ast.walk(func):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            values = _strings(node.value)
            if values is not None:
                out.setdefault(node.targets[0].id, []).extend(values)
    return out


def _conform_names() -> tuple[set[str], list[str]]:
    """The rule names given to ``conform`` in the protocol modules (a literal, a module constant, a
    local name bound to literals only, or an f-string of a literal and such a name), and the calls
    whose first argument is none of these (``file: argument``)."""
    names: set[str] = set()
    other: list[str] = []
    for path in sorted(PROTOCOLS.glob("*.py")):
        tree = ast.parse(path.read_text())
        consts = _constants(tree)
        funcs = [f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)]
        for func in funcs:
            local = _locals(func)
            for node in ast.walk(func):
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                    continue
                if node.func.attr not in ("conform", "_conform") or not node.args:
                    continue
                arg = node.args[0]
                if (literal := _strings(arg)) is not None:
                    names.update(literal)
                elif isinstance(arg, ast.Name) and arg.id in consts:
                    names.add(consts[arg.id])
                elif isinstance(arg, ast.Name) and arg.id in local:
                    names.update(local[arg.id])
                elif (
                    isinstance(arg, ast.JoinedStr)
                    and len(arg.values) == 2
                    and isinstance(arg.values[0], ast.Constant)
                    and isinstance(arg.values[1], ast.FormattedValue)
                    and isinstance(arg.values[1].value, ast.Name)
                    and arg.values[1].value.id in local
                ):
                    names.update(f"{arg.values[0].value}{v}" for v in local[arg.values[1].value.id])
                elif isinstance(arg, ast.JoinedStr) and (found := _catalogued(arg)):
                    names.update(found)
                else:
                    other.append(f"{path.name}: {ast.unparse(arg)}")
    return names, other


def test_every_name_given_to_conform_is_a_rule() -> None:
    names, other = _conform_names()
    assert names, "no conform call found: the scan is broken"
    assert names - set(RULES) == set()
    # the calls with a computed name: the data-less and tail rules (common.py), the SDK view's table,
    # the rule of an event that sets a field after response.completed (``responses_after.sets``, in
    # responses_sdk.RULES) and the structured answer's rule (json_answer.py: ``conformance.judge_answer``,
    # ANSWER_RULES)
    assert sorted(other) == [
        "common.py: rules[0]",
        "common.py: rules[1]",
        "common.py: tail[0] if _NOT_JSON_TEXT in bad else tail[1]",
        "json_answer.py: *judged",
        "responses_sdk.py: rule",
        "responses_sdk.py: setting",
    ]


def test_the_rule_tables_name_rules() -> None:
    dataless = {r for rules in conformance.DATALESS_RULES.values() for r in rules[:2]}
    dataless |= {r for rules in conformance.TAIL_RULES.values() for r in rules}
    assert set(responses_sdk._PAIRS.values()).issubset(responses_sdk.RULES)
    # and each rule of the catalogue is given by some grammar
    assert conformance.AT_END_RULES.issubset(RULES)
    assert conformance.ANSWER_RULES.issubset(RULES)
    assert fragments.RULES.issubset(RULES)
    given = _conform_names()[0] | dataless | responses_sdk.RULES | conformance.AT_END_RULES | fragments.RULES
    assert given | conformance.ANSWER_RULES == set(RULES)


def _finding_names() -> dict[str, str]:
    """The names the code gives ``Accum.finding`` / ``finding_once`` (the grammars' own findings),
    each as a rule name or, for an f-string, its literal start followed by ``<``: name -> where."""
    out: dict[str, str] = {}
    for path in sorted(PROTOCOLS.parent.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            if node.func.attr not in ("finding", "finding_once") or not node.args:
                continue
            arg = node.args[0]
            where = f"{path.name}:{node.lineno}"
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                out[arg.value] = where
            elif isinstance(arg, ast.JoinedStr) and isinstance(arg.values[0], ast.Constant):
                out[f"{arg.values[0].value}<"] = where
            elif not (isinstance(arg, ast.Name) and arg.id == "rule"):  # (``conform`` passes its rule on)
                out[ast.unparse(arg)] = where
    return out


def test_every_finding_name_is_catalogued() -> None:
    """A grammar's own finding (quirk, repair) is a row of docs/design/protocol-grammars.md's table
    of the rules reported; an f-string name (``openai_chat.unknown_part.<type>``) by its start."""
    doc = (PROTOCOLS.parents[2] / "docs" / "design" / "protocol-grammars.md").read_text()
    documented = set(re.findall(r"^\| `([a-z_]+\.[a-z_.<>]+)` \| (?:quirk|repair|violation) \|", doc, re.M))
    names = _finding_names()
    assert names, "no finding call found: the scan is broken"
    missing = {
        n: w for n, w in names.items() if n not in RULES and n.replace("<", "<type>") not in documented
    }
    assert missing == {}
