/**
 * The contract every API dialect of the proxy fills (ADR 029): a folder under `src/proxy/` with a
 * body schema, a converter to the API-neutral `ProxyRequest` (plus what the answer echoes back),
 * a renderer of the whole answer and a stream writer. `routes.ts` serves every dialect with one
 * handler, so a guardrail added to the shared request path is written once. Adding a dialect is
 * adding a folder whose `index.ts` exports one `Dialect`.
 */
import { z } from "zod";
import { TOOL_NAME_PATTERN, TOOL_NAME_RULE } from "../core/tools.ts";
import type { ProxyAnswer } from "./answer.ts";
import { invalidRequestFromZod } from "./errors.ts";
import type { StreamWriter } from "./live-response.ts";
import type { ProxyRequest } from "./proxy-request.ts";

/** A converted request: what the chat service runs, and what the dialect's answer repeats of it. */
export interface Conversion<Echo> {
  request: ProxyRequest;
  /** The request's settings the answer repeats (Responses echoes its `tools`, OpenAI's `include_usage` adds a chunk). */
  echo: Echo;
  /** Tool types the request named that the proxy cannot serve and left out, once each, in order. */
  skippedTools?: readonly string[];
}

/** One API the proxy speaks. `Body` is the validated request body, `Echo` what an answer repeats of it. */
export interface Dialect<Body, Echo> {
  /** The canonical route (`/v1/chat/completions`), as warnings name it. */
  path: string;
  /** The request body; unknown fields pass through to the backend. */
  schema: z.ZodType<Body>;
  /** Body → `ProxyRequest`. Throws `ProxyHttpError` (400) naming a field it cannot carry. */
  convert(body: Body): Conversion<Echo>;
  /** The non-streaming answer body. */
  render(answer: ProxyAnswer, echo: Echo): Record<string, unknown>;
  /** The SSE writer of a streamed answer; `promptTokens` is known only once the answer is whole (0 before). */
  createStreamWriter(model: string, echo: Echo, promptTokens: number): StreamWriter;
  /**
   * True when the body has nothing to guard (no tools): an OpenAI-format backend then gets it
   * untouched at `path`. Absent: every request takes the guarded path.
   */
  passesThrough?(body: Body): boolean;
}

/** The whole SSE body of a streamed answer that sent no live text: the writer's opening and rest at once. */
export function renderStream<Echo>(dialect: Dialect<unknown, Echo>, answer: ProxyAnswer, echo: Echo): string {
  const writer = dialect.createStreamWriter(answer.model, echo, answer.usage.promptTokens);
  return writer.start() + writer.finish(answer, "");
}

/**
 * Parse a part of a body (one input item, one tool) with its own kind's schema; a failure is a
 * 400 naming the field inside it (`tools[1].name`), as a whole-body schema would.
 */
export function parseWith<T extends z.ZodType>(schema: T, value: unknown, param: string): z.infer<T> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  throw invalidRequestFromZod(parsed.error, param);
}

/** A tool name every OpenAI-compatible API accepts, as each dialect's schema checks it. */
export const toolNameSchema = z.string().regex(TOOL_NAME_PATTERN, `tool names are ${TOOL_NAME_RULE}`);
