/**
 * ResponseValidator: usable calls, rescued text, retry nudges (user channel) and tool-channel
 * rejections of unknown tools and malformed arguments.
 */
import { describe, expect, it } from "vitest";
import type { ToolCall } from "../../src/core/types.ts";
import { buildRetryNudge, ResponseValidator } from "../../src/guardrails/response-validator.ts";
import { retryNudge } from "../../src/prompts/nudges.ts";

const tools = ["search", "lookup", "answer"];
const call = (tool: string, args: Record<string, unknown> = {}): ToolCall => ({ tool, args });
const rescuable = '{"tool": "search", "args": {"q": "forge"}}';

describe("ResponseValidator", () => {
  it("passes known calls through", () => {
    const calls = [call("search", { q: "forge" }), call("lookup", { id: 1 })];
    expect(new ResponseValidator(tools).validate(calls)).toEqual({
      toolCalls: calls,
      nudge: null,
      needsRetry: false,
    });
  });

  it("rescues a call from text when rescue is on (the default)", () => {
    expect(new ResponseValidator(tools).validate({ content: rescuable })).toEqual({
      toolCalls: [call("search", { q: "forge" })],
      nudge: null,
      needsRetry: false,
    });
  });

  it("does not rescue a call that names an unknown tool", () => {
    const result = new ResponseValidator(tools).validate({ content: '{"tool": "nope", "args": {}}' });
    expect(result.toolCalls).toBeNull();
    expect(result.nudge).toMatchObject({ role: "user", kind: "retry" });
    expect(result.nudge?.content).toContain("'nope' is not an available tool");
  });

  it("answers rescuable text with a retry nudge when rescue is off", () => {
    const result = new ResponseValidator(tools, { rescueEnabled: false }).validate({ content: rescuable });
    expect(result).toMatchObject({
      toolCalls: null,
      needsRetry: true,
      nudge: { role: "user", kind: "retry" },
    });
  });

  it("answers prose with the default retry nudge on the user channel", () => {
    const result = new ResponseValidator(tools).validate({ content: "I would search for forge." });
    expect(result.toolCalls).toBeNull();
    expect(result.needsRetry).toBe(true);
    expect(result.nudge).toEqual({
      role: "user",
      content: retryNudge("I would search for forge.", tools),
      kind: "retry",
      tier: 0,
    });
    expect(result.nudge?.content).toContain("not a valid tool call");
    expect(result.nudge?.content).toContain('You wrote: "I would search for forge."');
    expect(result.nudge?.content).toContain("Available tools: search, lookup, answer.");
  });

  it("uses a custom retryNudge string as is", () => {
    const result = new ResponseValidator(tools, { retryNudge: "Call a tool." }).validate({ content: "hi" });
    expect(result.nudge).toEqual({ role: "user", content: "Call a tool.", kind: "retry", tier: 0 });
  });

  it("calls a custom retryNudge function with the raw response", () => {
    const seen: string[] = [];
    const validator = new ResponseValidator(tools, {
      retryNudge: (raw) => {
        seen.push(raw);
        return `Not a call: ${raw}`;
      },
    });
    expect(validator.validate({ content: "hello there" }).nudge?.content).toBe("Not a call: hello there");
    expect(seen).toEqual(["hello there"]);
  });

  it("answers an empty call list with a retry nudge, as empty text (ADR 008)", () => {
    const result = new ResponseValidator(tools).validate([]);
    expect(result).toMatchObject({
      toolCalls: null,
      needsRetry: true,
      nudge: { role: "user", kind: "retry" },
    });
    expect(result.nudge?.content).toContain("You wrote nothing.");
  });

  it("rejects unknown tools on the tool channel, naming every available tool", () => {
    const result = new ResponseValidator(tools).validate([call("nope")]);
    expect(result.toolCalls).toBeNull();
    expect(result.needsRetry).toBe(true);
    expect(result.nudge).toMatchObject({ role: "tool", kind: "unknown_tool", tier: 0 });
    const content = result.nudge?.content ?? "";
    expect(content).toMatch(/^\[UnknownTool\] The tool 'nope' does not exist\./);
    for (const tool of tools) expect(content).toContain(tool);
  });

  it("answers every call of a rejected batch: one line per call, the known ones [NotRun]", () => {
    const result = new ResponseValidator(tools).validate([call("search"), call("nope"), call("zap")]);
    const lines = (result.nudge?.content ?? "").split("\n");
    expect(lines).toHaveLength(3);
    expect(lines[0]).toBe(
      "[NotRun] 'search' was not run because this batch was rejected: it called unknown tool 'nope', 'zap'. Call it again if you still need it.",
    );
    expect(lines[1]).toMatch(/^\[UnknownTool\] The tool 'nope' does not exist/);
    expect(lines[2]).toMatch(/^\[UnknownTool\] The tool 'zap' does not exist/);
  });

  it("rejects malformed arguments on the tool channel with a ToolArgumentError reply", () => {
    const batch: ToolCall[] = [
      call("search", { q: "ok" }),
      { tool: "lookup", args: {}, argumentsError: 'invalid JSON; received {"id": ' },
    ];
    const result = new ResponseValidator(tools).validate(batch);
    expect(result.toolCalls).toBeNull();
    expect(result.needsRetry).toBe(true);
    expect(result.nudge).toMatchObject({ role: "tool", kind: "malformed_args", tier: 0 });
    const lines = (result.nudge?.content ?? "").split("\n");
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^\[ToolError\] \[NotRun\] 'search' was not run/);
    expect(lines[0]).toContain("the arguments of 'lookup' were not a JSON object");
    expect(lines[1]).toBe(
      `[ToolError] ToolArgumentError: the arguments of 'lookup' are not a JSON object (invalid JSON; received {"id": ). Call lookup again with its arguments as one JSON object.`,
    );
  });

  it("is stateless: the same response gets the same answer however often it comes", () => {
    const validator = new ResponseValidator(tools);
    const first = validator.validate({ content: "prose" });
    for (let index = 0; index < 10; index += 1)
      expect(validator.validate({ content: "prose" })).toEqual(first);
  });
});

describe("buildRetryNudge", () => {
  it("defaults to the loop's retry nudge and honours a custom string or function", () => {
    expect(buildRetryNudge("x", undefined, tools)).toBe(retryNudge("x", tools));
    expect(buildRetryNudge("x", "fixed")).toBe("fixed");
    expect(buildRetryNudge("x", (raw) => `<${raw}>`)).toBe("<x>");
  });
});
