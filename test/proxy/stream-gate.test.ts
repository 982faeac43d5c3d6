/** `gateText`: how much of a streamed text may go out before validation (ADR 014); `partialMessage`. */
import { describe, expect, it } from "vitest";
import { partialMessage } from "../../src/proxy/live-text.ts";
import { gateText } from "../../src/proxy/stream-gate.ts";

const tools = ["get_weather", "respond"];

describe("gateText", () => {
  it("sends prose whole", () => {
    expect(gateText("It is sunny in Paris.", tools)).toEqual({ sendable: 21, marked: false });
  });

  it.each([
    ["Sure. <tool_call>{", 6],
    ["Ok [TOOL_CALLS][{", 3],
    ["Here: <|python_tag|>", 6],
    ["Then <function=get_weather>", 5],
    ["Look:\n```json\n{", 6],
    ["x <|tool_call_start|>[", 2],
    ["get_weather[ARGS]{", 11],
    ["<think>hmm", 0],
  ])("holds from a marker anywhere: %j", (text, sendable) => {
    expect(gateText(text, tools)).toEqual({ sendable, marked: true });
  });

  it.each([
    ['{"name": "get_weather"', 0],
    ['Checking.\n{"name"', 10],
    ["  [get_weather(city=", 0],
    ["call:get_weather{", 0],
    ['Now:\nget_weather(city="Oslo")', 5],
  ])("holds a line that opens with a call: %j", (text, sendable) => {
    expect(gateText(text, tools)).toEqual({ sendable, marked: true });
  });

  it.each([
    ["Hello <tool", 6],
    ["Hello <", 6],
    ["Hello [TOOL_CA", 6],
    ["Hello ``", 6],
    ["Hello\nget_wea", 6],
    ["Hello\nca", 6],
    ["Hello\n  ", 6],
  ])("holds a partial marker or an undecided line at the end: %j", (text, sendable) => {
    expect(gateText(text, tools)).toEqual({ sendable, marked: false });
  });

  it("holds blank text until something is said", () => {
    expect(gateText("\n\n  ", tools)).toEqual({ sendable: 0, marked: false });
    expect(gateText('\n{"name"', tools)).toEqual({ sendable: 0, marked: true });
    expect(gateText("\nHi", tools)).toEqual({ sendable: 3, marked: false });
  });

  it("lets a line go once it cannot open a call", () => {
    expect(gateText("Hello\ncalm seas", tools)).toEqual({ sendable: 15, marked: false });
    expect(gateText("a < b and {x} inside", tools)).toEqual({ sendable: 20, marked: false });
  });

  it("searches again only near where the last decision ended", () => {
    const text = `${"word ".repeat(50)}<tool_call>`;
    expect(gateText(text, tools, 250)).toEqual({ sendable: 250, marked: true });
  });
});

describe("partialMessage", () => {
  it.each([
    ['{"message": "Hel', "Hel"],
    ['{ "message" : "Hi\\nthe', "Hi\nthe"],
    ['{"message": "a\\', "a"],
    ['{"message": "a\\u00e', "a"],
    ['{"message": "a\\u00e9 \\"q\\" \\\\ /', 'aé "q" \\ /'],
    ['{"message": "done", "x": 1}', "done"],
    ['{"message": "\\ud83d', ""],
    ['{"message": "\\ud83d\\ude00', "😀"],
  ])("decodes %j as far as it came", (args, message) => {
    expect(partialMessage(args)).toBe(message);
  });

  it("is null unless message is the first key and a string", () => {
    expect(partialMessage('{"other": "x", "message": "y"}')).toBeNull();
    expect(partialMessage('{"message": 12')).toBeNull();
    expect(partialMessage('{"mess')).toBeNull();
  });

  it("ends as JSON.parse reads the whole arguments", () => {
    const args = JSON.stringify({ message: 'Line 1\n\t"quoted" \\ é 😀 </tag>' });
    expect(partialMessage(args)).toBe(JSON.parse(args).message);
  });
});
