/**
 * A Responses request → the proxy's `ProxyRequest`, served by the same chat service (and so the
 * same guardrails) as the chat-completions and Messages routes, plus what the answer echoes back.
 */
import type { Conversion } from "../dialect.ts";
import { invalidField, type ProxyHttpError } from "../errors.ts";
import { type ImageTally, pickExtraBody } from "../proxy-request.ts";
import { historyFromResponses } from "./input.ts";
import { RESPONSES_HANDLED_FIELDS, type ResponsesRequest, type TextFormat } from "./schema.ts";
import { toolChoiceForBackend, toolsFromResponses } from "./tools.ts";

/** The request's settings a `response` object repeats, as OpenAI's does. */
export interface ResponseEcho {
  instructions: string | null;
  maxOutputTokens: number | null;
  parallelToolCalls: boolean;
  temperature: number | null;
  topP: number | null;
  toolChoice: unknown;
  tools: unknown[];
  text: unknown;
  metadata: unknown;
  /** The namespace of each function flattened out of a `namespace` tool, by function name. */
  namespaces: ReadonlyMap<string, string>;
}

/**
 * Convert a validated Responses body. Throws `ProxyHttpError` (400) for a `previous_response_id`
 * or `conversation` (the proxy keeps no state) and for anything it cannot carry, naming the field.
 */
export function convertResponses(body: ResponsesRequest): Conversion<ResponseEcho> {
  for (const param of ["previous_response_id", "conversation"] as const) {
    if (body[param] !== undefined && body[param] !== null) throw stateless(param);
  }
  if (body.input === undefined) throw invalidField("input", "required (the whole conversation)");
  const wireTools = toolsFromResponses(body.tools ?? []);
  const tools = body.tool_choice === "none" ? [] : wireTools.specs;
  const extraBody = pickExtraBody(body, RESPONSES_HANDLED_FIELDS);
  const toolChoice = tools.length > 0 ? toolChoiceForBackend(body.tool_choice) : undefined;
  if (toolChoice !== undefined) extraBody.tool_choice = toolChoice;
  if (tools.length === 0) delete extraBody.parallel_tool_calls;
  if (body.max_output_tokens) extraBody.max_tokens = body.max_output_tokens;
  const responseFormat = responseFormatOf(body.text?.format);
  if (responseFormat) extraBody.response_format = responseFormat;
  const images: ImageTally = { omitted: 0 };
  const messages = historyFromResponses(body.input, body.instructions, images);
  return {
    request: {
      ...(images.omitted > 0 && { omittedImages: images.omitted }),
      model: body.model,
      messages,
      tools,
      stream: body.stream === true,
      includeUsage: false,
      extraBody,
      callIdPrefix: "call_",
    },
    echo: {
      instructions: body.instructions ?? null,
      maxOutputTokens: body.max_output_tokens ?? null,
      parallelToolCalls: body.parallel_tool_calls ?? true,
      temperature: body.temperature ?? null,
      topP: body.top_p ?? null,
      toolChoice: body.tool_choice ?? "auto",
      tools: body.tools ?? [],
      text: body.text ?? { format: { type: "text" } },
      metadata: body.metadata ?? {},
      namespaces: wireTools.namespaces,
    },
    skippedTools: wireTools.skipped,
  };
}

/** `text.format` as chat completions' `response_format`; plain text needs none. */
function responseFormatOf(format: TextFormat | undefined): Record<string, unknown> | undefined {
  if (!format || format.type === "text") return undefined;
  if (format.type === "json_object") return { type: "json_object" };
  const { type: _type, ...jsonSchema } = format as Extract<TextFormat, { type: "json_schema" }>;
  return { type: "json_schema", json_schema: jsonSchema };
}

function stateless(param: string): ProxyHttpError {
  return invalidField(
    param,
    "the proxy is stateless and stores no responses or conversations; send the whole conversation in `input` (previous items included) instead",
  );
}
