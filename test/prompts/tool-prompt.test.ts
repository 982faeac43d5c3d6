import { describe, expect, it } from "vitest";
import { z } from "zod";
import { type ToolSpec, toolJsonSchema, toolSpecFromJsonSchema } from "../../src/core/tools.ts";
import { buildToolPrompt, extractToolCall } from "../../src/prompts/tool-prompt.ts";

const getWeather: ToolSpec = {
  name: "get_weather",
  description: "Current weather for a city",
  parameters: z.object({
    city: z.string().describe("City name"),
    unit: z.enum(["celsius", "fahrenheit"]).optional(),
  }),
};
const searchDocs = toolSpecFromJsonSchema("search_docs", "Search the documentation", {
  type: "object",
  properties: { query: { type: "string" }, limit: { type: "integer" } },
  required: ["query"],
});
const tools = [getWeather, searchDocs];
const names = tools.map((tool) => tool.name);

describe("buildToolPrompt", () => {
  const prompt = buildToolPrompt(tools);

  it("lists every tool with its description and parameter schema", () => {
    for (const tool of tools) {
      expect(prompt).toContain(`## ${tool.name}`);
      expect(prompt).toContain(tool.description);
      expect(prompt).toContain(JSON.stringify(toolJsonSchema(tool)));
    }
    expect(prompt).toContain('"City name"');
    expect(prompt.indexOf("get_weather")).toBeLessThan(prompt.indexOf("search_docs"));
  });

  it("states the exact answer format, for one call and for several", () => {
    expect(prompt).toContain('{"tool": "<tool name>", "args": {');
    expect(prompt).toContain("a single JSON object and nothing else");
    expect(prompt).toContain("JSON array of such objects");
    expect(prompt).toMatch(/code fences/);
  });

  it("is empty when there are no tools", () => {
    expect(buildToolPrompt([])).toBe("");
  });
});

describe("extractToolCall", () => {
  it("extracts an answer in the documented format", () => {
    expect(
      extractToolCall('{"tool": "get_weather", "args": {"city": "Paris", "unit": "celsius"}}', names),
    ).toEqual([{ tool: "get_weather", args: { city: "Paris", unit: "celsius" } }]);
  });

  it("extracts the documented array format for several calls", () => {
    const answer =
      '[{"tool": "search_docs", "args": {"query": "rescue"}}, {"tool": "get_weather", "args": {"city": "Oslo"}}]';
    expect(extractToolCall(answer, names)).toEqual([
      { tool: "search_docs", args: { query: "rescue" } },
      { tool: "get_weather", args: { city: "Oslo" } },
    ]);
  });

  it("still understands a model that drifts into its native format", () => {
    expect(
      extractToolCall(
        '<tool_call>\n{"name": "search_docs", "arguments": {"query": "x"}}\n</tool_call>',
        names,
      ),
    ).toEqual([{ tool: "search_docs", args: { query: "x" } }]);
  });

  it("returns null for plain text and unknown tools", () => {
    expect(extractToolCall("The weather in Paris is sunny.", names)).toBeNull();
    expect(extractToolCall('{"tool": "delete_everything", "args": {}}', names)).toBeNull();
  });
});
