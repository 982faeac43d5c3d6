/**
 * The workflow machine's invoked actors: a worker for LLM calls and one for tool batches, each
 * invoked once for the whole run and sent one request per iteration (see request-worker.ts).
 * Factories take their dependencies, or a lookup that finds them per workflow actor (for a machine
 * built once and run with different clients); data enters through the requests.
 */
import type { AnyActorRef, Snapshot } from "xstate";
import {
  InvalidResponseError,
  OutcomeUnknownError,
  StreamError,
  ToolOutputError,
  ToolResolutionError,
  ToolTimeoutError,
  WorkflowDefinitionError,
} from "../core/errors.ts";
import { HistorySerializer } from "../core/history-serializer.ts";
import { type ApiFormat, type Message, serializeHistory, type ToolCallInfo } from "../core/messages.ts";
import { applyReasoningReplay, type ReasoningReplay } from "../core/reasoning-replay.ts";
import { type ObserverSet, observeLLMCall } from "../core/run-observer.ts";
import type { ToolCallContext, ToolDef, ToolSpec } from "../core/tools.ts";
import {
  ChunkType,
  isLLMResponse,
  type LLMClient,
  type LLMResponse,
  type SendOptions,
  type StreamChunk,
  type TokenUsage,
  type ToolChoice,
} from "../core/types.ts";
import { type RepairToolCall, repairResponse } from "../guardrails/repair.ts";
import { deniedOutcome, screenBatch } from "./approval-screen.ts";
import { fromRequests } from "./request-worker.ts";
import { type BatchSchedule, runBatch } from "./tool-batch.ts";
import type { ToolOutcome, WorkflowContext } from "./workflow-context.ts";
import type { ToolBatchOutput } from "./workflow-deps.ts";

/** Dependencies fixed when the logic is built, or looked up from the workflow actor a worker answers. */
export type DepsSource<TDeps extends object> = TDeps | ((workflow: AnyActorRef) => TDeps);

function resolveDeps<TDeps extends object>(
  source: DepsSource<TDeps>,
  parent: AnyActorRef | undefined,
): TDeps {
  if (typeof source !== "function") return source;
  if (!parent) throw new WorkflowDefinitionError("A workflow worker was started without a parent actor");
  return source(parent);
}

/**
 * Why a checkpoint is taken: before an LLM call, before a tool batch, around one call, or as the
 * run stops to wait for a person's approval (the snapshot to resume it from).
 */
export type CheckpointReason = "inference" | "tools" | "call_started" | "call_done" | "awaiting_approval";

/** What the loop knows when it asks for a checkpoint. */
export interface CheckpointPoint {
  reason: CheckpointReason;
  runId: string;
  /** LLM calls made so far. */
  iteration: number;
  /** The call a `call_started` / `call_done` checkpoint is about. */
  callId?: string;
}

/**
 * Persist a workflow actor's snapshot; awaited before the loop goes on, so a run resumed from it
 * redoes at most the step that was under way. A rejection fails the run.
 */
export type CheckpointHook = (snapshot: Snapshot<unknown>, point: CheckpointPoint) => Promise<void> | void;

/** Take a checkpoint of the workflow actor `parent`, if a hook is set. */
async function checkpointOf(
  hook: CheckpointHook | undefined,
  parent: AnyActorRef | undefined,
  reason: CheckpointReason,
  callId?: string,
): Promise<void> {
  if (hook === undefined || parent === undefined) return;
  const { runId, iteration } = (parent.getSnapshot() as { context: WorkflowContext }).context;
  await hook(parent.getPersistedSnapshot(), { reason, runId, iteration, ...(callId && { callId }) });
}

/** What the inference actor needs. */
export interface InferenceDeps {
  /** Awaited before each LLM call. */
  checkpoint?: CheckpointHook;
  /** Hears the backend's token count of each history sent (the context manager's `observeUsage`). */
  onUsage?: (history: readonly Message[], usage: TokenUsage) => void;
  client: LLMClient;
  /** The escalation tiers' clients: a request's `client` n ≥ 1 goes to `escalationClients[n - 1]`. */
  escalationClients?: readonly LLMClient[];
  toolSpecs: readonly ToolSpec[];
  stream: boolean;
  /** Which earlier reasoning blocks each request re-sends; default `full`. */
  reasoningReplay?: ReasoningReplay;
  onChunk?: (chunk: StreamChunk) => Promise<void> | void;
  /** Sent with each call (`SendOptions.rank`): where it waits for a pooled client's slot. */
  rank?: number;
  /** Asked to repair a response the loop would nudge about, before the machine decides on it. */
  repairToolCall?: RepairToolCall;
  /** Told when each call starts and ends (its answer or error, usage and timing). */
  observer?: ObserverSet;
}

/** One LLM call's request: the history, folded and serialized for the client by the worker. */
export interface InferenceRequest {
  /**
   * The run's history: the workflow's `context.messages` when it sent the request. A persisted
   * snapshot leaves it out (it would hold the history twice); restored, the worker reads it from
   * the workflow's context, which cannot change while the request is in flight.
   */
  messages?: readonly Message[];
  /** Sent after the history with this request only (a context warning); never part of the history. */
  transient?: readonly Message[];
  /**
   * The names of the tools this request offers (a per-step subset), in the workflow's order;
   * absent: every tool. The machine answers a call to any other as an unknown tool.
   */
  tools?: readonly string[];
  /**
   * Tools left out of this request's tool list (the model just repeated a call to them with the same
   * arguments); the loop still accepts calls to them.
   */
  withoutTools?: readonly string[];
  /** The escalation tier that serves this call: 0 or absent is `client`, n the n-th escalation client. */
  client?: number;
  /** `SendOptions.toolChoice` of this call: `"required"` on the retry after a prose answer. */
  toolChoice?: ToolChoice;
}

/**
 * LLM calls, one per request. Streams through `onChunk` when `stream` is on (the FINAL chunk carries the
 * response; none → StreamError). The actor's abort signal reaches the client, so stopping the
 * actor (cancellation) aborts the request in flight.
 */
export function createInferenceLogic(
  source: DepsSource<InferenceDeps>,
  options: {
    /**
     * The parent is the workflow machine, whose `context.messages` is every request's history: a
     * persisted snapshot leaves the history out of the request in flight and a restored request
     * reads it from there (`createWorkflowMachine` sets it). Off: the request keeps its history.
     */
    historyInParent?: boolean;
  } = {},
) {
  // One serializer per workflow actor: its incremental state is the run's own (docs/decisions/005).
  const serializers = new WeakMap<AnyActorRef, HistorySerializer>();
  const serialize = (messages: readonly Message[], format: ApiFormat, parent: AnyActorRef | undefined) => {
    if (parent === undefined) return serializeHistory(messages, format);
    let serializer = serializers.get(parent);
    if (serializer?.format !== format) {
      serializer = new HistorySerializer(format);
      serializers.set(parent, serializer);
    }
    return serializer.serialize(messages);
  };
  return fromRequests(
    "inference",
    async (request: InferenceRequest, signal, parent): Promise<LLMResponse> => {
      const deps = resolveDeps(source, parent);
      const context = (parent?.getSnapshot() as { context?: WorkflowContext } | undefined)?.context;
      const history = request.messages ?? historyOf(context);
      await checkpointOf(deps.checkpoint, parent, "inference");
      signal.throwIfAborted();
      const client = clientOf(deps, request.client);
      const subset =
        request.tools && toolListOf(deps.toolSpecs)?.filter((tool) => request.tools?.includes(tool.name));
      const tools = offeredTools(subset ?? toolListOf(deps.toolSpecs), request.withoutTools);
      const sent = request.transient?.length ? [...history, ...request.transient] : history;
      const replayed = applyReasoningReplay(sent, deps.reasoningReplay ?? "full");
      const messages = serialize(replayed, client.apiFormat, parent);
      // The backend's prompt count is of the history (a transient warning adds a few tokens to it).
      const onUsage = deps.onUsage && ((usage: TokenUsage) => deps.onUsage?.(history, usage));
      // The run id and rank let a pooled client keep the run on one server and order its waiters.
      const runId = context?.runId;
      const options: SendOptions = {
        signal,
        ...(onUsage && { onUsage }),
        ...(runId !== undefined && { runId }),
        ...(deps.rank !== undefined && { rank: deps.rank }),
        ...(request.toolChoice !== undefined && tools !== undefined && { toolChoice: request.toolChoice }),
        ...((context?.config.toolConcurrency ?? 1) > 1 && tools !== undefined && { parallelToolCalls: true }),
      };
      const call = () =>
        deps.stream
          ? collectStream(client.sendStream(messages, tools, options), deps.onChunk, signal)
          : client.send(messages, tools, options);
      const position = { runId: runId ?? "standalone", iteration: context?.iteration ?? 0 };
      const started = {
        ...position,
        messages,
        tools,
        ...(options.toolChoice && { toolChoice: options.toolChoice }),
        ...(request.client !== undefined && request.client > 0 && { escalationTier: request.client }),
      };
      const response = await observeLLMCall(deps.observer, call, options, started);
      if (!isLLMResponse(response)) throw new InvalidResponseError(response);
      if (deps.repairToolCall === undefined) return response;
      // The hook sees what the machine would nudge about, and its calls are decided on the same way.
      const repaired = await repairResponse(response, deps.repairToolCall, {
        toolNames:
          context?.activeTools ?? context?.config.toolNames ?? deps.toolSpecs.map((spec) => spec.name),
        rescueEnabled: context?.config.rescueEnabled ?? true,
        tools: deps.toolSpecs,
      });
      signal.throwIfAborted();
      return repaired;
    },
    // The history is the workflow context's own: a persisted snapshot holds it once.
    options.historyInParent ? { persistRequest: ({ messages: _history, ...rest }) => rest } : {},
  );
}

/** The client of an escalation tier (0: the run's own). */
function clientOf(deps: InferenceDeps, tier: number | undefined): LLMClient {
  if (tier === undefined || tier === 0) return deps.client;
  const client = deps.escalationClients?.[tier - 1];
  if (client === undefined) {
    throw new WorkflowDefinitionError(
      `The run asks for escalation tier ${tier}, but only ${deps.escalationClients?.length ?? 0} escalation client(s) are configured: resume it with the same escalation tiers it ran with.`,
    );
  }
  return client;
}

/** The history of a restored request: the workflow's context (see `InferenceRequest.messages`). */
function historyOf(context: WorkflowContext | undefined): readonly Message[] {
  if (!Array.isArray(context?.messages)) {
    throw new WorkflowDefinitionError(
      "An inference request restored without its history needs the workflow actor that sent it (its context.messages): restore the workflow's snapshot, not the worker's alone, and pass historyInParent only under createWorkflowMachine.",
    );
  }
  return context.messages;
}

const toolLists = new WeakMap<readonly ToolSpec[], ToolSpec[] | undefined>();

/** `tools` without those named in `without`, unless that would leave none. */
function offeredTools(
  tools: ToolSpec[] | undefined,
  without: readonly string[] | undefined,
): ToolSpec[] | undefined {
  if (!tools || !without?.length) return tools;
  const kept = tools.filter((tool) => !without.includes(tool.name));
  return kept.length > 0 ? kept : tools;
}

/** The tool list handed to the client, copied once per tool set (none: undefined). */
function toolListOf(toolSpecs: readonly ToolSpec[]): ToolSpec[] | undefined {
  if (toolLists.has(toolSpecs)) return toolLists.get(toolSpecs);
  const tools = toolSpecs.length > 0 ? [...toolSpecs] : undefined;
  toolLists.set(toolSpecs, tools);
  return tools;
}

async function collectStream(
  chunks: AsyncIterable<StreamChunk>,
  onChunk: InferenceDeps["onChunk"],
  signal: AbortSignal,
): Promise<LLMResponse> {
  let final: LLMResponse | undefined;
  for await (const chunk of chunks) {
    signal.throwIfAborted();
    if (onChunk) await onChunk(chunk);
    if (chunk.type === ChunkType.FINAL) {
      if (chunk.response === undefined) throw new StreamError("Stream sent a FINAL chunk without a response");
      final = chunk.response;
    }
  }
  if (final === undefined) throw new StreamError("Stream ended without a FINAL chunk");
  return final;
}

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

/** One batch's request: the calls of the TOOL_CALL message just appended. */
export interface ToolExecutionRequest {
  calls: readonly ToolCallInfo[];
}

/**
 * Run the calls of a batch: one at a time, or up to `config.toolConcurrency` at once, started in
 * batch order, an `unsafe` tool always alone (docs/decisions/012); the outcomes come back in batch
 * order whatever order the calls finish in. Arguments are parsed with the tool's zod schema first
 * (a failure is reported like a throwing tool named ToolArgumentError). Tool errors become outcomes
 * for the model; a call past its timeout (the tool's `timeoutMs`, else `config.toolTimeoutMs`) is
 * answered with a ToolTimeoutError and its signal aborted; a return value that cannot be
 * serialized is a ToolOutputError. Each finished call is also sent to the workflow as
 * `tools.outcome`, so a run cancelled mid-batch keeps the results of the calls that did run. Once
 * the signal is aborted (the run was cancelled) no further call starts, and the batch resolves
 * with the calls that finished: one in flight at the abort counts if it still returns a value (a
 * tool that throws after the abort is taken to have been stopped by it, and is left out).
 * Checkpoints are taken one at a time, in the order they are asked for.
 */
export function createToolExecutionLogic(source: DepsSource<ToolExecutionDeps>) {
  return fromRequests(
    "tools",
    async (request: ToolExecutionRequest, signal, parent): Promise<ToolBatchOutput> => {
      const deps = resolveDeps(source, parent);
      const { tools, checkpoint } = deps;
      const { calls } = request;
      // Asked once per batch: a batch resumed after its decisions (context.approval set) runs.
      const screened = contextOf(parent);
      if (screened && !screened.approval) {
        const approval = await screenBatch(tools, calls, screened);
        signal.throwIfAborted();
        if (approval) return { approval };
      }
      await checkpointOf(checkpoint, parent, "tools");
      const config = contextOf(parent)?.config;
      const concurrency = config?.toolConcurrency ?? 1;
      // Per-call bookkeeping (started, finished) reaches the workflow's context when it can matter:
      // for checkpoints, for unsafe tools, and for a batch a cancellation could cut short.
      const track = parent !== undefined && (checkpoint !== undefined || calls.length > 1);
      // Aborted with the run's signal, or when a call fails the batch (stops the calls still running).
      const batch = concurrency > 1 ? linkedController([signal]) : undefined;
      const halted = batch?.signal ?? signal;
      // One checkpoint at a time, each snapshot taken when its turn comes (calls run concurrently);
      // none once the batch was cancelled or failed (a turn that comes after that is skipped).
      const checkpointInTurn = serially(async (reason: CheckpointReason, callId: string) => {
        if (!halted.aborted) await checkpointOf(checkpoint, parent, reason, callId);
      });
      const outcomes: (ToolOutcome | undefined)[] = new Array(calls.length);
      const runCall = async (index: number): Promise<void> => {
        const call = calls[index] as ToolCallInfo;
        const context = contextOf(parent);
        const finished = context?.outcomes.find((outcome) => outcome.callId === call.callId);
        if (finished) {
          // Finished before a restart: its result was checkpointed; never run it again.
          outcomes[index] = finished;
          return;
        }
        const decision = context?.approval?.decisions.find((taken) => taken.callId === call.callId);
        if (decision && !decision.approved) {
          outcomes[index] = deniedOutcome(call, decision.reason);
          return;
        }
        const attempt = (context?.started[call.callId] ?? 0) + 1;
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
          const runId = context?.runId ?? "standalone";
          const timeoutMs = tool?.timeoutMs ?? config?.toolTimeoutMs;
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
  );
}

/** The workflow context of the actor a worker answers, if it is one. */
function contextOf(parent: AnyActorRef | undefined): WorkflowContext | undefined {
  return (parent?.getSnapshot() as { context?: WorkflowContext } | undefined)?.context;
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
