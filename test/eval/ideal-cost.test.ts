import { describe, expect, it } from "vitest";
import { IDEAL_CONFIG, LoopKind, resolveConfigs } from "../../eval/ablation.ts";
import { buildReport } from "../../eval/metrics/aggregate.ts";
import { idealCostOf, idealTokensOf } from "../../eval/metrics/ideal-cost.ts";
import { evaluatedTokensOf } from "../../eval/metrics/run-metrics.ts";
import { renderMarkdown } from "../../eval/report/markdown.ts";
import { runForge } from "../../eval/run/forge-run.ts";
import { ReferenceClient, ReferenceExhaustedError } from "../../eval/run/reference-client.ts";
import type { ToolSpec } from "../../src/core/tools.ts";
import type { LLMClient, LLMResponse, SendOptions, StreamChunk } from "../../src/core/types.ts";
import { fakeRow, scenario } from "./helpers.ts";

/**
 * A backend stand-in that answers prose (which the reference client must drop) and reports usage
 * as llama-server does with one slot: the prompt less what the previous request left cached.
 */
class CountingBackend implements LLMClient {
  readonly apiFormat = "openai" as const;
  readonly requests: { messages: number; options: SendOptions }[] = [];
  #previousPrompt = 0;

  async send(
    messages: Record<string, unknown>[],
    _tools?: ToolSpec[],
    options: SendOptions = {},
  ): Promise<LLMResponse> {
    this.requests.push({ messages: messages.length, options });
    const promptTokens = 100 * messages.length;
    options.onUsage?.({ promptTokens, cachedTokens: this.#previousPrompt, completionTokens: 1 });
    this.#previousPrompt = promptTokens;
    return { content: "I would rather chat about it." };
  }

  async *sendStream(): AsyncIterable<StreamChunk> {
    yield* [];
    throw new Error("not streamed in these tests");
  }

  async getContextLength(): Promise<number | null> {
    return null;
  }
}

async function runIdeal(id: string, backend = new CountingBackend()) {
  const target = scenario(id);
  const outcome = await runForge({
    key: `${id}|ideal`,
    scenario: target,
    config: IDEAL_CONFIG,
    client: new ReferenceClient(backend, target),
    runId: `${id}-0`,
  });
  return { outcome, backend };
}

describe("evaluatedTokensOf", () => {
  it("counts the first prompt in full, later prompts less cache hits, and every generated token", () => {
    expect(
      evaluatedTokensOf([
        { promptTokens: 900, cachedTokens: 880, completionTokens: 30 },
        { promptTokens: 960, cachedTokens: 930, completionTokens: 40 },
      ]),
    ).toBe(1000);
  });

  it("counts a later prompt without a cache figure in full", () => {
    expect(
      evaluatedTokensOf([
        { promptTokens: 50, completionTokens: 5 },
        { promptTokens: 70, completionTokens: 5 },
      ]),
    ).toBe(130);
  });
});

describe("the ideal reference run", () => {
  it("plays the reference through the loop, each prompt still sent with maxTokens 1", async () => {
    const { outcome, backend } = await runIdeal("basic_forecast_prose");
    expect(outcome.measurement.accurate).toBe(true);
    expect(outcome.measurement.iterations).toBe(2);
    expect(backend.requests.map((request) => request.options.sampling?.maxTokens)).toEqual([1, 1]);
    // Two requests: the first prompt in full, the second less the first (cached), 1 token generated each.
    const [first, second] = backend.requests.map((request) => request.messages * 100);
    expect(outcome.measurement.evaluatedTokens).toBe((first ?? 0) + 1 + (second ?? 0) - (first ?? 0) + 1);
  });

  it("plays a step again after its tool failed once, as a perfect model would", async () => {
    const { outcome, backend } = await runIdeal("basic_points_transient");
    expect(outcome.measurement.accurate).toBe(true);
    expect(outcome.measurement.toolErrors).toBe(1);
    expect(backend.requests).toHaveLength(scenario("basic_points_transient").idealIterations);
  });

  it("fails loudly when the loop asks for more than the reference holds", async () => {
    const target = scenario("basic_forecast_prose");
    const client = new ReferenceClient(new CountingBackend(), target);
    const done = target.reference.flatMap((step, index) => [
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: `c${index}`, type: "function", function: { name: step.tool, arguments: step.args } },
        ],
      },
      { role: "tool", tool_call_id: `c${index}`, content: "{}" },
    ]);
    await expect(client.send([{ role: "user", content: target.userMessage }, ...done])).rejects.toThrow(
      ReferenceExhaustedError,
    );
  });

  it("is selected by --ideal or --ablation ideal, after the configs under test", () => {
    expect(resolveConfigs(["reforged"], { ideal: true }).map((config) => config.name)).toEqual([
      "reforged",
      "ideal",
    ]);
    expect(resolveConfigs(["ideal"])[0]?.loop).toBe(LoopKind.REFERENCE);
  });
});

describe("the cost against the ideal in the report", () => {
  const idealRow = (scenarioId: string, evaluatedTokens: number) =>
    fakeRow("ideal", scenarioId, 0, true, {
      evaluatedTokens,
      config: { ...IDEAL_CONFIG },
    });

  it("divides each completed run's evaluated tokens by its scenario's ideal; failed runs do not count", () => {
    const rows = [
      fakeRow("reforged", "a", 0, true, { evaluatedTokens: 1200 }),
      fakeRow("reforged", "b", 0, true, { evaluatedTokens: 3000 }),
      fakeRow("reforged", "b", 1, false, { evaluatedTokens: 9000 }),
    ];
    const ideal = idealTokensOf([idealRow("a", 1000), idealRow("b", 1500)], () => "");
    expect(idealCostOf(rows, ideal, () => "")).toEqual({
      runs: 2,
      meanEvaluatedTokens: 2100,
      meanIdealTokens: 1250,
      meanRatio: 1.6,
      medianRatio: 1.6,
      withinTarget: 1,
    });
  });

  it("keeps the ideal rows out of the configs under test and reports the ratio in Markdown", () => {
    const report = buildReport([
      fakeRow("reforged", "a", 0, true, { evaluatedTokens: 1300 }),
      fakeRow("bare", "a", 0, false),
      idealRow("a", 1000),
    ]);
    expect(report.groups.map((group) => group.name).sort()).toEqual(["bare", "reforged"]);
    expect(report.idealRows).toHaveLength(1);
    expect(report.groups.find((group) => group.name === "reforged")?.idealCost?.meanRatio).toBeCloseTo(1.3);
    expect(report.groups.find((group) => group.name === "bare")?.idealCost).toBeNull();
    const markdown = renderMarkdown(report);
    expect(markdown).toContain("Token cost against the ideal reference");
    expect(markdown).toMatch(/\| reforged \| 1 \| 1300 \| 1000 \| 1\.30× \| 1\.30× \| 1 \(100%\) \|/);
  });

  it("has no ideal section without ideal rows", () => {
    const markdown = renderMarkdown(
      buildReport([fakeRow("reforged", "a", 0, true, { evaluatedTokens: 10 })]),
    );
    expect(markdown).not.toContain("Token cost against the ideal reference");
  });
});
