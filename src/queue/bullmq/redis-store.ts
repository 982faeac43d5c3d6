/**
 * The BullMQ run queue's fenced steps on Redis: Lua scripts on BullMQ's key layout (the lock in
 * `<prefix>:<name>:<id>:lock`, the job in the hash `<prefix>:<name>:<id>`, its data in the `data`
 * field), so a write and the lock check are one atomic step.
 */
import type { Job } from "bullmq";
import type { Redis } from "ioredis";
import type { FencedOutcome, JobStore } from "./job-store.ts";

/** A field of the job's hash that `cancel` sets: the lease sees it at its next write or renewal. */
const CANCEL_FIELD = "forgeCancelled";

/**
 * The fenced write: `data` is replaced only while KEYS[1] (the job's lock) holds this lease's token
 * and the run is not cancelled. ARGV[2] empty checks without writing. 1 written, 0 lock lost,
 * -1 cancelled.
 */
const SAVE_SCRIPT = `
if redis.call("GET", KEYS[1]) ~= ARGV[1] then return 0 end
if redis.call("HEXISTS", KEYS[2], "${CANCEL_FIELD}") == 1 then return -1 end
if ARGV[2] ~= "" then redis.call("HSET", KEYS[2], "data", ARGV[2]) end
return 1`;

/** BullMQ's extendLock (extend, leave the stalled set) that also reports a cancelled run (-1). */
const RENEW_SCRIPT = `
if redis.call("GET", KEYS[1]) ~= ARGV[1] then return 0 end
if redis.call("HEXISTS", KEYS[3], "${CANCEL_FIELD}") == 1 then return -1 end
redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
redis.call("SREM", KEYS[2], ARGV[3])
return 1`;

/**
 * Mark a run cancelled unless it finished: -2 no such run, 0 finished, 1 marked. The mark holds
 * when (ARGV[2], ms): `prune` ages a run cancelled while it waited by it.
 */
const CANCEL_SCRIPT = `
if redis.call("EXISTS", KEYS[1]) == 0 then return -2 end
if redis.call("ZSCORE", KEYS[2], ARGV[1]) or redis.call("ZSCORE", KEYS[3], ARGV[1]) then return 0 end
redis.call("HSET", KEYS[1], "${CANCEL_FIELD}", ARGV[2])
return 1`;

export type FencedRedis = Redis & {
  forgeSave(lock: string, job: string, token: string, data: string): Promise<number>;
  forgeRenew(
    lock: string,
    stalled: string,
    job: string,
    token: string,
    ms: number,
    id: string,
  ): Promise<number>;
  forgeCancel(job: string, completed: string, failed: string, id: string, now: number): Promise<number>;
};

/** Teach a connection the fenced scripts. */
export function defineFencedCommands(redis: Redis): FencedRedis {
  redis.defineCommand("forgeSave", { numberOfKeys: 2, lua: SAVE_SCRIPT });
  redis.defineCommand("forgeRenew", { numberOfKeys: 3, lua: RENEW_SCRIPT });
  redis.defineCommand("forgeCancel", { numberOfKeys: 3, lua: CANCEL_SCRIPT });
  return redis as FencedRedis;
}

const OUTCOMES: Record<number, FencedOutcome> = { 1: "ok", 0: "lost", [-1]: "cancelled" };

/** The fenced steps of one BullMQ queue on Redis. */
export class RedisJobStore implements JobStore {
  readonly address: string;
  readonly #redis: FencedRedis;
  readonly #prefix: string;
  readonly #name: string;

  constructor(redis: FencedRedis, address: string, prefix: string, name: string) {
    this.#redis = redis;
    this.address = address;
    this.#prefix = prefix;
    this.#name = name;
  }

  /** A key of this queue as BullMQ lays it out: `<prefix>:<name>:<suffix>`. */
  key(suffix: string): string {
    return `${this.#prefix}:${this.#name}:${suffix}`;
  }

  async save(runId: string, token: string, data: string | undefined): Promise<FencedOutcome> {
    const outcome = await this.#redis.forgeSave(
      this.key(`${runId}:lock`),
      this.key(runId),
      token,
      data ?? "",
    );
    return OUTCOMES[outcome] ?? "lost";
  }

  async renew(runId: string, token: string, lockMs: number): Promise<FencedOutcome> {
    const outcome = await this.#redis.forgeRenew(
      this.key(`${runId}:lock`),
      this.key("stalled"),
      this.key(runId),
      token,
      lockMs,
      runId,
    );
    return OUTCOMES[outcome] ?? "lost";
  }

  async cancel(runId: string): Promise<"missing" | "finished" | "marked"> {
    const outcome = await this.#redis.forgeCancel(
      this.key(runId),
      this.key("completed"),
      this.key("failed"),
      runId,
      Date.now(),
    );
    return outcome === 1 ? "marked" : outcome === 0 ? "finished" : "missing";
  }

  async clearForRetry(runId: string): Promise<void> {
    // BullMQ's fields: "stc" the stall count, "defa" a deferred failure.
    await this.#redis.hdel(this.key(runId), CANCEL_FIELD, "stc", "defa");
  }

  async cancelled(jobs: readonly Job[]): Promise<boolean[]> {
    if (jobs.length === 0) return [];
    const pipeline = this.#redis.pipeline();
    for (const job of jobs) pipeline.hexists(this.key(job.id as string), CANCEL_FIELD);
    const answers = (await pipeline.exec()) ?? [];
    return jobs.map((_, index) => answers[index]?.[1] === 1);
  }

  async cancelTimes(jobs: readonly Job[]): Promise<(number | undefined)[]> {
    if (jobs.length === 0) return [];
    const pipeline = this.#redis.pipeline();
    for (const job of jobs) pipeline.hget(this.key(job.id as string), CANCEL_FIELD);
    const answers = (await pipeline.exec()) ?? [];
    return jobs.map((_, index) => {
      // "1": a mark set before marks held their time.
      const at = Number(answers[index]?.[1] ?? Number.NaN);
      return Number.isFinite(at) && at > 1 ? at : undefined;
    });
  }

  async unprioritisedWaiting(): Promise<number> {
    return this.#redis.llen(this.key("wait"));
  }

  async lockHolder(runId: string): Promise<string | undefined> {
    return (await this.#redis.get(this.key(`${runId}:lock`))) ?? undefined;
  }

  async close(): Promise<void> {
    this.#redis.disconnect();
  }
}
