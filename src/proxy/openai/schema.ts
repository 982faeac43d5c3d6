/**
 * The OpenAI chat-completions request body as the proxy accepts it. Unknown fields pass through
 * (loose objects) so sampling parameters and backend extensions reach the backend untouched.
 */
import { z } from "zod";
import { toolNameSchema } from "../dialect.ts";

const contentPartSchema = z.looseObject({ type: z.string(), text: z.string().optional() });

/** Message content: a string, a list of content parts, or null (assistant tool-call turns). */
export const openAIContentSchema = z.union([z.string(), z.array(contentPartSchema), z.null()]);

const wireToolCallSchema = z.looseObject({
  id: z.string().optional(),
  type: z.literal("function").optional(),
  function: z.looseObject({
    name: z.string().min(1),
    arguments: z.union([z.string(), z.record(z.string(), z.unknown())]).optional(),
  }),
});

const systemMessageSchema = z.looseObject({
  role: z.enum(["system", "developer"]),
  content: openAIContentSchema,
});
const userMessageSchema = z.looseObject({ role: z.literal("user"), content: openAIContentSchema });
const assistantMessageSchema = z.looseObject({
  role: z.literal("assistant"),
  content: openAIContentSchema.optional(),
  tool_calls: z.array(wireToolCallSchema).nullish(),
});
const toolMessageSchema = z.looseObject({
  role: z.literal("tool"),
  content: openAIContentSchema,
  tool_call_id: z.string(),
  name: z.string().optional(),
});

/** One chat message. */
export const openAIMessageSchema = z.discriminatedUnion("role", [
  systemMessageSchema,
  userMessageSchema,
  assistantMessageSchema,
  toolMessageSchema,
]);
export type OpenAIMessage = z.infer<typeof openAIMessageSchema>;

/** A function tool: the name the model calls and the JSON Schema of its arguments. */
export const openAIToolSchema = z.looseObject({
  type: z.literal("function"),
  function: z.looseObject({
    name: toolNameSchema,
    description: z.string().optional(),
    parameters: z.record(z.string(), z.unknown()).optional(),
  }),
});
export type OpenAITool = z.infer<typeof openAIToolSchema>;

/** `POST /v1/chat/completions` body. */
export const chatCompletionRequestSchema = z.looseObject({
  model: z.string().optional(),
  messages: z.array(openAIMessageSchema).min(1),
  tools: z.array(openAIToolSchema).nullish(),
  tool_choice: z
    .union([
      z.enum(["none", "auto", "required"]),
      z.looseObject({ type: z.literal("function"), function: z.looseObject({ name: z.string() }) }),
    ])
    .optional(),
  stream: z.boolean().nullish(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullish(),
});
export type ChatCompletionRequest = z.infer<typeof chatCompletionRequestSchema>;

/** Fields the proxy interprets itself; everything else is forwarded to the backend as-is. */
export const OPENAI_HANDLED_FIELDS: ReadonlySet<string> = new Set([
  "model",
  "messages",
  "tools",
  "stream",
  "stream_options",
]);
