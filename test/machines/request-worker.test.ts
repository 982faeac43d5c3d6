import { describe, expect, it } from "vitest";
import { assign, createActor, sendTo, setup, toPromise } from "xstate";
import { fromRequests } from "../../src/machines/request-worker.ts";

type Answer = { type: "echo.done"; output: string } | { type: "echo.error"; error: unknown };

/** A parent that sends its worker one request per `go` and records the answers. */
function parentMachine(handler: (request: string, signal: AbortSignal) => Promise<string>) {
  return setup({
    types: {
      context: {} as { answers: string[] },
      events: {} as Answer | { type: "go"; text: string } | { type: "abort" } | { type: "finish" },
    },
    actors: { echo: fromRequests("echo", handler) },
  }).createMachine({
    context: { answers: [] },
    invoke: { id: "echo", src: "echo" },
    initial: "idle",
    states: {
      idle: {
        on: {
          go: {
            target: "waiting",
            actions: sendTo("echo", ({ event }) => ({ type: "request", request: event.text })),
          },
          finish: "done",
        },
      },
      waiting: {
        on: {
          abort: { actions: sendTo("echo", { type: "abort" as const }) },
          finish: "done",
          "echo.done": {
            target: "idle",
            actions: assign({ answers: ({ context, event }) => [...context.answers, event.output] }),
          },
        },
      },
      done: { type: "final" },
    },
  });
}

function workerSnapshot(actor: { getPersistedSnapshot(): unknown }) {
  const persisted = JSON.parse(JSON.stringify(actor.getPersistedSnapshot())) as {
    children: { echo: { snapshot: { pending: unknown } } };
  };
  return persisted.children.echo.snapshot;
}

describe("fromRequests worker", () => {
  it("abort aborts the request's signal and still delivers its answer; stopping drops it", async () => {
    const signals: AbortSignal[] = [];
    const releases: (() => void)[] = [];
    const actor = createActor(
      parentMachine(
        (request, signal) =>
          new Promise((resolve) => {
            signals.push(signal);
            releases.push(() => resolve(`${request} after abort: ${signal.aborted}`));
          }),
      ),
    );
    actor.start();
    actor.send({ type: "go", text: "one" });
    actor.send({ type: "abort" });
    expect(signals[0]?.aborted).toBe(true);
    releases[0]?.();
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(actor.getSnapshot().context.answers).toEqual(["one after abort: true"]);
    expect(actor.getSnapshot().value).toBe("idle");
    // A second request runs with a fresh signal; stopping the worker drops its answer.
    actor.send({ type: "go", text: "two" });
    expect(signals[1]?.aborted).toBe(false);
    actor.send({ type: "finish" });
    expect(signals[1]?.aborted).toBe(true);
    releases[1]?.();
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(actor.getSnapshot().context.answers).toEqual(["one after abort: true"]);
  });

  it("answers each request with one event and keeps only a request in flight in the persisted snapshot", async () => {
    let release: (() => void) | undefined;
    const actor = createActor(
      parentMachine(
        (request) =>
          new Promise((resolve) => {
            release = () => resolve(request.toUpperCase());
          }),
      ),
    );
    actor.start();
    actor.send({ type: "go", text: "one" });
    expect(workerSnapshot(actor).pending).toEqual({ seq: 1, request: "one" });
    release?.();
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(actor.getSnapshot().context.answers).toEqual(["ONE"]);
    // Settled: the in-memory snapshot may still hold it, the persisted one must not.
    expect(workerSnapshot(actor).pending).toBeNull();
    actor.send({ type: "finish" });
    await toPromise(actor);
  });

  it("restores a request in flight and runs it again; a settled one is not re-sent", async () => {
    const seen: string[] = [];
    let release: (() => void) | undefined;
    const first = createActor(
      parentMachine(
        (request) =>
          new Promise((resolve) => {
            seen.push(request);
            release = () => resolve(request);
          }),
      ),
    );
    first.start();
    first.send({ type: "go", text: "a" });
    release?.();
    await new Promise((resolve) => setTimeout(resolve, 0));
    first.send({ type: "go", text: "b" });
    const stored = JSON.parse(JSON.stringify(first.getPersistedSnapshot()));
    first.stop();

    const rerun: string[] = [];
    const second = createActor(
      parentMachine(async (request) => {
        rerun.push(request);
        return `${request}!`;
      }),
      { snapshot: stored },
    );
    second.start();
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(rerun).toEqual(["b"]);
    expect(second.getSnapshot().context.answers).toEqual(["a", "b!"]);
    expect(seen).toEqual(["a", "b"]);
  });

  it("stopping the worker aborts the request in flight, and a late answer is dropped", async () => {
    let signalSeen: AbortSignal | undefined;
    let release: (() => void) | undefined;
    const actor = createActor(
      parentMachine(
        (request, signal) =>
          new Promise((resolve) => {
            signalSeen = signal;
            release = () => resolve(request);
          }),
      ),
    );
    actor.start();
    actor.send({ type: "go", text: "x" });
    actor.stop();
    expect(signalSeen?.aborted).toBe(true);
    release?.();
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(actor.getSnapshot().context.answers).toEqual([]);
  });
});
