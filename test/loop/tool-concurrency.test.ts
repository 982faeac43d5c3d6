/**
 * `toolConcurrency`: the calls of one batch run up to the cap at once, results land in batch
 * order, `unsafe` tools run alone, checkpoints stay one per call, cancellation keeps every call
 * answered, and the LLM calls ask for parallel tool calls.
 */

import { describe, expect, it, vi } from "vitest";
import type { InspectionEvent } from "xstate";
import { z } from "zod";
import { WorkflowCancelledError } from "../../src/core/errors.ts";
import { type Message, MessageType } from "../../src/core/messages.ts";
import { defineTool, type ToolCallContext, type ToolEffects } from "../../src/core/tools.ts";
import type { LLMResponse } from "../../src/core/types.ts";
import { defineWorkflow } from "../../src/core/workflow.ts";
import type { CheckpointMeta } from "../../src/loop/checkpoint.ts";
import { toolCall } from "../../src/testing/index.ts";
import { rejectionOf, scriptedRunner } from "../helpers/workflows.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Tools named as given, plus `finish` (terminal). A tool with a duration returns `<name> done`
 * after it; one without waits for `release(name)` (or `fail(name)`). The log says when each
 * started and ended, `most()` how many ran at once at most.
 */
function toolbox(
  durations: Record<string, number | undefined>,
  options: { effects?: Record<string, ToolEffects> } = {},
) {
  const log: string[] = [];
  const contexts: Record<string, ToolCallContext[]> = {};
  const gates = new Map<string, { resolve: (value: unknown) => void; reject: (error: unknown) => void }>();
  let running = 0;
  let most = 0;
  const tools = Object.entries(durations).map(([name, duration]) =>
    defineTool({
      name,
      description: name,
      parameters: z.object({}),
      ...(options.effects?.[name] && { effects: options.effects[name] }),
      execute: (_args, context) => {
        contexts[name] = [...(contexts[name] ?? []), context];
        running += 1;
        most = Math.max(most, running);
        log.push(`start ${name}`);
        const ended = (value: unknown) => {
          running -= 1;
          log.push(`end ${name}`);
          return value;
        };
        return new Promise((resolve, reject) => {
          if (duration !== undefined) setTimeout(() => resolve(ended(`${name} done`)), duration);
          else
            gates.set(name, {
              resolve: (value) => resolve(ended(value)),
              reject: (error) => reject(ended(error)),
            });
        });
      },
    }),
  );
  const finish = defineTool({
    name: "finish",
    description: "Done",
    parameters: z.object({}),
    execute: () => "ok",
  });
  const workflow = defineWorkflow({
    name: "batch",
    description: "Run a batch, then finish",
    tools: [...tools, finish],
    terminalTool: "finish",
    systemPrompt: "Batch.",
  });
  const batch: LLMResponse = Object.keys(durations).map((tool) => ({ tool, args: {} }));
  return {
    workflow,
    log,
    contexts,
    batch,
    most: () => most,
    started: () => log.filter((line) => line.startsWith("start")).map((line) => line.slice(6)),
    release: (name: string, value: unknown = `${name} done`) => gates.get(name)?.resolve(value),
    fail: (name: string, error: unknown) => gates.get(name)?.reject(error),
  };
}

const runnerFor = scriptedRunner;

const results = (messages: readonly Message[]) =>
  messages
    .filter((message) => message.metadata.type === MessageType.TOOL_RESULT)
    .map((message) => [message.toolName, message.content]);

/** The tool name of each call id of the run's first batch. */
function callNames(messages: readonly Message[]): Map<string, string> {
  const batch = messages.find((message) => message.metadata.type === MessageType.TOOL_CALL);
  return new Map((batch?.toolCalls ?? []).map((call) => [call.callId, call.name]));
}

describe("toolConcurrency", () => {
  it("runs three 100 ms tools at once: every one starts before any ends", async () => {
    const box = toolbox({ a: 100, b: 100, c: 100 });
    const { runner } = runnerFor([box.batch, toolCall("finish")], { toolConcurrency: 3 });
    await expect(runner.run(box.workflow, "go")).resolves.toBe("ok");
    expect(box.log.slice(0, 3)).toEqual(["start a", "start b", "start c"]);
    expect(box.log.slice(3).sort()).toEqual(["end a", "end b", "end c"]);
    expect(box.most()).toBe(3);
  });

  it("runs them one at a time by default (1), as before", async () => {
    const box = toolbox({ a: 10, b: 10, c: 10 });
    const { runner, client } = runnerFor([box.batch, toolCall("finish")]);
    await runner.run(box.workflow, "go");
    expect(box.log).toEqual(["start a", "end a", "start b", "end b", "start c", "end c"]);
    expect(client.calls.every((call) => call.parallelToolCalls === undefined)).toBe(true);
  });

  it("appends the results in batch order whatever order the calls finish in", async () => {
    const box = toolbox({ a: 90, b: 50, c: 10 });
    const outcomeEvents: string[] = [];
    const inspect = (event: InspectionEvent) => {
      if (event.type === "@xstate.event" && event.event.type === "tools.outcome")
        outcomeEvents.push(event.event.outcome.callId);
    };
    const { runner, messages } = runnerFor([box.batch, toolCall("finish")], { toolConcurrency: 3, inspect });
    await runner.run(box.workflow, "go", { runId: "fixed" });
    expect(box.log.filter((line) => line.startsWith("end"))).toEqual(["end c", "end b", "end a"]);
    expect(results(messages)).toEqual([
      ["a", "a done"],
      ["b", "b done"],
      ["c", "c done"],
      ["finish", "ok"],
    ]);
    // One tools.outcome per call, as each finished.
    const names = callNames(messages);
    expect(outcomeEvents.map((callId) => names.get(callId))).toEqual(["c", "b", "a"]);
  });

  it("never runs more calls at once than the cap", async () => {
    const box = toolbox({ a: 30, b: 10, c: 20, d: 10, e: 30, f: 10 });
    const { runner } = runnerFor([box.batch, toolCall("finish")], { toolConcurrency: 2 });
    await runner.run(box.workflow, "go");
    expect(box.most()).toBe(2);
    expect(box.started()).toEqual(["a", "b", "c", "d", "e", "f"]);
  });

  it("asks the client for parallel tool calls on every LLM call", async () => {
    const box = toolbox({ a: 1 });
    const { runner, client } = runnerFor([box.batch, toolCall("finish")], { toolConcurrency: 2 });
    await runner.run(box.workflow, "go");
    expect(client.calls.map((call) => call.parallelToolCalls)).toEqual([true, true]);
  });

  it("runs an unsafe tool alone: after the calls before it ended, and before the next starts", async () => {
    const box = toolbox({ a: 20, pay: 20, b: 20, c: 20 }, { effects: { pay: "unsafe" } });
    const { runner, messages } = runnerFor([box.batch, toolCall("finish")], { toolConcurrency: 3 });
    await runner.run(box.workflow, "go");
    expect(box.log.slice(0, 6)).toEqual(["start a", "end a", "start pay", "end pay", "start b", "start c"]);
    expect(results(messages).map(([name]) => name)).toEqual(["a", "pay", "b", "c", "finish"]);
  });

  it("refuses a toolConcurrency that is not an integer ≥ 1", () => {
    for (const toolConcurrency of [0, 1.5, -2, Number.NaN]) {
      expect(() => runnerFor([], { toolConcurrency })).toThrow(/toolConcurrency/);
    }
  });
});

describe("toolConcurrency with checkpoints", () => {
  it("takes call_started before each call runs and call_done after it ends, one checkpoint at a time", async () => {
    const box = toolbox({ a: 60, b: 10, c: 30 });
    const points: CheckpointMeta[] = [];
    const order: string[] = [];
    let writing = 0;
    let mostWriting = 0;
    const snapshots = new Map<number, { context: { outcomes: { callId: string }[] } }>();
    const { runner, messages } = runnerFor([box.batch, toolCall("finish")], { toolConcurrency: 3 });
    const checkpoint = async (snapshot: unknown, meta: CheckpointMeta) => {
      writing += 1;
      mostWriting = Math.max(mostWriting, writing);
      points.push(meta);
      snapshots.set(meta.seq, JSON.parse(JSON.stringify(snapshot)));
      order.push(`${meta.reason} ${meta.callId ?? ""}`.trim());
      await sleep(2);
      writing -= 1;
    };
    const started = box.log;
    await runner.run(box.workflow, "go", { checkpoint });
    const names = callNames(messages);
    const named = order.map((line) => line.replace(/ (\w+)$/, (_, id: string) => ` ${names.get(id) ?? id}`));
    expect(mostWriting).toBe(1);
    expect(points.map((point) => point.seq)).toEqual(points.map((_, index) => index + 1));
    expect(named.slice(0, 5)).toEqual([
      "inference",
      "tools",
      "call_started a",
      "call_started b",
      "call_started c",
    ]);
    // call_done as each call ended: b, c, a.
    expect(named.slice(5, 8)).toEqual(["call_done b", "call_done c", "call_done a"]);
    expect(started.filter((line) => line.startsWith("end"))).toEqual(["end b", "end c", "end a"]);
    // Each call_done snapshot holds that call's outcome.
    for (const point of points.filter((each) => each.reason === "call_done")) {
      const kept = snapshots.get(point.seq)?.context.outcomes.map((outcome) => outcome.callId);
      expect(kept).toContain(point.callId);
    }
  });

  it("resumed mid-batch: a finished call is not run again, the started ones run again (attempt 2), results in batch order", async () => {
    const box = toolbox({ a: 80, b: 5, c: 80 });
    const saved: { snapshot: unknown; meta: CheckpointMeta }[] = [];
    const controller = new AbortController();
    const first = runnerFor([box.batch, toolCall("finish")], { toolConcurrency: 3 });
    await new Promise<void>((died) => {
      first.runner
        .run(box.workflow, "go", {
          signal: controller.signal,
          checkpoint: (snapshot, meta) => {
            saved.push({ snapshot: JSON.parse(JSON.stringify(snapshot)), meta });
            if (meta.reason === "call_done") {
              died();
              return new Promise(() => {}); // the process is gone
            }
          },
        })
        .catch(() => {});
    });
    const last = saved.at(-1) as { snapshot: unknown; meta: CheckpointMeta };
    expect(box.log).toEqual(["start a", "start b", "start c", "end b"]);
    const second = runnerFor([toolCall("finish")], { toolConcurrency: 3 });
    await expect(
      second.runner.resume(box.workflow, last.snapshot as never, { meta: last.meta }),
    ).resolves.toBe("ok");
    controller.abort();
    expect(box.contexts.b).toHaveLength(1);
    expect(box.contexts.a?.map((context) => context.attempt)).toEqual([1, 2]);
    expect(box.contexts.c?.map((context) => context.attempt)).toEqual([1, 2]);
    expect(results(second.messages)).toEqual([
      ["a", "a done"],
      ["b", "b done"],
      ["c", "c done"],
      ["finish", "ok"],
    ]);
  });

  it("resumed during an unsafe call: it is never run again, the others are", async () => {
    const box = toolbox({ a: 5, pay: undefined, c: 5 }, { effects: { pay: "unsafe" } });
    const saved: { snapshot: unknown; meta: CheckpointMeta }[] = [];
    const controller = new AbortController();
    const first = runnerFor([box.batch, toolCall("finish")], { toolConcurrency: 3, cancelGraceMs: 0 });
    first.runner
      .run(box.workflow, "go", {
        signal: controller.signal,
        checkpoint: (snapshot, meta) => {
          saved.push({ snapshot: JSON.parse(JSON.stringify(snapshot)), meta });
        },
      })
      .catch(() => {});
    await vi.waitFor(() => expect(box.started()).toEqual(["a", "pay"]));
    const last = saved.at(-1) as { snapshot: unknown; meta: CheckpointMeta };
    expect(last.meta.reason).toBe("call_started");
    controller.abort(); // the first process dies with pay in flight
    const second = runnerFor([toolCall("finish")], { toolConcurrency: 3 });
    await second.runner.resume(box.workflow, last.snapshot as never, { meta: last.meta });
    expect(box.contexts.pay).toHaveLength(1);
    expect(box.contexts.a).toHaveLength(1);
    expect(box.contexts.c).toHaveLength(1);
    const answers = results(second.messages);
    expect(answers.map(([name]) => name)).toEqual(["a", "pay", "c", "finish"]);
    expect(answers[1]?.[1]).toMatch(/^\[ToolError\] OutcomeUnknown: 'pay' was interrupted/);
  });
});

describe("toolConcurrency when the batch fails", () => {
  it("fails the run at once on a checkpoint that rejects, aborting the calls still running", async () => {
    const box = toolbox({ a: undefined, b: 5 });
    const { runner } = runnerFor([box.batch], { toolConcurrency: 2 });
    const storeDown = new Error("checkpoint store down");
    const error = await rejectionOf(
      runner.run(box.workflow, "go", {
        checkpoint: (_snapshot, meta) => {
          if (meta.reason === "call_done") throw storeDown;
        },
      }),
    );
    expect(error).toBe(storeDown);
    expect(box.started()).toEqual(["a", "b"]);
    expect(box.contexts.a?.[0]?.signal.aborted).toBe(true);
    expect(box.contexts.a?.[0]?.signal.reason).toBe(storeDown);
  });
});

describe("toolConcurrency with cancellation", () => {
  it("aborts every call in flight, starts none after, waits for them, and answers every call in batch order", async () => {
    const box = toolbox({ a: undefined, b: undefined, c: undefined, d: undefined });
    const controller = new AbortController();
    const { runner } = runnerFor([box.batch], { toolConcurrency: 3 });
    const run = rejectionOf(runner.run(box.workflow, "go", { signal: controller.signal }));
    await vi.waitFor(() => expect(box.started()).toEqual(["a", "b", "c"]));
    box.release("b");
    await vi.waitFor(() => expect(box.log).toContain("end b"));
    controller.abort();
    expect(box.contexts.a?.[0]?.signal.aborted).toBe(true);
    expect(box.contexts.c?.[0]?.signal.aborted).toBe(true);
    box.release("a"); // returns within the grace: completed
    box.fail("c", box.contexts.c?.[0]?.signal.reason); // stopped by the abort: cancelled
    const error = await run;
    expect(error).toBeInstanceOf(WorkflowCancelledError);
    expect(box.started()).toEqual(["a", "b", "c"]);
    expect(results(error.messages)).toEqual([
      ["a", "a done"],
      ["b", "b done"],
      ["c", "[Cancelled] The run was cancelled before this tool returned."],
      ["d", "[Cancelled] The run was cancelled before this tool returned."],
    ]);
    expect([...error.completedSteps].sort()).toEqual(["a", "b"]);
  });

  it.each(["before", "after"])(
    "keeps a call that returned %s the abort when the grace ends with others still running",
    async (when) => {
      const box = toolbox({ a: undefined, b: undefined, c: undefined });
      const controller = new AbortController();
      const { runner } = runnerFor([box.batch], { toolConcurrency: 3, cancelGraceMs: 30 });
      const run = rejectionOf(runner.run(box.workflow, "go", { signal: controller.signal }));
      await vi.waitFor(() => expect(box.started()).toEqual(["a", "b", "c"]));
      if (when === "after") controller.abort();
      box.release("c");
      await vi.waitFor(() => expect(box.log).toContain("end c"));
      controller.abort(); // a and b never return
      const error = await run;
      expect(results(error.messages)).toEqual([
        ["a", "[Cancelled] The run was cancelled before this tool returned."],
        ["b", "[Cancelled] The run was cancelled before this tool returned."],
        ["c", "c done"],
      ]);
      expect(error.completedSteps).toEqual(["c"]);
    },
  );
});
