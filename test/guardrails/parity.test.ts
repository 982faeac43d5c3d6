/**
 * Parity between the two compositions of the decision core: the Guardrails facade (a caller's own
 * loop) and the WorkflowRunner (the statechart). Fed the same responses, they must take the same
 * action at every step, answer with the same nudge text (the runner's appended messages, joined
 * per step) and stop the same way at the same step.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { type Message, MessageRole, MessageType } from "../../src/core/messages.ts";
import { defineTool } from "../../src/core/tools.ts";
import type { LLMResponse, ToolCall } from "../../src/core/types.ts";
import { defineWorkflow } from "../../src/core/workflow.ts";
import { type GuardrailAction, Guardrails } from "../../src/guardrails/guardrails.ts";
import { WorkflowRunner } from "../../src/loop/runner.ts";
import { ScriptedClient, text, toolCall } from "../../src/testing/index.ts";
import { createPassthrough } from "../helpers/workflows.ts";

/**
 * search → fetch (needs search) → answer (terminal); read needs a fetch with the same id; flaky
 * always throws.
 */
function researchWorkflow() {
  const ran = (tool: string) => () => `ran ${tool}`;
  return defineWorkflow({
    name: "research",
    description: "Search, fetch, answer",
    tools: [
      defineTool({
        name: "search",
        description: "Search",
        parameters: z.object({ q: z.string() }),
        execute: ran("search"),
      }),
      defineTool({
        name: "fetch",
        description: "Fetch a document",
        parameters: z.object({ id: z.number() }),
        execute: ran("fetch"),
        prerequisites: ["search"],
      }),
      defineTool({
        name: "read",
        description: "Read a fetched document",
        parameters: z.object({ id: z.number() }),
        execute: ran("read"),
        prerequisites: [{ tool: "fetch", matchArg: "id" }],
      }),
      defineTool({
        name: "flaky",
        description: "Always fails",
        parameters: z.object({}),
        execute: () => {
          throw new TypeError("flaky is down");
        },
      }),
      defineTool({
        name: "answer",
        description: "Answer",
        parameters: z.object({ text: z.string() }),
        execute: ({ text }) => ({ answer: text }),
      }),
    ],
    requiredSteps: ["search", "fetch"],
    terminalTool: "answer",
    systemPrompt: "You research.",
  });
}

const TOOL_NAMES = ["search", "fetch", "read", "flaky", "answer"];
const PREREQUISITES = { fetch: ["search"], read: [{ tool: "fetch", matchArg: "id" }] };

const broken = (tool: string): ToolCall => ({ tool, args: {}, argumentsError: "invalid JSON; received {" });
const one = (response: LLMResponse): ToolCall => (response as ToolCall[])[0] as ToolCall;

/** The alphabet of responses, each built fresh (the loop freezes what it keeps). */
const ALPHABET = {
  prose: () => text("Let me think about it."),
  rescued: () => text('{"tool": "search", "args": {"q": "forge"}}'),
  unknownText: () => text('{"tool": "nope", "args": {}}'),
  empty: () => [],
  unknown: () => toolCall("nope"),
  mixedUnknown: () => [one(toolCall("search", { q: "x" })), one(toolCall("nope"))],
  malformed: () => [broken("fetch")],
  mixedMalformed: () => [one(toolCall("search", { q: "x" })), broken("fetch")],
  search: () => toolCall("search", { q: "forge" }),
  fetch1: () => toolCall("fetch", { id: 1 }),
  read1: () => toolCall("read", { id: 1 }),
  read2: () => toolCall("read", { id: 2 }),
  answer: () => toolCall("answer", { text: "done" }),
  searchAnswer: () => [one(toolCall("search", { q: "x" })), one(toolCall("answer", { text: "early" }))],
  answerFetch: () => [one(toolCall("answer", { text: "early" })), one(toolCall("fetch", { id: 1 }))],
  answerRead: () => [one(toolCall("answer", { text: "early" })), one(toolCall("read", { id: 1 }))],
  flaky: () => toolCall("flaky"),
  searchFlaky: () => [one(toolCall("search", { q: "x" })), one(toolCall("flaky"))],
  flakyAnswer: () => [one(toolCall("flaky")), one(toolCall("answer", { text: "anyway" }))],
  searchFetch: () => [one(toolCall("search", { q: "x" })), one(toolCall("fetch", { id: 1 }))],
} satisfies Record<string, () => LLMResponse>;
type Letter = keyof typeof ALPHABET;

interface Limits {
  maxRetries: number;
  maxToolErrors: number;
  maxPrematureAttempts: number;
  maxPrereqViolations: number;
  rescueEnabled: boolean;
  earlyCalls: "reject" | "hold";
}
const DEFAULTS: Limits = {
  maxRetries: 3,
  maxToolErrors: 2,
  maxPrematureAttempts: 3,
  maxPrereqViolations: 2,
  rescueEnabled: true,
  earlyCalls: "reject",
};

/** One step as either side saw it: the action, and the nudge text that answered it. */
interface Step {
  action: GuardrailAction;
  nudge?: string;
}
/** How a run ended: done, a typed failure by error name, or the script ran out. */
interface Outcome {
  steps: Step[];
  end: string;
}

const FATAL_ERRORS: [string, string][] = [
  ["Retries exhausted", "ToolCallError"],
  ["Step enforcement exhausted", "StepEnforcementError"],
  ["Prerequisites violated", "PrerequisiteError"],
  ["Tool errors exhausted", "ToolExecutionError"],
];

function viaFacade(letters: readonly Letter[], limits: Limits): Outcome {
  const rails = new Guardrails({
    toolNames: TOOL_NAMES,
    terminalTool: "answer",
    requiredSteps: ["search", "fetch"],
    toolPrerequisites: PREREQUISITES,
    tools: Object.values(researchWorkflow().tools).map((tool) => tool.spec),
    ...limits,
  });
  const steps: Step[] = [];
  for (const letter of letters) {
    const result = rails.check(ALPHABET[letter]());
    steps.push({ action: result.action, ...(result.nudge && { nudge: result.nudge.content }) });
    if (result.action === "fatal") {
      const match = FATAL_ERRORS.find(([prefix]) => result.reason?.startsWith(prefix));
      return { steps, end: match?.[1] ?? `unmapped reason: ${result.reason}` };
    }
    if (result.action === "execute") {
      const calls = result.toolCalls ?? [];
      const failed = calls.find((call) => call.tool === "flaky");
      if (failed === undefined) {
        const done = rails.record(
          calls.map((call) => call.tool),
          calls.map((call) => call.args),
        );
        if (done) return { steps, end: "done" };
        continue;
      }
      // A batch with a failing call: record() is for clean batches (it ends every streak), so the
      // successes go to the enforcer and the batch counts one tool error, as the loop does.
      for (const call of calls) if (call !== failed) rails.enforcer.record(call.tool, call.args);
      const fatal = rails.recordToolError(failed.tool, new TypeError("flaky is down"));
      if (fatal) {
        steps[steps.length - 1] = { action: "fatal" };
        return { steps, end: "ToolExecutionError" };
      }
      const terminal = calls.some((call) => rails.terminalTools.includes(call.tool));
      if (terminal && rails.enforcer.isSatisfied()) return { steps, end: "done" };
    }
  }
  return { steps, end: "ScriptedClientError" };
}

async function viaRunner(letters: readonly Letter[], limits: Limits): Promise<Outcome> {
  const messages: Message[] = [];
  const client = new ScriptedClient(letters.map((letter) => ALPHABET[letter]()));
  const runner = new WorkflowRunner({
    client,
    contextManager: createPassthrough(),
    onMessage: (message) => messages.push(message),
    maxIterations: letters.length + 1,
    maxRetriesPerStep: limits.maxRetries,
    maxToolErrors: limits.maxToolErrors,
    maxPrematureAttempts: limits.maxPrematureAttempts,
    maxPrereqViolations: limits.maxPrereqViolations,
    rescueEnabled: limits.rescueEnabled,
    earlyCalls: limits.earlyCalls,
  });
  let end: string;
  try {
    await runner.run(researchWorkflow(), "Research forge.");
    end = "done";
  } catch (error) {
    end = (error as Error).name;
  }
  const calls = client.calls.length;
  const steps: Step[] = [];
  for (let index = 0; index < Math.min(calls, letters.length); index += 1) {
    steps.push(stepOf(messages.filter((message) => message.metadata.stepIndex === index)));
  }
  // The step whose decision ended the run in failure is fatal, whatever it still appended.
  const last = steps.at(-1);
  if (last && end !== "done" && end !== "ScriptedClientError") steps[steps.length - 1] = { action: "fatal" };
  return { steps, end };
}

/** Read the runner's decision for one step back from the messages it appended. */
function stepOf(messages: readonly Message[]): Step {
  const retry = messages.find(
    (message) => message.role === MessageRole.USER && message.metadata.type === MessageType.RETRY_NUDGE,
  );
  if (retry) return { action: "retry", nudge: retry.content };
  const replies = messages.filter((message) => message.role === MessageRole.TOOL);
  const joined = replies.map((message) => message.content).join("\n");
  const types = new Set(replies.map((message) => message.metadata.type));
  // A batch that ran with early calls held back: their notes beside real results.
  const held = (message: Message) =>
    message.metadata.type === MessageType.STEP_NUDGE ||
    message.metadata.type === MessageType.PREREQUISITE_NUDGE;
  if (types.has(MessageType.TOOL_RESULT) && replies.some(held)) {
    const notes = replies.filter(held);
    return { action: "execute", nudge: notes.map((message) => message.content).join("\n") };
  }
  if (types.has(MessageType.RETRY_NUDGE)) return { action: "tool_error", nudge: joined };
  if (types.has(MessageType.STEP_NUDGE) || types.has(MessageType.PREREQUISITE_NUDGE))
    return { action: "step_blocked", nudge: joined };
  // A rejected malformed batch (a failing tool's result is "[ToolError] TypeError: …").
  const rejected = /^\[ToolError\] (ToolArgumentError: the arguments of|\[NotRun\])/;
  if (replies.some((message) => rejected.test(message.content)))
    return { action: "tool_error", nudge: joined };
  if (replies.length > 0) return { action: "execute" };
  return { action: "fatal" };
}

describe("Guardrails facade and WorkflowRunner take the same decisions", () => {
  it("a scripted run through every non-fatal path: same actions, same nudge text, both done", async () => {
    const letters: Letter[] = [
      "prose",
      "unknown",
      "answer",
      "fetch1",
      "malformed",
      "mixedUnknown",
      "empty",
      "rescued",
      "searchAnswer",
      "fetch1",
      "read2",
      "read1",
      "answer",
    ];
    const facade = viaFacade(letters, DEFAULTS);
    const runner = await viaRunner(letters, DEFAULTS);
    expect(facade.steps.map((step) => step.action)).toEqual([
      "retry",
      "tool_error",
      "step_blocked",
      "step_blocked",
      "tool_error",
      "tool_error",
      "retry",
      "execute",
      "step_blocked",
      "execute",
      "step_blocked",
      "execute",
      "execute",
    ]);
    expect(runner).toEqual(facade);
    expect(facade.end).toBe("done");
    // The texts the model sees are the documented ones.
    expect(facade.steps[0]?.nudge).toContain("not a valid tool call");
    expect(facade.steps[2]?.nudge).toContain("cannot call answer yet");
    expect(facade.steps[3]?.nudge).toMatch(/^\[PrereqError\] You cannot call fetch yet: call search first/);
    expect(facade.steps[4]?.nudge).toContain("ToolArgumentError");
    // The rescued search was a clean batch: the premature streak starts over at tier 1.
    expect(facade.steps[8]?.nudge).toContain("These required steps are not done: fetch.");
    expect(facade.steps[10]?.nudge).toContain("call fetch (with id=2) first");
  });

  it("earlyCalls hold: the batch's step runs, its early calls are held back, on both sides", async () => {
    const hold = { ...DEFAULTS, earlyCalls: "hold" as const, maxPrematureAttempts: 1 };
    // answerRead: every call is early and nothing the batch runs gives what they wait for, so it is
    // rejected as premature; searchFetch runs search and holds fetch (its prerequisite); answerFetch
    // runs fetch and holds answer; then answer finishes.
    const letters: Letter[] = ["answerRead", "searchFetch", "answerFetch", "answer"];
    const facade = viaFacade(letters, hold);
    expect(facade.steps.map((step) => step.action)).toEqual([
      "step_blocked",
      "execute",
      "execute",
      "execute",
    ]);
    expect(facade.end).toBe("done");
    expect(facade.steps[0]?.nudge).toContain("cannot call answer yet");
    expect(facade.steps[1]?.nudge).toBe(
      "[PrereqError] Held back: fetch was not run. It needs the result of search, which you called in the same answer. That runs now and its result follows. Then call fetch again, with values taken from that result.",
    );
    expect(facade.steps[2]?.nudge).toBe(
      "[StepEnforcementError] Held back: answer was not run. You called it in the same answer as fetch, before their results existed. Those run now and their results follow. Then call answer again, with values taken from those results.",
    );
    expect(await viaRunner(letters, hold)).toEqual(facade);
    // Rejected instead, the same answers run out the premature budget of 1.
    const rejecting = viaFacade(letters, { ...hold, earlyCalls: "reject" });
    expect(rejecting.steps.map((step) => step.action)).toEqual(["step_blocked", "step_blocked", "fatal"]);
    expect(rejecting.end).toBe("StepEnforcementError");
    expect(await viaRunner(letters, { ...hold, earlyCalls: "reject" })).toEqual(rejecting);
    // The default rejects such a batch: a premature attempt each time, and a budget of 1 runs out.
    const twice: Letter[] = ["search", "answerFetch", "answerFetch"];
    const rejectingTwice = viaFacade(twice, { ...DEFAULTS, maxPrematureAttempts: 1 });
    expect(rejectingTwice.steps.map((step) => step.action)).toEqual(["execute", "step_blocked", "fatal"]);
    expect(rejectingTwice.end).toBe("StepEnforcementError");
    // Held, the first runs fetch; the second, with no step pending, runs in full and finishes.
    const holding = viaFacade(twice, { ...hold, maxPrematureAttempts: 1 });
    expect(holding).toEqual({
      steps: [
        { action: "execute" },
        { action: "execute", nudge: facade.steps[2]?.nudge },
        { action: "execute" },
      ],
      end: "done",
    });
    expect(await viaRunner(twice, { ...hold, maxPrematureAttempts: 1 })).toEqual(holding);
    expect(await viaRunner(twice, { ...DEFAULTS, maxPrematureAttempts: 1 })).toEqual(rejectingTwice);
  });

  it("a terminal success in a batch with a failing call finishes both, within the budget", async () => {
    const letters: Letter[] = ["search", "fetch1", "flakyAnswer"];
    const facade = viaFacade(letters, DEFAULTS);
    expect(facade).toEqual({ steps: letters.map(() => ({ action: "execute" })), end: "done" });
    expect(await viaRunner(letters, DEFAULTS)).toEqual(facade);
    // With no tool errors to spare, the exhausted budget wins over the terminal success.
    const strict = { ...DEFAULTS, maxToolErrors: 0 };
    expect(viaFacade(letters, strict).end).toBe("ToolExecutionError");
    expect(await viaRunner(letters, strict)).toEqual(viaFacade(letters, strict));
  });

  it.each<[string, Letter[], Partial<Limits>, string]>([
    ["retries", ["prose", "unknown", "empty", "unknownText"], {}, "ToolCallError"],
    ["premature attempts", ["answer", "answer", "answer", "answer"], {}, "StepEnforcementError"],
    ["prerequisite violations", ["fetch1", "searchFetch", "read1"], {}, "PrerequisiteError"],
    ["malformed arguments", ["malformed", "mixedMalformed", "malformed"], {}, "ToolExecutionError"],
    ["tool errors", ["flaky", "searchFlaky", "flaky"], {}, "ToolExecutionError"],
    [
      "tool errors, malformed arguments among them",
      ["flaky", "malformed", "flaky"],
      {},
      "ToolExecutionError",
    ],
    ["retries with a budget of 0", ["search", "prose"], { maxRetries: 0 }, "ToolCallError"],
  ])("exhausted %s: both fail the same way at the same step", async (_, letters, limits, end) => {
    const facade = viaFacade(letters, { ...DEFAULTS, ...limits });
    const runner = await viaRunner(letters, { ...DEFAULTS, ...limits });
    expect(facade.end).toBe(end);
    expect(facade.steps).toHaveLength(letters.length);
    expect(facade.steps.at(-1)?.action).toBe("fatal");
    expect(runner).toEqual(facade);
  });

  it("over random response sequences and budgets (fast-check)", async () => {
    // Progress weighs more than faults, so runs also get to the end (done), not only to a budget.
    const progress: Letter[] = ["search", "rescued", "fetch1", "read1", "answer"];
    const faults = (Object.keys(ALPHABET) as Letter[]).filter((name) => !progress.includes(name));
    const letter = fc.oneof(
      { arbitrary: fc.constantFrom(...progress), weight: 2 },
      { arbitrary: fc.constantFrom(...faults), weight: 1 },
    );
    const ends = new Set<string>();
    const limits = fc.record({
      maxRetries: fc.integer({ min: 0, max: 3 }),
      maxToolErrors: fc.integer({ min: 0, max: 2 }),
      maxPrematureAttempts: fc.integer({ min: 0, max: 3 }),
      maxPrereqViolations: fc.integer({ min: 0, max: 2 }),
      rescueEnabled: fc.boolean(),
      earlyCalls: fc.constantFrom<"reject" | "hold">("reject", "hold"),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(letter, { minLength: 1, maxLength: 20 }), limits, async (letters, budget) => {
        const facade = viaFacade(letters, budget);
        const runner = await viaRunner(letters, budget);
        expect(runner).toEqual(facade);
        ends.add(facade.end);
      }),
      { numRuns: 300 },
    );
    // The sequences reached every way a run can end.
    expect([...ends].sort()).toEqual([
      "PrerequisiteError",
      "ScriptedClientError",
      "StepEnforcementError",
      "ToolCallError",
      "ToolExecutionError",
      "done",
    ]);
  });
});
