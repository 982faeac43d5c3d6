/**
 * The Vercel AI SDK under the peers benchmark: `generateText` with the two tools, stopping on the
 * terminal tool's call (`hasToolCall`), against the SDK's own mock language model (`ai/test`),
 * which answers each step with one tool call. Telemetry off. AI SDK 7 is installed as `ai7`
 * (an npm alias), AI SDK 6 as `ai` (the version the eval's peer loop uses).
 */
import { generateText as generateText6, hasToolCall as hasToolCall6, stepCountIs, tool as tool6 } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { generateText as generateText7, hasToolCall as hasToolCall7, isStepCount, tool as tool7 } from "ai7";
import { MockLanguageModelV4 } from "ai7/test";
import { z } from "zod";
import { assertSteps, noopArgs, type PeerAdapter, timeLoop } from "./peer.ts";

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
};

/** The mock model's answer at `step`: one call, of `finish` on the last step. */
function answer(step: number, steps: number) {
  const last = step === steps - 1;
  return {
    content: [
      {
        type: "tool-call" as const,
        toolCallId: `call_${step}`,
        toolName: last ? "finish" : "noop",
        input: JSON.stringify(last ? {} : noopArgs(step)),
      },
    ],
    finishReason: { unified: "tool-calls" as const, raw: "tool_calls" },
    usage,
    warnings: [],
  };
}

/** `generateText` of AI SDK 7 with `MockLanguageModelV4`. */
export function aiSdk7Peer(version: string): PeerAdapter {
  const tools = {
    noop: tool7({
      description: "does nothing",
      inputSchema: z.object({ i: z.number() }),
      execute: async () => "ok",
    }),
    finish: tool7({ description: "ends", inputSchema: z.object({}), execute: async () => "done" }),
  };
  return {
    name: "AI SDK 7 (generateText)",
    version,
    async run(steps) {
      let calls = 0;
      const model = new MockLanguageModelV4({ doGenerate: async () => answer(calls++, steps) });
      const elapsed = await timeLoop(() =>
        generateText7({
          model,
          tools,
          prompt: "go",
          system: "s",
          stopWhen: [hasToolCall7("finish"), isStepCount(steps)],
          telemetry: { isEnabled: false },
        }),
      );
      assertSteps(this.name, steps, calls);
      return elapsed;
    },
  };
}

/** `generateText` of AI SDK 6 with `MockLanguageModelV3`. */
export function aiSdk6Peer(version: string): PeerAdapter {
  const tools = {
    noop: tool6({
      description: "does nothing",
      inputSchema: z.object({ i: z.number() }),
      execute: async () => "ok",
    }),
    finish: tool6({ description: "ends", inputSchema: z.object({}), execute: async () => "done" }),
  };
  return {
    name: "AI SDK 6 (generateText)",
    version,
    async run(steps) {
      let calls = 0;
      const model = new MockLanguageModelV3({ doGenerate: async () => answer(calls++, steps) });
      const elapsed = await timeLoop(() =>
        generateText6({
          model,
          tools,
          prompt: "go",
          system: "s",
          stopWhen: [hasToolCall6("finish"), stepCountIs(steps)],
          experimental_telemetry: { isEnabled: false },
        }),
      );
      assertSteps(this.name, steps, calls);
      return elapsed;
    },
  };
}
