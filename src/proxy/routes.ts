/**
 * The chat routes: OpenAI chat completions, OpenAI Responses and Anthropic Messages, each a
 * `Dialect` (ADR 029) served by one handler: parse and validate the body, convert it, run the
 * shared chat service, render the answer as JSON or SSE in the dialect's shape.
 */
import type { Context } from "hono";
import type { ProxyAnswer } from "./answer.ts";
import {
  convertAnthropic,
  countTokensRequestSchema,
  TOKEN_COUNT_HEADER,
  type TokenCounter,
} from "./anthropic/index.ts";
import type { ProxyBackend } from "./backend/index.ts";
import { forwardToBackend } from "./backend/index.ts";
import type { ChatService } from "./chat-service.ts";
import { type Dialect, renderStream } from "./dialect.ts";
import type { SerialGate } from "./http/index.ts";
import { parseBody, RequestDeadline, readBodyText } from "./http/index.ts";
import { answerLive } from "./live-response.ts";
import type { LiveText } from "./live-text.ts";
import type { ProxyRequest } from "./proxy-request.ts";
import { requestStatsOf } from "./request-stats.ts";

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
 * `POST` on a dialect's route. A body the dialect `passesThrough` goes untouched to an
 * OpenAI-format backend; every other takes the guarded path. A tool type the loop cannot serve is
 * skipped, reported once per proxy and type.
 */
export function dialectHandler<Body, Echo>(dialect: Dialect<Body, Echo>, deps: RouteDeps) {
  const reported = new Set<string>();
  return async (c: Context): Promise<Response> => {
    const body = parseBody(await readBodyText(c, deps.maxBodyBytes), dialect.schema, deps.maxJsonDepth);
    if (deps.backend.format === "openai" && dialect.passesThrough?.(body.value)) {
      const stats = requestStatsOf(c);
      stats.model = (body.value as { model?: string | undefined }).model;
      return forwardToBackend(
        deps.backend,
        { method: "POST", path: dialect.path, body: body.text },
        deps.serialGate,
        new RequestDeadline(c.req.raw.signal, deps.deadlineMs, deps.drainSignal),
        stats,
      );
    }
    // The guarded path never needs the body's text again: let it go before the request runs.
    const { request, echo, skippedTools = [] } = dialect.convert(takeValue(body));
    for (const type of skippedTools) {
      // The types are the client's words: a bounded set, quoted in the line.
      if (reported.has(type) || reported.size >= MAX_REPORTED_TOOL_TYPES) continue;
      reported.add(type);
      deps.warn(
        `forge proxy: ${dialect.path} skips tools of type ${JSON.stringify(type)}: the proxy serves function tools only, the model will not see them`,
      );
    }
    if (request.stream) {
      // The live answer runs under a deadline of its own, which follows its stream too.
      return answerLive({
        ...liveOptions(c, deps, request),
        writer: dialect.createStreamWriter(request.model ?? DEFAULT_MODEL, echo, 0),
        whole: (answer) =>
          new Response(renderStream(dialect, answer, echo), {
            headers: { ...SSE_HEADERS, ...guardrailHeaders(answer) },
          }),
      });
    }
    const deadline = new RequestDeadline(c.req.raw.signal, deps.deadlineMs, deps.drainSignal);
    const answer = await deadline.run((signal) => deps.service.answer(request, signal, requestStatsOf(c)));
    return c.json(dialect.render(answer, echo), 200, guardrailHeaders(answer));
  };
}

/**
 * `POST /v1/messages/count_tokens`: `{ input_tokens }` of the prompt the backend would get,
 * exact through its tokenizer or estimated, as `x-forge-token-count` says.
 */
export function anthropicCountTokensHandler(deps: RouteDeps) {
  return async (c: Context): Promise<Response> => {
    const { request } = convertAnthropic(
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
