/**
 * Benchmark: prompt tokens llama-server re-evaluates per completed run of the compaction chain
 * scenarios, with compaction hysteresis off (`compactTarget` = `compactThreshold`, 0.75) and on
 * (the default target, 0.5).
 *
 * Each run goes through this library's loop (`runForge`, the eval harness's runner, TieredCompact).
 * The answers come from the sim-model's clean profile, which plays the scenario's reference path,
 * so every run completes and both settings see the same answers; every request the loop makes is
 * also sent, as it is (messages and tools), to a real llama-server with `cache_prompt` on and
 * `max_tokens` 1, which reports what it evaluated: `usage.prompt_tokens` and
 * `prompt_tokens_details.cached_tokens` (re-evaluated = prompt − cached, its `timings.prompt_n`).
 * The server runs the tiny test model (about one token per character), one slot, a 32k window.
 *
 * Run with `npm run bench:compaction-cache` (add `--write-docs` to print the Markdown table only).
 */
import { parseArgs } from "node:util";
import { ABLATION_PRESETS } from "../eval/ablation.ts";
import { runForge } from "../eval/run/forge-run.ts";
import { scenarioById } from "../eval/scenarios/index.ts";
import type { EvalScenario } from "../eval/scenarios/scenario.ts";
import { InProcessSimClient } from "../eval/sim-model/in-process-client.ts";
import { FAULT_PROFILES } from "../eval/sim-model/profiles.ts";
import { usageOfAnswer } from "../src/clients/openai/usage.ts";
import { type ToolSpec, toOpenAITool } from "../src/core/tools.ts";
import type { LLMClient, LLMResponse, SendOptions, StreamChunk, TokenUsage } from "../src/core/types.ts";
import { startTestLlamaServer } from "../test/helpers/llama-server-process.ts";

const SCENARIOS = [
  "compaction_chain_baseline",
  "compaction_chain_p1",
  "compaction_chain_p2",
  "compaction_chain_p3",
  "compaction_chain_resume",
] as const;
const SEEDS = [0, 1, 2];
const WARM_UP_SEED = 99;
const SETTINGS = [
  { label: "off (target 0.75)", compactTarget: 0.75 },
  { label: "on (target 0.5, default)", compactTarget: undefined },
] as const;

/**
 * Answers from `inner`; every request also goes to llama-server first, whose usage is recorded.
 * Non-streaming only (the harness's default).
 */
class MeasuredClient implements LLMClient {
  readonly apiFormat = "openai" as const;
  readonly usages: TokenUsage[] = [];
  readonly #inner: LLMClient;
  readonly #url: string;

  constructor(inner: LLMClient, baseUrl: string) {
    this.#inner = inner;
    this.#url = `${baseUrl}/v1/chat/completions`;
  }

  async send(
    messages: Record<string, unknown>[],
    tools?: ToolSpec[],
    options?: SendOptions,
  ): Promise<LLMResponse> {
    const answer = await fetch(this.#url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        messages,
        ...(tools && tools.length > 0 && { tools: tools.map(toOpenAITool) }),
        max_tokens: 1,
        temperature: 0,
        cache_prompt: true,
      }),
    });
    const body: unknown = await answer.json();
    if (!answer.ok) throw new Error(`llama-server answered ${answer.status}: ${JSON.stringify(body)}`);
    const usage = usageOfAnswer(body);
    if (!usage || usage.cachedTokens === undefined) {
      throw new Error(`llama-server reported no prompt usage with cached tokens: ${JSON.stringify(body)}`);
    }
    this.usages.push(usage);
    return this.#inner.send(messages, tools, options);
  }

  sendStream(): AsyncIterable<StreamChunk> {
    throw new Error("MeasuredClient: the benchmark runs non-streaming");
  }

  getContextLength(): Promise<number | null> {
    return Promise.resolve(null);
  }
}

interface Row {
  scenario: string;
  setting: string;
  completed: number;
  requests: number;
  compactions: number;
  promptTokens: number;
  cachedTokens: number;
  reevaluated: number;
}

function scenarioOf(id: string): EvalScenario {
  const found = scenarioById(id);
  if (!found) throw new Error(`no scenario ${id}`);
  return found;
}

const { values: flags } = parseArgs({ options: { "write-docs": { type: "boolean", default: false } } });
const config = ABLATION_PRESETS.reforged;
if (!config) throw new Error("no reforged preset");

// The tiny model says it was trained on 2,048 tokens, which caps the window; the override lifts the cap.
const server = await startTestLlamaServer({
  ctx: 32_768,
  extraFlags: ["--poll", "0", "--override-kv", "llama.context_length=int:32768"],
});
const rows: Row[] = [];
try {
  for (const id of SCENARIOS) {
    const scenario = scenarioOf(id);
    for (const setting of SETTINGS) {
      const row: Row = {
        scenario: id,
        setting: setting.label,
        completed: 0,
        requests: 0,
        compactions: 0,
        promptTokens: 0,
        cachedTokens: 0,
        reevaluated: 0,
      };
      // An uncounted first run, so each counted run starts with the server's cache as the last
      // run of the same scenario left it, whatever ran before.
      for (const seed of [WARM_UP_SEED, ...SEEDS]) {
        const client = new MeasuredClient(
          new InProcessSimClient(scenario, FAULT_PROFILES.clean!, seed),
          server.baseUrl,
        );
        const { measurement } = await runForge({
          key: `${id}-${seed}`,
          scenario,
          config,
          client,
          runId: `${id}-${seed}`,
          ...(setting.compactTarget !== undefined && { compactTarget: setting.compactTarget }),
        });
        if (seed === WARM_UP_SEED) continue;
        if (measurement.completed) row.completed += 1;
        else console.error(`${id} seed ${seed}: ${measurement.failureKind} ${measurement.errorMessage}`);
        row.compactions += measurement.compactions;
        for (const usage of client.usages) {
          row.requests += 1;
          row.promptTokens += usage.promptTokens;
          row.cachedTokens += usage.cachedTokens ?? 0;
          row.reevaluated += usage.promptTokens - (usage.cachedTokens ?? 0);
        }
      }
      rows.push(row);
    }
  }
} finally {
  await server.stop();
}

const perRun = (value: number) => Math.round(value / SEEDS.length);
const table = [
  "| scenario | hysteresis | completed | requests / run | compactions / run | prompt tokens / run | cached / run | re-evaluated / run |",
  "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
  ...rows.map(
    (row) =>
      `| ${row.scenario} | ${row.setting} | ${row.completed}/${SEEDS.length} | ${(row.requests / SEEDS.length).toFixed(1)} | ${(row.compactions / SEEDS.length).toFixed(1)} | ${perRun(row.promptTokens)} | ${perRun(row.cachedTokens)} | ${perRun(row.reevaluated)} |`,
  ),
];
const totals = SETTINGS.map((setting) => {
  const mine = rows.filter((row) => row.setting === setting.label);
  const sum = (pick: (row: Row) => number) => mine.reduce((total, row) => total + pick(row), 0);
  return `${setting.label}: ${perRun(sum((row) => row.reevaluated))} tokens re-evaluated over one run of each scenario (${perRun(sum((row) => row.promptTokens))} prompt tokens, ${(sum((row) => row.compactions) / SEEDS.length).toFixed(1)} compactions)`;
});
if (!flags["write-docs"]) {
  console.log(
    `Compaction chain scenarios, ${SEEDS.length} seeds each, reforged preset, TieredCompact, llama-server (tiny test model, -c 32768 -np 1, cache_prompt)`,
  );
}
console.log(table.join("\n"));
console.log("");
for (const line of totals) console.log(`- ${line}`);
