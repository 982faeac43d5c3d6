/**
 * EndpointPool against real HTTP servers on 127.0.0.1 (test/clients/helpers/pool-server.ts): slot
 * caps from /props, waiters in rank then FIFO order (`priority` read as its deprecated alias), a run kept on one endpoint, an endpoint
 * going down and coming back on its port, calls failing over, and the typed errors.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  EndpointPool,
  EndpointPoolClosedError,
  EndpointPoolConfigError,
  type EndpointPoolOptions,
  EndpointsUnavailableError,
} from "../../src/clients/index.ts";
import { RankConflictError } from "../../src/core/errors.ts";
import { ChunkType, type LLMClient, type StreamChunk, type TextResponse } from "../../src/core/types.ts";
import { type PoolServer, type PoolServerOptions, startPoolServer } from "./helpers/pool-server.ts";
import { fixture, json, ReplayServer, raw } from "./helpers/replay-server.ts";

const servers: PoolServer[] = [];
const pools: EndpointPool[] = [];

afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.close()));
  await Promise.all(servers.splice(0).map((server) => server.stop()));
});

async function server(options: PoolServerOptions = {}): Promise<PoolServer> {
  const started = await startPoolServer(options);
  servers.push(started);
  return started;
}

function pool(endpoints: EndpointPoolOptions["endpoints"], options: Partial<EndpointPoolOptions> = {}) {
  const created = new EndpointPool({
    endpoints,
    healthIntervalMs: 50,
    healthTimeoutMs: 2_000,
    logger: () => {},
    ...options,
  });
  pools.push(created);
  return created;
}

/** One call labelled `label` (the server records it). */
function call(
  target: LLMClient,
  label: string,
  options: { runId?: string; rank?: number; priority?: number; signal?: AbortSignal } = {},
) {
  return target.send([{ role: "user", content: label }], undefined, options) as Promise<TextResponse>;
}

const waitUntil = (condition: () => boolean) =>
  vi.waitFor(
    () => {
      if (!condition()) throw new Error("not yet");
    },
    { timeout: 10_000, interval: 5 },
  );

describe("EndpointPool: slots", () => {
  it("never sends an endpoint more calls at once than its total_slots, and queues the rest", async () => {
    const a = await server({ totalSlots: 2, hold: true });
    const b = await server({ totalSlots: 3, hold: true });
    const target = pool([a.url, b.url]);
    const calls = Array.from({ length: 20 }, (_, index) => call(target, `c${index}`));
    await waitUntil(() => a.held === 2 && b.held === 3);
    expect(target.status().map((endpoint) => [endpoint.slots, endpoint.inFlight])).toEqual([
      [2, 2],
      [3, 3],
    ]);
    expect(target.status().reduce((sum, endpoint) => sum + endpoint.waiting, 0)).toBe(15);
    // Let them go one at a time: each answer frees one slot for one waiter.
    while (a.received.length + b.received.length < 20 || a.held + b.held > 0) {
      await waitUntil(() => a.held + b.held > 0);
      if (a.held > 0) a.release();
      if (b.held > 0) b.release();
    }
    const answers = await Promise.all(calls);
    expect(answers.map((answer) => answer.content).sort()).toEqual(
      Array.from({ length: 20 }, (_, index) => `answer to c${index}`).sort(),
    );
    expect(a.maxConcurrent).toBe(2);
    expect(b.maxConcurrent).toBe(3);
    expect(a.received.length + b.received.length).toBe(20);
  });

  it("uses a configured slot count when the server's /props has none", async () => {
    const a = await server({ totalSlots: null, hold: true });
    const target = pool([{ url: a.url, slots: 1 }]);
    const calls = [call(target, "x"), call(target, "y")];
    await waitUntil(() => a.held === 1);
    expect(target.status()[0]).toMatchObject({ slots: 1, inFlight: 1, waiting: 1 });
    a.releaseAll();
    await Promise.all(calls);
    expect(a.maxConcurrent).toBe(1);
  });
});

describe("EndpointPool: order of waiters", () => {
  // `priority` is rank's deprecated alias: given alone, it orders the waiters the same way.
  it.each(["rank", "priority"] as const)(
    "serves waiters by %s (lower first), FIFO within one, as SlotWorker",
    async (field) => {
      const a = await server({ totalSlots: 1, hold: true });
      const target = pool([a.url]);
      const blocker = call(target, "blocker");
      await waitUntil(() => a.held === 1);
      const queued = [
        call(target, "p5-first", { [field]: 5 }),
        call(target, "p1-first", { [field]: 1 }),
        call(target, "p3", { [field]: 3 }),
        call(target, "p1-second", { [field]: 1 }),
        call(target, "p0"),
        call(target, "p5-second", { [field]: 5 }),
      ];
      await waitUntil(() => target.status()[0]?.waiting === 6);
      a.releaseAll();
      await Promise.all([blocker, ...queued]);
      expect(a.received).toEqual(["blocker", "p0", "p1-first", "p1-second", "p3", "p5-first", "p5-second"]);
      expect(a.maxConcurrent).toBe(1);
    },
  );

  it("rejects a call naming rank and priority that differ (RankConflictError), before it waits", async () => {
    const a = await server({ totalSlots: 1 });
    const target = pool([a.url]);
    const conflict = call(target, "conflict", { rank: 0, priority: 3 });
    await expect(conflict).rejects.toBeInstanceOf(RankConflictError);
    await expect(conflict).rejects.toThrow("EndpointPool (SendOptions): rank 0 and priority 3 disagree");
    await expect(call(target, "agreed", { rank: 2, priority: 2 })).resolves.toMatchObject({
      content: "answer to agreed",
    });
    expect(a.received).toEqual(["agreed"]);
  });

  it("drops a waiter whose signal aborts, with the abort reason, and frees nothing it never held", async () => {
    const a = await server({ totalSlots: 1, hold: true });
    const target = pool([a.url]);
    const blocker = call(target, "blocker");
    await waitUntil(() => a.held === 1);
    const controller = new AbortController();
    const aborted = call(target, "aborted", { signal: controller.signal });
    const after = call(target, "after");
    await waitUntil(() => target.status()[0]?.waiting === 2);
    controller.abort(new Error("caller gave up"));
    await expect(aborted).rejects.toThrow("caller gave up");
    expect(target.status()[0]?.waiting).toBe(1);
    a.releaseAll();
    await Promise.all([blocker, after]);
    expect(a.received).toEqual(["blocker", "after"]);
    expect(a.maxConcurrent).toBe(1);
  });
});

describe("EndpointPool: runs keep their endpoint", () => {
  it("places each new run on the endpoint with the fewest runs and keeps all its calls there", async () => {
    const a = await server({ totalSlots: 2 });
    const b = await server({ totalSlots: 2 });
    const target = pool([a.url, b.url]);
    const runs = ["r1", "r2", "r3", "r4"];
    await Promise.all(
      runs.map(async (runId) => {
        for (let index = 0; index < 5; index++) await call(target, runId, { runId });
      }),
    );
    const where = (runId: string) => [a.received.includes(runId), b.received.includes(runId)];
    for (const runId of runs) {
      // On exactly one endpoint, all five calls.
      expect(where(runId).filter(Boolean)).toHaveLength(1);
      expect([...a.received, ...b.received].filter((label) => label === runId)).toHaveLength(5);
    }
    expect(new Set(a.received).size).toBe(2);
    expect(new Set(b.received).size).toBe(2);
  });

  it("waits for its own endpoint's slot rather than move while that endpoint is up", async () => {
    const a = await server({ totalSlots: 1, hold: true });
    const b = await server({ totalSlots: 1 });
    const target = pool([a.url, b.url]);
    const first = call(target, "r1", { runId: "r1" });
    await waitUntil(() => a.held === 1);
    // r2 goes to b (fewest runs); r1's second call waits for a although b is free.
    await call(target, "r2", { runId: "r2" });
    const second = call(target, "r1", { runId: "r1" });
    await waitUntil(() => target.status()[0]?.waiting === 1);
    a.releaseAll();
    await Promise.all([first, second]);
    expect(a.received).toEqual(["r1", "r1"]);
    expect(b.received).toEqual(["r2"]);
  });

  it("endRun frees the run's place: the next run goes where it was", async () => {
    const a = await server({ totalSlots: 1 });
    const b = await server({ totalSlots: 1 });
    const target = pool([a.url, b.url]);
    await call(target, "r1", { runId: "r1" });
    await call(target, "r2", { runId: "r2" });
    expect(target.status().map((endpoint) => endpoint.runs)).toEqual([1, 1]);
    target.endRun("r1");
    await call(target, "r3", { runId: "r3" });
    expect(a.received).toEqual(["r1", "r3"]);
    expect(b.received).toEqual(["r2"]);
  });
});

describe("EndpointPool: endpoints going down and coming back", () => {
  it("moves a run whose endpoint stopped to another endpoint, and uses the first again once it is back", async () => {
    const a = await server({ totalSlots: 1 });
    const b = await server({ totalSlots: 1 });
    const target = pool([a.url, b.url]);
    await call(target, "r1", { runId: "r1" });
    expect(a.received).toEqual(["r1"]);
    await a.stop();
    // The next call meets a refused connection (or the health check saw it first): it is answered by b.
    expect((await call(target, "r1", { runId: "r1" })).content).toBe("answer to r1");
    expect(b.received).toEqual(["r1"]);
    expect(target.status()[0]).toMatchObject({ up: false });
    expect(target.status()[0]?.error).toMatch(/ECONNREFUSED|fetch failed/);
    await a.restart();
    await waitUntil(() => target.status()[0]?.up === true);
    // r1 stays on b; a new run goes to a, which now has no runs.
    await call(target, "r1", { runId: "r1" });
    await call(target, "r2", { runId: "r2" });
    expect(a.received).toEqual(["r1", "r2"]);
    expect(b.received).toEqual(["r1", "r1"]);
  });

  it("fails a call over to another endpoint when the connection drops mid-request", async () => {
    const a = await server({ totalSlots: 1 });
    const b = await server({ totalSlots: 1 });
    const target = pool([a.url, b.url], { healthIntervalMs: 60_000 });
    await call(target, "warm", { runId: "r1" });
    a.dropNext();
    expect((await call(target, "dropped", { runId: "r1" })).content).toBe("answer to dropped");
    expect(a.received).toEqual(["warm", "dropped"]);
    expect(b.received).toEqual(["dropped"]);
    expect(target.status()[0]?.up).toBe(false);
  });

  it("streams through a run's endpoint, and moves a stream that cannot connect to another endpoint", async () => {
    const a = await server({ totalSlots: 1 });
    const b = await server({ totalSlots: 1 });
    const target = pool([a.url, b.url], { healthIntervalMs: 60_000 });
    const stream = async (label: string) => {
      const chunks: StreamChunk[] = [];
      for await (const chunk of target.sendStream([{ role: "user", content: label }], undefined, {
        runId: "r1",
      })) {
        chunks.push(chunk);
      }
      return chunks;
    };
    const first = await stream("one");
    expect(first.at(-1)).toEqual({ type: ChunkType.FINAL, response: { content: "answer to one" } });
    await a.stop();
    const second = await stream("two");
    expect(second.at(-1)).toEqual({ type: ChunkType.FINAL, response: { content: "answer to two" } });
    expect(second.some((chunk) => chunk.type === ChunkType.RETRY)).toBe(false);
    expect(a.received).toEqual(["one"]);
    expect(b.received).toEqual(["two"]);
    expect(target.status().map((endpoint) => [endpoint.up, endpoint.inFlight])).toEqual([
      [false, 0],
      [true, 0],
    ]);
  });

  it("holds calls while every endpoint is down and sends them once one comes back", async () => {
    const a = await server({ totalSlots: 2 });
    const target = pool([a.url]);
    await call(target, "before");
    await a.stop();
    await waitUntil(() => target.status()[0]?.up === false);
    const pending = [call(target, "during-1", { runId: "r1" }), call(target, "during-2")];
    await a.restart();
    const answers = await Promise.all(pending);
    expect(answers.map((answer) => answer.content)).toEqual(["answer to during-1", "answer to during-2"]);
    expect(a.received).toEqual(["before", "during-1", "during-2"]);
  });

  it("takes out an endpoint whose health check does not answer within its deadline", async () => {
    const wedged = await server({ totalSlots: 1, hangHealth: true });
    const b = await server({ totalSlots: 1 });
    const target = pool([wedged.url, b.url], { healthTimeoutMs: 200 });
    expect((await call(target, "x", { runId: "r1" })).content).toBe("answer to x");
    expect(wedged.received).toEqual([]);
    expect(target.status()[0]).toMatchObject({
      up: false,
      error: "no answer to its health check within 200 ms",
    });
  });

  it("rejects with EndpointsUnavailableError, naming each endpoint and why, when none comes back in time", async () => {
    const a = await server({ totalSlots: 1 });
    const b = await server({ totalSlots: null });
    const target = pool([a.url, b.url], { unavailableTimeoutMs: 300 });
    await a.stop();
    const error = await call(target, "late").catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(EndpointsUnavailableError);
    const unavailable = error as EndpointsUnavailableError;
    expect(unavailable.statusCode).toBe(503);
    expect(unavailable.endpoints.map((endpoint) => endpoint.url)).toEqual([a.url, b.url]);
    expect(unavailable.endpoints[0]?.error).toMatch(/ECONNREFUSED|fetch failed/);
    expect(unavailable.endpoints[1]?.error).toContain("set slots for this endpoint");
    expect(unavailable.message).toContain("raise unavailableTimeoutMs");
  });
});

describe("EndpointPool on Ollama endpoints", () => {
  it("checks an Ollama endpoint's /api/version and sends through OllamaClient with the configured slots", async () => {
    // Ollama cannot run here: its documented chat reply, replayed (test/fixtures/ollama).
    const replay = await ReplayServer.start();
    try {
      replay.reply("GET /api/version", json({ version: "0.5.7" }));
      replay.reply(
        "POST /api/chat",
        raw(fixture("ollama/chat-text.json"), { contentType: "application/json" }),
      );
      const target = pool([{ url: replay.url, kind: "ollama", slots: 2 }], {
        healthIntervalMs: 60_000,
        ollamaOptions: { model: "llama3.2", retries: 0 },
      });
      expect(target.apiFormat).toBe("ollama");
      expect(await call(target, "hi", { runId: "r1" })).toEqual({ content: "Hello! How are you today?" });
      expect(target.status()[0]).toMatchObject({ kind: "ollama", up: true, slots: 2, runs: 1 });
      replay.assertDone();
    } finally {
      await replay.close();
    }
  });
});

describe("EndpointPool: configuration and lifecycle", () => {
  it.each([
    [[], "at least one endpoint"],
    [["not a url"], "is not a URL"],
    [["ftp://127.0.0.1:21"], "is not an http(s) URL"],
    [["http://127.0.0.1:8080", "http://127.0.0.1:8080/v1/"], "listed twice"],
    [[{ url: "http://127.0.0.1:11434", kind: "ollama" as const }], "OLLAMA_NUM_PARALLEL"],
    [[{ url: "http://127.0.0.1:8080", slots: 0 }], "slots"],
  ])("refuses endpoints %j with EndpointPoolConfigError (%s)", (endpoints, message) => {
    expect(() => new EndpointPool({ endpoints })).toThrow(EndpointPoolConfigError);
    expect(() => new EndpointPool({ endpoints })).toThrow(message);
  });

  it("refuses a pool that mixes wire formats", () => {
    expect(
      () =>
        new EndpointPool({
          endpoints: ["http://127.0.0.1:8080", { url: "http://127.0.0.1:11434", kind: "ollama", slots: 1 }],
          ollamaOptions: { model: "qwen3" },
        }),
    ).toThrow(/mixes API formats/);
  });

  it("rejects waiting calls and later calls with EndpointPoolClosedError once closed", async () => {
    const a = await server({ totalSlots: 1, hold: true });
    const target = pool([a.url]);
    const held = call(target, "held");
    await waitUntil(() => a.held === 1);
    const waiting = call(target, "waiting");
    await waitUntil(() => target.status()[0]?.waiting === 1);
    await target.close();
    await expect(waiting).rejects.toBeInstanceOf(EndpointPoolClosedError);
    await expect(call(target, "after")).rejects.toBeInstanceOf(EndpointPoolClosedError);
    a.releaseAll();
    await held;
  });

  it("reports the smallest context length of its endpoints, without waiting for a slot", async () => {
    const a = await server({ totalSlots: 1, hold: true });
    const b = await server({ totalSlots: 1, nCtx: 2048, hold: true });
    const target = pool([a.url, b.url]);
    const held = [call(target, "held-1"), call(target, "held-2")];
    await waitUntil(() => a.held === 1 && b.held === 1);
    expect(await target.getContextLength()).toBe(2048);
    a.releaseAll();
    b.releaseAll();
    await Promise.all(held);
  });
});
