/**
 * The OpenAI Responses request body as the proxy accepts it (`POST /v1/responses`). The body and
 * its items are loose: an item or tool is checked against its own kind's schema when it is
 * converted, so an error names the offending field (`input[2].call_id`), and unknown top-level
 * fields pass through to the backend as on the chat-completions route.
 */
import { z } from "zod";
import { toolNameSchema } from "../dialect.ts";

/** A content part of a message (`input_text`, `output_text`, `input_image`, …). */
export const responsesPartSchema = z.looseObject({ type: z.string(), text: z.string().optional() });

/** A `message` item (its `type` may be left out): a role and a string or a list of parts. */
export const messageItemSchema = z.looseObject({
  type: z.literal("message").optional(),
  role: z.enum(["user", "assistant", "system", "developer"]),
  content: z.union([z.string(), z.array(responsesPartSchema)]),
});
export type MessageItem = z.infer<typeof messageItemSchema>;

/** A `function_call` item: a call the model made earlier, handed back by the client. */
export const functionCallItemSchema = z.looseObject({
  type: z.literal("function_call"),
  call_id: z.string().min(1),
  name: z.string().min(1),
  arguments: z.string(),
});
export type FunctionCallItem = z.infer<typeof functionCallItemSchema>;

/** A `function_call_output` item: the client's result of a call, a string or a list of parts. */
export const functionCallOutputItemSchema = z.looseObject({
  type: z.literal("function_call_output"),
  call_id: z.string().min(1),
  output: z.union([z.string(), z.array(responsesPartSchema)]),
});
export type FunctionCallOutputItem = z.infer<typeof functionCallOutputItemSchema>;

/** A `reasoning` item: readable `content` (`reasoning_text`), a `summary`, or only encrypted content. */
export const reasoningItemSchema = z.looseObject({
  type: z.literal("reasoning"),
  content: z.array(responsesPartSchema).nullish(),
});
export type ReasoningItem = z.infer<typeof reasoningItemSchema>;

/** A flat `function` tool, as the Responses API spells it (no nested `function` object). */
export const functionToolSchema = z.looseObject({
  type: z.literal("function"),
  name: toolNameSchema,
  description: z.string().nullish(),
  parameters: z.record(z.string(), z.unknown()).nullish(),
  strict: z.boolean().nullish(),
});
export type FunctionTool = z.infer<typeof functionToolSchema>;

/** A `namespace` tool: a named group of function (and custom) tools. */
export const namespaceToolSchema = z.looseObject({
  type: z.literal("namespace"),
  name: z.string(),
  tools: z.array(z.looseObject({ type: z.string() })),
});

/** `text.format`: plain text, a JSON object, or a named JSON Schema. */
export const textFormatSchema = z.union([
  z.looseObject({ type: z.enum(["text", "json_object"]) }),
  z.looseObject({
    type: z.literal("json_schema"),
    name: z.string(),
    schema: z.record(z.string(), z.unknown()),
    description: z.string().nullish(),
    strict: z.boolean().nullish(),
  }),
]);
export type TextFormat = z.infer<typeof textFormatSchema>;

/** `tool_choice`: a mode, or an object naming a tool (`{ type: "function", name }`, hosted tools, …). */
export const responsesToolChoiceSchema = z.union([
  z.enum(["none", "auto", "required"]),
  z.looseObject({ type: z.string(), name: z.string().optional(), mode: z.string().optional() }),
]);
export type ResponsesToolChoice = z.infer<typeof responsesToolChoiceSchema>;

/** `POST /v1/responses` body. */
export const responsesRequestSchema = z.looseObject({
  model: z.string().optional(),
  // Optional here so that a request leaning on stored state gets the stateless 400, not "input: required".
  input: z.union([z.string(), z.array(z.looseObject({ type: z.string().optional() })).min(1)]).optional(),
  instructions: z.string().nullish(),
  tools: z.array(z.looseObject({ type: z.string() })).nullish(),
  tool_choice: responsesToolChoiceSchema.nullish(),
  parallel_tool_calls: z.boolean().nullish(),
  max_output_tokens: z.number().int().positive().nullish(),
  temperature: z.number().nullish(),
  top_p: z.number().nullish(),
  text: z.looseObject({ format: textFormatSchema.optional() }).nullish(),
  previous_response_id: z.string().nullish(),
  conversation: z.unknown().optional(),
  metadata: z.unknown().optional(),
  stream: z.boolean().nullish(),
});
export type ResponsesRequest = z.infer<typeof responsesRequestSchema>;

/**
 * Fields the proxy translates itself, or drops because they ask for what only OpenAI's servers
 * hold or do (stored responses and prompts, hosted reasoning settings, moderation, caching);
 * every other field is forwarded to the backend as-is.
 */
export const RESPONSES_HANDLED_FIELDS: ReadonlySet<string> = new Set([
  "model",
  "input",
  "instructions",
  "tools",
  "tool_choice",
  "max_output_tokens",
  "text",
  "stream",
  "stream_options",
  "previous_response_id",
  "conversation",
  "store",
  "include",
  "metadata",
  "reasoning",
  "truncation",
  "background",
  "service_tier",
  "prompt",
  "prompt_cache_key",
  "prompt_cache_retention",
  "prompt_cache_options",
  "safety_identifier",
  "context_management",
  "moderation",
  "max_tool_calls",
  "top_logprobs",
]);
