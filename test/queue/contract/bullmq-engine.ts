/**
 * The contract's engine for BullMQ on either store: each case on a queue name of its own; a
 * producer is a second queue object on the same name, and a crash is the queue closed without
 * settling its leases (its lock renewals stop), its runs found by the next worker's stall check.
 */
import { randomUUID } from "node:crypto";
import type { BullmqEngineOptions, BullmqRunQueue } from "../../../src/queue/index.ts";
import type { ContractEngine, ContractQueue } from "./run-queue-contract.ts";

/** Short enough that a crashed worker's run is found within a few seconds. */
const LOCK_MS = 1_000;

/** The engine that opens queues with `openNamed` (a store's `create…Queue` with its connection). */
export function bullmqContractEngine(
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
