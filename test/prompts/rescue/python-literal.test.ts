import { describe, expect, it } from "vitest";
import { readCall, readCallList, readLiteral } from "../../../src/prompts/rescue/python-literal.ts";

function literal(text: string): unknown {
  const read = readLiteral(text, 0);
  if (!read.ok) throw new Error(read.reason);
  expect(read.end).toBe(text.length);
  return read.value;
}

describe("readLiteral", () => {
  it.each([
    ['"Paris"', "Paris"],
    ["'Paris'", "Paris"],
    [`"it's"`, "it's"],
    [`'say "hi"'`, 'say "hi"'],
    [String.raw`'it\'s'`, "it's"],
    [String.raw`"a\"b"`, 'a"b'],
    [String.raw`"line\nnext\ttab\\"`, "line\nnext\ttab\\"],
    [String.raw`"\x41\u00e9\U0001F600"`, "Aé😀"],
    [String.raw`"\d stays"`, "\\d stays"],
    [String.raw`r"C:\new"`, "C:\\new"],
    ['"""multi\nline "quoted" text"""', 'multi\nline "quoted" text'],
    ["'''single'''", "single"],
    ['"a" "b"', "ab"],
    ['u"unicode"', "unicode"],
  ])("reads the string %s", (text, value) => {
    expect(literal(text)).toBe(value);
  });

  it.each([
    ["42", 42],
    ["-7", -7],
    ["+3", 3],
    ["3.5", 3.5],
    ["-2.5e3", -2500],
    ["1e-2", 0.01],
    [".5", 0.5],
    ["1_000", 1000],
    ["0x1F", 31],
    ["0o17", 15],
    ["0b101", 5],
  ])("reads the number %s", (text, value) => {
    expect(literal(text)).toBe(value);
  });

  it.each([
    ["True", true],
    ["False", false],
    ["None", null],
    ["true", true],
    ["false", false],
    ["null", null],
  ])("reads the constant %s", (text, value) => {
    expect(literal(text)).toBe(value);
  });

  it("reads lists, tuples and dicts, nested, with trailing commas", () => {
    expect(literal(`[1, 'a', [True, None], (2, 3),]`)).toEqual([1, "a", [true, null], [2, 3]]);
    expect(literal(`{"city": "Paris", 'n': {"deep": [1]}, 2: False,}`)).toEqual({
      city: "Paris",
      n: { deep: [1] },
      "2": false,
    });
  });

  it("keeps a __proto__ key as data", () => {
    const value = literal(`{"__proto__": {"polluted": True}}`) as Record<string, unknown>;
    expect(Object.keys(value)).toEqual(["__proto__"]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it.each([
    ["a variable", "city"],
    ["an expression", "1 + 2"],
    ["a call", "open('x')"],
    ["an unclosed string", '"Paris'],
    ["an unclosed list", "[1, 2"],
    ["a list without commas", "[1 2]"],
    ["a dict with a list key", "{[1]: 2}"],
    ["a set", "{1, 2}"],
    ["nesting deeper than any arguments", `${"[".repeat(100_000)}${"]".repeat(100_000)}`],
  ])("refuses %s", (_label, text) => {
    const read = readLiteral(text, 0);
    expect(read.ok && read.end === text.length).toBe(false);
  });
});

describe("readCall / readCallList", () => {
  it("reads keyword arguments, and nothing else", () => {
    expect(readCall('get_weather(city="Paris", days=3,)', 0)).toEqual({
      ok: true,
      value: { tool: "get_weather", args: { city: "Paris", days: 3 } },
      end: 34,
    });
    expect(readCall("get_time()", 0)).toMatchObject({ ok: true, value: { tool: "get_time", args: {} } });
    expect(readCall('get_weather("Paris")', 0).ok).toBe(false);
    expect(readCall("get_weather(city=x)", 0).ok).toBe(false);
    expect(readCall("get_weather(city==1)", 0).ok).toBe(false);
    expect(readCall("get_weather(a=1, a=2)", 0).ok).toBe(false);
    expect(readCall("get_weather(city='Paris'", 0).ok).toBe(false);
  });

  it("reads a list of calls", () => {
    const read = readCallList('[get_weather(city="Paris"), get_time(zone="CET")] and then', 0);
    expect(read).toEqual({
      ok: true,
      value: [
        { tool: "get_weather", args: { city: "Paris" } },
        { tool: "get_time", args: { zone: "CET" } },
      ],
      end: 49,
    });
    expect(readCallList("[]", 0).ok).toBe(false);
    expect(readCallList("[get_time() get_time()]", 0).ok).toBe(false);
  });
});
