/**
 * Runs on a pool of endpoints: the runner sends each LLM call its run id and rank
 * (`SendOptions`), a worker given `endpoints` infers through them with the queued run's rank
 * (`rankOfQueuePriority`: higher queue priority → lower rank) and ends each run there; and end to end, an embedded
 * queue's worker over an `EndpointPool` of two real HTTP servers keeps each run on one server and
 * within the slots.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { EndpointPool } from "../../src/clients/index.ts";
import { defineTool } from "../../src/core/tools.ts";
import type { LLMClient, LLMResponse, SendOptions } from "../../src/core/types.ts";
import { defineWorkflow } from "../../src/core/workflow.ts";
import { WorkflowRunner } from "../../src/loop/runner.ts";
import { createEmbeddedQueue, defineRegistry, type RunQueue, startWorker } from "../../src/queue/index.ts";
import { ScriptedClient, toolCall } from "../../src/testing/index.ts";
import { type PoolServer, startPoolServer } from "../clients/helpers/pool-server.ts";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const contextManager = { maybeCompact: <T>(messages: T) => messages };

/** Two tool calls of `step`, then `finish` with the user message. */
function stepsWorkflow() {
  const step = defineTool({
    name: "step",
    description: "One step",
    parameters: z.object({ n: z.number() }),
    execute: ({ n }) => `step ${n} done`,
  });
  const finish = defineTool({
    name: "finish",
    description: "Finish",
    parameters: z.object({ text: z.string() }),
    execute: ({ text }) => `finished ${text}`,
  });
  return defineWorkflow({
    name: "steps",
    description: "Two steps, then finish",
    tools: [step, finish],
    terminalTool: "finish",
    systemPrompt: "Work.",
  });
}

/** The model of `stepsWorkflow`, as an answer to the wire history. */
function stepsReply(request: { messages: Record<string, unknown>[] }): Record<string, unknown> {
  const results = request.messages.filter((message) => message.role === "tool").length;
  const user = request.messages.filter((message) => message.role === "user").at(-1);
  const [name, args] = results < 2 ? ["step", { n: results }] : ["finish", { text: String(user?.content) }];
  return {
    role: "assistant",
    content: "",
    tool_calls: [
      { id: `call_${results}`, type: "function", function: { name, arguments: JSON.stringify(args) } },
    ],
  };
}

/** A client that records each call's options and plays `stepsWorkflow`'s model. */
class RecordingClient implements LLMClient {
  readonly apiFormat = "openai" as const;
  readonly options: SendOptions[] = [];
  readonly ended: string[] = [];

  async send(
    messages: Record<string, unknown>[],
    _tools?: unknown,
    options: SendOptions = {},
  ): Promise<LLMResponse> {
    const { signal: _signal, onUsage: _onUsage, ...rest } = options;
    this.options.push(rest);
    const reply = stepsReply({ messages }) as {
      tool_calls: { function: { name: string; arguments: string } }[];
    };
    const call = reply.tool_calls[0] as { function: { name: string; arguments: string } };
    return toolCall(call.function.name, JSON.parse(call.function.arguments));
  }

  async *sendStream(): AsyncIterable<never> {
    yield* [];
    throw new Error("not streamed in these tests");
  }

  async getContextLength(): Promise<number | null> {
    return null;
  }

  endRun(runId: string): void {
    this.ended.push(runId);
  }
}

async function embeddedQueue(): Promise<RunQueue> {
  const dir = mkdtempSync(join(tmpdir(), "forge-pool-queue-"));
  const queue = await createEmbeddedQueue({ dir });
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  cleanups.push(() => queue.close());
  return queue;
}

describe("the run's id and rank reach the client", () => {
  it("sends every call of a run its runId and rank", async () => {
    const client = new RecordingClient();
    const runner = new WorkflowRunner({ client, contextManager });
    expect(await runner.run(stepsWorkflow(), "hi", { runId: "run-a", rank: 3 })).toBe("finished hi");
    expect(client.options).toEqual([
      { runId: "run-a", rank: 3 },
      { runId: "run-a", rank: 3 },
      { runId: "run-a", rank: 3 },
    ]);
  });

  it("sends the generated run id when none is given, and no rank", async () => {
    const client = new RecordingClient();
    await new WorkflowRunner({ client, contextManager }).run(stepsWorkflow(), "hi");
    const ids = new Set(client.options.map((options) => options.runId));
    expect(ids.size).toBe(1);
    expect([...ids][0]).toMatch(/\w+/);
    expect(client.options.every((options) => !("rank" in options) && !("priority" in options))).toBe(true);
  });

  it("sends a resumed run's own id (from its snapshot) and the rank given to resume", async () => {
    const first = new RecordingClient();
    const snapshots: unknown[] = [];
    await new WorkflowRunner({ client: first, contextManager }).run(stepsWorkflow(), "hi", {
      runId: "run-r",
      checkpoint: (snapshot, meta) => {
        if (meta.reason === "inference") snapshots.push(JSON.parse(JSON.stringify(snapshot)));
      },
    });
    const second = new RecordingClient();
    const result = await new WorkflowRunner({ client: second, contextManager }).resume(
      stepsWorkflow(),
      // The last one: before the third and last call.
      snapshots.at(-1) as never,
      { rank: 2 },
    );
    expect(result).toBe("finished hi");
    expect(first.options).toHaveLength(3);
    expect(second.options).toEqual([{ runId: "run-r", rank: 2 }]);
  });
});

describe("startWorker({ endpoints })", () => {
  it("infers through the endpoints with the queued run's rank and ends each run there", async () => {
    const queue = await embeddedQueue();
    const endpoints = new RecordingClient();
    // The registry runner's own client must not be used: an empty script fails any call.
    const runner = new WorkflowRunner({ client: new ScriptedClient([]), contextManager });
    await queue.enqueue("steps", "low", { runId: "run-low", priority: 0 });
    await queue.enqueue("steps", "high", { runId: "run-high", priority: 4 });
    const worker = startWorker({
      queue,
      registry: defineRegistry({ workflows: [stepsWorkflow()], runner }),
      endpoints,
      pollMs: 20,
    });
    cleanups.push(() => worker.close());
    expect(await queue.result("run-high")).toBe("finished high");
    expect(await queue.result("run-low")).toBe("finished low");
    // The queue's higher priority is the pool's lower rank (rankOfQueuePriority).
    expect(endpoints.options.filter((options) => options.runId === "run-high")).toEqual(
      Array(3).fill({ runId: "run-high", rank: -4 }),
    );
    expect(endpoints.options.filter((options) => options.runId === "run-low")).toEqual(
      Array(3).fill({ runId: "run-low", rank: 0 }),
    );
    expect(endpoints.ended.sort()).toEqual(["run-high", "run-low"]);
  });

  it("runs a queue's runs over an EndpointPool of two servers: one server per run, within the slots", async () => {
    const servers: PoolServer[] = [];
    for (let index = 0; index < 2; index++) {
      const server = await startPoolServer({ totalSlots: 2, delayMs: 5, reply: stepsReply });
      servers.push(server);
      cleanups.push(() => server.stop());
    }
    const pool = new EndpointPool({ endpoints: servers.map((server) => server.url), logger: () => {} });
    cleanups.push(() => pool.close());
    const queue = await embeddedQueue();
    const runner = new WorkflowRunner({ client: new ScriptedClient([]), contextManager });
    const runIds = Array.from({ length: 8 }, (_, index) => `run-${index}`);
    for (const runId of runIds) await queue.enqueue("steps", runId, { runId });
    const worker = startWorker({
      queue,
      registry: defineRegistry({ workflows: [stepsWorkflow()], runner }),
      endpoints: pool,
      concurrency: 4,
      pollMs: 20,
    });
    cleanups.push(() => worker.close());
    for (const runId of runIds) expect(await queue.result(runId)).toBe(`finished ${runId}`);
    for (const runId of runIds) {
      const counts = servers.map((server) => server.received.filter((label) => label === runId).length);
      expect(counts.sort()).toEqual([0, 3]);
    }
    for (const server of servers) expect(server.maxConcurrent).toBeLessThanOrEqual(2);
    expect(servers.every((server) => server.received.length > 0)).toBe(true);
    expect(pool.status().map((endpoint) => endpoint.runs)).toEqual([0, 0]);
  });
});
