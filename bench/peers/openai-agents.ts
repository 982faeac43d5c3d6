/**
 * The OpenAI Agents SDK (JS) under the peers benchmark: an `Agent` with two function tools,
 * stopping at the terminal tool (`toolUseBehavior.stopAtToolNames`), run by a `Runner` over a
 * custom `Model` that answers each turn with one function call. Tracing disabled (globally and on
 * the runner), so nothing is exported.
 */
import {
  Agent,
  type Model,
  type ModelRequest,
  type ModelResponse,
  Runner,
  setTracingDisabled,
  tool,
  Usage,
} from "@openai/agents";
import { z } from "zod";
import { assertSteps, noopArgs, type PeerAdapter, timeLoop } from "./peer.ts";

setTracingDisabled(true);

/** A `Model` that answers turn `n` with one function call (`finish` on the last turn). */
class ScriptedModel implements Model {
  calls = 0;
  constructor(private readonly steps: number) {}
  async getResponse(_request: ModelRequest): Promise<ModelResponse> {
    const step = this.calls++;
    const last = step === this.steps - 1;
    return {
      usage: new Usage({ requests: 1, inputTokens: 1, outputTokens: 1, totalTokens: 2 }),
      output: [
        {
          type: "function_call",
          id: `fc_${step}`,
          callId: `call_${step}`,
          name: last ? "finish" : "noop",
          arguments: JSON.stringify(last ? {} : noopArgs(step)),
          status: "completed",
        },
      ],
    };
  }
  // biome-ignore lint/correctness/useYield: the benchmark never streams
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error("ScriptedModel does not stream");
  }
}

const tools = [
  tool({
    name: "noop",
    description: "does nothing",
    parameters: z.object({ i: z.number() }),
    execute: async () => "ok",
  }),
  tool({ name: "finish", description: "ends", parameters: z.object({}), execute: async () => "done" }),
];

/** `Runner.run` adapter. */
export function openAIAgentsPeer(version: string): PeerAdapter {
  return {
    name: "OpenAI Agents JS (Runner)",
    version,
    async run(steps) {
      const model = new ScriptedModel(steps);
      const agent = new Agent({
        name: "bench",
        instructions: "s",
        model,
        tools,
        toolUseBehavior: { stopAtToolNames: ["finish"] },
      });
      const runner = new Runner({ tracingDisabled: true });
      const elapsed = await timeLoop(() => runner.run(agent, "go", { maxTurns: steps + 1 }));
      assertSteps(this.name, steps, model.calls);
      return elapsed;
    },
  };
}
