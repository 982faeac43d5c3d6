/**
 * Queued runs as a watch source: a worker with `watch: createWorkerWatch({ url })` reports each run
 * it takes as a run of its own, named by the queue's run id (runs under way at once kept apart),
 * and a run resumed from a checkpoint as resumed; all on a real watch server socket.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { ContextManager, SlidingWindowCompact } from "../../../src/context/index.ts";
import { defineTool } from "../../../src/core/tools.ts";
import type { LLMClient, LLMResponse } from "../../../src/core/types.ts";
import { defineWorkflow } from "../../../src/core/workflow.ts";
import { WorkflowRunner } from "../../../src/loop/runner.ts";
import { createEmbeddedQueue, defineRegistry, type RunQueue, startWorker } from "../../../src/queue/index.ts";
import { text, toolCall } from "../../../src/testing/index.ts";
import {
  createWorkerWatch,
  type RunningWatchServer,
  startWatchServer,
  type WatchEvent,
  watchRunIdOf,
} from "../../../src/watch/index.ts";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "forge-watch-queue-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function setUp(): Promise<{ queue: RunQueue; watch: RunningWatchServer }> {
  const dir = tempDir();
  const queue = await createEmbeddedQueue({ dir: join(dir, "queue") });
  cleanups.push(() => queue.close());
  const watch = await startWatchServer({ port: 0, dir: join(dir, "runs") });
  cleanups.push(() => watch.close());
  return { queue, watch };
}

/** Look up, then answer: a checkpoint lies between the two steps. */
const workflow = defineWorkflow({
  name: "lookup",
  description: "Look up, then answer",
  tools: [
    defineTool({
      name: "lookup",
      description: "Look up",
      parameters: z.object({ q: z.string() }),
      execute: ({ q }) => `found ${q}`,
    }),
    defineTool({
      name: "answer",
      description: "Answer",
      parameters: z.object({ text: z.string() }),
      execute: ({ text }) => `answered ${text}`,
    }),
  ],
  requiredSteps: ["lookup"],
  terminalTool: "answer",
  systemPrompt: "Look up, then answer.",
});

/** A model that answers each run by its user message, through `answer(user, call number)`. */
function modelBy(
  answer: (user: string, call: number, signal?: AbortSignal) => Promise<LLMResponse>,
): LLMClient {
  const calls = new Map<string, number>();
  const respond = async (messages: Record<string, unknown>[], signal?: AbortSignal) => {
    const user = String(messages.find((message) => message.role === "user")?.content);
    const call = (calls.get(user) ?? 0) + 1;
    calls.set(user, call);
    return answer(user, call, signal);
  };
  return {
    apiFormat: "openai",
    send: (messages, _tools, options) => respond(messages, options?.signal),
    sendStream: () => {
      throw new Error("the worker does not stream here");
    },
    getContextLength: async () => null,
  };
}

async function eventsOf(watch: RunningWatchServer, runId: string): Promise<WatchEvent[]> {
  const response = await fetch(`${watch.url}/runs/${runId}/events.json`);
  expect(response.status).toBe(200);
  return ((await response.json()) as { events: WatchEvent[] }).events;
}

async function finished(watch: RunningWatchServer, runId: string): Promise<WatchEvent[]> {
  for (let tries = 0; tries < 100; tries++) {
    const response = await fetch(`${watch.url}/runs/${runId}/events.json`);
    if (response.ok) {
      const { events } = (await response.json()) as { events: WatchEvent[] };
      if (events.some((event) => event.type === "run.finished")) return events;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`run ${runId} did not finish on the watch server`);
}

describe("a worker watched", () => {
  it("reports two runs under way at once as two runs, each with its own states and outcome", async () => {
    const { queue, watch } = await setUp();
    // Each run's first call waits until both runs made theirs: the two are under way at once.
    let firstCalls = 0;
    let bothStarted: () => void = () => {};
    const overlap = new Promise<void>((resolve) => (bothStarted = resolve));
    const client = modelBy(async (user, call) => {
      if (call === 1) {
        firstCalls += 1;
        if (firstCalls === 2) bothStarted();
        await overlap;
      }
      if (user === "good")
        return call === 1 ? toolCall("lookup", { q: "good" }) : toolCall("answer", { text: "ok" });
      return text("I would rather chat."); // "bad" never calls a tool: its retries run out
    });
    const runner = new WorkflowRunner({
      client,
      contextManager: { maybeCompact: (messages) => messages },
      maxRetriesPerStep: 1,
    });
    const worker = startWorker({
      queue,
      registry: defineRegistry({ workflows: [workflow], runner }),
      concurrency: 2,
      watch: createWorkerWatch({ url: watch.tokenUrl }),
    });
    cleanups.push(() => worker.close());
    await queue.enqueue("lookup", "good", { runId: "run-good" });
    await queue.enqueue("lookup", "bad", { runId: "run-bad" });
    expect(await queue.result("run-good")).toBe("answered ok");
    await expect(queue.result("run-bad")).rejects.toThrow();
    expect(firstCalls).toBe(2);

    const good = await finished(watch, "run-good");
    const bad = await finished(watch, "run-bad");
    expect(good[0]).toMatchObject({ type: "run.started", name: "run-good", source: "queue" });
    expect(good[0]).not.toHaveProperty("resumed");
    expect(good.at(-1)).toMatchObject({ type: "run.finished", outcome: "done", result: "answered ok" });
    expect(bad.at(-1)).toMatchObject({ type: "run.finished", outcome: "failed" });
    // Each run holds its own messages only: no message of one run in the other.
    const users = (events: WatchEvent[]) =>
      events.flatMap((event) =>
        event.type === "message.appended" && event.message.metadata.type === "user_input"
          ? [event.message.content]
          : [],
      );
    expect(users(good)).toEqual(["good"]);
    expect(users(bad)).toEqual(["bad"]);
    const calls = (events: WatchEvent[]) => events.filter((event) => event.type === "llm.called");
    expect(calls(good)).toHaveLength(2);
    expect(calls(bad).every((event) => event.type === "llm.called" && !Array.isArray(event.response))).toBe(
      true,
    );
    const states = (events: WatchEvent[]) =>
      events.flatMap((event) => (event.type === "state.entered" ? [event.state] : []));
    expect(states(good)).toContain("done");
    expect(states(good)).not.toContain("failed");
    expect(states(bad)).toContain("failed");
    expect(states(bad)).not.toContain("done");

    const list = await (await fetch(watch.url)).text();
    expect(list).toContain('data-run="run-good"');
    expect(list).toContain('data-run="run-bad"');
  });

  it("reports a run resumed from a checkpoint as resumed, under its attempt's id", async () => {
    const { queue, watch } = await setUp();
    let hanging: () => void = () => {};
    const hung = new Promise<void>((resolve) => (hanging = resolve));
    // The first worker looks up, then hangs on the answer until it is closed: the run goes back
    // to the queue with the checkpoint taken after the lookup.
    const first = startWorker({
      queue,
      registry: defineRegistry({
        workflows: [workflow],
        runner: new WorkflowRunner({
          client: modelBy(async (_user, call, signal) => {
            if (call === 1) return toolCall("lookup", { q: "x" });
            hanging();
            return new Promise<LLMResponse>((_, reject) =>
              signal?.addEventListener("abort", () => reject(signal.reason), { once: true }),
            );
          }),
          contextManager: { maybeCompact: (messages) => messages },
        }),
      }),
    });
    await queue.enqueue("lookup", "resume me", { runId: "run-resume" });
    await hung;
    await first.close();
    const stored = await queue.get("run-resume");
    expect(stored?.status).toBe("waiting");
    expect(stored?.checkpoint).toBeDefined();

    const second = startWorker({
      queue,
      registry: defineRegistry({
        workflows: [workflow],
        runner: new WorkflowRunner({
          client: modelBy(async () => toolCall("answer", { text: "resumed" })),
          contextManager: { maybeCompact: (messages) => messages },
        }),
      }),
      watch: createWorkerWatch({ url: watch.tokenUrl }),
    });
    cleanups.push(() => second.close());
    expect(await queue.result("run-resume")).toBe("answered resumed");
    const attempt = (await queue.get("run-resume"))?.attempts ?? 0;
    expect(attempt).toBeGreaterThan(0);
    const runId = watchRunIdOf({ runId: "run-resume", attempt });
    const events = await finished(watch, runId);
    expect(events[0]).toMatchObject({
      type: "run.started",
      name: "run-resume",
      source: "queue",
      resumed: true,
    });
    expect(events.at(-1)).toMatchObject({
      type: "run.finished",
      outcome: "done",
      result: "answered resumed",
    });
    // The resumed run's calls are its own: one answer, no lookup.
    expect(events.filter((event) => event.type === "llm.called")).toHaveLength(1);
    const page = await (await fetch(`${watch.url}/runs/${runId}`)).text();
    expect(page).toContain("queue, resumed from a checkpoint");
    expect(await eventsOf(watch, runId)).toEqual(events);
  });

  it("reports each run's compactions with that run alone, the registry's ContextManager shared", async () => {
    const { queue, watch } = await setUp();
    // "long" reads two long pages, so its history outgrows the budget; "short" reads two short ones.
    const reader = defineWorkflow({
      name: "reader",
      description: "Read twice, then answer",
      tools: [
        defineTool({
          name: "read",
          description: "Read a page",
          parameters: z.object({ q: z.string() }),
          execute: ({ q }) => (q === "long" ? "lorem ipsum ".repeat(100) : "short page"),
        }),
        defineTool({
          name: "answer",
          description: "Answer",
          parameters: z.object({ text: z.string() }),
          execute: ({ text }) => `answered ${text}`,
        }),
      ],
      requiredSteps: ["read"],
      terminalTool: "answer",
      systemPrompt: "Read, then answer.",
    });
    let firstCalls = 0;
    let bothStarted: () => void = () => {};
    const overlap = new Promise<void>((resolve) => (bothStarted = resolve));
    const client = modelBy(async (user, call) => {
      if (call === 1) {
        firstCalls += 1;
        if (firstCalls === 2) bothStarted();
        await overlap;
      }
      return call < 3 ? toolCall("read", { q: user }) : toolCall("answer", { text: user });
    });
    const runner = new WorkflowRunner({
      client,
      contextManager: new ContextManager({
        strategy: new SlidingWindowCompact({ keepRecent: 1 }),
        budgetTokens: 400,
      }),
    });
    const worker = startWorker({
      queue,
      registry: defineRegistry({ workflows: [reader], runner }),
      concurrency: 2,
      watch: createWorkerWatch({ url: watch.tokenUrl }),
    });
    cleanups.push(() => worker.close());
    await queue.enqueue("reader", "long", { runId: "run-long" });
    await queue.enqueue("reader", "short", { runId: "run-short" });
    expect(await queue.result("run-long")).toBe("answered long");
    expect(await queue.result("run-short")).toBe("answered short");
    expect(firstCalls).toBe(2);
    const compactions = (events: WatchEvent[]) =>
      events.filter((event) => event.type === "context.compacted");
    const long = compactions(await finished(watch, "run-long"));
    expect(long.length).toBeGreaterThan(0);
    expect(long[0]).toMatchObject({ budgetTokens: 400 });
    expect(compactions(await finished(watch, "run-short"))).toEqual([]);
  });
});
