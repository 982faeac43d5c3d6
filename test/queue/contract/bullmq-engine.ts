/**
 * The contract over BullMQ on either store (Redis, PostgreSQL): each case on a queue name of its
 * own; a producer is a second queue object on the same name, and a crash is the queue closed
 * without settling its leases (its lock renewals stop), its runs found by the next worker's stall
 * check.
 */
import { randomUUID } from "node:crypto";
import { afterAll } from "vitest";
import type { BullmqEngineOptions, BullmqRunQueue } from "../../../src/queue/index.ts";
import { beforeAllOrFail } from "../../helpers/before-all-or-fail.ts";
import { type ContractEngine, type ContractQueue, describeRunQueueContract } from "./run-queue-contract.ts";

/** A store's server the test started: where it listens, and how to stop it. */
interface StartedServer {
  readonly url: string;
  stop(): Promise<void>;
}

/**
 * Run the contract over BullMQ on one store: `start` its real server before the cases (stopped
 * after them), `create` a queue on it by URL with the engine's options.
 * @example
 * describeBullmqContract("Redis", startTestRedisServer, (url, options) =>
 *   createBullmqQueue({ connection: { url }, ...options }),
 * );
 */
export function describeBullmqContract(
  storeName: string,
  start: () => Promise<StartedServer>,
  create: (url: string, options: BullmqEngineOptions & { name: string }) => Promise<BullmqRunQueue>,
): void {
  let server: StartedServer | undefined;
  beforeAllOrFail(async () => {
    server = await start();
  }, 60_000);
  afterAll(async () => {
    await server?.stop();
  });
  describeRunQueueContract(
    storeName,
    bullmqContractEngine((options) => {
      if (!server) throw new Error(`${storeName}'s server was not started`);
      return create(server.url, options);
    }),
  );
}

/** Short enough that a crashed worker's run is found within a few seconds. */
const LOCK_MS = 1_000;

/** The engine that opens queues with `openNamed` (a store's `create…Queue` with its connection). */
function bullmqContractEngine(
  openNamed: (options: BullmqEngineOptions & { name: string }) => Promise<BullmqRunQueue>,
): ContractEngine {
  const names = new WeakMap<ContractQueue, string>();
  const openOn = async (name: string): Promise<ContractQueue> => {
    const queue = await openNamed({ name, lockMs: LOCK_MS, stalledIntervalMs: 250 });
    names.set(queue, name);
    return queue;
  };
  const nameOf = (queue: ContractQueue): string => {
    const name = names.get(queue);
    if (name === undefined) throw new Error("not a queue this engine opened");
    return name;
  };
  return {
    open: () => openOn(`contract-${randomUUID()}`),
    openProducer: (queue) => openOn(nameOf(queue)),
    crash: async (queue) => {
      await queue.close();
      return openOn(nameOf(queue));
    },
    lockMs: LOCK_MS,
  };
}
