/**
 * The workflow machine's LLM-call worker: invoked once for the whole run and sent one request per
 * iteration (see request-worker.ts). It serializes the history for the client, takes the
 * checkpoint before the call, streams or sends, and hands the answer (repaired by the user's hook,
 * if any) back to the machine.
 */
import type { AnyActorRef } from "xstate";
import { InvalidResponseError, StreamError, WorkflowDefinitionError } from "../core/errors.ts";
import { HistorySerializer } from "../core/history-serializer.ts";
import { type ApiFormat, type Message, serializeHistory } from "../core/messages.ts";
import { applyReasoningReplay, type ReasoningReplay } from "../core/reasoning-replay.ts";
import { type ObserverSet, observeLLMCall } from "../core/run-observer.ts";
import type { ToolSpec } from "../core/tools.ts";
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
import { type CheckpointHook, checkpointOf, type DepsSource, resolveDeps } from "./actor-deps.ts";
import { fromRequests } from "./request-worker.ts";
import type { WorkflowContext } from "./workflow-context.ts";

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
      await checkpointOf(deps.checkpoint, parent, {
        reason: "inference",
        runId: context?.runId ?? "standalone",
        iteration: context?.iteration ?? 0,
      });
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
      const call = (sendOptions: SendOptions) =>
        deps.stream
          ? collectStream(client.sendStream(messages, tools, sendOptions), deps.onChunk, signal)
          : client.send(messages, tools, sendOptions);
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
        ...(context?.config.callFormat && { callFormat: context.config.callFormat }),
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
