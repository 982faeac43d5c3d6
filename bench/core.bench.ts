/**
 * Core benchmark (`npm run bench:core`): the statechart loop's overhead against a plain
 * hand-written async loop making the same calls, and how total time grows with run length.
 * Prints a Markdown table; figures go to docs/benchmarks.md.
 */
import { performance } from "node:perf_hooks";
import { assign, createActor, sendTo, setup, toPromise } from "xstate";
import { z } from "zod";
import { ContextManager, NoCompact } from "../src/context/index.ts";
import { appendMessages } from "../src/core/history.ts";
import { HistorySerializer } from "../src/core/history-serializer.ts";
import {
  createMessage,
  type Message,
  MessageRole,
  MessageType,
  type ToolCallInfo,
} from "../src/core/messages.ts";
import { defineTool } from "../src/core/tools.ts";
import type { LLMResponse } from "../src/core/types.ts";
import { defineWorkflow, workflowToolSpecs } from "../src/core/workflow.ts";
import {
  createStepProgress,
  findPrematureTerminal,
  findPrerequisiteViolations,
  recordStep,
  type StepProgress,
  stepSummaryHint,
} from "../src/guardrails/step-state.ts";
import { type Verdict, validateResponse } from "../src/guardrails/validate-response.ts";
import { WorkflowRunner } from "../src/loop/runner.ts";
import { fromRequests } from "../src/machines/request-worker.ts";
import { serializeToolResult } from "../src/machines/workflow-actors.ts";
import type { ToolOutcome } from "../src/machines/workflow-context.ts";
import { toolCallMessages, toolResultMessages } from "../src/machines/workflow-messages.ts";
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
  const serializer = new HistorySerializer("openai");
  const start = performance.now();
  let messages: Message[] = Object.freeze([
    createMessage(MessageRole.SYSTEM, "s", { type: MessageType.SYSTEM_PROMPT }),
    createMessage(MessageRole.USER, "go", { type: MessageType.USER_INPUT }),
  ]) as Message[];
  let progress = createStepProgress();
  for (let iteration = 0; iteration < iterations; iteration += 1) {
    messages = contextManager.maybeCompact(messages, iteration, stepSummaryHint(progress));
    const response = await client.send(serializer.serialize(messages), tools);
    const verdict = validateResponse(response, { toolNames, rescueEnabled: true });
    if (verdict.kind !== "calls") throw new Error("unexpected verdict");
    if (findPrematureTerminal(verdict.calls, workflow.terminalTools, workflow.requiredSteps, progress))
      throw new Error("premature");
    if (findPrerequisiteViolations(verdict.calls, {}, progress).length > 0) throw new Error("prerequisites");
    const added = toolCallMessages(verdict.calls, "plain", iteration);
    messages = appendMessages(messages, added);
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
    messages = appendMessages(messages, toolResultMessages(outcomes, iteration));
    if (outcomes.some((outcome) => workflow.terminalTools.includes(outcome.tool)))
      return performance.now() - start;
  }
  throw new Error("did not finish");
}

/**
 * The floor for any statechart of the required shape: the plain loop's work (same calls, same pure
 * functions) moved into a bare XState machine with the same five phase states and two long-lived
 * request workers, and nothing else — one guard per phase, no retry/nudge/failure branches, no
 * `onMessage`, no deps lookup, no cancellation bookkeeping. What it costs over the plain loop is
 * XState's own price for stepping through compact → infer → validate → enforce → execute.
 */
async function bareMachineRun(iterations: number): Promise<number> {
  const client = new ScriptedClient(script(iterations));
  const contextManager = new ContextManager({ strategy: new NoCompact(), budgetTokens: 100_000_000 });
  const tools = workflowToolSpecs(workflow);
  const toolNames = Object.keys(workflow.tools);
  const serializer = new HistorySerializer("openai");
  type Context = { messages: Message[]; progress: StepProgress; iteration: number; verdict: Verdict | null };
  const machine = setup({
    types: {
      context: {} as Context,
      events: {} as
        | { type: "inference.done"; output: LLMResponse }
        | { type: "inference.error"; error: unknown }
        | { type: "tools.done"; output: ToolOutcome[] }
        | { type: "tools.error"; error: unknown },
    },
    actors: {
      inference: fromRequests("inference", (messages: Message[]) =>
        client.send(serializer.serialize(messages), tools),
      ),
      executeTools: fromRequests("tools", async (calls: ToolCallInfo[]) => {
        const outcomes: ToolOutcome[] = [];
        for (const call of calls) {
          const tool = workflow.tools[call.name] as (typeof workflow.tools)[string];
          const value = await tool.execute(tool.spec.parameters.parse(call.args));
          outcomes.push({
            callId: call.callId,
            tool: call.name,
            args: call.args,
            status: "ok",
            content: serializeToolResult(call.name, value),
            value,
          });
        }
        return outcomes;
      }),
    },
    actions: {
      recordResults: assign(({ context, event }) => {
        const outcomes = event.type === "tools.done" ? event.output : [];
        return {
          messages: appendMessages(context.messages, toolResultMessages(outcomes, context.iteration - 1)),
          progress: outcomes.reduce(
            (progress, outcome) => recordStep(progress, outcome.tool, outcome.args, false),
            context.progress,
          ),
        };
      }),
    },
  }).createMachine({
    context: {
      messages: Object.freeze([
        createMessage(MessageRole.SYSTEM, "s", { type: MessageType.SYSTEM_PROMPT }),
        createMessage(MessageRole.USER, "go", { type: MessageType.USER_INPUT }),
      ]) as Message[],
      progress: createStepProgress(),
      iteration: 0,
      verdict: null,
    },
    invoke: [
      { id: "inference", src: "inference" },
      { id: "executeTools", src: "executeTools" },
    ],
    initial: "compact",
    states: {
      compact: {
        always: {
          target: "infer",
          actions: assign(({ context }) => ({
            messages: contextManager.maybeCompact(
              context.messages,
              context.iteration,
              stepSummaryHint(context.progress),
            ),
            iteration: context.iteration + 1,
          })),
        },
      },
      infer: {
        entry: sendTo("inference", ({ context }) => ({
          type: "request" as const,
          request: context.messages,
        })),
        on: {
          "inference.done": {
            target: "validate",
            actions: assign({
              verdict: ({ event }) => validateResponse(event.output, { toolNames, rescueEnabled: true }),
            }),
          },
        },
      },
      validate: {
        always: [
          { guard: ({ context }) => context.verdict?.kind !== "calls", target: "failed" },
          { target: "enforce" },
        ],
      },
      enforce: {
        always: [
          {
            guard: ({ context }) => {
              const calls = context.verdict?.kind === "calls" ? context.verdict.calls : [];
              return (
                findPrematureTerminal(
                  calls,
                  workflow.terminalTools,
                  workflow.requiredSteps,
                  context.progress,
                ) !== null || findPrerequisiteViolations(calls, {}, context.progress).length > 0
              );
            },
            target: "failed",
          },
          {
            target: "execute",
            actions: assign({
              messages: ({ context }) =>
                appendMessages(
                  context.messages,
                  toolCallMessages(
                    context.verdict?.kind === "calls" ? context.verdict.calls : [],
                    "bare",
                    context.iteration - 1,
                  ),
                ),
            }),
          },
        ],
      },
      execute: {
        entry: sendTo("executeTools", ({ context }) => ({
          type: "request" as const,
          request: context.messages.at(-1)?.toolCalls ?? [],
        })),
        on: {
          "tools.done": [
            {
              guard: ({ event }) =>
                event.output.some((outcome) => workflow.terminalTools.includes(outcome.tool)),
              target: "done",
              actions: "recordResults",
            },
            { target: "compact", actions: "recordResults" },
          ],
        },
      },
      done: { type: "final" },
      failed: { type: "final" },
    },
  });
  const start = performance.now();
  const actor = createActor(machine);
  const finished = toPromise(actor);
  actor.start();
  await finished;
  return performance.now() - start;
}

/**
 * XState alone: the five phase states and the two request workers with no work at all (the
 * workers answer with an already-resolved promise, guards are constant, one counter in the
 * context). What it costs per iteration is the least any machine of the required shape adds to a
 * loop, whatever the loop does; compare it with what the 1.5× target leaves (half the plain loop).
 */
const emptyMachine = setup({
  types: {
    context: {} as { iteration: number; iterations: number },
    input: {} as { iterations: number },
    events: {} as
      | { type: "inference.done"; output: number }
      | { type: "inference.error"; error: unknown }
      | { type: "tools.done"; output: number }
      | { type: "tools.error"; error: unknown },
  },
  actors: {
    inference: fromRequests("inference", (request: number) => Promise.resolve(request)),
    executeTools: fromRequests("tools", (request: number) => Promise.resolve(request)),
  },
}).createMachine({
  context: ({ input }) => ({ iteration: 0, iterations: input.iterations }),
  invoke: [
    { id: "inference", src: "inference" },
    { id: "executeTools", src: "executeTools" },
  ],
  initial: "compact",
  states: {
    compact: {
      always: [
        { guard: ({ context }) => context.iteration >= context.iterations, target: "done" },
        { target: "infer", actions: assign({ iteration: ({ context }) => context.iteration + 1 }) },
      ],
    },
    infer: {
      entry: sendTo("inference", ({ context }) => ({ type: "request" as const, request: context.iteration })),
      on: { "inference.done": "validate" },
    },
    validate: {
      always: [{ guard: ({ context }) => context.iteration < 0, target: "done" }, { target: "enforce" }],
    },
    enforce: {
      always: [{ guard: ({ context }) => context.iteration < 0, target: "done" }, { target: "execute" }],
    },
    execute: {
      entry: sendTo("executeTools", ({ context }) => ({
        type: "request" as const,
        request: context.iteration,
      })),
      on: { "tools.done": "compact" },
    },
    done: { type: "final" },
  },
});

async function emptyMachineRun(iterations: number): Promise<number> {
  const start = performance.now();
  const actor = createActor(emptyMachine, { input: { iterations } });
  const finished = toPromise(actor);
  actor.start();
  await finished;
  return performance.now() - start;
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
// Warm all three up, then run them in rounds, the order rotating every round, so that drift in the
// machine's speed hits every loop alike; ratios and differences are medians over the rounds.
const loops = { statechart: statechartRun, bare: bareMachineRun, plain: plainRun, empty: emptyMachineRun };
type LoopName = keyof typeof loops;
const names = Object.keys(loops) as LoopName[];
for (const name of names) await loops[name](ITERATIONS);
const rounds: Record<LoopName, number>[] = [];
for (let index = 0; index < repeats; index += 1) {
  const round = {} as Record<LoopName, number>;
  for (let offset = 0; offset < names.length; offset += 1) {
    const name = names[(index + offset) % names.length] as LoopName;
    round[name] = await loops[name](ITERATIONS);
  }
  rounds.push(round);
}
const totalOf = (name: LoopName) => median(rounds.map((round) => round[name]));
const ratioOf = (name: LoopName) => median(rounds.map((round) => round[name] / round.plain));
const extraOf = (name: LoopName) =>
  median(rounds.map((round) => ((round[name] - round.plain) / ITERATIONS) * 1000));
const perIteration = (ms: number) => ((ms / ITERATIONS) * 1000).toFixed(1);
console.log(
  "## Loop overhead (1,000 iterations, ScriptedClient, no-op tools; medians of",
  repeats,
  "rounds)\n",
);
console.log("| loop | total ms | µs / iteration | ratio to plain | µs / iteration over plain |");
console.log("| --- | ---: | ---: | ---: | ---: |");
const rows: [LoopName, string][] = [
  ["plain", "plain async loop"],
  ["bare", "bare XState machine of the same shape (floor)"],
  ["statechart", "statechart (WorkflowRunner)"],
];
for (const [name, label] of rows) {
  const total = totalOf(name);
  const cells = name === "plain" ? "1.00× | —" : `${ratioOf(name).toFixed(2)}× | ${extraOf(name).toFixed(1)}`;
  console.log(`| ${label} | ${total.toFixed(1)} | ${perIteration(total)} | ${cells} |`);
}
const emptyTotal = totalOf("empty");
console.log(
  `| XState alone: the phase states and workers doing nothing | ${emptyTotal.toFixed(1)} | ${perIteration(emptyTotal)} | — | — |`,
);
console.log(
  `\nThe 1.5× target leaves the statechart ${perIteration(totalOf("plain") / 2)} µs / iteration over the plain loop; XState alone takes ${perIteration(emptyTotal)} µs / iteration.`,
);
console.log(
  `\nratio statechart / plain (median of the rounds' ratios): **${ratioOf("statechart").toFixed(2)}×**; statechart cost over plain (median of the rounds' differences): **${extraOf("statechart").toFixed(1)} µs / iteration**; the bare machine alone: **${ratioOf("bare").toFixed(2)}×**, **${extraOf("bare").toFixed(1)} µs / iteration**\n`,
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
