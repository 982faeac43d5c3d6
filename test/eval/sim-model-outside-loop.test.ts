import OpenAI from "openai";
import type { RunnableToolFunctionWithParse } from "openai/lib/RunnableFunction";
import { afterEach, describe, expect, it } from "vitest";
import { type SimModelServer, startSimModel } from "../../eval/sim-model/server.ts";
import { toolJsonSchema } from "../../src/core/tools.ts";
import { renderSystemPrompt } from "../../src/core/workflow.ts";
import { scenario } from "./helpers.ts";

/** The scenario's tools as the `openai` SDK's runnable functions, each call recorded. */
function runnableTools(
  id: string,
  called: string[],
): RunnableToolFunctionWithParse<Record<string, unknown>>[] {
  const { workflow } = scenario(id).build();
  return Object.values(workflow.tools).map((tool) => ({
    type: "function",
    function: {
      name: tool.spec.name,
      description: tool.spec.description,
      parameters: toolJsonSchema(tool.spec) as Record<string, unknown>,
      parse: (text: string) => JSON.parse(text) as Record<string, unknown>,
      function: async (args: Record<string, unknown>) => {
        called.push(tool.spec.name);
        return JSON.stringify(await tool.execute(args));
      },
    },
  }));
}

describe("an outside agent loop against the sim-model (openai runTools)", () => {
  let sim: SimModelServer | null = null;
  afterEach(async () => {
    await sim?.close();
    sim = null;
  });

  for (const id of ["basic_2step", "sequential_3step"]) {
    it(`${id}: the loop stops on the sim-model's final text after the terminal call, in ideal + 1 requests`, async () => {
      sim = await startSimModel({ profile: "none" });
      const entry = scenario(id);
      const openai = new OpenAI({ baseURL: sim.url, apiKey: "not-needed", maxRetries: 0 });
      const called: string[] = [];
      const runner = openai.chat.completions.runTools(
        {
          model: `sim/none/${id}/0`,
          messages: [
            { role: "system", content: renderSystemPrompt(entry.build().workflow.systemPrompt) },
            { role: "user", content: entry.userMessage },
          ],
          tools: runnableTools(id, called),
        },
        { maxChatCompletions: 10 },
      );
      const final = await runner.finalContent();
      expect(called).toEqual(entry.reference.map((step) => step.tool));
      expect(final).toMatch(/^Done: .* succeeded/);
      expect(sim.stats.requests).toBe(entry.idealIterations + 1);
      expect(sim.stats.faults).toEqual({ none: entry.idealIterations + 1 });
    });
  }
});
