/**
 * The shared front half of the loop (compact, fold, send, validate, rescue, retry nudges) for
 * callers that execute tools themselves, such as the proxy. It runs the same workflow machine
 * in inference-only mode: one code path, not a copy. The machine is built once; each call's
 * client and callbacks are bound to its own actor.
 */
import { assertMessages } from "../core/message-schema.ts";
import { type Message, MessageRole } from "../core/messages.ts";
import { assertReasoningReplay, type ReasoningReplay } from "../core/reasoning-replay.ts";
import { createObserverSet, type ObserverLogger, type RunObserver } from "../core/run-observer.ts";
import type { ToolSpec } from "../core/tools.ts";
import type { LLMClient, LLMResponse, StreamChunk, ToolCall } from "../core/types.ts";
import { DEFAULT_LIMITS } from "../guardrails/limits.ts";
import type { RepairToolCall } from "../guardrails/repair.ts";
import type { RetryNudge } from "../guardrails/response-validator.ts";
import type { HistoryCompactor, WorkflowMachineDeps, WorkflowOutput } from "../machines/workflow.machine.ts";
import { createWorkflowConfig } from "../machines/workflow-context.ts";
import type { TemplateCallFormat } from "../prompts/chat-template.ts";
import { BoundMachine, startActor } from "./bound-machine.ts";
import { errorFromOutput } from "./failure.ts";
import { followUpCalls } from "./follow-up.ts";

/** Options of `runInference`. */
export interface RunInferenceOptions {
  client: LLMClient;
  contextManager: HistoryCompactor;
  messages: Message[];
  tools: readonly ToolSpec[];
  /** Nudged retries allowed; the request makes at most `maxRetries + 1` LLM calls. */
  maxRetries?: number;
  rescueEnabled?: boolean;
  retryNudge?: RetryNudge;
  /** As `WorkflowRunnerOptions.repairToolCall`: asked before a nudge; its calls are validated too. */
  repairToolCall?: RepairToolCall;
  /** As `WorkflowRunnerOptions.forceToolChoiceOnRetry` (default true). */
  forceToolChoiceOnRetry?: boolean;
  /**
   * The prose policy (docs/decisions/024-prose-policy.md): a text answer that shows no sign of a
   * call attempt is accepted at once as a call of this tool (one of `tools`, taking `message`),
   * with no nudge. The proxy sets its `respond` when the client allows text (`tool_choice: auto`).
   * Absent (default): every text answer is nudged.
   */
  proseAnswerTool?: string;
  /**
   * How the model writes a call, read from its chat template (`callFormatFromTemplate`): the
   * rescue reads it before the built-in formats. Absent: the built-in formats only.
   */
  callFormat?: TemplateCallFormat | undefined;
  stream?: boolean;
  /** Which earlier reasoning blocks the request re-sends: `full` (default), `keep-last` or `none`. */
  reasoningReplay?: ReasoningReplay;
  onChunk?: (chunk: StreamChunk) => Promise<void> | void;
  onMessage?: (message: Message) => void;
  /**
   * Observers of this call's run: its states, appended messages, LLM calls and compactions (see
   * `RunObserver`; no tool runs here). One that throws never breaks the run.
   */
  observers?: readonly RunObserver[];
  /** Where an observer's first error is logged, one line. Default `console.warn`. */
  logger?: ObserverLogger;
  /**
   * Several calls in one answer (docs/decisions/026-parallel-follow-up.md): above 1, an accepted
   * batch that calls a tool (not only `proseAnswerTool`) is continued until the model adds no new
   * call or the batch holds this many, as the proxy's `followUpMaxCalls`. Default 1: no follow-up.
   */
  followUpMaxCalls?: number;
  signal?: AbortSignal;
}

/** A validated batch and the history that led to it (nudges included). */
export interface InferenceResult {
  toolCalls: ToolCall[];
  messages: Message[];
  /** LLM calls made, the follow-up's steps included. */
  iterations: number;
  /** What the follow-up did (`followUpMaxCalls` above 1 and a batch it continued); absent otherwise. */
  followUp?: { steps: number; added: number; opened: number };
}

// Built on first use, shared by every call.
let shared: BoundMachine | undefined;

/**
 * Get one valid batch of tool calls from the model, nudging and retrying as the runner does.
 * Throws `ToolCallError` (with the last raw output) when retries run out, `InvalidMessageError`
 * (before any call) when `messages` is not a history.
 */
export async function runInference(options: RunInferenceOptions): Promise<InferenceResult> {
  assertMessages(options.messages, "messages");
  const maxRetries = options.maxRetries ?? DEFAULT_LIMITS.maxRetriesPerStep;
  const followUpMaxCalls = options.followUpMaxCalls ?? 1;
  if (!Number.isInteger(followUpMaxCalls) || followUpMaxCalls < 1) {
    throw new RangeError(
      `runInference: followUpMaxCalls must be an integer of at least 1 (1 turns the follow-up off), got ${followUpMaxCalls}`,
    );
  }
  let actorError: unknown;
  const config = createWorkflowConfig({
    toolNames: options.tools.map((tool) => tool.name),
    maxIterations: maxRetries + 1,
    maxRetriesPerStep: maxRetries,
    rescueEnabled: options.rescueEnabled ?? true,
    stepEnforcement: false,
    inferenceOnly: true,
    forceToolChoiceOnRetry: options.forceToolChoiceOnRetry ?? true,
    ...(options.proseAnswerTool !== undefined && { proseAnswerTool: options.proseAnswerTool }),
    ...(options.callFormat && { callFormat: options.callFormat }),
  });
  // The follow-up continues the last answer from the history it was generated from.
  let lastWire: readonly Record<string, unknown>[] = [];
  let lastResponse: LLMResponse | null = null;
  const lastAnswer: RunObserver = {
    onLLMCallEnd: ({ messages, response }) => {
      if (response === null) return;
      lastWire = messages;
      lastResponse = response;
    },
  };
  const observers =
    followUpMaxCalls > 1 ? [lastAnswer, ...(options.observers ?? [])] : (options.observers ?? []);
  const observer = createObserverSet(observers, options.logger);
  const deps: WorkflowMachineDeps = {
    ...(observer && { observer }),
    client: options.client,
    contextManager: options.contextManager,
    toolSpecs: options.tools,
    stream: options.stream ?? false,
    ...(options.onChunk && { onChunk: options.onChunk }),
    ...(options.onMessage && { onMessage: options.onMessage }),
    ...(options.retryNudge !== undefined && { retryNudge: options.retryNudge }),
    ...(options.repairToolCall && { repairToolCall: options.repairToolCall }),
    ...(options.reasoningReplay !== undefined && {
      reasoningReplay: assertReasoningReplay("runInference", options.reasoningReplay),
    }),
    onActorError: (error) => (actorError = error),
  };
  options.contextManager.setTools?.(options.tools);
  shared ??= new BoundMachine();
  const actor = shared.createActor(deps, { input: { config, messages: options.messages } });
  let cancelSent = false;
  const cancel = () => {
    if (cancelSent) return;
    cancelSent = true;
    actor.send({ type: "workflow.cancel" });
  };
  options.signal?.addEventListener("abort", cancel, { once: true });
  try {
    const settled = startActor(actor);
    if (options.signal?.aborted) cancel();
    const output: WorkflowOutput = await settled;
    if (output.status === "responded" && output.toolCalls) {
      const result = { toolCalls: output.toolCalls, messages: output.messages, iterations: output.iteration };
      if (followUpMaxCalls === 1 || lastResponse === null) return result;
      if (!output.toolCalls.some((call) => call.tool !== options.proseAnswerTool)) return result;
      const followed = await followUpCalls({
        client: options.client,
        wire: lastWire,
        tools: options.tools,
        calls: output.toolCalls,
        answer: lastResponse,
        ...(options.proseAnswerTool !== undefined && { stopTools: [options.proseAnswerTool] }),
        maxCalls: followUpMaxCalls,
        request: lastUserText(options.messages),
        ...(options.callFormat && { callFormat: options.callFormat }),
        ...(options.signal && { signal: options.signal }),
      });
      const { steps, added, opened } = followed;
      return {
        ...result,
        toolCalls: followed.calls,
        iterations: result.iterations + steps,
        followUp: { steps, added, opened },
      };
    }
    throw errorFromOutput(output, actorError);
  } finally {
    options.signal?.removeEventListener("abort", cancel);
  }
}

/** The latest user message's text, which names the values the follow-up's calls may still need. */
function lastUserText(messages: readonly Message[]): string | undefined {
  return messages.findLast((message) => message.role === MessageRole.USER)?.content;
}
