"""proxai.protocols.fragments against the parsers the SDKs run after every fragment, on every prefix
of a fixed set of JSON documents (docs/design/conformance.md, "Tool arguments fragment by
fragment"): jiter's partial mode (anthropic-python, openai-python), openai-node's and
anthropic-node's vendored ``partialParse`` (run in node from .ci/node-sdks). ``torn`` says a start
is refused exactly where jiter refuses it, and which Chat rule exactly where openai-node also does;
a start the model keeps (``ToolBuffer.lead``) is judged again with the next fragment as jiter
would judge the joined text; ``input_fault`` says anthropic-node raises on a whole input exactly
where it does."""

from __future__ import annotations

import json
import random
import subprocess
from functools import cache

import jiter
import pytest

from proxai.protocols.common import ToolBuffer, json_valid
from proxai.protocols.conformance import too_deep
from proxai.protocols.fragments import input_fault, python_refuses, torn
from proxai.protocols.fragments import node_refuses as node_refuses_model

from . import sdks

_WS = [" ", "\n", "\t", "\r\n", ""]
HAND = [
    '{"a": 1}',
    ' {"a": [1, 2.5, -3e+2, true, false, null, "x\\"y\\\\", {"b": {}}]} ',
    "[]",
    "{}",
    '"s\\u00e9\\n"',
    "-12.5e-3",
    "0",
    "true",
    "false",
    "null",
    "[1,[2,[3]]]",
    '{"k":"v","n":-0.0,"e":1E5}',
    '\n\t{ "a" : "\\ud83d\\ude00" }\n',
    "123",
    " 7 ",
    '["a",{"b":null}]',
    '{"a":-1}',
    '"abc"',
]


def _generated(rng: random.Random, depth: int = 0) -> str:
    def ws() -> str:
        return rng.choice(_WS) if rng.random() < 0.5 else ""

    r = rng.random()
    if depth > 3 or r < 0.35:
        return rng.choice(
            [
                lambda: str(rng.randint(-1000, 1000)),
                lambda: repr(rng.uniform(-1e5, 1e5)),
                lambda: f"{rng.randint(1, 9)}e{rng.randint(-5, 5)}",
                lambda: rng.choice(["true", "false", "null"]),
                lambda: json.dumps(
                    rng.choice(["", "a", 'é\n"\\', "\U0001f600", "x/y"]), ensure_ascii=rng.random() < 0.5
                ),
            ]
        )()
    if r < 0.65:
        items = (ws() + _generated(rng, depth + 1) + ws() for _ in range(rng.randint(0, 3)))
        return "[" + ws() + ",".join(items) + "]"
    keys = (json.dumps(rng.choice(["a", 'b"', "ü", ""])) for _ in range(rng.randint(0, 3)))
    return (
        "{"
        + ws()
        + ",".join(ws() + k + ws() + ":" + ws() + _generated(rng, depth + 1) + ws() for k in keys)
        + "}"
    )


def _docs() -> list[str]:
    rng = random.Random(7)
    docs = list(HAND)
    while len(docs) < 150:
        doc = rng.choice(_WS) + _generated(rng) + rng.choice(_WS)
        json.loads(doc)
        docs.append(doc)
    return docs


DOCS = _docs()
PREFIXES = sorted({d[:i] for d in DOCS for i in range(1, len(d) + 1)})
# what may follow a whole value, alone and in pairs: what anthropic-node's partial parser keeps
# (it raises then) and what it drops (a separator, a number or literal at the end)
_TAILS = [
    "x", " x", ",", ":", "1", " 1", "1 ", "tr", "tru ", "true", "}", "]", "{", "[", '"a"', '"a', ",,",
    ", ", "1.", "-", "[1]", "{}", "nul", " \n", ",1", ":1", "1e", '{"b":2}', "\u00e9", "+", ".", "1x",
    "--1", "1e-", '"', "]]", "},", '{"a"', '{"a":', "[1,",
]  # fmt: skip
TRAILING = sorted(
    {d.strip() + t for d in DOCS if d.strip()[:1] in "{[" for t in _TAILS}
    | {d + t + u for d in DOCS[:40] if d.strip()[:1] in "{[" for t in _TAILS for u in _TAILS[::3]}
)


@cache
def jiter_refuses(text: str) -> bool:
    try:
        jiter.from_json(text.encode(), partial_mode=True)
    except ValueError:
        return True
    return False


def _fresh() -> ToolBuffer:
    tb = ToolBuffer(0, "t", "f", "function", now=0.0, limit=1 << 20, has_args=True)
    tb.lead = ""
    return tb


_NODE = """
const dir = process.argv[1] + "/node_modules/";
const parsers = ["openai", "@anthropic-ai/sdk"].map(
  (pkg) => require(dir + pkg + "/_vendor/partial-json-parser/parser.js").partialParse,
);
const raises = (f, p) => {
  try {
    f(p);
    return false;
  } catch {
    return true;
  }
};
let input = "";
process.stdin.on("data", (d) => (input += d));
process.stdin.on("end", () => {
  const out = JSON.parse(input).map((p) => parsers.map((f) => raises(f, p)));
  process.stdout.write(JSON.stringify(out));
});
"""


@pytest.fixture(scope="module")
def node_refuses() -> dict[str, tuple[bool, bool]]:
    """Each prefix: (openai-node's partialParse raises, anthropic-node's raises)."""
    out = subprocess.run(
        [sdks._node(), "-e", _NODE, str(sdks.NODE_SDKS)],
        input=json.dumps(PREFIXES + TRAILING),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return {p: (o, a) for p, (o, a) in zip(PREFIXES + TRAILING, json.loads(out.stdout), strict=True)}


def test_the_prefixes_hold_every_kind_of_start() -> None:
    kinds = {torn(_fresh(), p) for p in PREFIXES}
    assert kinds == {None, "blank", "number", "scalar"}
    assert len(PREFIXES) > 4000


def test_torn_refuses_a_start_exactly_where_jiter_does(node_refuses: dict[str, tuple[bool, bool]]) -> None:
    wrong = []
    for p in PREFIXES:
        start = torn(_fresh(), p)
        python, chat_node = jiter_refuses(p), node_refuses[p][0]
        if (start is not None) != python or (start in ("blank", "number")) != chat_node:
            wrong.append((p, start, python, chat_node))
    assert wrong == []


def test_a_kept_start_is_judged_again_with_the_next_fragment() -> None:
    """Two fragments (every cut of every prefix): a finding at one of them exactly when jiter
    refuses the first or the two joined (what anthropic-python and openai-python parse)."""
    wrong = []
    for p in PREFIXES:
        if not p.strip(" \t\r\n") or p.lstrip(" \t\r\n")[0] in "{[":
            continue  # the first fragment settles these (the test above)
        for i in range(1, len(p)):
            tb = _fresh()
            found = torn(tb, p[:i]) is not None or (tb.lead is not None and torn(tb, p[i:]) is not None)
            if found != (jiter_refuses(p[:i]) or jiter_refuses(p)):
                wrong.append((p[:i], p[i:]))
    assert wrong == []


def test_input_fault_is_where_anthropic_node_raises(node_refuses: dict[str, tuple[bool, bool]]) -> None:
    wrong = [p for p in PREFIXES if (input_fault(p, json_valid(p)) is not None) != node_refuses[p][1]]
    assert wrong == []


def test_node_refuses_is_anthropic_nodes_partial_parse(node_refuses: dict[str, tuple[bool, bool]]) -> None:
    """``fragments.node_refuses`` raises exactly where anthropic-node's vendored ``partialParse``
    does, on every prefix and on every whole object or array with text after it."""
    assert len(TRAILING) > 4000
    wrong = [p for p in PREFIXES + TRAILING if node_refuses_model(p) != node_refuses[p][1]]
    assert wrong == []


def test_text_after_a_whole_value_is_judged_as_each_sdk_reads_it(
    node_refuses: dict[str, tuple[bool, bool]],
) -> None:
    """A whole object or array with more after it: jiter (anthropic-python) reads the value and
    no further, so the fault is anthropic-node's alone (``trailing``) or none (``after``, a note),
    unless the value is too deep for jiter too (``json``: both raise)."""
    wrong = []
    for t in TRAILING:
        fault = input_fault(t, json_valid(t))
        if json_valid(t):
            continue  # (the tail made it JSON again: ``{}`` then ``]``)
        want = "trailing" if node_refuses[t][1] else "after"
        if fault != want or python_refuses(t):
            wrong.append((t, fault))
    assert wrong == []
    assert [input_fault(t, False) for t in ('{"a":1}x', "[1],", '{"a":1}1', '[1] {"b":2}')] == [
        "trailing",
        "after",
        "after",
        "trailing",
    ]


def _deep_docs() -> list[str]:
    """Documents around jiter's recursion limit: arrays and objects 199 to 202 deep, with a number,
    an empty container or a string of brackets innermost, a key at the deepest level."""
    rng = random.Random(11)
    out = []
    for depth in (199, 200, 201, 202):
        for inner in ("1", "[]", "{}", '"[{]}"', '{"k": 2}'):
            opens = [rng.choice(("[", '{"a": ')) for _ in range(depth)]
            closes = "".join("]" if o == "[" else "}" for o in reversed(opens))
            out.append("".join(opens) + inner + closes)
    return out


def test_too_deep_is_where_jiter_hits_its_recursion_limit() -> None:
    """On every prefix of the documents around the limit (and a string full of brackets, which
    is no depth), ``too_deep`` says True exactly where jiter raises "recursion limit exceeded"."""
    texts = [d[:i] for d in _deep_docs() for i in range(1, len(d) + 1)]
    texts.append(json.dumps("[" * 300))
    wrong = []
    for t in texts:
        try:
            jiter.from_json(t.encode(), partial_mode=True)
            deep = False
        except ValueError as e:
            deep = "recursion limit" in str(e)
        if too_deep(t) != deep:
            wrong.append(t[-40:])
    assert wrong == []
    assert [too_deep("[" * n + "1") for n in (200, 201)] == [False, True]
    assert [too_deep("[" * n + "]" * n) for n in (201, 202)] == [False, True]
    assert [too_deep('{"a":' * 200 + '{"b"'), too_deep('{"a":' * 200 + '{"b": 1}')] == [False, True]
    assert input_fault("[" * 201 + "1" + "]" * 201, True) == "depth"
    assert input_fault("[" * 201 + "1", False) == "depth"  # cut short: jiter reads it, to its limit


PYTHON_PARSES = [
    '{"a":1}x', '{"a":1} x', "x", " ", '{"a":1}{', '"ab', '"ab"x', "1 2", "1", "12", "-", "1.", "1.5",
    "1.x", "1e", "1e5", "tru", "true", "truex", "nul", "null]", "[1]]", '{"a":"b', '{"a":', "{x", "[",
    '  {"a"', '"a\\u12"', '"\\n"', "0x", "01", "-0", "-a", "[" * 201 + "1", '{"a":1,}', "[1,]",
    '{"a" 1}', '"\x01"', "\n\t1", "\u00a01",
]  # fmt: skip


@pytest.mark.parametrize("text", PYTHON_PARSES, ids=repr)
def test_python_refuses_is_jiters_partial_parse(text: str) -> None:
    """``python_refuses`` is what anthropic-python's ``jiter.from_json(partial_mode=True)`` does
    with a tool block's fragments so far (the rule ``tool_input_after_stop``)."""
    try:
        jiter.from_json(text.encode(), partial_mode=True)
        refused = False
    except ValueError:
        refused = True
    assert python_refuses(text) is refused


SURROGATES = [
    '["\\ud83d\\ude00", "\\ud800", "x\\udc00y"]',
    '{"k": "\\ud800 \\ud83d\\ude00"}',
    '["\\\\ud800", "\\\\\\ud83d\\ude00"]',
    '["a\\uD83D\\uDE00b"]',
    '{"a": ["\\udbff\\udfff", "\\ud800\\u0041"]}',
]


def test_a_lone_surrogate_is_judged_where_jiter_refuses_it() -> None:
    """On every prefix of inputs with escaped surrogates (pairs, lone halves, escaped backslashes
    before a ``u``): ``input_fault`` says ``surrogate`` exactly where jiter's partial parse raises
    (a string cut short is dropped, its escapes unread: a high half at the end is no fault)."""
    wrong = []
    for doc in SURROGATES:
        for i in range(1, len(doc) + 1):
            p = doc[:i]
            if (input_fault(p, json_valid(p)) == "surrogate") != jiter_refuses(p):
                wrong.append(p)
    assert wrong == []
    assert [input_fault(d, json_valid(d)) for d in SURROGATES] == [
        "surrogate",
        "surrogate",
        None,
        None,
        "surrogate",
    ]
