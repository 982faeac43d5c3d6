"""forge-tiny data generator v2: synthetic tool-calling conversations, rendered byte for byte the
way the library's backends show them to the model.

Standard library + jinja2 only, so it runs where training runs (the GPU machine has no Node).

- Open-vocabulary values (invented and real places and people, ids with varied prefixes and
  separators, emails, amounts, dates, enums) that recur within a conversation, so the only way to
  get an argument right is to copy it from the request or a tool result.
- Randomised tool and parameter names (function masking): the model has to read the tools list
  and the descriptions, not memorise names.
- Twelve task shapes: lookup then report, chains that carry ids from results, a required first
  step, direct calls, choosing among distractor tools, retries after a transient error, redirects
  named in a result, searches that return lists, two lookups, enum choices, many-argument calls,
  and declining when no tool fits; some conversations hold several requests in a row.
- Injected wrong turns (prose instead of a call, a premature terminal call, an unknown tool,
  bad arguments, a prerequisite skipped), each followed by the library's own nudge text
  (src/prompts/nudges.ts, machines/workflow-actors.ts); the wrong turns are masked out of the loss.
- Two renderings of the tools list: the OpenAI tools the library sends llama-server
  (`toOpenAITool`), and node-llama-cpp's (the in-process client: `toChatModelFunctions`, no
  `required`, `additionalProperties: false`).
- Rendering with tools/tiny-model/chat-template.jinja and a `tojson` that writes JSON as
  llama-server's template engine does (", " and ": " separators, keys in insertion order,
  UTF-8 kept); test/tiny-model/generator.test.ts compares renders with llama-server's
  `/apply-template`.

Values, tool names and user messages are kept disjoint from the eval scenarios and the demo:
`forbidden_strings()` reads every string literal of eval/scenarios/*.ts and
scripts/demo-workflow.ts, and no generated value, tool name or request may equal one of them.

CLI: `python3 forge_gen.py sample --count N --seed S [--variant library|llamacpp] [--short]
[--tokenize tokenizer.json] [--fields a,b]` prints JSON lines {messages (OpenAI wire), tools,
libraryTools (the same tools as the library sends them, whatever the variant), variant, toolNames,
values (the copied argument values), text, ids (with --tokenize: forge_tok's token ids of text)},
or only the named fields. The seeds and `--short` are the trainer's: data worker `i` of a fresh run
draws from seed `(seed * 7919) * 1000 + i`, the tokenizer from 777, the copy probe from 999999.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import string
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

# ----------------------------------------------------------------------------------- rendering


def minja_json(value) -> str:
    """JSON as llama-server's jinja engine (minja) and node-llama-cpp's renderer write it."""
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def wire_json(value) -> str:
    """JSON as the library writes tool results and arguments (JavaScript's JSON.stringify)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


_TEMPLATE = None


def template():
    global _TEMPLATE
    if _TEMPLATE is None:
        import jinja2

        environment = jinja2.Environment()
        environment.filters["tojson"] = minja_json
        _TEMPLATE = environment.from_string((HERE / "chat-template.jinja").read_text())
    return _TEMPLATE


def render(messages: list[dict], tools: list[dict], add_generation_prompt: bool = False) -> str:
    return template().render(messages=messages, tools=tools, add_generation_prompt=add_generation_prompt)


# ------------------------------------------------------------------------------ disjointness

_STRING_LITERAL = re.compile(r"\"((?:[^\"\\\n]|\\.){1,200})\"|'((?:[^'\\\n]|\\.){1,200})'|`([^`$\\\n]{1,200})`")


def forbidden_strings() -> set[str]:
    """Every string literal of the eval scenarios and the demo, lower-cased."""
    paths = sorted((ROOT / "eval" / "scenarios").glob("*.ts")) + [ROOT / "scripts" / "demo-workflow.ts"]
    found: set[str] = set()
    for path in paths:
        if not path.exists():
            continue
        for match in _STRING_LITERAL.finditer(path.read_text()):
            literal = next(group for group in match.groups() if group is not None)
            found.add(literal.lower())
            # Words of sentences (city names, ids in a request) are values too.
            for word in re.findall(r"[A-Za-z][A-Za-z0-9_-]{2,}", literal):
                if word[0].isupper() or "_" in word or "-" in word or any(c.isdigit() for c in word):
                    found.add(word.lower())
    return found


_FORBIDDEN: set[str] | None = None


def forbidden() -> set[str]:
    global _FORBIDDEN
    if _FORBIDDEN is None:
        _FORBIDDEN = forbidden_strings()
    return _FORBIDDEN


# ------------------------------------------------------------------------------------ values

ONSETS = "b c d f g h j k l m n p r s t v w z br ch cl dr fl gr kr pl pr sh sk st tr th bl gl sl sp".split()
VOWELS = "a e i o u a e i o ai ea ou io ei y".split()
CODAS = [""] * 6 + "n r s l m t k nd st rk x sh".split()
REAL_PLACES = """Lisbon Nairobi Osaka Quito Tallinn Hobart Medellin Cork Dakar Izmir Brno Tromso Perth Accra
Bergen Lyon Porto Kraków Valparaíso Zanzibar Reykjavik Montréal Gdańsk Tbilisi Antwerp Oaxaca Malmö Hanoi
Cusco Galway Leeds Ghent Turku Aarhus Leipzig Split Bari Sapporo Busan Cebu Kigali Windhoek Hamilton Nantes
Bilbao Lviv Tartu Odense Salzburg Graz Basel Lugano Valencia Málaga Seville Braga Faro Tangier Rabat Agadir
Mombasa Arusha Durban Pune Mysore Kochi Jaipur Udaipur Colombo Kandy Penang Ipoh Darwin Cairns Nelson Napier
Dunedin Halifax Regina Boise Tulsa Fresno Tacoma Eugene Duluth Mobile Macon Asheville Burlington""".split()
FIRST_NAMES = """Amara Bruno Chiara Dara Emeka Farah Goran Hana Ilse Jonas Kaito Leila Marek Nadia Oskar Priya
Quentin Rosa Sven Tamsin Ugo Vera Wren Xiomara Yann Zofia Aksel Bea Cyrus Dalia Elio Fenna Gideon Hedda Ines
Joaquín Kasia Lior Maren Nico Ottilie Pavel Rhea Soren Talia Umar Vida Wilhelmina Yusuf Zainab Ada Bo Cleo
Dov Esme Finn Greta Hugo Iris Jude Kofi Luz Mira Noa Otto Pia Rui Sami Teo Uma Vik Wim Zoë""".split()
LAST_NAMES = """Abara Bergström Castell Dufresne Eklund Fontaine Grabowski Halloran Ibsen Jovanović Kowalczyk
Lindahl Moreno Nakamura Okafor Petrov Quintero Rasmussen Sandoval Takahashi Ulrich Varga Whitcombe Yilmaz
Zielinski Achebe Brandt Cardenas Delacroix Esposito Falk Gallo Horvath Iyer Jensen Kamara Lund Mbeki Novak
Ortega Pereira Ruiz Santos Tanaka Vogel Weiss Young Zapata Ferreira Haddad Ivanova Kruger Mensah""".split()
TLDS = "com org net io dev co uk de fr nl".split()
MONTHS = "January February March April May June July August September October November December".split()
SEPARATORS = ["-", "-", "-", "_", "", "/", "#", ".", ":"]


def invented(rng: random.Random, syllables: tuple[int, int] = (1, 3)) -> str:
    word = "".join(
        rng.choice(ONSETS) + rng.choice(VOWELS) + rng.choice(CODAS)
        for _ in range(rng.randint(*syllables))
    )
    return word


def clean(rng: random.Random, make) -> str:
    """A value that is no eval string."""
    for _ in range(50):
        value = make()
        if value.lower() not in forbidden():
            return value
    raise RuntimeError("could not draw a value outside the eval's strings")


def place(rng: random.Random) -> str:
    def make() -> str:
        roll = rng.random()
        if roll < 0.35:
            return rng.choice(REAL_PLACES)
        name = invented(rng, (2, 3)).capitalize()
        if roll < 0.45:
            return f"{rng.choice(['Port', 'San', 'Lake', 'Mount', 'New', 'Upper', 'West', 'Fort'])} {name}"
        if roll < 0.5:
            return f"{name} {rng.choice(['Bay', 'Falls', 'Harbour', 'Springs', 'Heights', 'Junction'])}"
        return name

    return clean(rng, make)


def first_name(rng: random.Random) -> str:
    return rng.choice(FIRST_NAMES) if rng.random() < 0.4 else invented(rng, (1, 3)).capitalize()


def last_name(rng: random.Random) -> str:
    return rng.choice(LAST_NAMES) if rng.random() < 0.4 else invented(rng, (2, 3)).capitalize()


def person(rng: random.Random) -> str:
    return clean(rng, lambda: f"{first_name(rng)} {last_name(rng)}")


def identifier(rng: random.Random, prefix: str | None = None) -> str:
    def make() -> str:
        head = prefix
        if head is None:
            head = "".join(rng.choice(string.ascii_uppercase) for _ in range(rng.randint(1, 4)))
            if rng.random() < 0.15:
                head = head.lower()
        digits = "".join(rng.choice(string.digits) for _ in range(rng.randint(2, 6)))
        tail = rng.choice(string.ascii_uppercase) if rng.random() < 0.1 else ""
        if rng.random() < 0.08:
            return digits + tail
        return f"{head}{rng.choice(SEPARATORS)}{digits}{tail}"

    return clean(rng, make)


def email(rng: random.Random, who: str | None = None) -> str:
    name = who or person(rng)
    local = re.sub(r"[^a-z.]", "", name.lower().replace(" ", rng.choice([".", "", "_"])).replace("_", "."))
    if not local.strip("."):
        local = invented(rng).lower()
    return f"{local}@{invented(rng, (1, 2))}.{rng.choice(TLDS)}"


def amount(rng: random.Random) -> str:
    def make() -> str:
        whole = rng.choice([rng.randint(1, 99), rng.randint(100, 999), rng.randint(1000, 99999)])
        return f"{whole}.{rng.randint(0, 99):02d}" if rng.random() < 0.7 else str(whole)

    return clean(rng, make)


def count(rng: random.Random) -> str:
    return clean(rng, lambda: str(rng.choice([rng.randint(0, 9), rng.randint(10, 99), rng.randint(100, 5000)])))


def date(rng: random.Random) -> str:
    def make() -> str:
        year, month, day = rng.randint(2019, 2031), rng.randint(1, 12), rng.randint(1, 28)
        if rng.random() < 0.75:
            return f"{year}-{month:02d}-{day:02d}"
        return f"{MONTHS[month - 1]} {day}, {year}"

    return clean(rng, make)


def phrase(rng: random.Random) -> str:
    return clean(rng, lambda: " ".join(invented(rng, (1, 2)) for _ in range(rng.randint(1, 3))))


# ------------------------------------------------------------------------------------- world

SUBJECTS = """order invoice shipment ticket booking account device sensor parcel vessel room course plant vehicle
project task contract meter crate permit claim policy lease job asset sample batch trail route ferry hotel event
concert match player team bike loan card transfer subscription appointment locker drone turbine pump valve well
hive kiln loom beacon barrel tank score greenhouse workshop exhibit manuscript fossil telescope satellite antenna
bridge tunnel dam reservoir orchard vineyard herd flock stable kennel clinic pharmacy lab studio gallery theatre
voyage cargo pallet container dock berth platform signal carriage tram cable pipeline mine quarry forge foundry
mill bakery brewery winery recipe menu catering tournament league season album track podcast episode broadcast
campaign survey petition ballot census parcel_locker warranty repair""".split()
LOOKUP_VERBS = "get fetch lookup find read load query check retrieve pull inspect show describe resolve".split()
SEARCH_VERBS = "search list browse scan find_all filter".split()
TERMINAL_VERBS = "report send submit file post record log notify publish create issue book save write deliver close".split()
START_VERBS = "open start begin authenticate register sign_in connect init claim".split()
OUTCOMES = "summary report note notice memo digest update receipt confirmation alert entry card label brief".split()
ROLES = "support dispatch operations records logistics front-desk field maintenance booking billing archive".split()
ENUMS = [
    ["low", "normal", "high", "urgent"],
    ["open", "pending", "closed"],
    ["standard", "express", "overnight"],
    ["red", "amber", "green"],
    ["draft", "final"],
    ["email", "sms", "post"],
    ["small", "medium", "large"],
    ["morning", "afternoon", "evening"],
    ["approve", "reject", "escalate"],
    ["celsius", "fahrenheit"],
    ["active", "suspended", "archived"],
    ["calm", "busy", "closed"],
]
_ENUMS: list[list[str]] | None = None


def enums() -> list[list[str]]:
    """The enum lists none of whose options is an eval string (an eval tool's enum, an argument)."""
    global _ENUMS
    if _ENUMS is None:
        _ENUMS = [options for options in ENUMS if not any(option in forbidden() for option in options)]
    return _ENUMS


CONDITIONS = "sunny cloudy rainy windy foggy snowy clear stormy humid mild".split()

# Field kinds of a record: key choices and a value maker.
FIELD_KINDS = {
    "person": ["owner", "contact", "manager", "keeper", "assignee", "driver", "curator", "holder", "agent", "lead"],
    "place": ["city", "location", "site", "region", "depot", "station", "origin", "destination", "town", "base"],
    "amount": ["amount", "balance", "total", "price", "fee", "cost", "deposit", "due"],
    "count": ["count", "quantity", "units", "seats", "items", "level", "capacity", "stock"],
    "date": ["date", "due_date", "created", "expires", "scheduled", "since", "deadline", "delivered"],
    "email": ["email", "contact_email", "notify", "inbox"],
    "code": ["code", "reference", "serial", "tag", "batch_code", "pin", "slot"],
    "word": ["label", "nickname", "codename", "variety", "model", "brand", "species", "title"],
}


def make_value(rng: random.Random, kind: str) -> str:
    if kind == "person":
        return person(rng)
    if kind == "place":
        return place(rng)
    if kind == "amount":
        return amount(rng)
    if kind == "count":
        return count(rng)
    if kind == "date":
        return date(rng)
    if kind == "email":
        return email(rng)
    if kind == "code":
        return identifier(rng)
    return clean(rng, lambda: invented(rng, (1, 3)).capitalize())


def noun(rng: random.Random) -> str:
    return rng.choice(SUBJECTS) if rng.random() < 0.7 else invented(rng, (1, 2))


def tool_name(rng: random.Random, verb: str, obj: str, taken: set[str]) -> str:
    for _ in range(50):
        style = rng.random()
        if style < 0.8:
            name = f"{verb}_{obj}"
        elif style < 0.9:
            parts = f"{verb}_{obj}".split("_")
            name = parts[0] + "".join(part.capitalize() for part in parts[1:])
        elif style < 0.95:
            name = f"{verb}-{obj}".replace("_", "-")
        else:
            name = f"{obj}_{verb}"
        if name not in taken and name.lower() not in forbidden():
            taken.add(name)
            return name
        obj = f"{obj}_{invented(rng, (1, 1))}"
    raise RuntimeError("no free tool name")


class Param:
    def __init__(self, key: str, kind: str, description: str | None = None, enum=None, required=True, integer=False):
        self.key, self.kind, self.description = key, kind, description
        self.enum, self.required, self.integer = enum, required, integer


class Tool:
    def __init__(self, name: str, description: str, params: list[Param]):
        self.name, self.description, self.params = name, description, params

    def schema(self, variant: str) -> dict:
        properties = {}
        for param in self.params:
            if param.enum is not None:
                prop = {"type": "string", "enum": list(param.enum)} if variant == "library" else {"enum": list(param.enum)}
            elif param.integer:
                prop = (
                    {"type": "integer", "minimum": -9007199254740991, "maximum": 9007199254740991}
                    if variant == "library"
                    else {"type": "integer"}
                )
            else:
                prop = {"type": "string"}
                if param.description:
                    prop["description"] = param.description
            if variant != "library" and not param.required:
                prop = {"oneOf": [prop, {"type": "null"}]}
            properties[param.key] = prop
        if variant == "library":
            return {
                "type": "object",
                "properties": properties,
                "required": [param.key for param in self.params if param.required],
            }
        return {"type": "object", "properties": properties, "additionalProperties": False}

    def openai(self, variant: str) -> dict:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.schema(variant)},
        }


def param_key(rng: random.Random, kind: str, subject: str) -> str:
    if kind == "id":
        choices = [f"{subject}_id", "id", f"{subject}_ref", "ref", f"{subject}_number", "key", f"{subject}_code"]
        key = rng.choice(choices)
    else:
        key = rng.choice(FIELD_KINDS[kind])
    if rng.random() < 0.08:
        key = f"{key}_{invented(rng, (1, 1))}"
    if rng.random() < 0.1:
        parts = key.split("_")
        key = parts[0] + "".join(part.capitalize() for part in parts[1:])
    return key


# --------------------------------------------------------------------------------- dialogue


class Step:
    """One correct assistant call and the tool's answer."""

    def __init__(self, tool: Tool, args: dict, result: str, copied: list[tuple[str, str]] | None = None):
        self.tool, self.args, self.result = tool, args, result
        self.copied = copied or []


class Task:
    """One user request and the calls that serve it."""

    def __init__(self, user: str, steps: list[Step], final: str | None = None, decline: str | None = None):
        self.user, self.steps, self.final, self.decline = user, steps, final, decline


class World:
    """The tools of one conversation and how to build tasks with them."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.taken: set[str] = set()
        self.tools: list[Tool] = []
        self.required_first: Tool | None = None
        self.system_extra: list[str] = []
        self.short = False


def record(rng: random.Random, subject: str, id_key: str, id_value: str, kinds: list[str]) -> dict:
    data = {id_key: id_value}
    for kind in kinds:
        key = rng.choice(FIELD_KINDS[kind])
        while key in data:
            key = f"{key}_{rng.randint(2, 9)}"
        value = make_value(rng, kind)
        data[key] = int(value) if kind == "count" and rng.random() < 0.6 else value
    if rng.random() < 0.5:
        data["status"] = rng.choice(rng.choice(enums()))
    return data


def lookup_tool(world: World, subject: str, by: str = "id", verb: str | None = None) -> tuple[Tool, str]:
    rng = world.rng
    key = param_key(rng, by, subject)
    description = rng.choice(
        [
            f"Look up a {subject.replace('_', ' ')} by its {key.replace('_', ' ')}",
            f"Get the details of one {subject.replace('_', ' ')}",
            f"Fetch a {subject.replace('_', ' ')} record",
            f"Returns the {subject.replace('_', ' ')} with the given {key.replace('_', ' ')}",
            f"Current {subject.replace('_', ' ')} information for a {key.replace('_', ' ')}",
        ]
    )
    described = rng.random() < 0.4
    tool = Tool(
        tool_name(rng, verb or rng.choice(LOOKUP_VERBS), subject, world.taken),
        description,
        [Param(key, by, f"The {key.replace('_', ' ')}" if described else None)],
    )
    return tool, key


def terminal_tool(world: World, subject: str, params: list[Param]) -> Tool:
    rng = world.rng
    outcome = rng.choice(OUTCOMES)
    description = rng.choice(
        [
            f"Send the {outcome} to the user. Call it last.",
            f"Report the result to the user. Call this last, once you know the answer.",
            f"File a {outcome} for the {subject.replace('_', ' ')}. This ends the task.",
            f"Record the {outcome}. Call it once everything is looked up.",
            f"Deliver the final {outcome}",
        ]
    )
    obj = f"{subject}_{outcome}" if rng.random() < 0.5 else outcome
    return Tool(tool_name(rng, rng.choice(TERMINAL_VERBS), obj, world.taken), description, params)


def text_param(rng: random.Random) -> Param:
    key = rng.choice(["report", "summary", "message", "note", "text", "details", "body", "answer"])
    return Param(key, "text", rng.choice([None, f"A one-sentence {key}", f"The {key} for the user"]))


def sentence_result(rng: random.Random, where: str, unit: str | None = None) -> tuple[str, str]:
    """A tool result as a sentence (like the demo's weather tool), and the fact it states."""
    number = rng.randint(-15, 40) if unit is None else rng.randint(1, 999)
    condition = rng.choice(CONDITIONS)
    forms = [
        f"{number}°C and {condition} in {where}",
        f"{condition.capitalize()}, {number}°C in {where}",
        f"{where}: {number}°C, {condition}",
        f"It is {condition} in {where} with {number} degrees",
    ]
    text = rng.choice(forms)
    return text, text


def compose(rng: random.Random, subject: str, ident: str, facts: list[tuple[str, str]]) -> str:
    """The free-text argument of a terminal call: built from values in the conversation."""
    if not facts:
        return f"{subject.replace('_', ' ').capitalize()} {ident} is done."
    key, value = facts[0]
    forms = [
        f"The {key.replace('_', ' ')} of {subject.replace('_', ' ')} {ident} is {value}.",
        f"{subject.replace('_', ' ').capitalize()} {ident}: {key.replace('_', ' ')} {value}.",
        f"{ident} has {key.replace('_', ' ')} {value}.",
    ]
    if len(facts) > 1:
        key2, value2 = facts[1]
        forms.append(f"{ident}: {key.replace('_', ' ')} {value}, {key2.replace('_', ' ')} {value2}.")
    return rng.choice(forms)


def final_text(rng: random.Random, terminal: Tool, args: dict) -> str:
    values = [str(v) for v in args.values() if isinstance(v, str) and len(str(v)) < 40]
    shown = f" ({', '.join(values[:2])})" if values else ""
    return rng.choice(
        [
            f"Done: I called {terminal.name}{shown}.",
            f"All set{shown}.",
            f"The {terminal.name.replace('_', ' ')} went through{shown}.",
        ]
    )


def terminal_result(rng: random.Random) -> str:
    return rng.choice(
        [
            wire_json({"status": "sent"}),
            wire_json({"ok": True}),
            wire_json({"status": "recorded", "id": identifier(rng)}),
            "ok",
            "Delivered.",
            wire_json({"delivered": True, "at": date(rng)}),
        ]
    )


def ask(rng: random.Random, forms: list[str]) -> str:
    text = rng.choice(forms)
    if rng.random() < 0.15:
        text = text[0].lower() + text[1:]
    if rng.random() < 0.1:
        text = text.rstrip("?.") + rng.choice([", please.", " thanks", "!", " asap."])
    return text


# Shapes: each returns a Task given the world (and adds the tools it needs).


def shape_lookup_report(world: World, subject: str, by_place: bool | None = None) -> Task:
    rng = world.rng
    by_place = rng.random() < 0.4 if by_place is None else by_place
    if by_place:
        where = place(rng)
        tool, key = lookup_tool(world, subject, "place")
        fact, _ = sentence_result(rng, where) if rng.random() < 0.6 else (None, None)
        if fact is None:
            data = record(rng, subject, key, where, rng.sample(["person", "count", "amount", "date", "word"], 2))
            result = wire_json(data)
            facts = [(k, str(v)) for k, v in data.items() if k != key][:2]
        else:
            result, facts = fact, [("state", fact)]
        text = text_param(rng)
        terminal = terminal_tool(world, subject, [Param(key, "place"), text])
        report = fact if fact is not None and rng.random() < 0.7 else compose(rng, subject, where, facts)
        user = ask(
            rng,
            [
                f"What's the {subject.replace('_', ' ')} situation in {where}?",
                f"How is the {subject.replace('_', ' ')} in {where} today?",
                f"Check {where} for me.",
                f"Give me the {subject.replace('_', ' ')} report for {where}.",
                f"What is it like in {where}?",
            ],
        )
        world.tools += [tool, terminal]
        steps = [
            Step(tool, {key: where}, result, [("place", where)]),
            Step(terminal, {key: where, text.key: report}, terminal_result(rng), [("place", where), ("text", report)]),
        ]
        return Task(user, steps)
    ident = identifier(rng)
    tool, key = lookup_tool(world, subject, "id")
    data = record(rng, subject, key, ident, rng.sample(list(FIELD_KINDS), rng.randint(2, 4)))
    field, value = rng.choice([(k, v) for k, v in data.items() if k != key])
    out_key = field if field not in (key,) else f"{field}_value"
    terminal = terminal_tool(world, subject, [Param(key, "id"), Param(out_key, "value")])
    user = ask(
        rng,
        [
            f"What's the {field.replace('_', ' ')} of {subject.replace('_', ' ')} {ident}?",
            f"Look up {subject.replace('_', ' ')} {ident} and tell me its {field.replace('_', ' ')}.",
            f"I need the {field.replace('_', ' ')} for {ident}.",
            f"Can you find {subject.replace('_', ' ')} {ident}? Report its {field.replace('_', ' ')}.",
        ],
    )
    world.tools += [tool, terminal]
    return Task(
        user,
        [
            Step(tool, {key: ident}, wire_json(data), [("id", ident)]),
            Step(terminal, {key: ident, out_key: str(value)}, terminal_result(rng), [("id", ident), ("value", str(value))]),
        ],
    )


def shape_chain(world: World, subject: str) -> Task:
    rng = world.rng
    other = noun(rng)
    while other == subject:
        other = noun(rng)
    first, key1 = lookup_tool(world, subject, "id")
    second, key2 = lookup_tool(world, other, "id")
    ident, linked = identifier(rng), identifier(rng)
    link_key = rng.choice([key2, f"{other}_id", "linked_to", f"assigned_{other}", "parent"])
    data1 = record(rng, subject, key1, ident, rng.sample(list(FIELD_KINDS), 1))
    data1[link_key] = linked
    data2 = record(rng, other, key2, linked, rng.sample(list(FIELD_KINDS), rng.randint(2, 3)))
    field, value = rng.choice([(k, v) for k, v in data2.items() if k != key2])
    terminal = terminal_tool(world, subject, [Param(key1, "id"), Param(field if field != key1 else "value", "value")])
    user = ask(
        rng,
        [
            f"Which {field.replace('_', ' ')} belongs to the {other.replace('_', ' ')} of {subject.replace('_', ' ')} {ident}?",
            f"Find the {other.replace('_', ' ')} linked to {ident} and report its {field.replace('_', ' ')}.",
            f"{subject.replace('_', ' ').capitalize()} {ident}: what is the {field.replace('_', ' ')} of its {other.replace('_', ' ')}?",
        ],
    )
    world.tools += [first, second, terminal]
    return Task(
        user,
        [
            Step(first, {key1: ident}, wire_json(data1), [("id", ident)]),
            Step(second, {key2: linked}, wire_json(data2), [("id", linked)]),
            Step(
                terminal,
                {key1: ident, (field if field != key1 else "value"): str(value)},
                terminal_result(rng),
                [("id", ident), ("value", str(value))],
            ),
        ],
    )


def shape_direct(world: World, subject: str) -> Task:
    rng = world.rng
    who = person(rng)
    address = email(rng, who)
    text = text_param(rng)
    message = rng.choice(
        [f"the {subject.replace('_', ' ')} is ready", f"{subject.replace('_', ' ')} {identifier(rng)} shipped", phrase(rng)]
    )
    params = [Param(rng.choice(["to", "recipient", "email", "address"]), "email"), text]
    if rng.random() < 0.5:
        params.insert(0, Param(rng.choice(["name", "recipient_name", "person"]), "person"))
    terminal = terminal_tool(world, subject, params)
    args = {}
    for param in params:
        args[param.key] = {"email": address, "person": who, "text": message}[param.kind]
    user = ask(
        rng,
        [
            f"Tell {who} ({address}) that {message}.",
            f"Send a message to {who} at {address}: {message}.",
            f"Please let {who} know, at {address}, that {message}.",
        ],
    )
    world.tools += [terminal]
    return Task(user, [Step(terminal, args, terminal_result(rng), [("email", address), ("text", message)])])


def shape_two_lookups(world: World, subject: str) -> Task:
    rng = world.rng
    tool, key = lookup_tool(world, subject, "id")
    a, b = identifier(rng), identifier(rng)
    kind = rng.choice(["amount", "count", "date", "person", "place"])
    field = rng.choice(FIELD_KINDS[kind])
    va, vb = make_value(rng, kind), make_value(rng, kind)
    da, db = {key: a, field: va}, {key: b, field: vb}
    text = text_param(rng)
    terminal = terminal_tool(world, subject, [text])
    report = f"{a}: {va}; {b}: {vb}"
    user = ask(
        rng,
        [
            f"Compare the {field.replace('_', ' ')} of {subject.replace('_', ' ')}s {a} and {b}.",
            f"What are the {field.replace('_', ' ')}s of {a} and {b}?",
        ],
    )
    world.tools += [tool, terminal]
    return Task(
        user,
        [
            Step(tool, {key: a}, wire_json(da), [("id", a)]),
            Step(tool, {key: b}, wire_json(db), [("id", b)]),
            Step(terminal, {text.key: report}, terminal_result(rng), [("text", report)]),
        ],
    )


def shape_search(world: World, subject: str) -> Task:
    rng = world.rng
    by = rng.choice(["place", "person"])
    search_key = param_key(rng, by, subject)
    search = Tool(
        tool_name(rng, rng.choice(SEARCH_VERBS), f"{subject}s" if "_" not in subject else subject, world.taken),
        rng.choice([f"Search {subject.replace('_', ' ')}s by {search_key.replace('_', ' ')}", f"List matching {subject.replace('_', ' ')}s"]),
        [Param(search_key, by)],
    )
    detail, key = lookup_tool(world, subject, "id")
    target = make_value(rng, by)
    rows = []
    count = rng.choice([2, 3, 4] if world.short else [2, 3, 4, 6, 10, 20, 40])
    hit = rng.randrange(count)
    other_kind = "person" if by == "place" else "place"
    other_key = rng.choice(FIELD_KINDS[other_kind])
    for index in range(count):
        row = {key: identifier(rng), other_key: make_value(rng, other_kind)}
        rows.append(row)
    wanted = rows[hit][other_key]
    data = record(rng, subject, key, rows[hit][key], rng.sample(["amount", "date", "count", "code"], 2))
    field, value = rng.choice([(k, v) for k, v in data.items() if k != key])
    terminal = terminal_tool(world, subject, [Param(key, "id"), Param(field, "value")])
    user = ask(
        rng,
        [
            f"Among the {subject.replace('_', ' ')}s for {target}, find the one with {other_key.replace('_', ' ')} {wanted} and report its {field.replace('_', ' ')}.",
            f"Search {target}: which {subject.replace('_', ' ')} has {other_key.replace('_', ' ')} {wanted}? I need its {field.replace('_', ' ')}.",
        ],
    )
    world.tools += [search, detail, terminal]
    return Task(
        user,
        [
            Step(search, {search_key: target}, wire_json(rows), [(by, target)]),
            Step(detail, {key: rows[hit][key]}, wire_json(data), [("id", rows[hit][key])]),
            Step(terminal, {key: rows[hit][key], field: str(value)}, terminal_result(rng), [("id", rows[hit][key]), ("value", str(value))]),
        ],
    )


def shape_enum(world: World, subject: str) -> Task:
    rng = world.rng
    options = rng.choice(enums())
    choice = rng.choice(options)
    ident = identifier(rng)
    enum_key = rng.choice(["priority", "mode", "level", "kind", "option", "channel", "state", "tier"])
    terminal = terminal_tool(world, subject, [Param(param_key(rng, "id", subject), "id"), Param(enum_key, "enum", enum=options)])
    id_key = terminal.params[0].key
    user = ask(
        rng,
        [
            f"Mark {subject.replace('_', ' ')} {ident} as {choice}.",
            f"Set {ident} to {choice}.",
            f"{subject.replace('_', ' ').capitalize()} {ident} should be {choice} {enum_key.replace('_', ' ')}.",
        ],
    )
    world.tools += [terminal]
    return Task(user, [Step(terminal, {id_key: ident, enum_key: choice}, terminal_result(rng), [("id", ident), ("enum", choice)])])


def shape_many_args(world: World, subject: str) -> Task:
    rng = world.rng
    tool, key = lookup_tool(world, subject, "id")
    ident = identifier(rng)
    who = person(rng)
    data = {key: ident, "holder": who, "email": email(rng, who), "amount": amount(rng), "due": date(rng)}
    if rng.random() < 0.5:
        data = {k: data[k] for k in [key, "email", "amount", "due", "holder"]}
    params = [Param("recipient", "email"), Param("amount", "amount"), Param("due_date", "date")]
    rng.shuffle(params)
    terminal = terminal_tool(world, subject, params)
    args = {p.key: {"email": data["email"], "amount": data["amount"], "date": data["due"]}[p.kind] for p in params}
    user = ask(
        rng,
        [
            f"Send the holder of {subject.replace('_', ' ')} {ident} a reminder of what they owe and when.",
            f"Remind whoever holds {ident} about the amount due.",
        ],
    )
    world.tools += [tool, terminal]
    copied = [("email", data["email"]), ("amount", data["amount"]), ("date", data["due"])]
    return Task(user, [Step(tool, {key: ident}, wire_json(data), [("id", ident)]), Step(terminal, args, terminal_result(rng), copied)])


def shape_form(world: World, subject: str) -> Task:
    """Copy-dense: every argument of the one call is a value written in the request."""
    rng = world.rng
    kinds = rng.sample(["person", "place", "code", "email", "date", "amount", "word", "count"], rng.randint(2, 5))
    params, args, parts, copied = [], {}, [], []
    for kind in kinds:
        key = rng.choice(FIELD_KINDS[kind])
        while key in args:
            key = f"{key}_{invented(rng, (1, 1))}"
        value = make_value(rng, kind)
        params.append(Param(key, kind))
        args[key] = value
        copied.append((kind if kind in ("person", "place", "email", "date", "amount") else "value", value))
        label = key.replace("_", " ")
        parts.append(rng.choice([f"{label} {value}", f"{label}: {value}", f"{label} is {value}", f"{label} = {value}"]))
    if kinds and rng.random() < 0.5:
        ident = identifier(rng)
        key = param_key(rng, "id", subject)
        if key not in args:
            params.insert(0, Param(key, "id"))
            args = {key: ident, **args}
            copied.insert(0, ("id", ident))
            parts.insert(0, f"{subject.replace('_', ' ')} {ident}")
    terminal = terminal_tool(world, subject, params)
    joined = ", ".join(parts)
    user = ask(
        rng,
        [
            f"Please file this: {joined}.",
            f"New {subject.replace('_', ' ')} entry - {joined}.",
            f"Record {joined}.",
            f"{joined}. Save it.",
            f"Can you log the following? {joined}",
        ],
    )
    world.tools += [terminal]
    return Task(user, [Step(terminal, args, terminal_result(rng), copied)])


def with_distractors(world: World, rng: random.Random, count: int) -> None:
    for _ in range(count):
        subject = noun(rng)
        if rng.random() < 0.5:
            tool, _ = lookup_tool(world, subject, rng.choice(["id", "place", "person"]))
        else:
            tool = terminal_tool(world, subject, [Param(param_key(rng, "id", subject), "id"), text_param(rng)])
        world.tools.append(tool)


SHAPES = [
    (shape_lookup_report, 0.26),
    (shape_chain, 0.13),
    (shape_direct, 0.07),
    (shape_two_lookups, 0.09),
    (shape_search, 0.12),
    (shape_enum, 0.06),
    (shape_many_args, 0.09),
    ("required_first", 0.10),
    ("decline", 0.03),
    ("retry", 0.05),
    (shape_form, 0.05),
]
# The copy-dense start of training (`short`): more of the shapes whose arguments come from the request.
SHORT_SHAPES = [(shape, weight * (6 if shape in (shape_form, shape_direct, shape_enum) else 1)) for shape, weight in SHAPES]


def system_prompt(rng: random.Random, world: World, task: Task, subject: str) -> str:
    names = [step.tool.name for step in task.steps]
    ordered = list(dict.fromkeys(names))
    terminal = task.steps[-1].tool.name if task.steps else None
    role = rng.choice(ROLES + [subject.replace("_", " ")])
    parts = [rng.choice([f"You are a {role} assistant.", f"You help with {subject.replace('_', ' ')} records.", "You are a helpful assistant with access to tools.", f"You work the {role} desk."])]
    roll = rng.random()
    if terminal and roll < 0.6 and len(ordered) > 1:
        parts.append(f"First call {ordered[0]}, then " + ", then ".join(ordered[1:]) + ".")
    elif terminal and roll < 0.85:
        parts.append(f"When you are done, call {terminal}." if rng.random() < 0.5 else f"Always finish by calling {terminal}.")
    parts += world.system_extra
    if rng.random() < 0.3:
        parts.append(rng.choice(["Use the tools; do not guess values.", "Copy ids exactly as written.", "Answer with tool calls only.", "Keep reports short."]))
    return " ".join(parts)


def build_task(world: World, rng: random.Random, subject: str) -> Task:
    shapes = SHORT_SHAPES if world.short else SHAPES
    shape = rng.choices([s for s, _ in shapes], weights=[w for _, w in shapes])[0]
    if shape == "required_first":
        start_verb = rng.choice(START_VERBS)
        operator = person(rng)
        start_key = rng.choice(["operator", "user", "agent", "name", "staff"])
        start = Tool(
            tool_name(rng, start_verb, rng.choice(["session", "shift", "desk", "workspace", invented(rng, (1, 2))]), world.taken),
            "Call this before any other tool.",
            [Param(start_key, "person")],
        )
        world.required_first = start
        world.system_extra.append(rng.choice([f"Before anything else, call {start.name} with the operator's name.", f"Always start with {start.name}."]))
        task = shape_lookup_report(world, subject) if rng.random() < 0.6 else shape_chain(world, subject)
        token = identifier(rng)
        task.steps.insert(0, Step(start, {start_key: operator}, wire_json({"session": token}), [("person", operator)]))
        task.user = task.user + rng.choice([f" (operator: {operator})", f" This is {operator}.", f" — {operator}"])
        world.tools.append(start)
        return task
    if shape == "retry":
        task = shape_lookup_report(world, subject)
        first = task.steps[0]
        error = rng.choice(
            [
                "[ToolError] TimeoutError: the upstream service did not answer in time",
                "[ToolError] Error: service temporarily unavailable, try again",
                "[ToolError] ConnectionError: connection reset",
            ]
        )
        task.steps.insert(0, Step(first.tool, dict(first.args), error, list(first.copied)))
        return task
    if shape == "decline":
        task = shape_lookup_report(world, subject)
        topic = rng.choice(["write a poem", "book a flight to the moon", "tell a joke", "translate a letter", "play music"])
        names = ", ".join(tool.name for tool in world.tools)
        return Task(
            ask(rng, [f"Can you {topic}?", f"Please {topic}.", f"I want you to {topic}."]),
            [],
            decline=f"I can't {topic}: none of my tools does that. I can use {names}.",
        )
    if shape_redirect_ok(rng) and shape in (shape_lookup_report,):
        task = shape(world, subject, False)
        first = task.steps[0]
        (key, old), = list(first.args.items())[:1]
        new = identifier(rng)
        redirect = rng.choice(
            [wire_json({"error": "moved", "current_id": new}), f"{old} was merged into {new}. Look up {new} instead."]
        )
        moved = json.loads(first.result)
        moved[key] = new
        task.steps[0] = Step(first.tool, {key: old}, redirect, [("id", old)])
        task.steps.insert(1, Step(first.tool, {key: new}, wire_json(moved), [("id", new)]))
        term = task.steps[-1]
        term.args = {k: (new if v == old else v) for k, v in term.args.items()}
        term.copied = [(kind, new if value == old else value) for kind, value in term.copied]
        return task
    return shape(world, subject)


def shape_redirect_ok(rng: random.Random) -> bool:
    return rng.random() < 0.12


# ------------------------------------------------------------------------------ conversation


def retry_nudge(raw: str, tools: list[str]) -> str:
    trimmed = raw.strip()
    excerpt = trimmed[:200]
    lines = [
        "Your last response was not a valid tool call.",
        f'You wrote: "{excerpt}{"…" if len(trimmed) > 200 else ""}"' if excerpt else "You wrote nothing.",
    ]
    lines.append(f"Available tools: {', '.join(tools)}.")
    lines.append("Respond with exactly one tool call using one of the available tools, and no other text.")
    return "\n".join(lines)


def step_nudge(terminal: str, pending: list[str], tier: int) -> str:
    joined = ", ".join(pending)
    if tier <= 1:
        return f"[StepEnforcementError] You cannot call {terminal} yet. These required steps are not done: {joined}. Call them first, then call {terminal}."
    if tier == 2:
        return f"[StepEnforcementError] {terminal} was rejected again. You must call one of these tools now: {joined}. Do not call {terminal} until they are done."
    return f"[StepEnforcementError] STOP. Calling {terminal} will keep failing. Your next call must be {pending[0]}. Required steps still missing: {joined}."


def unknown_nudge(name: str, tools: list[str]) -> str:
    return f"[UnknownTool] The tool '{name}' does not exist. Available tools: {', '.join(tools)}. Call one of these tools instead."


class Builder:
    def __init__(self, rng: random.Random):
        self.rng = rng
        self.messages: list[dict] = []
        self.calls = 0

    def call_id(self) -> str:
        self.calls += 1
        return f"call_{self.calls}"

    def assistant_call(self, tool_name: str, args: dict, wrong: bool = False, copied=None) -> str:
        call_id = self.call_id()
        self.messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": call_id, "type": "function", "function": {"name": tool_name, "arguments": args}}],
                "_wrong": wrong,
                "_copied": [] if wrong else [("name", tool_name)] + list(copied or []),
            }
        )
        return call_id

    def tool(self, call_id: str, content: str) -> None:
        self.messages.append({"role": "tool", "tool_call_id": call_id, "content": content})


def wrong_turn(builder: Builder, rng: random.Random, step: Step, names: list[str], task: Task, index: int) -> None:
    """A mistake a small model makes here, and the nudge the library answers it with."""
    kind = rng.random()
    terminal = task.steps[-1].tool
    pending = [s.tool.name for s in task.steps[index:-1]]
    if kind < 0.3:
        prose = rng.choice(
            [
                f"I will look into that for you.",
                f"Let me check {step.tool.name.replace('_', ' ')}.",
                f"The answer is {invented(rng)}.",
                "",
                f"Sure! {phrase(rng)}",
            ]
        )
        builder.messages.append({"role": "assistant", "content": prose, "_wrong": True, "_copied": []})
        builder.messages.append({"role": "user", "content": retry_nudge(prose, names)})
    elif kind < 0.55 and pending and step.tool is not terminal:
        guess = {p.key: make_value(rng, p.kind if p.kind in FIELD_KINDS else "word") for p in terminal.params}
        call = builder.assistant_call(terminal.name, guess, wrong=True)
        builder.tool(call, step_nudge(terminal.name, list(dict.fromkeys(pending)), rng.choice([1, 1, 2, 3])))
    elif kind < 0.8:
        verb, _, obj = step.tool.name.partition("_")
        fake = f"{rng.choice(LOOKUP_VERBS + TERMINAL_VERBS)}_{obj or invented(rng)}"
        if fake in names:
            fake = f"{fake}_{invented(rng, (1, 1))}"
        call = builder.assistant_call(fake, dict(step.args), wrong=True)
        builder.tool(call, unknown_nudge(fake, names))
    else:
        bad = dict(step.args)
        missing = rng.choice(list(bad)) if bad else None
        if missing is None:
            return
        bad.pop(missing)
        if rng.random() < 0.5:
            bad[missing + rng.choice(["_name", "s", "Id"])] = step.args[missing]
        call = builder.assistant_call(step.tool.name, bad, wrong=True)
        builder.tool(call, f"[ToolError] ToolArgumentError: {missing}: Invalid input: expected string, received undefined")


def echo_conversation(rng: random.Random) -> dict:
    """Pure copying in the chat format: the user lists values, the answer is them as a JSON list.

    The densest copy signal there is (most answer tokens are copies), for the start of training.
    """
    kinds = ["person", "place", "code", "email", "date", "amount", "word", "count"]
    values = [make_value(rng, rng.choice(kinds)) for _ in range(rng.randint(1, 6))]
    listed = ", ".join(values[:-1]) + (" and " if len(values) > 1 else "") + values[-1]
    user = rng.choice(
        [
            f"Return these values as a JSON list: {listed}.",
            f"Copy exactly, as a JSON list: {listed}",
            f"List them in JSON: {listed}.",
        ]
    )
    messages = [
        {"role": "system", "content": rng.choice(["You copy values exactly.", "You are a helpful assistant."])},
        {"role": "user", "content": user},
        {"role": "assistant", "content": minja_json(values), "_wrong": False, "_copied": [("value", v) for v in values]},
    ]
    return {"messages": messages, "tools": [], "libraryTools": [], "variant": "library", "toolNames": []}


def conversation(rng: random.Random, variant: str | None = None, short: bool = False) -> dict:
    """One conversation: OpenAI messages (arguments as objects), tools, and bookkeeping.

    `short`: one request and at most one distractor tool (the copy-dense start of training).
    """
    variant = variant or ("llamacpp" if rng.random() < 0.3 else "library")
    world = World(rng)
    world.short = short
    subject = noun(rng)
    tasks = [build_task(world, rng, subject)]
    while not short and rng.random() < 0.25 and len(tasks) < 4:
        tasks.append(build_task(world, rng, noun(rng) if rng.random() < 0.5 else subject))
    if rng.random() < (0.3 if short else 0.6):
        with_distractors(world, rng, 1 if short else rng.choice([1, 1, 2, 3, 5]))
    tools = list({tool.name: tool for tool in world.tools}.values())
    rng.shuffle(tools)
    if world.required_first is not None:
        # The required tool stays where it was drawn; its name is in the system prompt.
        pass
    names = [tool.name for tool in tools]
    builder = Builder(rng)
    builder.messages.append({"role": "system", "content": system_prompt(rng, world, tasks[0], subject)})
    mistakes = rng.random() < 0.35
    for task in tasks:
        builder.messages.append({"role": "user", "content": task.user})
        if task.decline is not None:
            builder.messages.append({"role": "assistant", "content": task.decline, "_wrong": False, "_copied": []})
            continue
        for index, step in enumerate(task.steps):
            if mistakes and rng.random() < 0.3:
                wrong_turn(builder, rng, step, names, task, index)
            call = builder.assistant_call(step.tool.name, step.args, copied=step.copied)
            builder.tool(call, step.result)
        if rng.random() < 0.7:
            builder.messages.append(
                {"role": "assistant", "content": final_text(rng, task.steps[-1].tool, task.steps[-1].args), "_wrong": False, "_copied": []}
            )
        else:
            break
    return {
        "messages": builder.messages,
        "tools": [tool.openai(variant) for tool in tools],
        "libraryTools": [tool.openai("library") for tool in tools],
        "variant": variant,
        "toolNames": names,
    }


def public_messages(messages: list[dict], wire: bool = False) -> list[dict]:
    """Messages without bookkeeping; `wire`: arguments as JSON strings (what the library sends)."""
    out = []
    for message in messages:
        clean_message = {k: v for k, v in message.items() if not k.startswith("_")}
        if wire and "tool_calls" in clean_message:
            clean_message["tool_calls"] = [
                {**call, "function": {**call["function"], "arguments": wire_json(call["function"]["arguments"])}}
                for call in clean_message["tool_calls"]
            ]
        out.append(clean_message)
    return out


ASSISTANT_HEADER = "<|im_start|>assistant\n"
TURN_END = "<|im_end|>"


def rendered(conv: dict) -> tuple[str, list[tuple[int, int, bool, list]]]:
    """The training text and, per assistant turn, its (start, end, wrong, copied) character span."""
    text = render(public_messages(conv["messages"]), conv["tools"])
    assistants = [m for m in conv["messages"] if m["role"] == "assistant"]
    spans = []
    position = 0
    for message in assistants:
        start = text.index(ASSISTANT_HEADER, position) + len(ASSISTANT_HEADER)
        end = text.index(TURN_END, start) + len(TURN_END)
        spans.append((start, end, message["_wrong"], message["_copied"]))
        position = end
    return text, spans


def value_spans(text: str, start: int, end: int, copied: list) -> list[tuple[int, int, str]]:
    """Character spans of copied values (tool name, argument values) inside one assistant turn."""
    found = []
    for kind, value in copied:
        quoted = minja_json(value)
        at = text.find(quoted, start, end)
        if at < 0:
            raise ValueError(f"copied value {quoted} is not in its assistant turn")
        span = (at + 1, at + len(quoted) - 1, kind)
        if all(span[1] <= other[0] or span[0] >= other[1] for other in found):
            found.append(span)
    return sorted(found)


def encode_example(tokenizer, conv: dict, context_weight: float):
    """Token ids, per-token loss weights and the copied values' token spans of one conversation."""
    text, spans = rendered(conv)
    ids: list[int] = []
    weights: list[float] = []
    values: list[tuple[int, int, str]] = []
    position = 0
    for start, end, wrong, copied in spans:
        head = tokenizer.encode(text[position:start])
        ids += head
        weights += [context_weight] * len(head)
        offset = len(ids)
        # Encode the turn piecewise at value boundaries (no merge crosses them: see forge_tok.py).
        cuts = value_spans(text, start, end, copied) if not wrong else []
        cursor = start
        for value_start, value_end, kind in cuts:
            before = tokenizer.encode(text[cursor:value_start])
            inside = tokenizer.encode(text[value_start:value_end])
            ids += before
            first = len(ids)
            ids += inside
            values.append((first, len(ids), kind))
            cursor = value_end
        ids += tokenizer.encode(text[cursor:end])
        weights += [0.0 if wrong else 1.0] * (len(ids) - offset)
        position = end
    tail = tokenizer.encode(text[position:])
    ids += tail
    weights += [context_weight] * len(tail)
    return ids, weights, values, text


def main() -> None:
    parser = argparse.ArgumentParser(description="forge-tiny generator v2")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("sample", help="print conversations as JSON lines")
    p.add_argument("--count", type=int, default=10)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--variant", choices=["library", "llamacpp"], default=None)
    p.add_argument("--short", action="store_true", help="the trainer's --short conversations")
    p.add_argument("--tokenize", metavar="TOKENIZER_JSON", help="add `ids`: the text's token ids")
    p.add_argument("--fields", help="comma-separated fields to print (default: all)")
    arguments = parser.parse_args()
    rng = random.Random(arguments.seed)
    tokenizer = None
    if arguments.tokenize:
        sys.path.insert(0, str(HERE))
        import forge_tok

        tokenizer = forge_tok.Tokenizer.load(arguments.tokenize)
    fields = arguments.fields.split(",") if arguments.fields else None
    for _ in range(arguments.count):
        conv = conversation(rng, arguments.variant, short=arguments.short)
        text, spans = rendered(conv)
        values = sorted({str(v) for m in conv["messages"] for _, v in m.get("_copied", [])})
        line = {
            "messages": public_messages(conv["messages"], wire=True),
            "tools": conv["tools"],
            "libraryTools": conv["libraryTools"],
            "variant": conv["variant"],
            "toolNames": conv["toolNames"],
            "values": values,
            "text": text,
        }
        if tokenizer is not None:
            line["ids"] = tokenizer.encode(text)
        if fields is not None:
            line = {field: line[field] for field in fields}
        print(json.dumps(line, ensure_ascii=False))


if __name__ == "__main__":
    sys.exit(main())
