/**
 * The OpenAI chat-completions wire as the sim-model reads it: the request schema, the routing
 * key in the `model` field, and the token estimate its context window is checked with.
 */
import { z } from "zod";

const toolCallSchema = z.object({
  id: z.string().optional(),
  type: z.string().optional(),
  function: z.object({
    name: z.string(),
    arguments: z.union([z.string(), z.record(z.string(), z.unknown())]),
  }),
});

const contentSchema = z
  .union([z.string(), z.array(z.object({ type: z.string(), text: z.string().optional() }).loose()), z.null()])
  .optional();

/** One message of a chat-completions request. */
export const wireMessageSchema = z
  .object({
    role: z.string(),
    content: contentSchema,
    tool_calls: z.array(toolCallSchema).optional(),
    tool_call_id: z.string().optional(),
    name: z.string().optional(),
  })
  .loose();
export type WireMessage = z.infer<typeof wireMessageSchema>;

/** A chat-completions request (only the fields the sim-model reads). */
export const chatRequestSchema = z
  .object({
    model: z.string().default(""),
    messages: z.array(wireMessageSchema).min(1),
    tools: z.array(z.unknown()).optional(),
    stream: z.boolean().optional(),
  })
  .loose();
export type ChatRequest = z.infer<typeof chatRequestSchema>;

/** A message's text, whether content is a string or a list of text parts. */
export function textOf(message: WireMessage): string {
  const content = message.content;
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((part) => part.text ?? "").join("");
  return "";
}

/** What the `model` field names: `sim/<profile>/<scenario>[/<seed>]`; missing parts are null. */
export interface SimRoute {
  profile: string | null;
  scenario: string | null;
  seed: number | null;
}

/**
 * Parse the routing key of the `model` field.
 * @example parseSimModel("sim/mixed/basic_2step/7") // { profile: "mixed", scenario: "basic_2step", seed: 7 }
 */
export function parseSimModel(model: string): SimRoute {
  const parts = model.split("/");
  if (parts[0] !== "sim") return { profile: null, scenario: null, seed: null };
  const seed = parts[3] !== undefined && /^-?\d+$/.test(parts[3]) ? Number(parts[3]) : null;
  return { profile: parts[1] || null, scenario: parts[2] || null, seed };
}

/** The `model` field that routes a request to a profile, scenario and seed. */
export function simModelName(profile: string, scenario: string, seed: number): string {
  return `sim/${profile}/${scenario}/${seed}`;
}

/**
 * Estimated prompt tokens of a wire history: `ceil(chars / 4) + 4` per message over its text
 * and tool-call names and arguments (the same heuristic as the ContextManager's default).
 */
export function estimateWireTokens(messages: readonly WireMessage[]): number {
  let total = 0;
  for (const message of messages) {
    let chars = textOf(message).length;
    for (const call of message.tool_calls ?? []) {
      const args = call.function.arguments;
      chars += call.function.name.length + (typeof args === "string" ? args : JSON.stringify(args)).length;
    }
    total += Math.ceil(chars / 4) + 4;
  }
  return total;
}
