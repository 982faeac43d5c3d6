/**
 * The proxy's per-request work, shared by the OpenAI and Anthropic routes: inject `respond`, run
 * the runner's front half (`runInference`: compaction, folding, send, validate, rescue, retry
 * nudges), and shape the validated batch into an answer.
 */

import { ContextManager, TieredCompact } from "../context/index.ts";
import type { Message } from "../core/messages.ts";
import { serializeHistory } from "../core/messages.ts";
import type { ToolSpec } from "../core/tools.ts";
import { runInference } from "../loop/inference.ts";
import type { HistoryCompactor } from "../machines/workflow.machine.ts";
import { RESPOND_TOOL_NAME, respondTool } from "../tools/respond.ts";
import { answerFromCalls, answerFromResponse, type ProxyAnswer } from "./answer.ts";
import type { ProxyBackend } from "./backend.ts";
import type { ProxyRequest } from "./proxy-request.ts";
import {
  CountingClient,
  countCompactions,
  createRequestStats,
  noteAppendedMessage,
  type RequestStats,
} from "./request-stats.ts";
import type { SerialQueue } from "./serial-queue.ts";

/** Options of `createChatService`. */
export interface ChatServiceOptions {
  backend: ProxyBackend;
  /** Nudged retries per request: at most `maxRetries + 1` LLM calls. */
  maxRetries: number;
  rescueEnabled: boolean;
  /** Context budget for compaction; when absent, the backend's context length (if it reports one). */
  budgetTokens?: number | undefined;
  /** One backend job at a time (single-slot backends). */
  queue?: SerialQueue | undefined;
}

/** Answers one request. */
export interface ChatService {
  /** Answer `request`, counting backend time, calls, rescues, nudges and compactions in `stats`. */
  answer(request: ProxyRequest, signal: AbortSignal, stats?: RequestStats): Promise<ProxyAnswer>;
}

const RESPOND_SPEC: ToolSpec = respondTool().spec;
const NO_COMPACTION = { maybeCompact: (messages: Message[]) => messages };
const BUDGET_RETRY_MS = 60_000;

/** Build the service the routes call. */
export function createChatService(options: ChatServiceOptions): ChatService {
  const { backend, queue } = options;
  const budget = createBudgetSource(options);
  const compactorFor = createCompactorCache();

  async function answerWithTools(
    request: ProxyRequest,
    signal: AbortSignal,
    stats: RequestStats,
  ): Promise<ProxyAnswer> {
    const respondInjected = !request.tools.some((tool) => tool.name === RESPOND_TOOL_NAME);
    const tools = respondInjected ? [...request.tools, RESPOND_SPEC] : request.tools;
    const budgetTokens = await budget();
    const client = new CountingClient(
      backend.client({ model: request.model, extraBody: request.extraBody }),
      stats,
    );
    const result = await runInference({
      client,
      contextManager: countCompactions(compactorFor(budgetTokens), stats),
      messages: request.messages,
      tools,
      maxRetries: options.maxRetries,
      rescueEnabled: options.rescueEnabled,
      onMessage: (message) => noteAppendedMessage(stats, message),
      signal,
    });
    // A batch accepted from a text answer is one the rescue parsed out of the text.
    if (client.lastAnswerWasText) stats.rescues += 1;
    return answerFromCalls(result.toolCalls, {
      model: modelName(request),
      respondInjected,
      idPrefix: request.callIdPrefix,
      prompt: request.messages,
    });
  }

  async function answerWithoutTools(
    request: ProxyRequest,
    signal: AbortSignal,
    stats: RequestStats,
  ): Promise<ProxyAnswer> {
    const client = new CountingClient(
      backend.client({ model: request.model, extraBody: request.extraBody }),
      stats,
    );
    const budgetTokens = await budget();
    const messages = countCompactions(compactorFor(budgetTokens), stats).maybeCompact(request.messages, 0);
    const response = await client.send(serializeHistory(messages, client.apiFormat), undefined, { signal });
    return answerFromResponse(response, {
      model: modelName(request),
      idPrefix: request.callIdPrefix,
      prompt: messages,
    });
  }

  return {
    answer(request, signal, stats = createRequestStats()) {
      stats.model = request.model;
      const answer = request.tools.length > 0 ? answerWithTools : answerWithoutTools;
      const run = () => answer(request, signal, stats);
      return queue ? queue.run(run, signal) : run();
    },
  };
}

function modelName(request: ProxyRequest): string {
  return request.model ?? "default";
}

/**
 * One context manager per budget, shared by all requests: `TieredCompact` keeps no state, and the
 * manager's token cache is per message object, so requests cannot see each other's histories.
 */
function createCompactorCache(): (budgetTokens: number | null) => HistoryCompactor {
  let current: { budgetTokens: number; manager: ContextManager } | undefined;
  return (budgetTokens) => {
    if (!budgetTokens) return NO_COMPACTION;
    if (current?.budgetTokens !== budgetTokens) {
      current = {
        budgetTokens,
        manager: new ContextManager({ strategy: new TieredCompact(), budgetTokens }),
      };
    }
    return current.manager;
  };
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
