/**
 * Mastra under the peers benchmark: an `Agent` with two Mastra tools, `agent.generate` stopping on
 * the terminal tool's call (`stopWhen: hasToolCall`), against the AI SDK's mock language model
 * (`MockLanguageModelV3`, a model Mastra accepts as it is) answering each step with one tool call.
 * The agent is not registered with a `Mastra` instance, so no observability, storage or memory is
 * configured: nothing is traced or stored.
 */
import { Agent } from "@mastra/core/agent";
import { createTool } from "@mastra/core/tools";
import { hasToolCall, stepCountIs } from "ai";
import { convertArrayToReadableStream, MockLanguageModelV3 } from "ai/test";
import { z } from "zod";
import { assertSteps, noopArgs, type PeerAdapter, timeLoop } from "./peer.ts";

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
};

function callAt(step: number, steps: number) {
  const last = step === steps - 1;
  return {
    type: "tool-call" as const,
    toolCallId: `call_${step}`,
    toolName: last ? "finish" : "noop",
    input: JSON.stringify(last ? {} : noopArgs(step)),
  };
}

const finishReason = { unified: "tool-calls" as const, raw: "tool_calls" };

const tools = {
  noop: createTool({
    id: "noop",
    description: "does nothing",
    inputSchema: z.object({ i: z.number() }),
    execute: async () => "ok",
  }),
  finish: createTool({
    id: "finish",
    description: "ends",
    inputSchema: z.object({}),
    execute: async () => "done",
  }),
};

/** `Agent.generate` adapter. */
export function mastraPeer(version: string): PeerAdapter {
  return {
    name: "Mastra (Agent.generate)",
    version,
    async run(steps) {
      let calls = 0;
      const model = new MockLanguageModelV3({
        doGenerate: async () => ({
          content: [callAt(calls++, steps)],
          finishReason,
          usage,
          warnings: [],
        }),
        doStream: async () => ({
          stream: convertArrayToReadableStream([
            { type: "stream-start" as const, warnings: [] },
            callAt(calls++, steps),
            { type: "finish" as const, finishReason, usage },
          ]),
        }),
      });
      const agent = new Agent({ id: "bench", name: "bench", instructions: "s", model, tools });
      const elapsed = await timeLoop(() =>
        agent.generate("go", { maxSteps: steps, stopWhen: [hasToolCall("finish"), stepCountIs(steps)] }),
      );
      assertSteps(this.name, steps, calls);
      return elapsed;
    },
  };
}
