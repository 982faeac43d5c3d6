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
import { RESPOND_TOOL_NAME, respondTool } from "../tools/respond.ts";
import { answerFromCalls, answerFromResponse, type ProxyAnswer } from "./answer.ts";
import type { ProxyBackend } from "./backend.ts";
import type { ProxyRequest } from "./proxy-request.ts";
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
  answer(request: ProxyRequest, signal: AbortSignal): Promise<ProxyAnswer>;
}

const RESPOND_SPEC: ToolSpec = respondTool().spec;
const NO_COMPACTION = { maybeCompact: (messages: Message[]) => messages };
const BUDGET_RETRY_MS = 60_000;

/** Build the service the routes call. */
export function createChatService(options: ChatServiceOptions): ChatService {
  const { backend, queue } = options;
  const budget = createBudgetSource(options);

  async function answerWithTools(request: ProxyRequest, signal: AbortSignal): Promise<ProxyAnswer> {
    const respondInjected = !request.tools.some((tool) => tool.name === RESPOND_TOOL_NAME);
    const tools = respondInjected ? [...request.tools, RESPOND_SPEC] : request.tools;
    const budgetTokens = await budget();
    const result = await runInference({
      client: backend.client({ model: request.model, extraBody: request.extraBody }),
      contextManager: budgetTokens
        ? new ContextManager({ strategy: new TieredCompact(), budgetTokens })
        : NO_COMPACTION,
      messages: request.messages,
      tools,
      maxRetries: options.maxRetries,
      rescueEnabled: options.rescueEnabled,
      signal,
    });
    return answerFromCalls(result.toolCalls, {
      model: modelName(request),
      respondInjected,
      idPrefix: request.callIdPrefix,
      prompt: request.messages,
    });
  }

  async function answerWithoutTools(request: ProxyRequest, signal: AbortSignal): Promise<ProxyAnswer> {
    const client = backend.client({ model: request.model, extraBody: request.extraBody });
    const budgetTokens = await budget();
    const messages = budgetTokens
      ? new ContextManager({ strategy: new TieredCompact(), budgetTokens }).maybeCompact(request.messages, 0)
      : request.messages;
    const response = await client.send(serializeHistory(messages, client.apiFormat), undefined, { signal });
    return answerFromResponse(response, {
      model: modelName(request),
      idPrefix: request.callIdPrefix,
      prompt: messages,
    });
  }

  return {
    answer(request, signal) {
      const job = () =>
        request.tools.length > 0 ? answerWithTools(request, signal) : answerWithoutTools(request, signal);
      return queue ? queue.run(job, signal) : job();
    },
  };
}

function modelName(request: ProxyRequest): string {
  return request.model ?? "default";
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
