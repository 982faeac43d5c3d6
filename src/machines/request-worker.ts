/**
 * A long-lived invoked actor that performs one async request at a time for its parent.
 *
 * The workflow machine invokes one worker for LLM calls and one for tool batches for the whole
 * run, instead of a fresh promise actor per iteration: creating, starting and stopping an actor
 * is most of XState's cost per iteration. The parent sends `{ type: "request", request }`; the
 * worker answers with `<name>.done` (`output`) or `<name>.error` (`error`).
 *
 * The request in flight is part of the worker's snapshot, so a persisted workflow snapshot taken
 * while a request was running restarts that request when it is restored, as a promise actor
 * would. Stopping the worker (the workflow reaching a final state, e.g. on cancel) aborts the
 * request's signal. An `abort` from the parent aborts the request's signal too, but its answer
 * still comes (the workflow waits for tools in flight when a run is cancelled).
 */
import type { ActorLogic, ActorRef, AnyActorRef, Snapshot } from "xstate";

/** The request in flight and its sequence number (answers to older requests are dropped). */
export interface PendingRequest<TRequest> {
  seq: number;
  request: TRequest;
}

/** A worker's snapshot: the usual actor status plus the request in flight. */
export type RequestWorkerSnapshot<TRequest> = Snapshot<undefined> & {
  seq: number;
  pending: PendingRequest<TRequest> | null;
};

/**
 * Events a worker accepts: a request from its parent, or `abort`: abort the request in flight's
 * signal and still answer it (with whatever the handler settles with).
 */
export type RequestWorkerEvent<TRequest> =
  | { type: "request"; request: TRequest }
  | { type: "abort" }
  | { type: "xstate.stop" };

/** What a worker sends its parent. */
export type RequestWorkerAnswer<TName extends string, TOutput> =
  | { type: `${TName}.done`; output: TOutput }
  | { type: `${TName}.error`; error: unknown };

/**
 * The work itself: resolve with the output, reject with the error; honour the signal. `parent` is
 * the actor the worker answers (the workflow actor), for handlers that look up per-run dependencies.
 */
export type RequestHandler<TRequest, TOutput> = (
  request: TRequest,
  signal: AbortSignal,
  parent: AnyActorRef | undefined,
) => Promise<TOutput>;

/** Worker actor logic, as `setup({ actors })` takes it. */
export type RequestWorkerLogic<TRequest> = ActorLogic<
  RequestWorkerSnapshot<TRequest>,
  RequestWorkerEvent<TRequest>,
  unknown
>;

type WorkerRef<TRequest> = ActorRef<RequestWorkerSnapshot<TRequest>, RequestWorkerEvent<TRequest>>;

/**
 * Per worker actor: the abort controller its requests share (replaced only once it has aborted),
 * and the pending request objects that have settled. A settled request stays in the in-memory
 * snapshot until the next request replaces it, which saves an event per request; only the persisted
 * snapshot needs to know, and `getPersistedSnapshot` leaves settled requests out of it.
 */
const controllers = new WeakMap<AnyActorRef, AbortController>();
const settled = new WeakSet<object>();
/** Pending requests aborted by `abort`, whose answers are still delivered. */
const answeredWhenAborted = new WeakSet<object>();

function controllerFor(self: AnyActorRef): AbortController {
  let controller = controllers.get(self);
  if (controller === undefined || controller.signal.aborted) {
    controller = new AbortController();
    controllers.set(self, controller);
  }
  return controller;
}

function abortWorker(self: AnyActorRef): void {
  controllers.get(self)?.abort();
  controllers.delete(self);
}

/**
 * Actor logic that runs `handler` for each request its parent sends and answers with
 * `<name>.done` / `<name>.error` events.
 * @example
 * const inference = fromRequests("inference", (request: { messages: Message[] }, signal) =>
 *   client.send(serializeHistory(request.messages, client.apiFormat), tools, { signal }));
 */
export function fromRequests<TName extends string, TRequest, TOutput>(
  name: TName,
  handler: RequestHandler<TRequest, TOutput>,
  options: {
    /**
     * The request in flight as a persisted snapshot keeps it: leave out what the handler can find
     * again from the parent when the snapshot is restored (the inference worker leaves out the
     * history, which the workflow's context holds).
     */
    persistRequest?: (request: TRequest) => TRequest;
    /**
     * The request a restored worker runs again, from the one its snapshot kept and the parent it
     * answers: for a parent whose state moved on while the request was in flight (the tools
     * worker's batch, whose finished calls the workflow's context keeps). Absent: the kept one.
     */
    restoreRequest?: (request: TRequest, parent: AnyActorRef | undefined) => TRequest;
  } = {},
): RequestWorkerLogic<TRequest> {
  const { persistRequest, restoreRequest } = options;
  const doneType = `${name}.done` as const;
  const errorType = `${name}.error` as const;
  // Answers only if this request is still the worker's current one and the worker still runs.
  const settle = (
    self: WorkerRef<TRequest>,
    pending: PendingRequest<TRequest>,
    signal: AbortSignal,
    answer: RequestWorkerAnswer<TName, TOutput>,
  ) => {
    const snapshot = self.getSnapshot();
    if (signal.aborted && !answeredWhenAborted.has(pending)) return;
    if (snapshot.status !== "active" || snapshot.pending !== pending) return;
    settled.add(pending);
    self._parent?.send(answer);
  };
  // `restored`: the request comes from a restored snapshot (asked of `restoreRequest` here, where
  // a failure answers like the handler's own, and the parent's snapshot is in place).
  const launch = (self: WorkerRef<TRequest>, pending: PendingRequest<TRequest>, restored = false) => {
    const { signal } = controllerFor(self);
    let started: Promise<TOutput>;
    try {
      const request =
        restored && restoreRequest ? restoreRequest(pending.request, self._parent) : pending.request;
      started = handler(request, signal, self._parent);
    } catch (error) {
      started = Promise.reject(error);
    }
    started.then(
      (output) =>
        settle(self, pending, signal, { type: doneType, output } as RequestWorkerAnswer<TName, TOutput>),
      (error: unknown) =>
        settle(self, pending, signal, { type: errorType, error } as RequestWorkerAnswer<TName, TOutput>),
    );
  };
  return {
    config: handler,
    getInitialSnapshot: () => ({
      status: "active",
      output: undefined,
      error: undefined,
      seq: 0,
      pending: null,
    }),
    start: (snapshot, { self, defer }) => {
      const { pending } = snapshot;
      if (snapshot.status === "active" && pending) defer(() => launch(self, pending, true));
    },
    transition: (snapshot, event, { self, defer }) => {
      if (snapshot.status !== "active") return snapshot;
      switch (event.type) {
        case "request": {
          // A request that replaces one still in flight aborts it; its answer would be dropped anyway.
          if (snapshot.pending !== null && !settled.has(snapshot.pending)) abortWorker(self);
          const pending = { seq: snapshot.seq + 1, request: event.request };
          defer(() => launch(self, pending));
          return { ...snapshot, seq: pending.seq, pending };
        }
        case "abort":
          if (snapshot.pending !== null && !settled.has(snapshot.pending)) {
            answeredWhenAborted.add(snapshot.pending);
            abortWorker(self);
          }
          return snapshot;
        case "xstate.stop":
          // Only a request still in flight needs aborting (an abort builds a DOMException with a
          // stack trace, a real cost for the proxy's one-call actors).
          if (snapshot.pending !== null && !settled.has(snapshot.pending)) abortWorker(self);
          else controllers.delete(self);
          return { ...snapshot, status: "stopped", pending: null };
        default:
          return snapshot;
      }
    },
    getPersistedSnapshot: (snapshot) => {
      const { pending } = snapshot;
      if (pending === null) return snapshot;
      if (settled.has(pending)) return { ...snapshot, pending: null };
      return persistRequest
        ? { ...snapshot, pending: { ...pending, request: persistRequest(pending.request) } }
        : snapshot;
    },
    restoreSnapshot: (snapshot) => snapshot as RequestWorkerSnapshot<TRequest>,
  };
}
