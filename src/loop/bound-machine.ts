/**
 * One workflow machine for many actors, each bound to its own deps (client, tools, callbacks).
 *
 * Building the statechart (`setup().createMachine`) costs about as much as a few iterations of
 * the loop, so the runner and `runInference` build it once and look each actor's deps up by actor
 * instead of building a machine per run. Deps never enter the context or the snapshot.
 */
import { type AnyActorRef, createActor, type InspectionEvent, type Snapshot, toPromise } from "xstate";
import {
  createWorkflowMachine,
  type WorkflowActor,
  type WorkflowMachine,
  type WorkflowMachineDeps,
  type WorkflowOutput,
} from "../machines/workflow.machine.ts";
import type { WorkflowInput } from "../machines/workflow-context.ts";

/** How an actor starts: fresh from input, or restored from a persisted snapshot. */
export type ActorStart = { input: WorkflowInput } | { snapshot: Snapshot<unknown> };

/** A workflow machine built once, and the deps of each actor created from it. */
export class BoundMachine {
  readonly machine: WorkflowMachine;
  readonly #deps = new WeakMap<AnyActorRef, WorkflowMachineDeps>();
  // XState resolves a fresh actor's initial state (compact → infer, which compacts) inside
  // `createActor`, before the actor can be bound: the actor under construction claims these deps
  // on its first lookup.
  #constructing: WorkflowMachineDeps | undefined;

  constructor() {
    this.machine = createWorkflowMachine((actor) => this.#depsOf(actor));
  }

  /** An actor of the machine bound to `deps` (not started). */
  createActor(deps: WorkflowMachineDeps, start: ActorStart, inspect?: (event: InspectionEvent) => void) {
    this.#constructing = deps;
    try {
      const actor: WorkflowActor = createActor(this.machine, {
        ...(start as { input: WorkflowInput }),
        ...(inspect && { inspect }),
      });
      this.#deps.set(actor, deps);
      return actor;
    } finally {
      this.#constructing = undefined;
    }
  }

  #depsOf(actor: AnyActorRef): WorkflowMachineDeps {
    let deps = this.#deps.get(actor);
    if (deps === undefined && this.#constructing !== undefined) {
      deps = this.#constructing;
      this.#constructing = undefined;
      this.#deps.set(actor, deps);
    }
    if (deps === undefined) throw new Error("A workflow actor ran without its deps (BoundMachine)");
    return deps;
  }
}

/**
 * Start a workflow actor and settle with its output, or reject with the error it failed with.
 * The listener is subscribed before the actor starts: an error in its first step (a compactor that
 * throws, a snapshot that cannot be restored) rejects here instead of reaching XState's unhandled
 * error report, which rethrows it outside any promise and ends the process.
 */
export function startActor(actor: WorkflowActor): Promise<WorkflowOutput> {
  const output = toPromise(actor);
  actor.start();
  return output;
}
