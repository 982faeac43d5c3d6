/**
 * The eval's real-token context limits against a real llama-server running the tiny test model:
 * the tokenizer counts exactly the prompt the server evaluates (tools included), each run's
 * budget is capped at the server's n_ctx, and a prompt that would not fit ends the run as the
 * typed `context_exceeded` outcome, for this library's loop (before sending) and for the AI SDK
 * peer (from the server's own refusal).
 */
import { afterAll, describe, expect, it } from "vitest";
import { ABLATION_PRESETS, AI_SDK_CONFIG, type LoopConfig } from "../../eval/ablation.ts";
import { type BackendSession, startBackend } from "../../eval/backends/registry.ts";
import { executeTask } from "../../eval/batch/batch.ts";
import {
  CONTEXT_EXCEEDED,
  createLlamaServerTokenizer,
  type PromptTokenizer,
  REPLY_RESERVE_TOKENS,
  resolveRunLimit,
} from "../../eval/run/context-limit.ts";
import { runForge } from "../../eval/run/forge-run.ts";
import { OpenAICompatibleClient } from "../../src/clients/openai/compatible-client.ts";
import { toOpenAITool } from "../../src/core/tools.ts";
import { renderSystemPrompt } from "../../src/core/workflow.ts";
import { scenario } from "../eval/helpers.ts";
import { beforeAllOrFail } from "../helpers/before-all-or-fail.ts";
import { startTestLlamaServer, type TestLlamaServer } from "../helpers/llama-server-process.ts";

const CONTEXT = 1024;
/** Two tools, a short request: fits the window. */
const SMALL = "basic_forecast_prose";
/** Eight tools whose list alone outgrows a 1024-token window. */
const LARGE = "compaction_chain_p1";

let server: TestLlamaServer | undefined;
let session: BackendSession | undefined;
let tokenizer: PromptTokenizer;
let v1: string;

beforeAllOrFail(async () => {
  server = await startTestLlamaServer({ ctx: CONTEXT, slots: 1, threads: 1 });
  v1 = `${server.baseUrl}/v1`;
  session = await startBackend("openai-compatible", {
    model: "tiny",
    baseUrl: v1,
    sampling: { temperature: 0 },
  });
  tokenizer = session.tokenizer as PromptTokenizer;
}, 900_000);

afterAll(async () => {
  await session?.close();
  await server?.stop();
});

function config(name: string): LoopConfig {
  return ABLATION_PRESETS[name] as LoopConfig;
}

describe("real-token context limits (llama-server, tiny model)", () => {
  it("counts exactly the prompt tokens the server evaluates, tools included", async () => {
    const { workflow } = scenario(SMALL).build();
    const messages = [
      { role: "system", content: renderSystemPrompt(workflow.systemPrompt) },
      { role: "user", content: scenario(SMALL).userMessage },
    ];
    const specs = Object.values(workflow.tools).map((tool) => tool.spec);
    const response = await fetch(`${v1}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ messages, tools: specs.map(toOpenAITool), max_tokens: 1, temperature: 0 }),
    });
    const body = (await response.json()) as { usage: { prompt_tokens: number } };
    const counted = await tokenizer.countPrompt(messages, specs);
    expect(counted).toBe(body.usage.prompt_tokens);
    expect(await tokenizer.countPrompt(messages, [])).toBeLessThan(counted);
  });

  it("caps a run's budget at n_ctx less the reply reserve and the tools list", async () => {
    const entry = scenario(SMALL);
    const limit = await resolveRunLimit(
      tokenizer,
      entry.build().workflow,
      entry.userMessage,
      entry.budgetTokens,
    );
    expect(limit).not.toBeNull();
    expect(limit?.contextTokens).toBe(CONTEXT);
    expect(limit?.promptLimit).toBe(CONTEXT - REPLY_RESERVE_TOKENS);
    expect(limit?.toolTokens).toBeGreaterThan(0);
    expect(limit?.budgetTokens).toBe(CONTEXT - REPLY_RESERVE_TOKENS - (limit?.toolTokens ?? 0));
    expect(limit?.budgetTokens).toBeLessThan(entry.budgetTokens);
  });

  it("runs a prompt that fits, with every request counted under the limit", async () => {
    const client = new OpenAICompatibleClient({
      baseUrl: v1,
      model: "tiny",
      logger: () => {},
      temperature: 0,
      seed: 1,
      maxTokens: 48,
    });
    const { measurement, trace } = await runForge({
      key: "fits",
      scenario: scenario(SMALL),
      config: config("bare"),
      client,
      runId: "fits-1",
      tokenizer,
    });
    expect(measurement.failureKind).not.toBe(CONTEXT_EXCEEDED);
    expect(measurement.status).not.toBe("error");
    const counted = trace.contextLimit?.promptTokens ?? [];
    expect(counted.length).toBe(measurement.iterations);
    for (const tokens of counted) expect(tokens).toBeLessThanOrEqual(CONTEXT - REPLY_RESERVE_TOKENS);
  }, 120_000);

  it("ends a run whose prompt would not fit as context_exceeded, without sending it", async () => {
    const entry = scenario(LARGE);
    const outcome = await executeTask(
      { key: "overflow", scenario: entry, config: config("reforged"), runIndex: 0, seed: 0 },
      session as BackendSession,
      false,
    );
    expect(outcome.measurement).toMatchObject({
      status: "failed",
      failureKind: CONTEXT_EXCEEDED,
      errorName: "ContextBudgetExceeded",
      completed: false,
    });
    expect(outcome.trace.exchanges).toHaveLength(1);
    expect(outcome.trace.exchanges[0]?.error?.name).toBe("ContextBudgetExceeded");
    expect(outcome.trace.contextLimit?.promptTokens[0]).toBeGreaterThan(CONTEXT - REPLY_RESERVE_TOKENS);
  }, 120_000);

  it("reports the AI SDK peer's context refusal from the server as context_exceeded too", async () => {
    const outcome = await executeTask(
      { key: "peer-overflow", scenario: scenario(LARGE), config: AI_SDK_CONFIG, runIndex: 0, seed: 0 },
      session as BackendSession,
      false,
    );
    expect(outcome.measurement.failureKind).toBe(CONTEXT_EXCEEDED);
    expect(outcome.measurement.status).toBe("failed");
    expect(outcome.measurement.errorMessage).toMatch(/exceeds the available context size/);
  }, 120_000);

  it("caps nothing when the server does not report its context", async () => {
    const silent = createLlamaServerTokenizer({ baseUrl: v1, contextLength: async () => null });
    const entry = scenario(SMALL);
    expect(
      await resolveRunLimit(silent, entry.build().workflow, entry.userMessage, entry.budgetTokens),
    ).toBeNull();
  });
});
