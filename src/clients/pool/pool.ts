/**
 * EndpointPool: one `LLMClient` over several llama-server (or Ollama) endpoints. Each endpoint
 * takes at most its slot count of requests at once; callers beyond that wait, lowest rank first
 * and FIFO within a rank (SlotWorker's order, `compareJobs`). A run keeps the
 * endpoint it started on while that endpoint is up, so the server's prompt cache serves the
 * history it already holds. Endpoints are health-checked; one that is down takes no calls until
 * it answers again, and a call that meets a dead connection moves to another endpoint.
 */
import type { ApiFormat } from "../../core/messages.ts";
import { assertFiniteRank, resolveRank } from "../../core/rank.ts";
import type { ToolSpec } from "../../core/tools.ts";
import type { LLMClient, LLMResponse, SendOptions, StreamChunk } from "../../core/types.ts";
import { enqueueJob, type SlotJob } from "../../machines/slot-order.ts";
import {
  type EndpointConfig,
  EndpointPoolClosedError,
  EndpointPoolConfigError,
  EndpointsUnavailableError,
  parseEndpoints,
  probeEndpoint,
} from "./endpoint.ts";
import {
  defaultClient,
  type EndpointPoolOptions,
  type EndpointStatus,
  isConnectionError,
  type PoolTimings,
  resolveTimings,
} from "./options.ts";

export {
  type EndpointConfig,
  EndpointPoolClosedError,
  EndpointPoolConfigError,
  EndpointsUnavailableError,
  type PoolEndpointKind,
  type PoolEndpointOptions,
} from "./endpoint.ts";
export type { EndpointPoolOptions, EndpointStatus } from "./options.ts";

interface Endpoint {
  readonly config: EndpointConfig;
  readonly client: LLMClient;
  up: boolean;
  /** 0 until the endpoint was first seen up. */
  slots: number;
  inFlight: number;
  /** Calls waiting for a slot here, in SlotWorker order. */
  queue: SlotJob[];
  error: string | null;
  probing: boolean;
}

/** A run's hold on an endpoint. */
interface Binding {
  readonly endpoint: Endpoint;
  /** Calls of the run waiting or in flight on it. */
  active: number;
  lastUsed: number;
}

interface Waiter {
  readonly job: SlotJob;
  readonly runId: string | undefined;
  resolve: (endpoint: Endpoint) => void;
  reject: (error: unknown) => void;
  /** Where it waits; undefined while no endpoint is up. */
  endpoint: Endpoint | undefined;
  binding: Binding | undefined;
  /** The unavailable deadline, while no endpoint is up. */
  timer: NodeJS.Timeout | undefined;
  detach: () => void;
}

/** A granted slot: the endpoint, and the function that gives the slot back. */
interface Lease {
  endpoint: Endpoint;
  release: () => void;
}

/**
 * An `LLMClient` over a pool of llama-server (or Ollama) endpoints.
 *
 * Per call (`SendOptions`): `runId` keeps a run on one endpoint (the first call of a run goes to
 * the endpoint with the fewest runs per slot), `rank` orders the waiters (lower first, FIFO
 * within a rank, as `SlotWorker`; `priority` is its deprecated alias, and naming both with
 * different values is a `RankConflictError`). The pool starts on the first call (or `start()`): it probes
 * every endpoint, then health-checks them every `healthIntervalMs`.
 *
 * Errors: `EndpointPoolConfigError` at construction (no endpoints, a bad URL, a duplicate, mixed
 * API formats); `EndpointsUnavailableError` (a 503 `BackendError`) when no endpoint was up for
 * `unavailableTimeoutMs`, or a call could not connect to any; `EndpointPoolClosedError` after
 * `close()`. Other errors are the endpoint client's, unchanged.
 * @example
 * const pool = new EndpointPool({ endpoints: ["http://gpu-1:8080", "http://gpu-2:8080"] });
 * const runner = new WorkflowRunner({ client: pool, contextManager });
 * await runner.run(workflow, "Hello", { runId: "order-42", rank: 0 });
 * await pool.close();
 */
export class EndpointPool implements LLMClient {
  readonly apiFormat: ApiFormat;
  readonly #endpoints: Endpoint[];
  readonly #options: PoolTimings;
  readonly #apiKey: string | undefined;
  readonly #logger: (line: string) => void;
  readonly #waiters = new Map<string, Waiter>();
  /** Waiters while no endpoint is up, in SlotWorker order. */
  #homeless: SlotJob[] = [];
  readonly #bindings = new Map<string, Binding>();
  #calls = 0;
  #started: Promise<void> | undefined;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(options: EndpointPoolOptions) {
    const configs = parseEndpoints(options?.endpoints);
    this.#options = resolveTimings(options);
    this.#apiKey = options.clientOptions?.apiKey;
    this.#logger = options.logger ?? ((line) => console.warn(line));
    const create = options.createClient ?? ((config: EndpointConfig) => defaultClient(config, options));
    this.#endpoints = configs.map((config) => ({
      config,
      client: create(config),
      up: false,
      slots: 0,
      inFlight: 0,
      queue: [],
      error: "not checked yet",
      probing: false,
    }));
    const formats = new Set(this.#endpoints.map((endpoint) => endpoint.client.apiFormat));
    if (formats.size > 1) {
      throw new EndpointPoolConfigError(
        `The pool mixes API formats (${[...formats].join(", ")}): one pool sends one wire format; make one pool per kind of server`,
      );
    }
    this.apiFormat = this.#endpoints[0]?.client.apiFormat ?? "openai";
  }

  /**
   * Probe every endpoint once and start the health checks; calls do it on their own. Resolves even
   * when every endpoint is down (calls then wait up to `unavailableTimeoutMs`).
   */
  start(): Promise<void> {
    this.#started ??= this.#probeAll().then(() => {
      if (this.#closed) return;
      this.#timer = setInterval(() => void this.#probeAll(), this.#options.healthIntervalMs);
      this.#timer.unref();
    });
    return this.#started;
  }

  async send(
    messages: Record<string, unknown>[],
    tools?: ToolSpec[],
    options: SendOptions = {},
  ): Promise<LLMResponse> {
    const seq = this.#calls++;
    for (let attempt = 0; ; attempt++) {
      const lease = await this.#acquire(options, seq);
      try {
        return await lease.endpoint.client.send(messages, tools, options);
      } catch (error) {
        if (!this.#failOver(lease.endpoint, error, attempt)) throw error;
      } finally {
        lease.release();
      }
    }
  }

  /** Streams from one endpoint; a call fails over only before its first chunk. */
  async *sendStream(
    messages: Record<string, unknown>[],
    tools?: ToolSpec[],
    options: SendOptions = {},
  ): AsyncIterable<StreamChunk> {
    const seq = this.#calls++;
    for (let attempt = 0; ; attempt++) {
      const lease = await this.#acquire(options, seq);
      let started = false;
      try {
        for await (const chunk of lease.endpoint.client.sendStream(messages, tools, options)) {
          started = true;
          yield chunk;
        }
        return;
      } catch (error) {
        if (started || !this.#failOver(lease.endpoint, error, attempt)) throw error;
      } finally {
        lease.release();
      }
    }
  }

  /**
   * The smallest context length of the endpoints up now (null when none reports one); with none
   * up, waits like a call for one (up to `unavailableTimeoutMs`).
   */
  async getContextLength(): Promise<number | null> {
    await this.start();
    if (!this.#endpoints.some((endpoint) => endpoint.up)) (await this.#acquire({}, this.#calls++)).release();
    const lengths = await Promise.allSettled(
      this.#endpoints.filter((endpoint) => endpoint.up).map((endpoint) => endpoint.client.getContextLength()),
    );
    const known = lengths.flatMap((length) =>
      length.status === "fulfilled" && length.value !== null ? [length.value] : [],
    );
    if (known.length > 0) return Math.min(...known);
    const failure = lengths.find((length) => length.status === "rejected");
    if (failure) throw failure.reason;
    return null;
  }

  /** A run is over: its endpoint is free for other runs' placement at once. */
  endRun(runId: string): void {
    this.#bindings.delete(runId);
  }

  /** Every endpoint as the pool sees it now. */
  status(): EndpointStatus[] {
    const runs = new Map<Endpoint, number>();
    for (const binding of this.#bindings.values()) {
      runs.set(binding.endpoint, (runs.get(binding.endpoint) ?? 0) + 1);
    }
    return this.#endpoints.map((endpoint) => ({
      url: endpoint.config.url,
      kind: endpoint.config.kind,
      up: endpoint.up,
      slots: endpoint.slots > 0 ? endpoint.slots : null,
      inFlight: endpoint.inFlight,
      waiting: endpoint.queue.length,
      runs: runs.get(endpoint) ?? 0,
      error: endpoint.error,
    }));
  }

  /** Stop the health checks; waiting calls reject with `EndpointPoolClosedError`, calls in flight finish. */
  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#timer);
    const waiters = [...this.#waiters.values()];
    this.#waiters.clear();
    this.#homeless = [];
    for (const endpoint of this.#endpoints) endpoint.queue = [];
    for (const waiter of waiters) {
      clearTimeout(waiter.timer);
      waiter.detach();
      waiter.reject(closedError());
    }
  }

  async #acquire(options: SendOptions, seq: number): Promise<Lease> {
    const rank = assertFiniteRank(resolveRank(options, "EndpointPool (SendOptions)") ?? 0);
    if (this.#closed) throw closedError();
    await this.start();
    if (this.#closed) throw closedError();
    const { signal } = options;
    signal?.throwIfAborted();
    const endpoint = await new Promise<Endpoint>((resolve, reject) => {
      const id = `call-${seq}`;
      const onAbort = () => this.#drop(id, signal?.reason);
      const waiter: Waiter = {
        job: { id, rank, seq },
        runId: options.runId,
        resolve,
        reject,
        endpoint: undefined,
        binding: undefined,
        timer: undefined,
        detach: () => signal?.removeEventListener("abort", onAbort),
      };
      this.#waiters.set(id, waiter);
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#place(waiter);
    });
    return { endpoint, release: once(() => this.#release(endpoint, options.runId)) };
  }

  /** Queue a waiter where it belongs: its run's endpoint, the least loaded one, or nowhere yet. */
  #place(waiter: Waiter): void {
    const endpoint = this.#choose(waiter.runId);
    if (endpoint === undefined) {
      waiter.endpoint = undefined;
      this.#homeless = enqueueJob(this.#homeless, waiter.job);
      waiter.timer ??= setTimeout(() => this.#expire(waiter.job.id), this.#options.unavailableTimeoutMs);
      return;
    }
    clearTimeout(waiter.timer);
    waiter.timer = undefined;
    waiter.endpoint = endpoint;
    if (waiter.runId !== undefined) this.#bind(waiter, endpoint);
    endpoint.queue = enqueueJob(endpoint.queue, waiter.job);
    this.#drain(endpoint);
  }

  #bind(waiter: Waiter, endpoint: Endpoint): void {
    const runId = waiter.runId as string;
    let binding = this.#bindings.get(runId);
    if (binding?.endpoint !== endpoint) {
      binding = { endpoint, active: 0, lastUsed: Date.now() };
      this.#bindings.set(runId, binding);
    }
    if (waiter.binding !== binding) {
      if (waiter.binding) waiter.binding.active -= 1;
      binding.active += 1;
      waiter.binding = binding;
    }
  }

  /**
   * The run's endpoint while it is up; else, for a run, the endpoint with the fewest runs per slot
   * (then the fewest calls per slot), and for a call of no run, the fewest calls per slot.
   */
  #choose(runId: string | undefined): Endpoint | undefined {
    if (runId !== undefined) {
      const bound = this.#bindings.get(runId)?.endpoint;
      if (bound?.up) return bound;
    }
    const up = this.#endpoints.filter((endpoint) => endpoint.up && endpoint.slots > 0);
    if (up.length === 0) return undefined;
    const runs = runId === undefined ? undefined : this.#runsPerEndpoint();
    const load = (endpoint: Endpoint) => (endpoint.inFlight + endpoint.queue.length) / endpoint.slots;
    const score = (endpoint: Endpoint) => (runs?.get(endpoint) ?? 0) / endpoint.slots;
    return up.reduce((best, endpoint) => {
      const byRuns = score(endpoint) - score(best);
      return byRuns < 0 || (byRuns === 0 && load(endpoint) < load(best)) ? endpoint : best;
    });
  }

  /** Runs kept per endpoint, forgetting runs idle past `stickyIdleMs`. */
  #runsPerEndpoint(): Map<Endpoint, number> {
    const now = Date.now();
    const runs = new Map<Endpoint, number>();
    for (const [runId, binding] of this.#bindings) {
      if (binding.active === 0 && now - binding.lastUsed > this.#options.stickyIdleMs) {
        this.#bindings.delete(runId);
        continue;
      }
      runs.set(binding.endpoint, (runs.get(binding.endpoint) ?? 0) + 1);
    }
    return runs;
  }

  /** Hand free slots of `endpoint` to its waiters, in order. */
  #drain(endpoint: Endpoint): void {
    while (endpoint.up && endpoint.inFlight < endpoint.slots && endpoint.queue.length > 0) {
      const [job, ...rest] = endpoint.queue as [SlotJob, ...SlotJob[]];
      endpoint.queue = rest;
      const waiter = this.#waiters.get(job.id);
      if (!waiter) continue;
      this.#waiters.delete(job.id);
      waiter.detach();
      endpoint.inFlight += 1;
      waiter.resolve(endpoint);
    }
  }

  #release(endpoint: Endpoint, runId: string | undefined): void {
    endpoint.inFlight -= 1;
    const binding = runId === undefined ? undefined : this.#bindings.get(runId);
    if (binding?.endpoint === endpoint) {
      binding.active = Math.max(0, binding.active - 1);
      binding.lastUsed = Date.now();
    }
    this.#drain(endpoint);
  }

  /** A waiter's signal aborted: take it out of its queue and reject it with the abort reason. */
  #drop(id: string, reason: unknown): void {
    const waiter = this.#waiters.get(id);
    if (!waiter) return;
    this.#remove(waiter);
    waiter.reject(reason);
  }

  /** No endpoint came up within `unavailableTimeoutMs`. */
  #expire(id: string): void {
    const waiter = this.#waiters.get(id);
    if (!waiter || waiter.endpoint !== undefined) return;
    this.#remove(waiter);
    waiter.reject(this.#unavailable());
  }

  #remove(waiter: Waiter): void {
    const { id } = waiter.job;
    this.#waiters.delete(id);
    clearTimeout(waiter.timer);
    waiter.detach();
    if (waiter.binding) {
      waiter.binding.active -= 1;
      waiter.binding.lastUsed = Date.now();
    }
    if (waiter.endpoint) waiter.endpoint.queue = waiter.endpoint.queue.filter((job) => job.id !== id);
    else this.#homeless = this.#homeless.filter((job) => job.id !== id);
  }

  #unavailable(): EndpointsUnavailableError {
    return new EndpointsUnavailableError(
      this.#endpoints.map((endpoint) => ({
        url: endpoint.config.url,
        error: endpoint.error ?? "up, but busy",
      })),
      this.#options.unavailableTimeoutMs,
    );
  }

  /**
   * After a failed call: true when it should move to another endpoint (the endpoint could not be
   * reached or dropped the connection; it is taken out), within two tries per endpoint.
   */
  #failOver(endpoint: Endpoint, error: unknown, attempt: number): boolean {
    if (!isConnectionError(error)) return false;
    this.#markDown(endpoint, (error as Error).message);
    // With every endpoint down, the next try waits for one to come back (up to unavailableTimeoutMs).
    return attempt + 1 < 2 * this.#endpoints.length;
  }

  async #probeAll(): Promise<void> {
    await Promise.all(
      this.#endpoints.filter((endpoint) => !endpoint.probing).map((endpoint) => this.#probe(endpoint)),
    );
  }

  async #probe(endpoint: Endpoint): Promise<void> {
    endpoint.probing = true;
    try {
      const result = await probeEndpoint(endpoint.config, this.#options.healthTimeoutMs, this.#apiKey);
      if (this.#closed) return;
      if (result.up) this.#markUp(endpoint, result.slots);
      else this.#markDown(endpoint, result.error);
    } finally {
      endpoint.probing = false;
    }
  }

  #markUp(endpoint: Endpoint, slots: number): void {
    const wasUp = endpoint.up;
    endpoint.up = true;
    endpoint.slots = slots;
    endpoint.error = null;
    if (!wasUp) {
      this.#logger(`forge-guardrails: endpoint ${endpoint.config.url} is up (${slots} slots)`);
      // Calls that had nowhere to go are placed again, in order.
      const homeless = this.#homeless;
      this.#homeless = [];
      for (const job of homeless) {
        const waiter = this.#waiters.get(job.id);
        if (waiter) this.#place(waiter);
      }
    }
    this.#drain(endpoint);
  }

  #markDown(endpoint: Endpoint, error: string): void {
    endpoint.error = error;
    if (!endpoint.up) return;
    endpoint.up = false;
    const upCount = this.#endpoints.filter((candidate) => candidate.up).length;
    this.#logger(
      `forge-guardrails: endpoint ${endpoint.config.url} is down (${error}); ${upCount} of ${this.#endpoints.length} up`,
    );
    // Its runs are placed afresh on their next call; its waiters now, in order.
    for (const [runId, binding] of this.#bindings) {
      if (binding.endpoint === endpoint) this.#bindings.delete(runId);
    }
    const queued = endpoint.queue;
    endpoint.queue = [];
    for (const job of queued) {
      const waiter = this.#waiters.get(job.id);
      if (!waiter) continue;
      waiter.binding = undefined;
      this.#place(waiter);
    }
  }
}

function closedError(): EndpointPoolClosedError {
  return new EndpointPoolClosedError("The endpoint pool was closed; create a new pool to send more calls");
}

function once(action: () => void): () => void {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    action();
  };
}
