/**
 * The BullMQ run queue on PostgreSQL: BullMQ 6's PostgreSQL backend (`createPostgresBackend`) holds
 * the runs in its `job` table (schema `bullmq` by default: one row per job, `data` jsonb, the lease
 * in `lock_token` and `locked_until_ms`), and this engine's fenced steps are single SQL statements
 * on that row: a checkpoint is written only while the row is active under this lease's unexpired
 * token and not cancelled, all under the row's lock. The cancel mark lives in the job's data
 * (`forgeCancelled`): BullMQ's row has no field of its own for it.
 */
// Types only: bullmq and pg are optional peers, loaded by createPostgresQueue (loadPostgres).
import type { Job } from "bullmq";
import { importPeers, type OptionalPeer, OptionalPeerMissingError } from "../../core/optional-peer.ts";
import { urlWithoutPassword } from "../run-queue.ts";
import type { FencedOutcome, JobStore } from "./job-store.ts";
import {
  type BullmqClasses,
  type BullmqEngineOptions,
  BullmqRunQueue,
  RunQueueConnectionError,
} from "./queue.ts";

/** Options of `createPostgresQueue`. */
export interface PostgresQueueOptions extends BullmqEngineOptions {
  /**
   * Where PostgreSQL listens: `{ url: "postgres://user:password@host:5432/db" }` or node-postgres'
   * fields.
   */
  connection:
    | { url: string }
    | { host: string; port: number; user?: string; password?: string; database?: string };
  /** The schema BullMQ's tables live in (default "bullmq"); created, with its tables, on first open. */
  schema?: string;
  /**
   * Connections of this queue's own pool, for checkpoint writes, lock renewals and reads (default
   * 4; BullMQ's classes open their own besides). Raise it toward a worker's concurrency when the
   * database is slow: a write waits for a free connection at most `connectTimeoutMs`.
   */
  poolSize?: number;
}

/** bullmq and pg, the PostgreSQL engine's optional peers. */
const BULLMQ: OptionalPeer = { name: "bullmq", major: 6 };
const PG: OptionalPeer = { name: "pg", major: 8 };
const POSTGRES_PEERS: readonly OptionalPeer[] = [BULLMQ, PG];

/** The PostgreSQL engine's optional peers (bullmq, pg) are not installed; `missing` names which. */
export class PostgresMissingError extends OptionalPeerMissingError {
  constructor(missing: readonly string[] = ["bullmq", "pg"], options?: ErrorOptions) {
    super(POSTGRES_PEERS, missing, "the PostgreSQL run queue needs bullmq and pg", {
      ...options,
      note: "the embedded queue, createEmbeddedQueue, needs neither",
    });
  }
}

/** The few members of a `pg.Pool` this engine uses (no dependency on pg's types in ours). */
interface PgPool {
  query(text: string, values?: unknown[]): Promise<{ rows: Record<string, unknown>[] }>;
  on(event: "error", listener: (error: Error) => void): unknown;
  end(): Promise<void>;
}

interface PostgresModules {
  bullmq: typeof import("bullmq");
  Pool: new (config: object) => PgPool;
}

async function loadPostgres(): Promise<PostgresModules> {
  const [bullmq, pg] = await importPeers(
    [
      { ...BULLMQ, load: () => import("bullmq") },
      { ...PG, load: () => import("pg") },
    ],
    (missing, cause) => new PostgresMissingError(missing, { cause }),
  );
  const Pool = (pg.default ?? pg).Pool as unknown as PostgresModules["Pool"];
  return { bullmq, Pool };
}

/**
 * Open a run queue on PostgreSQL through BullMQ's PostgreSQL backend. Producers and workers open it
 * with the same `name` (and `schema`). The first open creates BullMQ's schema and tables.
 * @example
 * const queue = await createPostgresQueue({ connection: { url: "postgres://127.0.0.1:5432/app" } });
 * await queue.enqueue("weather", "Weather in Paris?", { runId: "order-17", priority: 5 });
 * const worker = startWorker({ queue, registry });
 */
export async function createPostgresQueue(options: PostgresQueueOptions): Promise<BullmqRunQueue> {
  const { bullmq, Pool } = await loadPostgres();
  const schema = options.schema ?? bullmq.DEFAULT_SCHEMA;
  const base =
    "url" in options.connection
      ? { connectionString: options.connection.url }
      : {
          host: options.connection.host,
          port: options.connection.port,
          ...(options.connection.user !== undefined && { user: options.connection.user }),
          ...(options.connection.password !== undefined && { password: options.connection.password }),
          ...(options.connection.database !== undefined && { database: options.connection.database }),
        };
  const address = addressOf(options.connection);
  const timeoutMs = options.connectTimeoutMs ?? 5_000;
  const poolSize = options.poolSize ?? 4;
  if (!Number.isInteger(poolSize) || poolSize < 1) {
    throw new RangeError(`poolSize must be a whole number of connections, 1 or more; got ${poolSize}`);
  }
  const pool = new Pool({ ...base, max: poolSize, connectionTimeoutMillis: timeoutMs });
  pool.on("error", (error) => options.onError?.(error));
  try {
    await pool.query("SELECT 1");
  } catch (error) {
    await pool.end().catch(() => {});
    throw new RunQueueConnectionError(address, (error as Error).message, "PostgreSQL");
  }
  const name = options.name ?? "forge-runs";
  const { Queue, Worker, QueueEvents } = bullmq.withBackend(bullmq.createPostgresBackend);
  const queue = new BullmqRunQueue({
    store: new PostgresJobStore(pool, address, bullmq.quoteSchemaName(schema), name),
    classes: { Queue, Worker, QueueEvents } as unknown as BullmqClasses,
    // Each BullMQ class opens its own pool on this; `migrate` creates the schema on first use.
    connection: { connection: { ...base, schema, migrate: true, connectionTimeoutMillis: timeoutMs } },
    options: { ...options, name },
  });
  try {
    await queue.waitUntilReady();
  } catch (error) {
    await queue.close();
    throw error;
  }
  return queue;
}

/** The connection, for messages: a URL without its password. */
function addressOf(connection: PostgresQueueOptions["connection"]): string {
  return "url" in connection ? urlWithoutPassword(connection.url) : `${connection.host}:${connection.port}`;
}

/** The key of the cancel mark in the job's data. */
const CANCEL_KEY = "forgeCancelled";
/** The key of when it was set (ms): `prune` ages a run cancelled while it waited by it. */
const CANCELLED_AT_KEY = "forgeCancelledAt";

/**
 * The fenced steps of one BullMQ queue on PostgreSQL, each one statement on BullMQ's `job` row
 * (read under `FOR UPDATE`, so a concurrent cancel or take-over waits for it or it for them).
 * `$5` is now in ms on this machine's clock, as BullMQ itself passes it when it sets the lock.
 */
export class PostgresJobStore implements JobStore {
  readonly address: string;
  readonly #pool: PgPool;
  readonly #job: string;
  readonly #name: string;

  /** @internal `schema` already quoted. */
  constructor(pool: PgPool, address: string, schema: string, name: string) {
    this.#pool = pool;
    this.address = address;
    this.#job = `${schema}.job`;
    this.#name = name;
  }

  async save(runId: string, token: string, data: string | undefined): Promise<FencedOutcome> {
    return this.#fenced(
      `UPDATE ${this.#job} AS job SET data = $4::jsonb FROM current
        WHERE job.queue = $1 AND job.id = $2 AND current.held AND NOT current.cancelled AND $4::jsonb IS NOT NULL
        RETURNING 1`,
      [this.#name, runId, token, data ?? null, Date.now()],
    );
  }

  async renew(runId: string, token: string, lockMs: number): Promise<FencedOutcome> {
    return this.#fenced(
      `UPDATE ${this.#job} AS job SET locked_until_ms = $5::bigint + $4::bigint FROM current
        WHERE job.queue = $1 AND job.id = $2 AND current.held AND NOT current.cancelled
        RETURNING 1`,
      [this.#name, runId, token, lockMs, Date.now()],
    );
  }

  async cancel(runId: string): Promise<"missing" | "finished" | "marked"> {
    const { rows } = await this.#pool.query(
      `WITH target AS (
         SELECT state FROM ${this.#job} WHERE queue = $1 AND id = $2 FOR UPDATE
       ), marked AS (
         UPDATE ${this.#job} AS job
            SET data = job.data || jsonb_build_object('${CANCEL_KEY}', true, '${CANCELLED_AT_KEY}', $3::bigint)
           FROM target
          WHERE job.queue = $1 AND job.id = $2 AND target.state NOT IN ('completed', 'failed')
          RETURNING 1
       )
       SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM target) THEN 'missing'
                   WHEN EXISTS (SELECT 1 FROM marked) THEN 'marked'
                   ELSE 'finished' END AS outcome`,
      [this.#name, runId, Date.now()],
    );
    return rows[0]?.outcome as "missing" | "finished" | "marked";
  }

  async clearForRetry(runId: string): Promise<void> {
    // BullMQ's move_to_failed already clears deferred_failure; the stall count it keeps.
    await this.#pool.query(
      `UPDATE ${this.#job} SET data = data - '${CANCEL_KEY}' - '${CANCELLED_AT_KEY}', stalled_count = 0, deferred_failure = NULL
        WHERE queue = $1 AND id = $2`,
      [this.#name, runId],
    );
  }

  async cancelled(jobs: readonly Job[]): Promise<boolean[]> {
    // The mark travels in the data BullMQ already read.
    return jobs.map((job) => (job.data as Record<string, unknown> | undefined)?.[CANCEL_KEY] === true);
  }

  async cancelTimes(jobs: readonly Job[]): Promise<(number | undefined)[]> {
    return jobs.map((job) => {
      const at = (job.data as Record<string, unknown> | undefined)?.[CANCELLED_AT_KEY];
      return typeof at === "number" ? at : undefined;
    });
  }

  async unprioritisedWaiting(): Promise<number> {
    // BullMQ's PostgreSQL backend requeues a stalled job with its priority.
    return 0;
  }

  async lockHolder(runId: string): Promise<string | undefined> {
    const { rows } = await this.#pool.query(
      `SELECT lock_token FROM ${this.#job}
        WHERE queue = $1 AND id = $2 AND state = 'active' AND locked_until_ms >= $3`,
      [this.#name, runId, Date.now()],
    );
    return (rows[0]?.lock_token as string | null | undefined) ?? undefined;
  }

  async close(): Promise<void> {
    await this.#pool.end();
  }

  /**
   * Run `update` (which reads `current`) in one statement with the check: "ok" when it wrote, "lost"
   * when the row is not active under `$3`'s unexpired lock, "cancelled" when it carries the mark.
   */
  async #fenced(update: string, values: unknown[]): Promise<FencedOutcome> {
    const { rows } = await this.#pool.query(
      `WITH current AS (
         SELECT coalesce(lock_token = $3 AND state = 'active' AND locked_until_ms >= $5::bigint, false) AS held,
                jsonb_exists(data, '${CANCEL_KEY}') AS cancelled
           FROM ${this.#job} WHERE queue = $1 AND id = $2 FOR UPDATE
       ), written AS (${update})
       SELECT CASE WHEN NOT coalesce((SELECT held FROM current), false) THEN 'lost'
                   WHEN (SELECT cancelled FROM current) THEN 'cancelled'
                   ELSE 'ok' END AS outcome`,
      values,
    );
    return rows[0]?.outcome as FencedOutcome;
  }
}
