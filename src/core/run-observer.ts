/**
 * RunObserver: the one seam through which a run is watched. The workflow machine reports each
 * thing once, where it happens (a state entered, a message appended, an LLM call, a tool call, a
 * compaction); the proxy's stats, the watch reporter and the eval recorder are observers of it
 * instead of wrappers around the client (docs/decisions/015).
 */
import type { AnyStateMachine } from "xstate";
import type { ApprovalDecision } from "./approval.ts";
import type { Message } from "./messages.ts";
import type { ToolSpec } from "./tools.ts";
import type { LLMResponse, SendOptions, TokenUsage, ToolChoice } from "./types.ts";

/** The states of the workflow machine, as `RunObserver.onState` names them. */
export type RunStateName =
  | "compact"
  | "infer"
  | "validate"
  | "enforce"
  | "approve"
  | "execute"
  | "awaitingApproval"
  | "cancelling"
  | "review"
  | "done"
  | "failed"
  | "cancelled"
  | "responded";

/** Where a run is: its id and the LLM calls made so far (the one in flight included). */
export interface RunPosition {
  runId: string;
  iteration: number;
}

/** A state the run entered. */
export interface RunStateEvent extends RunPosition {
  state: RunStateName;
}

/** An LLM call about to go out. */
export interface LLMCallStartEvent extends RunPosition {
  /** The serialized history sent (transient messages included), as the client gets it. */
  messages: readonly Record<string, unknown>[];
  /** The tools offered with this call (none: undefined). */
  tools: readonly ToolSpec[] | undefined;
  /** The call's `SendOptions.toolChoice`, when it has one (`"required"` on a forced retry). */
  toolChoice?: ToolChoice;
  /** The escalation tier that served the call (1 = the first `escalation` tier); absent: the run's own client. */
  escalationTier?: number;
  /** `performance.now()` when the call started. */
  startedAt: number;
}

/** An LLM call that ended: its answer, or the error it failed with. */
export interface LLMCallEndEvent extends LLMCallStartEvent {
  /** The client's answer (before any `repairToolCall`); null when the call threw. */
  response: LLMResponse | null;
  /** What the call threw; null when it answered. */
  error: unknown;
  /** The backend's token counts, when the client reported them (`SendOptions.onUsage`). */
  usage: TokenUsage | null;
  /** Milliseconds from `startedAt` to the answer or the error. */
  durationMs: number;
}

/** A tool call about to run. */
export interface ToolCallEvent {
  runId: string;
  callId: string;
  tool: string;
  args: Record<string, unknown>;
  /** 1 for a first run, more when a resumed run runs a call an earlier process had started. */
  attempt: number;
}

/**
 * A tool call that returned (or threw, or timed out: `status` "error"), or that a person denied
 * (`status` "denied": it never ran, so no `onToolCall` came before; `attempt` 1, `durationMs` 0).
 */
export interface ToolResultEvent extends ToolCallEvent {
  status: "ok" | "error" | "resolution_error" | "denied";
  /** The TOOL_RESULT content the model gets. */
  content: string;
  durationMs: number;
}

/** What a compactor measured of one compaction (a `ContextManager`'s `CompactEvent`). */
export interface CompactionMeasure {
  /** The loop iteration (0-based) that triggered it. */
  stepIndex: number;
  tokensBefore: number;
  tokensAfter: number;
  budgetTokens: number;
  messagesBefore: number;
  messagesAfter: number;
  /** The strategy's phase (1+). */
  phaseReached: number;
}

/** A compaction before an LLM call: the history before and after. */
export interface CompactionEvent extends RunPosition {
  before: readonly Message[];
  after: readonly Message[];
  /**
   * The compactor's own account of it, when it gives one (`ContextManager.takeCompaction`): the
   * same object its `onCompact` callbacks got.
   */
  measure?: CompactionMeasure;
}

/** A run (`run` / `resume`) about to start its workflow actor. */
export interface RunStartEvent {
  runId: string;
  /** The machine the run's actor is made from (its statechart can be drawn from it). */
  machine: AnyStateMachine;
  /** It goes on from a persisted snapshot. */
  resumed: boolean;
  /** The workflow's name (absent when the run has no workflow of its own). */
  workflow?: string;
  /** A person's decisions a resumed run goes on with (`ResumeOptions.decisions`), when it has some. */
  decisions?: readonly ApprovalDecision[];
}

/** A run (`run` / `resume`) that ended: its result, or the typed error it rejects with. */
export interface RunEndEvent {
  runId: string;
  /** "awaiting_approval": the attempt ended with calls waiting for a person (`AwaitingApprovalError`, ADR 017). */
  status: "done" | "failed" | "cancelled" | "responded" | "awaiting_approval";
  /** The terminal tool's return value (status "done"). */
  result?: unknown;
  /** What `run` / `resume` rejects with; null when it resolved. */
  error: unknown;
}

/**
 * Watches a run: every hook is optional and called once for each thing, as it happens. Hooks
 * must not change what they are given. A hook that throws (or returns a promise that rejects)
 * never breaks the run: its first error is logged (`WorkflowRunnerOptions.logger`), later ones of
 * the same observer in that run are dropped.
 * @example
 * await runner.run(workflow, "Weather in Paris?", {
 *   observers: [{ onLLMCallEnd: ({ durationMs, usage }) => console.log(durationMs, usage?.promptTokens) }],
 * });
 */
export interface RunObserver {
  /** A run's actor is about to start (after a fresh run's first messages were told). */
  onRunStart?(event: RunStartEvent): void;
  /** A run ended, with what `run` / `resume` resolves or rejects with. */
  onRunEnd?(event: RunEndEvent): void;
  /** The run entered a state of the workflow machine. */
  onState?(event: RunStateEvent): void;
  /**
   * A message joined the history: the system prompt and user message of a fresh run, then every
   * appended one. `position`: the run and LLM call it was appended in (absent for a fresh run's
   * first messages, told before its run id exists).
   */
  onMessage?(message: Message, position?: RunPosition): void;
  onLLMCallStart?(event: LLMCallStartEvent): void;
  onLLMCallEnd?(event: LLMCallEndEvent): void;
  onToolCall?(event: ToolCallEvent): void;
  onToolResult?(event: ToolResultEvent): void;
  /** The history was compacted before an LLM call. */
  onCompaction?(event: CompactionEvent): void;
}

/** Where an observer's error goes: one line. */
export type ObserverLogger = (line: string) => void;

type Hook = keyof RunObserver;

/** The observers of one run as one: each hook reaches every observer, none can break the run. */
export type ObserverSet = Required<RunObserver>;

/**
 * One observer that calls each of `observers` in order, catching what they throw: the first error
 * of each observer goes to `log` (default `console.warn`), later ones are dropped. Undefined when
 * there are none, so a run without observers pays nothing.
 */
export function createObserverSet(
  observers: readonly RunObserver[],
  log: ObserverLogger = (line) => console.warn(line),
): ObserverSet | undefined {
  if (observers.length === 0) return undefined;
  const failed = new Set<RunObserver>();
  const report = (observer: RunObserver, hook: Hook, error: unknown) => {
    if (failed.has(observer)) return;
    failed.add(observer);
    const detail = error instanceof Error ? (error.stack ?? error.message) : String(error);
    log(
      `forge: a RunObserver's ${hook} threw; the run goes on, and this observer's later errors in this run are not logged: ${detail}`,
    );
  };
  const emit =
    <K extends Hook>(hook: K) =>
    (...args: Parameters<Required<RunObserver>[K]>): void => {
      for (const observer of observers) {
        const handler = observer[hook] as ((...args: unknown[]) => unknown) | undefined;
        if (handler === undefined) continue;
        try {
          const result = handler.apply(observer, args);
          if (result instanceof Promise) result.catch((error: unknown) => report(observer, hook, error));
        } catch (error) {
          report(observer, hook, error);
        }
      }
    };
  return {
    onRunStart: emit("onRunStart"),
    onRunEnd: emit("onRunEnd"),
    onState: emit("onState"),
    onMessage: emit("onMessage"),
    onLLMCallStart: emit("onLLMCallStart"),
    onLLMCallEnd: emit("onLLMCallEnd"),
    onToolCall: emit("onToolCall"),
    onToolResult: emit("onToolResult"),
    onCompaction: emit("onCompaction"),
  };
}

/**
 * Make one LLM call (`call`, which sends with the options it is given) and tell `observer` of it:
 * a start before it, an end with its answer or error, the usage the client reported through
 * `onUsage` (the caller's own `onUsage` still hears it) and the time it took. `options` is left as
 * it is: the call gets a copy with the observing `onUsage`. Without an observer, `call(options)`.
 * @example
 * await observeLLMCall(observer, (sendOptions) => client.send(wire, tools, sendOptions), { signal }, start);
 */
export async function observeLLMCall(
  observer: Pick<ObserverSet, "onLLMCallStart" | "onLLMCallEnd"> | undefined,
  call: (options: SendOptions) => Promise<LLMResponse>,
  options: SendOptions,
  start: Omit<LLMCallStartEvent, "startedAt">,
): Promise<LLMResponse> {
  if (observer === undefined) return call(options);
  let usage: TokenUsage | null = null;
  const { onUsage } = options;
  const observed: SendOptions = {
    ...options,
    onUsage: (reported) => {
      usage = reported;
      onUsage?.(reported);
    },
  };
  const started: LLMCallStartEvent = { ...start, startedAt: performance.now() };
  observer.onLLMCallStart(started);
  const end = (response: LLMResponse | null, error: unknown) =>
    observer.onLLMCallEnd({
      ...started,
      response,
      error,
      usage,
      durationMs: performance.now() - started.startedAt,
    });
  let response: LLMResponse;
  try {
    response = await call(observed);
  } catch (error) {
    end(null, error);
    throw error;
  }
  end(response, null);
  return response;
}
