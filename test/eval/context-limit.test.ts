import { describe, expect, it } from "vitest";
import {
  CONTEXT_EXCEEDED,
  isContextOverflow,
  type PromptTokenizer,
  REPLY_RESERVE_TOKENS,
} from "../../eval/run/context-limit.ts";
import { runForge } from "../../eval/run/forge-run.ts";
import { InProcessSimClient } from "../../eval/sim-model/in-process-client.ts";
import { FAULT_PROFILES } from "../../eval/sim-model/profiles.ts";
import { BackendError, ContextBudgetExceeded } from "../../src/core/errors.ts";
import { preset, scenario } from "./helpers.ts";

/** A tokenizer of one token per two characters of the request's JSON, with a fixed window. */
function fakeTokenizer(contextTokens: number): PromptTokenizer {
  return {
    contextLength: async () => contextTokens,
    countPrompt: async (messages, tools) => Math.ceil(JSON.stringify({ messages, tools }).length / 2),
    countText: async (text) => Math.ceil(text.length / 2),
  };
}

async function run(id: string, contextTokens: number) {
  const entry = scenario(id);
  return runForge({
    key: id,
    scenario: entry,
    config: preset("reforged"),
    client: new InProcessSimClient(entry, FAULT_PROFILES.clean!, 0),
    runId: `${id}-0`,
    tokenizer: fakeTokenizer(contextTokens),
  });
}

describe("runs with a backend tokenizer", () => {
  it("cap the budget at the window and count every request", async () => {
    const { measurement, trace } = await run("basic_points_transient", 4096);
    expect(measurement.accurate).toBe(true);
    expect(trace.contextLimit).toMatchObject({
      contextTokens: 4096,
      promptLimit: 4096 - REPLY_RESERVE_TOKENS,
    });
    expect(trace.contextLimit?.budgetTokens).toBeLessThan(scenario("basic_points_transient").budgetTokens);
    expect(trace.contextLimit?.promptTokens).toHaveLength(measurement.iterations);
  });

  it("end as context_exceeded, a failure rather than a backend error, when a prompt does not fit", async () => {
    const { measurement, trace } = await run("basic_points_transient", 600);
    expect(measurement).toMatchObject({
      status: "failed",
      failureKind: CONTEXT_EXCEEDED,
      errorName: "ContextBudgetExceeded",
    });
    expect(trace.exchanges.at(-1)?.response).toBeNull();
  });
});

describe("isContextOverflow", () => {
  it("recognises the harness's error and llama-server's refusal, nothing else", () => {
    expect(isContextOverflow(new ContextBudgetExceeded(900, 800))).toBe(true);
    const refusal =
      '{"error":{"code":400,"message":"request (9020 tokens) exceeds the available context size (2048 tokens), try increasing it","type":"exceed_context_size_error"}}';
    expect(isContextOverflow(new BackendError(400, refusal))).toBe(true);
    expect(isContextOverflow({ name: "AI_APICallError", message: "x", responseBody: refusal })).toBe(true);
    expect(isContextOverflow(new BackendError(500, "model crashed"))).toBe(false);
    expect(isContextOverflow("exceeds the available context size")).toBe(false);
  });
});
