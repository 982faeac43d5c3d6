/**
 * SlotWorker's statechart: one job at a time on a shared inference slot, a queue ordered by rank
 * (lower first, FIFO within a rank) and preemption of a running job of a higher rank.
 * The context is plain data (job ids, ranks, arrival order); the work itself is the
 * `runJob` actor, which the owner provides (`machine.provide({ actors: { runJob } })`).
 */
import { type ActorRefFrom, assign, fromPromise, type SnapshotFrom, setup } from "xstate";
import { enqueueJob, type SlotJob } from "./slot-order.ts";

export { compareJobs, enqueueJob, type SlotJob } from "./slot-order.ts";

/** The worker's JSON context. */
export interface SlotWorkerContext {
  /** Waiting jobs, sorted: lowest rank first, then by arrival. */
  queue: SlotJob[];
  /** The job whose `runJob` actor is running, if any. */
  current: SlotJob | null;
  /** Jobs submitted so far (the next job's `seq`). */
  submitted: number;
}

/** Events the worker accepts. */
export type SlotWorkerEvent =
  | { type: "job.submit"; id: string; rank: number }
  /** Cancel job `id` (queued: dropped; running: aborted), or the running job when no id is given. */
  | { type: "job.cancel"; id?: string }
  | { type: "worker.stop" };

/** Input of the `runJob` actor: the id the owner keeps the job's non-JSON parts under. */
export interface RunJobInput {
  id: string;
}

/** True when a submitted rank is lower than the running job's, which it then cancels. */
export function preempts(rank: number, current: SlotJob | null): boolean {
  return current !== null && rank < current.rank;
}

/**
 * The worker statechart. `idle` waits for a job; `running` invokes `runJob` for the head of the
 * queue (re-entered on preemption, which stops the running actor and so aborts its signal);
 * `advancing` picks the next job; `stopped` is final.
 * @example
 * const worker = createActor(slotWorkerMachine.provide({ actors: { runJob: fromPromise(run) } })).start();
 * worker.send({ type: "job.submit", id: "job-1", rank: 0 });
 */
export const slotWorkerMachine = setup({
  types: {
    context: {} as SlotWorkerContext,
    events: {} as SlotWorkerEvent,
  },
  actors: {
    runJob: fromPromise<unknown, RunJobInput>(async ({ input }) => {
      throw new Error(`runJob is not provided (job ${input.id}); use slotWorkerMachine.provide()`);
    }),
  },
  guards: {
    hasQueued: ({ context }) => context.queue.length > 0,
    preemptsCurrent: ({ context, event }) =>
      event.type === "job.submit" && preempts(event.rank, context.current),
    targetsCurrent: ({ context, event }) =>
      event.type === "job.cancel" &&
      context.current !== null &&
      (event.id === undefined || event.id === context.current.id),
  },
  actions: {
    enqueue: assign(({ context, event }) => {
      if (event.type !== "job.submit") return {};
      const job = { id: event.id, rank: event.rank, seq: context.submitted };
      return { queue: enqueueJob(context.queue, job), submitted: context.submitted + 1 };
    }),
    takeNext: assign(({ context }) => ({
      current: context.queue[0] ?? null,
      queue: context.queue.slice(1),
    })),
    clearCurrent: assign({ current: null }),
    removeQueued: assign({
      queue: ({ context, event }) =>
        event.type === "job.cancel" && event.id !== undefined
          ? context.queue.filter((job) => job.id !== event.id)
          : context.queue,
    }),
    clearQueue: assign({ queue: [] }),
  },
}).createMachine({
  id: "slotWorker",
  context: { queue: [], current: null, submitted: 0 },
  initial: "idle",
  on: { "worker.stop": { target: ".stopped" } },
  states: {
    idle: {
      on: {
        "job.submit": { target: "running", actions: "enqueue" },
      },
    },
    running: {
      entry: "takeNext",
      exit: "clearCurrent",
      invoke: {
        src: "runJob",
        input: ({ context }) => ({ id: context.current?.id ?? "" }),
        onDone: { target: "advancing" },
        onError: { target: "advancing" },
      },
      on: {
        "job.submit": [
          // Re-entering stops the running job's actor (its signal aborts) and takes the new head.
          { guard: "preemptsCurrent", target: "running", reenter: true, actions: "enqueue" },
          { actions: "enqueue" },
        ],
        "job.cancel": [{ guard: "targetsCurrent", target: "advancing" }, { actions: "removeQueued" }],
      },
    },
    advancing: {
      always: [{ guard: "hasQueued", target: "running" }, { target: "idle" }],
    },
    stopped: { type: "final", entry: "clearQueue" },
  },
});

/** The worker machine type. */
export type SlotWorkerMachine = typeof slotWorkerMachine;
/** A running worker actor. */
export type SlotWorkerActor = ActorRefFrom<SlotWorkerMachine>;
/** A worker actor's snapshot. */
export type SlotWorkerSnapshot = SnapshotFrom<SlotWorkerMachine>;
