/**
 * Core benchmark (`npm run bench:core`): the statechart loop's overhead against a plain
 * hand-written async loop making the same calls, and how total time grows with run length.
 * Prints a Markdown table; figures go to docs/benchmarks.md.
 */
import { performance } from "node:perf_hooks";
import { z } from "zod";
import { serializeToolResult } from "../machines/workflow-actors.ts";
import type { ToolOutcome } from "../machines/workflow-context.ts";
import { toolCallMessages, toolResultMessages } from "../machines/workflow-messages.ts";
import { ContextManager, NoCompact } from "../src/context/index.ts";
import {
  createMessage,
  type Message,
  MessageRole,
  MessageType,
  serializeHistory,
} from "../src/core/messages.ts";
import { defineTool } from "../src/core/tools.ts";
import { defineWorkflow, workflowToolSpecs } from "../src/core/workflow.ts";
import {
  createStepProgress,
  findPrematureTerminal,
  findPrerequisiteViolations,
  recordStep,
  stepSummaryHint,
} from "../src/guardrails/step-state.ts";
import { validateResponse } from "../src/guardrails/validate-response.ts";
import { WorkflowRunner } from "../src/loop/runner.ts";
import { ScriptedClient } from "../src/testing/index.ts";

const noop = defineTool({
  name: "noop",
  description: "does nothing",
  parameters: z.object({ i: z.number() }),
  execute: () => "ok",
});
const finish = defineTool({
  name: "finish",
  description: "ends",
  parameters: z.object({}),
  execute: () => "done",
});
const workflow = defineWorkflow({
  name: "bench",
  description: "",
  tools: [noop, finish],
  terminalTool: "finish",
  systemPrompt: "s",
});

function script(iterations: number) {
  return Array.from({ length: iterations }, (_, index) =>
    index === iterations - 1 ? [{ tool: "finish", args: {} }] : [{ tool: "noop", args: { i: index } }],
  );
}

async function statechartRun(iterations: number): Promise<number> {
  const client = new ScriptedClient(script(iterations));
  const contextManager = new ContextManager({ strategy: new NoCompact(), budgetTokens: 100_000_000 });
  const runner = new WorkflowRunner({ client, contextManager, maxIterations: iterations });
  const start = performance.now();
  await runner.run(workflow, "go");
  return performance.now() - start;
}

/**
 * The same loop written by hand as a plain async function: the same client and tool calls and the
 * same pure guardrail functions (compaction check, serialization, validation, step checks, message
 * builders, zod parsing, result serialization) — everything but the statechart. The difference
 * between the two is the cost of the statechart itself.
 */
async function plainRun(iterations: number): Promise<number> {
  const client = new ScriptedClient(script(iterations));
  const contextManager = new ContextManager({ strategy: new NoCompact(), budgetTokens: 100_000_000 });
  const tools = workflowToolSpecs(workflow);
  const toolNames = Object.keys(workflow.tools);
  const start = performance.now();
  let messages: Message[] = [
    createMessage(MessageRole.SYSTEM, "s", { type: MessageType.SYSTEM_PROMPT }),
    createMessage(MessageRole.USER, "go", { type: MessageType.USER_INPUT }),
  ];
  let progress = createStepProgress();
  for (let iteration = 0; iteration < iterations; iteration += 1) {
    messages = contextManager.maybeCompact(messages, iteration, stepSummaryHint(progress));
    const response = await client.send(serializeHistory(messages, "openai"), tools);
    const verdict = validateResponse(response, { toolNames, rescueEnabled: true });
    if (verdict.kind !== "calls") throw new Error("unexpected verdict");
    if (findPrematureTerminal(verdict.calls, workflow.terminalTools, workflow.requiredSteps, progress))
      throw new Error("premature");
    if (findPrerequisiteViolations(verdict.calls, {}, progress).length > 0) throw new Error("prerequisites");
    const added = toolCallMessages(verdict.calls, "plain", iteration);
    messages = messages.concat(added);
    const calls = added.at(-1)?.toolCalls ?? [];
    const outcomes: ToolOutcome[] = [];
    for (const call of calls) {
      const tool = workflow.tools[call.name];
      if (!tool) throw new Error("unknown tool");
      const value = await tool.execute(tool.spec.parameters.parse(call.args));
      outcomes.push({
        callId: call.callId,
        tool: call.name,
        args: call.args,
        status: "ok",
        content: serializeToolResult(call.name, value),
        value,
      });
      progress = recordStep(progress, call.name, call.args, false);
    }
    messages = messages.concat(toolResultMessages(outcomes, iteration));
    if (outcomes.some((outcome) => workflow.terminalTools.includes(outcome.tool)))
      return performance.now() - start;
  }
  throw new Error("did not finish");
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

async function measure(
  run: (n: number) => Promise<number>,
  iterations: number,
  repeats: number,
): Promise<number> {
  await run(iterations);
  const times: number[] = [];
  for (let index = 0; index < repeats; index += 1) times.push(await run(iterations));
  return median(times);
}

const repeats = Number(process.env.BENCH_REPEATS ?? 15);
const ITERATIONS = 1000;
// Warm both up, then alternate them (order flipped every pair) so that drift in the machine's
// speed hits both sides alike; the ratio and the difference are medians over the pairs.
await statechartRun(ITERATIONS);
await plainRun(ITERATIONS);
const pairs: { statechart: number; plain: number }[] = [];
for (let index = 0; index < repeats; index += 1) {
  if (index % 2 === 0) {
    const statechart = await statechartRun(ITERATIONS);
    pairs.push({ statechart, plain: await plainRun(ITERATIONS) });
  } else {
    const plain = await plainRun(ITERATIONS);
    pairs.push({ statechart: await statechartRun(ITERATIONS), plain });
  }
}
const statechart = median(pairs.map((pair) => pair.statechart));
const plain = median(pairs.map((pair) => pair.plain));
const ratio = median(pairs.map((pair) => pair.statechart / pair.plain));
const extra = median(pairs.map((pair) => ((pair.statechart - pair.plain) / ITERATIONS) * 1000));
console.log(
  "## Loop overhead (1,000 iterations, ScriptedClient, no-op tools; medians of",
  repeats,
  "alternating pairs)\n",
);
console.log("| loop | total ms | µs / iteration |");
console.log("| --- | ---: | ---: |");
console.log(`| plain async loop | ${plain.toFixed(1)} | ${((plain / ITERATIONS) * 1000).toFixed(1)} |`);
console.log(
  `| statechart (WorkflowRunner) | ${statechart.toFixed(1)} | ${((statechart / ITERATIONS) * 1000).toFixed(1)} |`,
);
console.log(
  `\nratio statechart / plain (median of the pairs' ratios): **${ratio.toFixed(2)}×**; statechart cost over plain (median of the pairs' differences): **${extra.toFixed(1)} µs / iteration**\n`,
);

console.log("## Growth under NoCompact (median of", repeats, "runs)\n");
console.log("| iterations | total ms | ms / iteration |");
console.log("| ---: | ---: | ---: |");
const growth: number[] = [];
for (const iterations of [100, 200, 400]) {
  const total = await measure(statechartRun, iterations, repeats);
  growth.push(total);
  console.log(`| ${iterations} | ${total.toFixed(2)} | ${(total / iterations).toFixed(4)} |`);
}
console.log(
  `\nratios: 200/100 = ${((growth[1] as number) / (growth[0] as number)).toFixed(2)}, 400/200 = ${((growth[2] as number) / (growth[1] as number)).toFixed(2)} (linear = 2.00)`,
);
