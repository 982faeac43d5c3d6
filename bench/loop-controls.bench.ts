/**
 * Loop-controls benchmark (`npm run bench:loop-controls`): what per-step tool subsets and a
 * configured escalation tier add to the loop's cost per LLM call, A/B in one process. A workflow of
 * 8 tools (7 required steps in a prerequisite chain, then a terminal), played by a ScriptedClient
 * in 8 calls per run; every config runs the same script, the order rotating each round; CPU time of
 * the process, not wall time. Prints a
 * Markdown table; figures go to docs/benchmarks.md.
 */
import { z } from "zod";
import { ContextManager, NoCompact } from "../src/context/index.ts";
import { defineTool } from "../src/core/tools.ts";
import type { LLMClient, LLMResponse } from "../src/core/types.ts";
import { defineWorkflow } from "../src/core/workflow.ts";
import { WorkflowRunner, type WorkflowRunnerOptions } from "../src/loop/runner.ts";
import { ScriptedClient, toolCall } from "../src/testing/index.ts";

const STEPS = Array.from({ length: 7 }, (_, index) => `step_${index}`);
const tools = [...STEPS, "finish"].map((name, index) =>
  defineTool({
    name,
    description: `The ${name} tool`,
    parameters: z.object({ i: z.number() }),
    prerequisites: index > 0 && index < STEPS.length ? [STEPS[index - 1] as string] : [],
    execute: () => "ok",
  }),
);
const workflow = defineWorkflow({
  name: "bench_controls",
  description: "",
  tools,
  requiredSteps: STEPS,
  terminalTool: "finish",
  systemPrompt: "s",
});
const SCRIPT = [...STEPS, "finish"].map((name, index) => toolCall(name, { i: index }));
const CALLS = SCRIPT.length;

/** Plays the script again and again: one runner (one machine) serves every run of a config. */
class CyclingClient implements LLMClient {
  readonly apiFormat = "openai" as const;
  #next = 0;
  async send(): Promise<LLMResponse> {
    const response = SCRIPT[this.#next % CALLS] as LLMResponse;
    this.#next += 1;
    return structuredClone(response);
  }
  async *sendStream(): AsyncIterable<never> {
    yield* [];
    throw new Error("CyclingClient does not stream");
  }
  async getContextLength(): Promise<number | null> {
    return null;
  }
}

const configs = {
  default: {},
  "toolSubsets: steps": { toolSubsets: "steps" },
  "escalation (never fires)": { escalation: { after: 2, client: new ScriptedClient([]) } },
  "both + activeTools": {
    toolSubsets: "steps",
    activeTools: (state) => state.derived,
    escalation: { after: 2, client: new ScriptedClient([]) },
  },
} satisfies Record<string, Partial<WorkflowRunnerOptions>>;
type ConfigName = keyof typeof configs;

/**
 * ms of CPU time (user + system) for `runs` runs of the workflow under `options`: on a machine
 * shared with other jobs the process's CPU time is steadier than wall time.
 */
async function timeRuns(options: Partial<WorkflowRunnerOptions>, runs: number): Promise<number> {
  const contextManager = new ContextManager({ strategy: new NoCompact(), budgetTokens: 100_000_000 });
  const runner = new WorkflowRunner({ client: new CyclingClient(), contextManager, ...options });
  let elapsed = 0;
  for (let run = 0; run < runs; run += 1) {
    const start = process.cpuUsage();
    await runner.run(workflow, "go");
    const used = process.cpuUsage(start);
    elapsed += (used.user + used.system) / 1000;
  }
  return elapsed;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

const repeats = Number(process.env.BENCH_REPEATS ?? 15);
const RUNS = 100;
const names = Object.keys(configs) as ConfigName[];
for (const name of names) await timeRuns(configs[name], RUNS);
const rounds: Record<ConfigName, number>[] = [];
for (let index = 0; index < repeats; index += 1) {
  const round = {} as Record<ConfigName, number>;
  for (let offset = 0; offset < names.length; offset += 1) {
    const name = names[(index + offset) % names.length] as ConfigName;
    round[name] = await timeRuns(configs[name], RUNS);
  }
  rounds.push(round);
}
const perCall = (ms: number) => (ms / (RUNS * CALLS)) * 1000;
console.log(
  `## Loop controls (${RUNS} runs × ${CALLS} calls, ScriptedClient, 8 tools; medians of ${repeats} rounds)\n`,
);
console.log("| config | CPU µs / call | over default, CPU µs / call (median of the rounds' differences) |");
console.log("| --- | ---: | ---: |");
for (const name of names) {
  const total = median(rounds.map((round) => round[name]));
  const extra = median(rounds.map((round) => perCall(round[name] - round.default)));
  console.log(`| ${name} | ${perCall(total).toFixed(1)} | ${name === "default" ? "—" : extra.toFixed(1)} |`);
}
