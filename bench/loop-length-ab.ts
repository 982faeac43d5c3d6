/**
 * The loop's CPU per step at a short and a long run length, for one source tree: A/B of commits by
 * running it once per tree, alternating (`git archive <commit> src | tar -x -C /tmp/t/<commit>`,
 * with a `node_modules` link to this checkout's). CPU (`process.cpuUsage`), not wall time, since
 * the machine is shared. Warms up with `WARM` runs of 200 steps (default 10), then medians of 20 runs of 100 steps
 * and 3 runs of `LONG` steps (default 3000): the `bench/peers` forge adapter's set-up
 * (`ScriptedClient`, `NoCompact`, one no-op call per step, the last one terminal).
 *
 *   ROOT=/tmp/t/e0580cb LABEL=e0580cb LONG=800 node --import tsx bench/loop-length-ab.ts
 */
import { createBenchRun } from "./peers/forge.ts";

const root = process.env.ROOT ?? new URL("..", import.meta.url).pathname;
const { ContextManager, NoCompact } = await import(`${root}/src/context/index.ts`);
const { defineTool } = await import(`${root}/src/core/tools.ts`);
const { defineWorkflow } = await import(`${root}/src/core/workflow.ts`);
const { WorkflowRunner } = await import(`${root}/src/loop/runner.ts`);
const { ScriptedClient } = await import(`${root}/src/testing/index.ts`);
const { workflow, script } = createBenchRun({ defineTool, defineWorkflow });

/** CPU µs per step of one run of `steps` steps. */
async function cpuPerStep(steps: number): Promise<number> {
  const client = new ScriptedClient(script(steps));
  const contextManager = new ContextManager({ strategy: new NoCompact(), budgetTokens: 100_000_000 });
  const runner = new WorkflowRunner({ client, contextManager, maxIterations: steps });
  const before = process.cpuUsage();
  await runner.run(workflow, "go");
  const used = process.cpuUsage(before);
  return (used.user + used.system) / steps;
}

async function medianOf(runs: number, steps: number): Promise<{ median: number; all: number[] }> {
  const all: number[] = [];
  for (let run = 0; run < runs; run += 1) all.push(await cpuPerStep(steps));
  const sorted = [...all].sort((a, b) => a - b);
  return { median: sorted[Math.floor(sorted.length / 2)] as number, all };
}

const long = Number(process.env.LONG ?? 3000);
await medianOf(Number(process.env.WARM ?? 10), 200);
const short = await medianOf(20, 100);
const longRuns = await medianOf(3, long);
console.log(
  `${process.env.LABEL ?? root}: CPU µs/step at 100 steps ${short.median.toFixed(0)}, at ${long} ${longRuns.median.toFixed(0)} (${longRuns.all.map((value) => value.toFixed(0)).join(", ")})`,
);
