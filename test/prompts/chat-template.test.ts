import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { callFormatFromTemplate, type TemplateCallFormat } from "../../src/prompts/chat-template.ts";
import { detectToolCalls, rescueToolCall } from "../../src/prompts/rescue/index.ts";

const fixtures = join(import.meta.dirname, "../fixtures/chat-templates");
const template = (name: string) => readFileSync(join(fixtures, name), "utf8");
const names = ["get_weather", "get_time"];

function formatOf(name: string): TemplateCallFormat {
  const format = callFormatFromTemplate(template(name));
  if (format === null) throw new Error(`${name}: no format`);
  return format;
}

describe("callFormatFromTemplate: how a model writes a call, read from its chat template", () => {
  it("reads Qwen2.5-Coder 0.5B's template (the real GGUF's) as Hermes <tool_call> JSON", () => {
    expect(callFormatFromTemplate(template("qwen2.5-coder-0.5b.jinja"))).toEqual({
      open: "<tool_call>",
      close: "</tool_call>",
      nameKey: "name",
      argumentsKey: "arguments",
      doubledBraces: false,
    });
  });

  it("reads the 1.5B's template as the same format whose instructions double the braces", () => {
    expect(formatOf("qwen2.5-coder-1.5b.jinja")).toEqual({
      open: "<tool_call>",
      close: "</tool_call>",
      nameKey: "name",
      argumentsKey: "arguments",
      doubledBraces: true,
    });
  });

  it("reads a family no built-in format knows: its markers and keys", () => {
    expect(formatOf("bracket-call.jinja")).toEqual({
      open: "[CALL]",
      close: "[/CALL]",
      nameKey: "tool_name",
      argumentsKey: "params",
      doubledBraces: false,
    });
  });

  it("finds no format where calls are not JSON between markers, or the template does not render", () => {
    expect(callFormatFromTemplate(template("pythonic.jinja"))).toBeNull();
    expect(
      callFormatFromTemplate("{% for message in messages %}{{ message.content }}{% endfor %}"),
    ).toBeNull();
    expect(callFormatFromTemplate("{% if %}")).toBeNull();
    expect(callFormatFromTemplate("{{ raise_exception('no tools') }}")).toBeNull();
  });
});

describe("the rescue with a template's call format", () => {
  const doubled = '<tool_call>\n{{"name": "get_weather", "arguments": {"city": "Paris"}}}\n</tool_call>';

  it("reads the 1.5B's doubled-brace call, which the built-in formats cannot", () => {
    expect(rescueToolCall(doubled, names)).toBeNull();
    expect(rescueToolCall(doubled, names, { callFormat: formatOf("qwen2.5-coder-1.5b.jinja") })).toEqual([
      { tool: "get_weather", args: { city: "Paris" } },
    ]);
  });

  it("reads several calls, an unclosed last one, and single braces under a doubled-brace format", () => {
    const text = `${doubled}\n<tool_call>\n{"name": "get_time", "arguments": {"zone": "CET"}}`;
    expect(rescueToolCall(text, names, { callFormat: formatOf("qwen2.5-coder-1.5b.jinja") })).toEqual([
      { tool: "get_weather", args: { city: "Paris" } },
      { tool: "get_time", args: { zone: "CET" } },
    ]);
  });

  it("reads a new family's call by the template's markers and keys alone", () => {
    const text = 'Sure.[CALL]{"tool_name": "get_weather", "params": {"city": "Oslo"}}[/CALL]';
    expect(rescueToolCall(text, names)).toBeNull();
    expect(rescueToolCall(text, names, { callFormat: formatOf("bracket-call.jinja") })).toEqual([
      { tool: "get_weather", args: { city: "Oslo" } },
    ]);
  });

  it("falls back to the built-in formats when the template's format is absent or garbled", () => {
    const callFormat = formatOf("qwen2.5-coder-1.5b.jinja");
    const fenced = '```json\n{"name": "get_time", "arguments": {"zone": "UTC"}}\n```';
    expect(rescueToolCall(fenced, names, { callFormat })).toEqual([
      { tool: "get_time", args: { zone: "UTC" } },
    ]);
    const broken = '<tool_call>\n{{"name": "get_weather", "arguments": {"city": }}}\n</tool_call>';
    expect(detectToolCalls(broken, names, callFormat).status).toBe("garbled");
    expect(rescueToolCall(broken, names, { callFormat })).toBeNull();
  });

  it("still holds a call to an unknown tool unreadable", () => {
    const text = '<tool_call>\n{{"name": "book_flight", "arguments": {}}}\n</tool_call>';
    expect(rescueToolCall(text, names, { callFormat: formatOf("qwen2.5-coder-1.5b.jinja") })).toBeNull();
  });
});

describe("the template's doubled braces without its markers (the real 1.5B)", () => {
  const captured = JSON.parse(
    readFileSync(
      join(import.meta.dirname, "../fixtures/real-model/qwen2.5-coder-1.5b-unmarked-calls.json"),
      "utf8",
    ),
  ) as { tools: string[]; outputs: { content: string }[] };

  it("reads the calls the 1.5B wrote in <tools> tags and bare, one brace pair dropped", () => {
    const callFormat = formatOf("qwen2.5-coder-1.5b.jinja");
    const [inTools, bare] = captured.outputs.map((output) =>
      rescueToolCall(output.content, captured.tools, { callFormat }),
    );
    expect(inTools?.map((call) => call.tool)).toEqual(["get_weather", "report_weather"]);
    expect(inTools?.[0]?.args).toEqual({ city: "Lisbon" });
    expect(bare).toEqual([
      {
        tool: "report_weather",
        args: { city: "Lisbon", summary: "Temperature is 20 degrees Celsius, and the conditions are sunny." },
      },
    ]);
    // Without the template's format the same text is no call.
    expect(rescueToolCall(captured.outputs[1]?.content ?? "", captured.tools)).toBeNull();
  });

  it("reads an object whose opening brace is doubled and whose closing one is not (the 1.5B at -t 1)", () => {
    const callFormat = formatOf("qwen2.5-coder-1.5b.jinja");
    const [, , both, alone] = captured.outputs.map((output) =>
      rescueToolCall(output.content, captured.tools, { callFormat }),
    );
    const report = {
      tool: "report_weather",
      args: { city: "Lisbon", summary: "Temperature is 20 degrees Celsius, and it's rainy." },
    };
    expect(both).toEqual([{ tool: "get_weather", args: { city: "Lisbon" } }, report]);
    expect(alone).toEqual([report]);
    // Inside the template's own markers too.
    const marked = '<tool_call>\n{{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
    expect(rescueToolCall(marked, names, { callFormat })).toEqual([
      { tool: "get_weather", args: { city: "Paris" } },
    ]);
  });

  it("reads no bare doubled braces for a template that does not double them, and none cut off", () => {
    const text = '{{"name": "get_weather", "arguments": {"city": "Paris"}}}';
    expect(rescueToolCall(text, names, { callFormat: formatOf("qwen2.5-coder-0.5b.jinja") })).toBeNull();
    expect(
      detectToolCalls(
        '{{"name": "get_weather", "arguments": {"city": "Pa',
        names,
        formatOf("qwen2.5-coder-1.5b.jinja"),
      ).status,
    ).not.toBe("found");
  });
});
