/**
 * The proxy's per-request work, shared by the OpenAI and Anthropic routes: inject `respond`, count
 * the prompt (exactly when the backend has a tokenizer), run the runner's front half
 * (`runInference`: compaction, folding, send, validate, rescue, retry nudges), and shape the
 * validated batch into an answer; or, when the tries ran out, the model's prose (the client allowing
 * text) or `retries_exhausted`.
 */

import { ContextManager, TieredCompact } from "../context/index.ts";
import type { Message } from "../core/messages.ts";
import { serializeHistory } from "../core/messages.ts";
import { applyReasoningReplay, type ReasoningReplay } from "../core/reasoning-replay.ts";
import { createObserverSet, observeLLMCall } from "../core/run-observer.ts";
import { type ToolSpec, toOpenAITool } from "../core/tools.ts";
import type { LLMClient, LLMResponse, ToolCall } from "../core/types.ts";
import type { RetryBounds } from "../guardrails/bounded-retry.ts";
import type { CallLoopRules } from "../guardrails/call-loop.ts";
import { groundingEvidence, isInventedCall } from "../guardrails/grounding.ts";
import { checkPermission, type PermissionPolicy } from "../guardrails/permission-policy.ts";
import type { RepairToolCall } from "../guardrails/repair.ts";
import type { ToolNarrowingRules } from "../guardrails/tool-narrowing.ts";
import { followUpCalls } from "../loop/follow-up.ts";
import { type InferenceResult, runInference } from "../loop/inference.ts";
import type { HistoryCompactor } from "../machines/workflow.machine.ts";
import type { TemplateCallFormat } from "../prompts/chat-template.ts";
import { rescueWithNames } from "../prompts/rescue/index.ts";
import { RESPOND_TOOL_NAME, respondTool } from "../tools/respond.ts";
import { answerFromCalls, answerFromResponse, type ProxyAnswer } from "./answer.ts";
import type { ProxyBackend } from "./backend/index.ts";
import { withRetryBounds } from "./bounded-client.ts";
import { callStartProbability, hasFirstTokens, LastPromptClient, opensWithCall } from "./call-confidence.ts";
import { allowsTextAnswer, exhaustionOf } from "./exhaustion.ts";
import type { SerialGate } from "./http/index.ts";
import { type LiveText, LiveTextClient } from "./live-text.ts";
import { withLoopGuard } from "./loop-guard.ts";
import { inferWithPolicy, placesOf } from "./permission-gate.ts";
import { askedReplyTokens, createExactCounter, PromptLimitedClient, replyReserve } from "./prompt-limit.ts";
import type { ProxyRequest } from "./proxy-request.ts";
import { createRequestStats, observeRequestStats, type RequestStats } from "./request-stats.ts";
import { ThinkCallClient } from "./think-calls.ts";
import { withoutRespondUpstream, withToolNarrowing } from "./tool-narrowing.ts";

/** Options of `createChatService`. */
export interface ChatServiceOptions {
  backend: ProxyBackend;
  /** Nudged retries per request: at most `maxRetries + 1` LLM calls. */
  maxRetries: number;
  rescueEnabled: boolean;
  /** Asked before a nudge to repair a response (`runInference`'s `repairToolCall`). */
  repairToolCall?: RepairToolCall | undefined;
  /** Default true: the retry after a prose answer asks for a tool call. */
  forceToolChoiceOnRetry?: boolean | undefined;
  /**
   * `answer` (default): under `tool_choice: auto`, a text answer with no sign of a call attempt is
   * the answer at once (docs/decisions/024-prose-policy.md); `nudge`: every text answer is nudged.
   */
  prosePolicy?: ProsePolicy | undefined;
  /**
   * Most calls the parallel follow-up may bring an answer to (docs/decisions/026-parallel-follow-up.md):
   * after an answer with calls, the model continues its own turn until it adds no new call.
   * Default 1: off (it costs a backend call per answer with calls); 8 is what BFCL's parallel
   * categories were measured with. Never with `parallel_tool_calls: false` or a forced tool.
   */
  followUpMaxCalls?: number | undefined;
  /** Which earlier reasoning blocks (the client's `reasoning_content` / thinking) go upstream; default `none`. */
  reasoningReplay?: ReasoningReplay | undefined;
  /** How the backend's model writes a call, read from its chat template (`ProxyOptions.callFormat`). */
  callFormat?: TemplateCallFormat | null | undefined;
  /**
   * The context window compaction works in; when absent, the backend's context length (if it
   * reports one). Each request's prompt limit is this less the reply's reserve (`replyReserve`);
   * the reply's `max_tokens` is clamped to what the prompt leaves of it.
   */
  budgetTokens?: number | undefined;
  /** One backend job at a time (single-slot backends). */
  serialGate?: SerialGate | undefined;
  /** The call-loop guard's rules (ADR 020); absent: off. */
  loopGuard?: CallLoopRules | undefined;
  /** The permission policy (ADR 021); absent: every call is allowed. */
  permissions?: PermissionPolicy | undefined;
  /** Bounds on retries and degenerate repetition (ADR 022); absent: none. */
  retryBounds?: RetryBounds | undefined;
  /**
   * Read the call a text answer ends its unclosed `<think>` with (ADR 027); default false: the
   * reasoning is dropped, calls in it too.
   */
  thinkCalls?: boolean | undefined;
  /** Send at most `maxTools` of a request's tools, the most relevant, plus `alwaysOffer` (ADR 028); absent: all. */
  narrowing?: ToolNarrowingRules | undefined;
  /**
   * The call-confidence gate (ADR 040): under `tool_choice: auto`, a call rescued from the text of a
   * request's first answer is taken only when the model was at least this likely to open its
   * answer with a call; otherwise the request is answered in text. Absent: off. Needs a backend
   * whose client reports first-token probabilities (`createProxy` checks).
   */
  callConfidence?: number | undefined;
  /**
   * Decline invented calls (ADR 041): under `tool_choice: auto`, a request's first answer whose
   * rescued calls have argument values and none of them appears in what the user, the system
   * prompt or a tool result said is answered in text. Default false.
   */
  groundedCalls?: boolean | undefined;
  /**
   * Whether the proxy's `respond` goes upstream where the prose policy takes a text answer
   * (`tool_choice: auto` or none, `prosePolicy: "answer"`). Default true; false sends the client's
   * tools alone there (docs/decisions/042-respond-upstream.md).
   */
  respondUpstream?: boolean | undefined;
  /** Where a one-time warning goes (a backend that reports no logprobs); default `console.warn`. */
  warn?: ((line: string) => void) | undefined;
}

/** What the proxy does with a text answer under `tool_choice: auto` (see `ChatServiceOptions.prosePolicy`). */
export type ProsePolicy = "answer" | "nudge";

/** Answers one request. */
export interface ChatService {
  /**
   * Answer `request`, counting backend time, calls, rescues, nudges and compactions in `stats`.
   * With `live`, the model's text goes to it as it is generated, as far as ADR 014 allows; the
   * answer's `content` then starts with everything `live` got.
   */
  answer(
    request: ProxyRequest,
    signal: AbortSignal,
    stats?: RequestStats,
    live?: LiveText,
  ): Promise<ProxyAnswer>;
}

/** One request's compactor and the client that enforces its prompt limit. */
interface RequestContext {
  compactor: HistoryCompactor;
  client: LLMClient;
  /** The backend's own client keeping the last prompt, when the call-confidence gate is on. */
  lastPrompt: LastPromptClient | undefined;
}

const RESPOND_SPEC: ToolSpec = respondTool().spec;
const NO_COMPACTION = { maybeCompact: (messages: Message[]) => messages };
const BUDGET_RETRY_MS = 60_000;

/** Build the service the routes call. */
export function createChatService(options: ChatServiceOptions): ChatService {
  const { backend, serialGate } = options;
  const callFormat = options.callFormat ?? undefined;
  const budget = createBudgetSource(options);
  const counter = createExactCounter(backend.tokenizer?.());

  /**
   * The request's compactor and client: a ContextManager over the prompt limit (window less the
   * reply's reserve) that counts the tools and starts from the exact count of the request's
   * prompt when the backend can count it; the client refuses a prompt over the limit (exact
   * counts only), as `ContextBudgetExceeded`.
   */
  async function prepare(
    request: ProxyRequest,
    tools: readonly ToolSpec[],
    signal: AbortSignal,
    stats: RequestStats,
  ): Promise<RequestContext> {
    const own = backend.client({ model: request.model, extraBody: request.extraBody });
    const lastPrompt =
      options.callConfidence !== undefined && tools.length > 0 && hasFirstTokens(own)
        ? new LastPromptClient(own)
        : undefined;
    const backendClient = withRetryBounds(lastPrompt ?? own, options.retryBounds, request.extraBody, stats);
    const windowTokens = await budget();
    if (!windowTokens) return { compactor: NO_COMPACTION, client: backendClient, lastPrompt };
    const reserve = replyReserve(request.extraBody, windowTokens);
    const promptLimit = Math.max(1, windowTokens - reserve);
    // Each request is compacted on its own, so a target under the threshold would only cut more.
    const manager = new ContextManager({
      strategy: new TieredCompact(),
      budgetTokens: promptLimit,
      compactTarget: 0.75,
      tools,
    });
    // A prompt too short to reach the trigger even at one token per byte needs no exact count.
    const wire = counter.enabled ? serializeHistory(request.messages, "openai") : null;
    const fits = wire !== null && promptBytesBound(wire, tools) <= manager.triggerTokens;
    const exact = wire === null || fits ? null : await counter.count(wire, tools, signal);
    if (exact !== null) manager.observeUsage(request.messages, exact);
    // The counted prompt goes out as it was when nothing compacted it: no need to count it again.
    const compactionsBefore = stats.compactions;
    const firstCount = () => {
      if (stats.compactions !== compactionsBefore) return null;
      if (fits) return { tokens: null };
      return exact !== null && exact <= promptLimit ? { tokens: exact } : null;
    };
    const limits = { promptLimit, windowTokens, reserve, askedReply: askedReplyTokens(request.extraBody) };
    const client = new PromptLimitedClient(backendClient, counter, limits, firstCount);
    return { compactor: manager, client, lastPrompt };
  }

  async function answerWithTools(
    request: ProxyRequest,
    signal: AbortSignal,
    stats: RequestStats,
    live: LiveText | undefined,
  ): Promise<ProxyAnswer> {
    const respondInjected = !request.tools.some((tool) => tool.name === RESPOND_TOOL_NAME);
    const tools = respondInjected ? [...request.tools, RESPOND_SPEC] : request.tools;
    const prepared = await prepare(request, tools, signal, stats);
    const { compactor } = prepared;
    const proseAllowed =
      respondInjected &&
      allowsTextAnswer(request.extraBody) &&
      (options.prosePolicy ?? "answer") === "answer";
    // Narrowing changes only what goes upstream; the loop validates against `tools`, all of them.
    const narrowed = withToolNarrowing(prepared.client, request, options.narrowing, stats);
    // Where a text answer is taken as it is, the model answers in text without `respond` (ADR 042).
    const offered =
      proseAllowed && options.respondUpstream === false ? withoutRespondUpstream(narrowed) : narrowed;
    const thinking = options.thinkCalls ? new ThinkCallClient(offered, tools) : undefined;
    const requestClient = thinking ?? offered;
    const counting = observeRequestStats(stats);
    let lastWire: readonly Record<string, unknown>[] = [];
    let sends = 0;
    const wireSeen = {
      onLLMCallStart: ({ messages }: { messages: readonly Record<string, unknown>[] }) => {
        lastWire = messages;
        sends += 1;
      },
    };
    // Text goes out live only where it may be the answer: the proxy's own respond, text allowed.
    const liveClient =
      live && respondInjected && allowsTextAnswer(request.extraBody)
        ? new LiveTextClient(requestClient, {
            toolNames: tools.map((tool) => tool.name),
            respondName: RESPOND_TOOL_NAME,
            rescueEnabled: options.rescueEnabled,
            ...(callFormat && { callFormat }),
            sink: live,
          })
        : undefined;
    const client = liveClient ?? requestClient;
    const sent = () => liveClient?.sent ?? "";
    let result: InferenceResult;
    try {
      const permitted = await inferWithPolicy(options.permissions, {
        messages: request.messages,
        maxRetries: options.maxRetries,
        alwaysAllowed: respondInjected ? [RESPOND_TOOL_NAME] : [],
        stats,
        infer: (messages, maxRetries) =>
          runInference({
            client,
            stream: live !== undefined,
            contextManager: compactor,
            messages,
            tools,
            maxRetries,
            rescueEnabled: options.rescueEnabled,
            ...(options.repairToolCall && { repairToolCall: options.repairToolCall }),
            ...(options.forceToolChoiceOnRetry !== undefined && {
              forceToolChoiceOnRetry: options.forceToolChoiceOnRetry,
            }),
            ...(proseAllowed && { proseAnswerTool: RESPOND_TOOL_NAME }),
            ...(callFormat && { callFormat }),
            observers: stats.runObserver ? [counting, wireSeen, stats.runObserver] : [counting, wireSeen],
            signal,
          }),
      });
      if (permitted.kind === "refused") {
        const refusal = {
          model: modelName(request),
          idPrefix: request.callIdPrefix,
          prompt: request.messages,
        };
        return withSentText(answerFromResponse({ content: permitted.message }, refusal), sent());
      }
      result = permitted.result;
    } catch (error) {
      const exhausted = exhaustionOf(error, counting.lastResponse);
      if (exhausted === null) throw error;
      // Prose after every nudge is the model's answer when the client lets it answer in text
      // (an empty text is no answer).
      const prose = counting.lastAnswerWasText ? (exhausted.rawResponse ?? "") : "";
      if (prose.trim().length === 0 || !allowsTextAnswer(request.extraBody)) throw exhausted;
      stats.gaveUp = true;
      const answer = answerFromResponse(
        { content: prose },
        { model: modelName(request), idPrefix: request.callIdPrefix, prompt: request.messages },
      );
      return withSentText({ ...answer, gaveUp: true }, sent());
    }
    const last = counting.lastResponse;
    if (thinking?.lastWasThinkCall) stats.thinkCalls += 1;
    const prose = proseAllowed && isProseAnswer(result.toolCalls, last);
    // A first answer that opens with a call the model was unlikely to write is declined (ADR 040).
    const gated =
      proseAllowed &&
      !prose &&
      sends === 1 &&
      last !== null &&
      !Array.isArray(last) &&
      result.toolCalls.some((call) => call.tool !== RESPOND_TOOL_NAME);
    // A declined first answer: its calls are counted, and the request is answered in text.
    const decline = async () => {
      stats.declinedCalls += result.toolCalls.length;
      return withSentText(await answerWithoutTools({ ...request, tools: [] }, signal, stats), sent());
    };
    // …and so is one whose calls hold only values the conversation never mentioned (ADR 041).
    if (gated && options.groundedCalls && isInventedAnswer(result.toolCalls, tools, request.messages)) {
      stats.ungroundedCalls += result.toolCalls.length;
      return decline();
    }
    if (gated && prepared.lastPrompt && opensWithCall(last.content, callFormat)) {
      // Asked of the client's own prompt: a `respond` call the proxy offered opens like any other.
      const without = respondInjected ? [RESPOND_TOOL_NAME] : [];
      const confidence = await callConfidenceOf(prepared.lastPrompt, last.content, without, signal, stats);
      if (confidence !== null) stats.callConfidence = confidence;
      if (confidence !== null && confidence < (options.callConfidence ?? 0)) return decline();
    }
    if (prose) stats.proseAnswers += 1;
    // A batch accepted from a text answer is one the rescue parsed out of the text (text that
    // went out live and became the answer, or that the prose policy took, was no rescue).
    else if (counting.lastAnswerWasText && !liveClient?.committedProse) stats.rescues += 1;
    stats.renamedTools += renamedCalls(last, tools, callFormat);
    let calls = result.toolCalls;
    const maxCalls = options.followUpMaxCalls ?? 1;
    if (!prose && last !== null && maxCalls > 1 && allowsFollowUp(request.extraBody, calls)) {
      const started = performance.now();
      const followed = await followUpCalls({
        client: requestClient,
        wire: lastWire,
        tools,
        calls,
        answer: last,
        stopTools: [RESPOND_TOOL_NAME],
        maxCalls,
        request: request.messages.findLast((message) => message.role === "user")?.content,
        ...(callFormat && { callFormat }),
        signal,
      });
      // Its steps are backend calls like any other (the access log's `retries`, `backend_ms`).
      stats.backendCalls += followed.steps;
      stats.backendMs += performance.now() - started;
      // A call the follow-up adds is held to the permission policy like the first ones: a denied one is dropped.
      const policy = options.permissions;
      const added = followed.calls
        .slice(calls.length)
        .filter((call) => !policy || checkPermission(call, policy, placesOf(policy)).allowed);
      stats.followUpCalls += added.length;
      calls = [...calls, ...added];
    }
    const answer = answerFromCalls(calls, {
      model: modelName(request),
      respondInjected,
      idPrefix: request.callIdPrefix,
      prompt: request.messages,
    });
    return withSentText(answer, sent());
  }

  let warnedNoLogprobs = false;

  /** The model's probability of opening its answer with a call; null when the backend reports no logprobs (said once). */
  async function callConfidenceOf(
    lastPrompt: LastPromptClient,
    answer: string,
    without: readonly string[],
    signal: AbortSignal,
    stats: RequestStats,
  ): Promise<number | null> {
    const started = performance.now();
    const choices = await lastPrompt.lastPromptFirstTokens(signal, without);
    stats.backendCalls += 1;
    stats.backendMs += performance.now() - started;
    if (choices === null) {
      if (!warnedNoLogprobs) {
        warnedNoLogprobs = true;
        (options.warn ?? console.warn)(
          "forge proxy: the backend answered without logprobs, so the call-confidence gate (--call-confidence) cannot judge; rescued calls are taken as they are. Use a backend that reports logprobs (llama-server, vLLM), or turn the gate off.",
        );
      }
      return null;
    }
    return callStartProbability(choices, answer, callFormat);
  }

  async function answerWithoutTools(
    request: ProxyRequest,
    signal: AbortSignal,
    stats: RequestStats,
  ): Promise<ProxyAnswer> {
    const { compactor, client } = await prepare(request, [], signal, stats);
    // No loop runs here: the one compaction and the one call are told to the same observer by hand.
    const observer = createObserverSet(
      stats.runObserver ? [observeRequestStats(stats), stats.runObserver] : [observeRequestStats(stats)],
    );
    const position = { runId: "proxy", iteration: 1 };
    const messages = compactor.maybeCompact(request.messages, 0);
    if (messages !== request.messages) {
      observer?.onCompaction({ ...position, before: request.messages, after: messages });
    }
    const wire = serializeHistory(messages, client.apiFormat);
    const response = await observeLLMCall(
      observer,
      (sendOptions) => client.send(wire, undefined, sendOptions),
      { signal },
      { ...position, messages: wire, tools: undefined },
    );
    return answerFromResponse(response, {
      model: modelName(request),
      idPrefix: request.callIdPrefix,
      prompt: messages,
    });
  }

  return {
    answer(incoming, signal, stats = createRequestStats(), live) {
      // The reasoning clients hand back goes upstream only as the policy says: counted, compacted
      // and sent alike, with or without tools.
      const messages = applyReasoningReplay(incoming.messages, options.reasoningReplay ?? "none");
      const request = messages === incoming.messages ? incoming : { ...incoming, messages: [...messages] };
      stats.model = request.model;
      stats.omittedImages += request.omittedImages ?? 0;
      // The call-loop guard may change the request, or answer it itself (ADR 020).
      const run = () =>
        withLoopGuard(request, options.loopGuard, stats, (guarded) =>
          guarded.tools.length > 0
            ? answerWithTools(guarded, signal, stats, live)
            : answerWithoutTools(guarded, signal, stats),
        );
      return serialGate ? serialGate.run(run, signal) : run();
    },
  };
}

/**
 * The answer whose text starts with what already went out live: text sent before a call the
 * rescue read (or before a retry) stays the beginning of the answer.
 */
function withSentText(answer: ProxyAnswer, sent: string): ProxyAnswer {
  if (sent.length === 0 || answer.content.startsWith(sent)) return answer;
  const content = answer.content.length > 0 ? `${sent}\n\n${answer.content}` : sent;
  return { ...answer, content };
}

/**
 * Whether the follow-up may add calls: the answer calls a client tool (not only `respond`), and the
 * client neither forbids parallel calls nor forces one named tool.
 */
function allowsFollowUp(extraBody: Record<string, unknown>, calls: readonly ToolCall[]): boolean {
  if (extraBody.parallel_tool_calls === false) return false;
  const choice = extraBody.tool_choice;
  if (choice !== undefined && choice !== "auto" && choice !== "required") return false;
  return calls.some((call) => call.tool !== RESPOND_TOOL_NAME);
}

/** Whether the accepted batch is the prose policy's: one `respond` call carrying the whole text answer. */
function isProseAnswer(calls: readonly ToolCall[], last: LLMResponse | null): boolean {
  const only = calls.length === 1 ? calls[0] : undefined;
  return (
    only?.tool === RESPOND_TOOL_NAME &&
    last !== null &&
    !Array.isArray(last) &&
    only.args.message === last.content
  );
}

/** How many calls of the accepted answer named a tool only nearly (`resolveToolName`). */
function renamedCalls(
  last: LLMResponse | null,
  tools: readonly ToolSpec[],
  callFormat: TemplateCallFormat | undefined,
): number {
  if (last === null) return 0;
  const names = tools.map((tool) => tool.name);
  if (!Array.isArray(last)) return rescueWithNames(last.content, names, { callFormat })?.renamed ?? 0;
  return last.filter((call) => !names.includes(call.tool)).length;
}

function modelName(request: ProxyRequest): string {
  return request.model ?? "default";
}

/** Characters a chat template may add around the messages and tools (role headers, tool preamble). */
const TEMPLATE_ALLOWANCE_CHARS = 1024;
const PER_MESSAGE_ALLOWANCE_CHARS = 16;

/**
 * An upper bound of a prompt's tokens: a byte-level tokenizer never makes a token of less than one
 * byte, so the UTF-8 bytes of the messages' and tools' JSON, plus what a template adds, bound it.
 */
function promptBytesBound(wire: readonly Record<string, unknown>[], tools: readonly ToolSpec[]): number {
  const json = JSON.stringify({ messages: wire, tools: tools.map(toOpenAITool) });
  return Buffer.byteLength(json) + TEMPLATE_ALLOWANCE_CHARS + PER_MESSAGE_ALLOWANCE_CHARS * wire.length;
}

/** The compaction budget: explicit, or discovered from the backend once (retried while unknown). */
function createBudgetSource(options: ChatServiceOptions): () => Promise<number | null> {
  if (options.budgetTokens !== undefined) {
    const fixed = Promise.resolve(options.budgetTokens);
    return () => fixed;
  }
  let known: Promise<number | null> | undefined;
  let checkedAt = 0;
  return () => {
    if (!known || (Date.now() - checkedAt > BUDGET_RETRY_MS && known === UNKNOWN)) {
      checkedAt = Date.now();
      known = options.backend.contextLength().then(
        (length) => (length && length > 0 ? length : null),
        () => null,
      );
      const pending = known;
      void pending.then((length) => {
        if (length === null && known === pending) known = UNKNOWN;
      });
    }
    return known;
  };
}

const UNKNOWN: Promise<number | null> = Promise.resolve(null);

/** Every call but `respond` invented (see `isInventedCall`), and at least one such call. */
function isInventedAnswer(
  calls: readonly ToolCall[],
  tools: readonly ToolSpec[],
  messages: readonly Message[],
): boolean {
  const asked = calls.filter((call) => call.tool !== RESPOND_TOOL_NAME);
  if (asked.length === 0) return false;
  const evidence = groundingEvidence(messages);
  return asked.every((call) =>
    isInventedCall(
      call,
      tools.find((tool) => tool.name === call.tool),
      evidence,
    ),
  );
}
