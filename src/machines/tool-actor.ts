/**
 * The workflow machine's tool worker: invoked once for the whole run and sent one batch per
 * iteration (see request-worker.ts). It only executes: the batch comes screened for approval (the
 * machine's `approve` step, docs/decisions/036) and everything it needs of the run comes with the
 * request. It takes the checkpoints around each call, runs the calls (one at a time or
 * concurrently, docs/decisions/012) with their timeouts, and turns every result or error into an
 * outcome for the model.
 */
import type { AnyActorRef } from "xstate";
import {
  OutcomeUnknownError,
  ToolOutputError,
  ToolResolutionError,
  ToolTimeoutError,
  WorkflowDefinitionError,
} from "../core/errors.ts";
import type { ToolCallInfo } from "../core/messages.ts";
import type { ObserverSet } from "../core/run-observer.ts";
import type { ToolCallContext, ToolDef } from "../core/tools.ts";
import {
  type CheckpointHook,
  type CheckpointReason,
  checkpointOf,
  type DepsSource,
  resolveDeps,
} from "./actor-deps.ts";
import { fromRequests } from "./request-worker.ts";
import { type BatchSchedule, runBatch } from "./tool-batch.ts";
import type { ToolOutcome } from "./workflow-context.ts";

/** What the tool-execution actor needs. */
export interface ToolExecutionDeps {
  tools: Readonly<Record<string, ToolDef>>;
  /** Receives what a tool threw, by call id (the error itself; the outcome keeps its name and message). */
  onToolError?: (callId: string, error: unknown) => void;
  /** Awaited before each batch, and before and after each call. */
  checkpoint?: CheckpointHook;
  /**
   * What a resumed run does with an `unsafe` call an earlier process started and never finished:
   * answer it with an `OutcomeUnknown` tool error (default), or fail the run (`OutcomeUnknownError`).
   */
  unsafeInterrupted?: "tool_error" | "fail";
  /** Told when each call starts and returns. */
  observer?: ObserverSet;
}

/**
 * One batch's request: the calls of the TOOL_CALL message just appended, and what the worker
 * needs of the run. Only `calls` is required; a worker used alone runs them as run `standalone`.
 */
export interface ToolExecutionRequest {
  calls: readonly ToolCallInfo[];
  /** The run the calls belong to: their `ToolCallContext.runId` and idempotency keys. */
  runId?: string;
  /** LLM calls made so far: the checkpoints' `iteration`. */
  iteration?: number;
  /** How many calls run at once (`WorkflowConfig.toolConcurrency`); absent: 1. */
  concurrency?: number;
  /** A call's timeout in ms when its tool sets none (`WorkflowConfig.toolTimeoutMs`). */
  timeoutMs?: number;
  /**
   * Calls already answered, each returned in its place and never run: those that finished before
   * a restart, and those a person denied.
   */
  answered?: readonly ToolOutcome[];
  /** How many times each call was started before (a batch resumed after a crash): its attempt is one more. */
  started?: Readonly<Record<string, number>>;
}

/**
 * Run the calls of a batch: one at a time, or up to `request.concurrency` at once, started in
 * batch order, an `unsafe` tool always alone (docs/decisions/012); the outcomes come back in batch
 * order whatever order the calls finish in. Arguments are parsed with the tool's zod schema first
 * (a failure is reported like a throwing tool named ToolArgumentError). Tool errors become outcomes
 * for the model; a call past its timeout (the tool's `timeoutMs`, else `request.timeoutMs`) is
 * answered with a ToolTimeoutError and its signal aborted; a return value that cannot be
 * serialized is a ToolOutputError. Each finished call is also sent to the workflow as
 * `tools.outcome`, so a run cancelled mid-batch keeps the results of the calls that did run. Once
 * the signal is aborted (the run was cancelled) no further call starts, and the batch resolves
 * with the calls that finished: one in flight at the abort counts if it still returns a value (a
 * tool that throws after the abort is taken to have been stopped by it, and is left out).
 * Checkpoints are taken one at a time, in the order they are asked for. The worker answers
 * `tools.done` with the outcomes in batch order (`ToolOutcome[]`, the answered calls in their
 * places), or `tools.error`.
 *
 * `restoreRequest` rebuilds the batch in flight of a restored snapshot from the actor the worker
 * answers (`createWorkflowMachine` rebuilds it from the workflow's context: the calls that
 * finished, and how often each started, since the request was sent); absent, the kept request runs.
 */
export function createToolExecutionLogic(
  source: DepsSource<ToolExecutionDeps>,
  options: {
    restoreRequest?: (request: ToolExecutionRequest, parent: AnyActorRef | undefined) => ToolExecutionRequest;
  } = {},
) {
  return fromRequests(
    "tools",
    async (request: ToolExecutionRequest, signal, parent): Promise<ToolOutcome[]> => {
      const deps = resolveDeps(source, parent);
      const { tools, checkpoint } = deps;
      const { calls, answered = [], started = {} } = request;
      const runId = request.runId ?? "standalone";
      const position = { runId, iteration: request.iteration ?? 0 };
      await checkpointOf(checkpoint, parent, { reason: "tools", ...position });
      const concurrency = request.concurrency ?? 1;
      // Per-call bookkeeping (started, finished) reaches the workflow's context when it can matter:
      // for checkpoints, for unsafe tools, and for a batch a cancellation could cut short.
      const track = parent !== undefined && (checkpoint !== undefined || calls.length > 1);
      // Aborted with the run's signal, or when a call fails the batch (stops the calls still running).
      const batch = concurrency > 1 ? linkedController([signal]) : undefined;
      const halted = batch?.signal ?? signal;
      // One checkpoint at a time, each snapshot taken when its turn comes (calls run concurrently);
      // none once the batch was cancelled or failed (a turn that comes after that is skipped).
      const checkpointInTurn = serially(async (reason: CheckpointReason, callId: string) => {
        if (!halted.aborted) await checkpointOf(checkpoint, parent, { reason, ...position, callId });
      });
      const outcomes: (ToolOutcome | undefined)[] = new Array(calls.length);
      const runCall = async (index: number): Promise<void> => {
        const call = calls[index] as ToolCallInfo;
        const answer = answered.find((outcome) => outcome.callId === call.callId);
        if (answer) {
          // Finished before a restart (its result was checkpointed), or denied: never run it.
          outcomes[index] = answer;
          return;
        }
        const attempt = (started[call.callId] ?? 0) + 1;
        const tool = tools[call.name];
        const unsafe = tool?.effects === "unsafe";
        let outcome: ToolOutcome;
        if (unsafe && attempt > 1) {
          outcome = interruptedOutcome(call, deps.unsafeInterrupted ?? "tool_error");
        } else {
          if (parent !== undefined && (checkpoint !== undefined || unsafe)) {
            // Checkpointed before it runs, so a process that takes over after a crash mid-call
            // knows the call was started: `attempt` > 1 and `resumed` for the re-run (an unsafe
            // call is not re-run at all).
            parent.send({ type: "tools.started", callId: call.callId });
            await checkpointInTurn("call_started", call.callId);
            if (halted.aborted) return;
          }
          const timeoutMs = tool?.timeoutMs ?? request.timeoutMs;
          const observed = { runId, callId: call.callId, tool: call.name, args: call.args, attempt };
          const startedAt = performance.now();
          deps.observer?.onToolCall(observed);
          outcome = await executeCall(tools, call, deps.onToolError, timeoutMs, batch?.signal ?? signal, {
            runId,
            callId: call.callId,
            idempotencyKey: `${runId}:${call.callId}`,
            attempt,
            resumed: attempt > 1,
          });
          deps.observer?.onToolResult({
            ...observed,
            status: outcome.status,
            content: outcome.content,
            durationMs: performance.now() - startedAt,
          });
        }
        if (signal.aborted && outcome.status !== "ok") return;
        outcomes[index] = outcome;
        if (!track || parent?.getSnapshot().status !== "active") return;
        // Also after an abort: a call that returns within the grace is completed even when another
        // call of the batch is still running as the grace ends. Checkpoints stop at the abort.
        parent.send({ type: "tools.outcome", outcome });
        if (!signal.aborted) await checkpointInTurn("call_done", call.callId);
      };
      const schedule: BatchSchedule = {
        concurrency,
        runsAlone: (index) => tools[calls[index]?.name ?? ""]?.effects === "unsafe",
        stopped: () => halted.aborted,
      };
      try {
        await runBatch(calls.length, schedule, runCall);
      } catch (error) {
        batch?.abort(error);
        throw error;
      } finally {
        batch?.release();
      }
      return outcomes.filter((outcome): outcome is ToolOutcome => outcome !== undefined);
    },
    options,
  );
}

/** `task`, with each call waiting until the ones asked for before it have settled. */
function serially<TArgs extends unknown[]>(
  task: (...args: TArgs) => Promise<void>,
): (...args: TArgs) => Promise<void> {
  let last: Promise<unknown> = Promise.resolve();
  return (...args) => {
    const turn = last.then(() => task(...args));
    last = turn.catch(() => undefined);
    return turn;
  };
}

/** An abort controller that also aborts when any of `signals` does; `release` unhooks it from them. */
function linkedController(signals: readonly AbortSignal[]): AbortController & { release: () => void } {
  const controller = new AbortController();
  const onAbort = (event: Event) => controller.abort((event.target as AbortSignal).reason);
  for (const signal of signals) {
    if (signal.aborted) controller.abort(signal.reason);
    else signal.addEventListener("abort", onAbort, { once: true });
  }
  return Object.assign(controller, {
    release: () => {
      for (const signal of signals) signal.removeEventListener("abort", onAbort);
    },
  });
}

/** The answer to an `unsafe` call a crash interrupted: its effect may or may not have happened. */
function interruptedOutcome(call: ToolCallInfo, rule: "tool_error" | "fail"): ToolOutcome {
  if (rule === "fail") throw new OutcomeUnknownError(call.name, call.callId);
  const message = `'${call.name}' was interrupted by a restart before it returned; its effect may or may not have happened. Check its result another way before calling it again.`;
  return {
    callId: call.callId,
    tool: call.name,
    args: call.args,
    status: "error",
    content: `[ToolError] OutcomeUnknown: ${message}`,
    errorName: "OutcomeUnknown",
    errorMessage: message,
  };
}

async function executeCall(
  tools: Readonly<Record<string, ToolDef>>,
  call: ToolCallInfo,
  onToolError: ToolExecutionDeps["onToolError"],
  timeoutMs: number | undefined,
  signal: AbortSignal,
  callContext: Omit<ToolCallContext, "signal">,
): Promise<ToolOutcome> {
  const base = { callId: call.callId, tool: call.name, args: call.args };
  const tool = tools[call.name];
  if (!tool)
    throw new WorkflowDefinitionError(`Tool '${call.name}' has no implementation registered with the runner`);
  const parsed = tool.spec.parameters.safeParse(call.args);
  if (!parsed.success) {
    const issues = parsed.error.issues
      .map((issue) => `${issue.path.length > 0 ? issue.path.join(".") : "(args)"}: ${issue.message}`)
      .join("; ");
    return {
      ...base,
      status: "error",
      content: `[ToolError] ToolArgumentError: ${issues}`,
      errorName: "ToolArgumentError",
      errorMessage: issues,
    };
  }
  let value: unknown;
  // A call with a timeout gets a signal of its own, aborted by the run's or by the timeout.
  const timed = timeoutMs === undefined ? undefined : linkedController([signal]);
  try {
    const context: ToolCallContext = { ...callContext, signal: timed?.signal ?? signal };
    const running = tool.execute(parsed.data as Record<string, unknown>, context);
    value =
      timed === undefined || timeoutMs === undefined
        ? await running
        : await withTimeout(Promise.resolve(running), timeoutMs, () => {
            const error = new ToolTimeoutError(call.name, call.callId, timeoutMs, tool.effects === "unsafe");
            timed.abort(error);
            return error;
          });
  } catch (error) {
    if (error instanceof ToolResolutionError) {
      return {
        ...base,
        status: "resolution_error",
        content: `[ToolResolutionError] ${error.message}`,
        errorName: error.name,
        errorMessage: error.message,
      };
    }
    onToolError?.(call.callId, error);
    const name = error instanceof Error ? error.name : "Error";
    const message = error instanceof Error ? error.message : String(error);
    return {
      ...base,
      status: "error",
      content: `[ToolError] ${name}: ${message}`,
      errorName: name,
      errorMessage: message,
    };
  } finally {
    timed?.release();
  }
  return {
    ...base,
    status: "ok",
    content: serializeToolResult(call.name, value),
    value: value === undefined ? null : value,
  };
}

/**
 * `work`, or the error `onTimeout` makes once `timeoutMs` pass first. The work's late result
 * (or error) is dropped.
 */
function withTimeout<T>(work: Promise<T>, timeoutMs: number, onTimeout: () => Error): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(onTimeout()), timeoutMs);
    work.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

/**
 * The TOOL_RESULT content of a return value: strings as they are, `undefined` as `null`,
 * anything else as JSON. Values JSON cannot represent faithfully are rejected.
 */
export function serializeToolResult(toolName: string, value: unknown): string {
  if (typeof value === "string") return value;
  if (value === undefined) return "null";
  assertJsonValue(toolName, value, "result", new Set());
  return JSON.stringify(value);
}

function assertJsonValue(toolName: string, value: unknown, path: string, seen: Set<object>): void {
  if (value === null || typeof value === "string" || typeof value === "boolean") return;
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new ToolOutputError(toolName, `${path} is ${value}`);
    return;
  }
  if (typeof value !== "object") throw new ToolOutputError(toolName, `${path} is a ${typeof value}`);
  if (seen.has(value)) throw new ToolOutputError(toolName, `${path} is a circular reference`);
  if (typeof (value as { toJSON?: unknown }).toJSON === "function") return;
  seen.add(value);
  if (Array.isArray(value)) {
    value.forEach((item, index) => {
      assertJsonValue(toolName, item, `${path}[${index}]`, seen);
    });
  } else {
    const prototype = Object.getPrototypeOf(value);
    if (prototype !== Object.prototype && prototype !== null) {
      throw new ToolOutputError(toolName, `${path} is a ${value.constructor?.name ?? "class"} instance`);
    }
    for (const [key, item] of Object.entries(value)) {
      if (item !== undefined) assertJsonValue(toolName, item, `${path}.${key}`, seen);
    }
  }
  seen.delete(value);
}
