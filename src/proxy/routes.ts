/**
 * The chat routes: OpenAI chat completions, OpenAI Responses and Anthropic Messages. Each parses
 * and validates its body, runs the shared chat service, and renders the answer as JSON or SSE in
 * its API's shape.
 */
import type { Context } from "hono";
import type { ProxyAnswer } from "./answer.ts";
import {
  countTokensRequestSchema,
  MessageStreamWriter,
  messagesRequestSchema,
  proxyRequestFromAnthropic,
  renderMessage,
  renderMessageStream,
  TOKEN_COUNT_HEADER,
  type TokenCounter,
} from "./anthropic/index.ts";
import type { ProxyBackend } from "./backend/index.ts";
import { forwardToBackend } from "./backend/index.ts";
import type { ChatService } from "./chat-service.ts";
import type { SerialGate } from "./http/index.ts";
import { parseBody, RequestDeadline, readBodyText } from "./http/index.ts";
import { answerLive } from "./live-response.ts";
import type { LiveText } from "./live-text.ts";
import {
  ChatCompletionStreamWriter,
  chatCompletionRequestSchema,
  openAIRequestHasTools,
  proxyRequestFromOpenAI,
  renderChatCompletion,
  renderChatCompletionStream,
} from "./openai/index.ts";
import type { ProxyRequest } from "./proxy-request.ts";
import { requestStatsOf } from "./request-stats.ts";
import {
  proxyRequestFromResponses,
  ResponseStreamWriter,
  renderResponse,
  renderResponseStream,
  responsesRequestSchema,
} from "./responses/index.ts";

/** What the route handlers need. */
export interface RouteDeps {
  backend: ProxyBackend;
  service: ChatService;
  serialGate: SerialGate | undefined;
  maxBodyBytes: number;
  /** Deepest nesting of arrays and objects accepted in a body (400 deeper). */
  maxJsonDepth: number;
  /** Total deadline of a request in milliseconds (0: none); 504 past it. */
  deadlineMs: number;
  /** Aborts (with a 503) when the proxy's drain deadline passes on shutdown (`ProxyDrain.expired`). */
  drainSignal?: AbortSignal | undefined;
  /** Where a route reports what it left out of a request (a tool type it cannot serve). */
  warn: (line: string) => void;
  /** Counts a request's prompt for `count_tokens`. */
  countTokens: TokenCounter;
}

/** Skipped tool types reported per proxy, at most: the first ones a client names. */
const MAX_REPORTED_TOOL_TYPES = 64;

/** Set on an answer whose guardrail gave up: the model kept answering prose after the nudges. */
export const GUARDRAIL_HEADER = "x-forge-guardrail";

const SSE_HEADERS = { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" };

/**
 * `POST /v1/chat/completions`. With tools, the guardrail path; without (or `tool_choice: "none"`)
 * there is nothing to guard and an OpenAI-compatible backend gets the body untouched.
 */
export function openAIChatHandler(deps: RouteDeps) {
  return async (c: Context): Promise<Response> => {
    const body = parseBody(
      await readBodyText(c, deps.maxBodyBytes),
      chatCompletionRequestSchema,
      deps.maxJsonDepth,
    );
    const deadline = new RequestDeadline(c.req.raw.signal, deps.deadlineMs, deps.drainSignal);
    if (!openAIRequestHasTools(body.value) && deps.backend.format === "openai") {
      const stats = requestStatsOf(c);
      stats.model = body.value.model;
      return forwardToBackend(
        deps.backend,
        { method: "POST", path: "/v1/chat/completions", body: body.text },
        deps.serialGate,
        deadline,
        stats,
      );
    }
    // The guarded path never needs the body's text again: let it go before the request runs.
    const request = proxyRequestFromOpenAI(takeValue(body));
    if (request.stream) {
      // The live answer runs under a deadline of its own, which follows its stream too.
      deadline.stop();
      const includeUsage = request.includeUsage;
      return answerLive({
        ...liveOptions(c, deps, request),
        writer: new ChatCompletionStreamWriter(request.model ?? DEFAULT_MODEL, { includeUsage }),
        whole: (answer) =>
          new Response(renderChatCompletionStream(answer, { includeUsage }), {
            headers: { ...SSE_HEADERS, ...guardrailHeaders(answer) },
          }),
      });
    }
    const answer = await deadline.run((signal) => deps.service.answer(request, signal, requestStatsOf(c)));
    return c.json(renderChatCompletion(answer), 200, guardrailHeaders(answer));
  };
}

/** `POST /v1/messages`: Anthropic Messages in, Anthropic Messages out, an OpenAI-compatible backend behind. */
export function anthropicMessagesHandler(deps: RouteDeps) {
  return async (c: Context): Promise<Response> => {
    const request = proxyRequestFromAnthropic(
      parseBody(await readBodyText(c, deps.maxBodyBytes), messagesRequestSchema, deps.maxJsonDepth).value,
    );
    if (request.stream) {
      return answerLive({
        ...liveOptions(c, deps, request),
        writer: new MessageStreamWriter(request.model ?? DEFAULT_MODEL, 0),
        whole: (answer) =>
          new Response(renderMessageStream(answer), {
            headers: { ...SSE_HEADERS, ...guardrailHeaders(answer) },
          }),
      });
    }
    const deadline = new RequestDeadline(c.req.raw.signal, deps.deadlineMs, deps.drainSignal);
    const answer = await deadline.run((signal) => deps.service.answer(request, signal, requestStatsOf(c)));
    return c.json(renderMessage(answer), 200, guardrailHeaders(answer));
  };
}

/**
 * `POST /v1/responses`: OpenAI Responses in, Responses out, always through the guarded path (the
 * backend speaks chat completions). Stateless: a `previous_response_id` is a 400. A tool type the
 * loop cannot serve is skipped, reported once per proxy and type.
 */
export function openAIResponsesHandler(deps: RouteDeps) {
  const reported = new Set<string>();
  return async (c: Context): Promise<Response> => {
    const body = parseBody(
      await readBodyText(c, deps.maxBodyBytes),
      responsesRequestSchema,
      deps.maxJsonDepth,
    );
    const { request, echo, skippedTools } = proxyRequestFromResponses(takeValue(body));
    for (const type of skippedTools) {
      // The types are the client's words: a bounded set, quoted in the line.
      if (reported.has(type) || reported.size >= MAX_REPORTED_TOOL_TYPES) continue;
      reported.add(type);
      deps.warn(
        `forge proxy: /v1/responses skips tools of type ${JSON.stringify(type)}: the proxy serves function tools only, the model will not see them`,
      );
    }
    if (request.stream) {
      return answerLive({
        ...liveOptions(c, deps, request),
        writer: new ResponseStreamWriter(request.model ?? DEFAULT_MODEL, echo),
        whole: (answer) =>
          new Response(renderResponseStream(answer, echo), {
            headers: { ...SSE_HEADERS, ...guardrailHeaders(answer) },
          }),
      });
    }
    const deadline = new RequestDeadline(c.req.raw.signal, deps.deadlineMs, deps.drainSignal);
    const answer = await deadline.run((signal) => deps.service.answer(request, signal, requestStatsOf(c)));
    return c.json(renderResponse(answer, echo), 200, guardrailHeaders(answer));
  };
}

/**
 * `POST /v1/messages/count_tokens`: `{ input_tokens }` of the prompt the backend would get,
 * exact through its tokenizer or estimated, as `x-forge-token-count` says.
 */
export function anthropicCountTokensHandler(deps: RouteDeps) {
  return async (c: Context): Promise<Response> => {
    const request = proxyRequestFromAnthropic(
      parseBody(await readBodyText(c, deps.maxBodyBytes), countTokensRequestSchema, deps.maxJsonDepth).value,
    );
    requestStatsOf(c).model = request.model;
    const deadline = new RequestDeadline(c.req.raw.signal, deps.deadlineMs, deps.drainSignal);
    const count = await deadline.run((signal) => deps.countTokens(request, signal));
    return c.json({ input_tokens: count.inputTokens }, 200, {
      [TOKEN_COUNT_HEADER]: count.exact ? "exact" : "estimate",
    });
  };
}

/** The model an answer names when the client named none (as the chat service's answers do). */
const DEFAULT_MODEL = "default";

/** What every dialect's live answer shares: the request, its signal and deadline, SSE headers. */
function liveOptions(c: Context, deps: RouteDeps, request: ProxyRequest) {
  return {
    clientSignal: c.req.raw.signal,
    deadlineMs: deps.deadlineMs,
    drainSignal: deps.drainSignal,
    run: (signal: AbortSignal, live: LiveText) =>
      deps.service.answer(request, signal, requestStatsOf(c), live),
    headers: SSE_HEADERS,
  };
}

function guardrailHeaders(answer: ProxyAnswer): Record<string, string> {
  return answer.gaveUp ? { [GUARDRAIL_HEADER]: "gave-up" } : {};
}

/** The parsed value of a body whose text is dropped: a large body's text is garbage from here on. */
function takeValue<T>(body: { text: string; value: T }): T {
  body.text = "";
  return body.value;
}
