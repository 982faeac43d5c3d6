/**
 * The Anthropic Messages request body as the proxy accepts it. Unknown fields pass through
 * (loose objects) and are forwarded to the backend untouched.
 */
import { z } from "zod";
import { toolNameSchema } from "../dialect.ts";

const textBlockSchema = z.looseObject({ type: z.literal("text"), text: z.string() });
const toolUseBlockSchema = z.looseObject({
  type: z.literal("tool_use"),
  id: z.string(),
  name: z.string().min(1),
  input: z.record(z.string(), z.unknown()),
});
const toolResultBlockSchema = z.looseObject({
  type: z.literal("tool_result"),
  tool_use_id: z.string(),
  content: z
    .union([z.string(), z.array(z.looseObject({ type: z.string(), text: z.string().optional() }))])
    .optional(),
  is_error: z.boolean().optional(),
});
const thinkingBlockSchema = z.looseObject({
  type: z.enum(["thinking", "redacted_thinking"]),
  thinking: z.string().optional(),
});
const otherBlockSchema = z.looseObject({ type: z.string() });

/** One content block; known kinds are checked, others are rejected later by name. */
export const anthropicBlockSchema = z.union([
  textBlockSchema,
  toolUseBlockSchema,
  toolResultBlockSchema,
  thinkingBlockSchema,
  otherBlockSchema,
]);
export type AnthropicBlock = z.infer<typeof anthropicBlockSchema>;

/**
 * One turn: user or assistant, with a string or a list of blocks. Claude Code also sends
 * `role: "system"` turns inside `messages`; they keep their place in the history.
 */
export const anthropicMessageSchema = z.looseObject({
  role: z.enum(["user", "assistant", "system"]),
  content: z.union([z.string(), z.array(anthropicBlockSchema)]),
});
export type AnthropicMessage = z.infer<typeof anthropicMessageSchema>;

/**
 * A client tool: name, description and the JSON Schema of its input. A server tool (a `type` other
 * than `custom`, such as Claude Code's `web_search_20250305`) has no `input_schema`: Anthropic runs
 * it, a local backend cannot, and the proxy drops it.
 */
export const anthropicToolSchema = z
  .looseObject({
    type: z.string().optional(),
    name: toolNameSchema,
    description: z.string().optional(),
    input_schema: z.record(z.string(), z.unknown()).optional(),
  })
  .superRefine((tool, context) => {
    if (tool.input_schema === undefined && !isServerTool(tool)) {
      context.addIssue({
        code: "custom",
        path: ["input_schema"],
        message: "a client tool needs an input_schema",
      });
    }
  });
export type AnthropicTool = z.infer<typeof anthropicToolSchema>;

/** Whether a tool is one of Anthropic's server tools (web search, code execution, …): typed, not `custom`. */
export function isServerTool(tool: { type?: string | undefined }): boolean {
  return tool.type !== undefined && tool.type !== "custom";
}

/** `POST /v1/messages` body. */
export const messagesRequestSchema = z.looseObject({
  model: z.string().optional(),
  max_tokens: z.number().int().positive(),
  messages: z.array(anthropicMessageSchema).min(1),
  system: z.union([z.string(), z.array(textBlockSchema)]).optional(),
  tools: z.array(anthropicToolSchema).optional(),
  tool_choice: z
    .looseObject({ type: z.enum(["auto", "any", "tool", "none"]), name: z.string().optional() })
    .optional(),
  stop_sequences: z.array(z.string()).optional(),
  stream: z.boolean().optional(),
});
export type MessagesRequest = z.infer<typeof messagesRequestSchema>;

/** `POST /v1/messages/count_tokens` body: a Messages body without `max_tokens`. */
export const countTokensRequestSchema = messagesRequestSchema.extend({
  max_tokens: z.number().int().positive().optional(),
});
export type CountTokensRequest = z.infer<typeof countTokensRequestSchema>;

/**
 * Anthropic-only request fields an OpenAI-compatible backend cannot use: accepted, and dropped on
 * purpose (listed in docs/proxy.md). `cache_control` on blocks and tools is dropped with them, as
 * only the blocks' text and the tools' schemas are read.
 */
export const ANTHROPIC_DROPPED_FIELDS: readonly string[] = [
  "metadata",
  "thinking",
  "output_config",
  "context_management",
  "betas",
  "service_tier",
  "container",
  "mcp_servers",
];

/** Fields the proxy translates itself or drops; everything else is forwarded to the backend as-is. */
export const ANTHROPIC_HANDLED_FIELDS: ReadonlySet<string> = new Set([
  "model",
  "messages",
  "system",
  "tools",
  "tool_choice",
  "stop_sequences",
  "stream",
  ...ANTHROPIC_DROPPED_FIELDS,
]);
