/**
 * The message model as zod schemas, for histories that enter from outside (a caller's
 * `initialMessages`, a persisted snapshot): checked once at the door, so a damaged history fails
 * with an error naming its field instead of deep inside the loop.
 */
import { z } from "zod";
import { InvalidMessageError } from "./errors.ts";
import { type Message, MessageRole, MessageType } from "./messages.ts";

const messageTypeSchema = z.enum(Object.values(MessageType) as [MessageType, ...MessageType[]]);

/** One tool call of an assistant message. */
export const toolCallInfoSchema = z.looseObject({
  name: z.string(),
  args: z.record(z.string(), z.unknown()),
  callId: z.string(),
});

/** A {@link Message}; unknown extra fields are kept. */
export const messageSchema = z.looseObject({
  role: z.enum(Object.values(MessageRole) as [MessageRole, ...MessageRole[]]),
  content: z.string(),
  metadata: z.looseObject({
    type: messageTypeSchema,
    stepIndex: z.number().optional(),
    originalType: messageTypeSchema.optional(),
    tokenEstimate: z.number().optional(),
  }),
  toolName: z.string().optional(),
  toolCallId: z.string().optional(),
  toolCalls: z.array(toolCallInfoSchema).optional(),
});

/** A history: a list of {@link Message}. */
export const messagesSchema = z.array(messageSchema);

/**
 * Check a history from outside; returns it as it is (not a copy).
 * @throws InvalidMessageError naming the first offending field under `field`, e.g. `initialMessages[1].content`.
 */
export function assertMessages(messages: unknown, field: string): Message[] {
  const parsed = messagesSchema.safeParse(messages);
  if (!parsed.success) {
    const issues = describeIssues(field, parsed.error);
    throw new InvalidMessageError(
      issues[0]?.field ?? field,
      issues.map((issue) => issue.line),
    );
  }
  return messages as Message[];
}

/**
 * A zod error as lines naming each field from `root` (`root[1].content: expected string, got
 * number`), first issue first; `whole` names the value itself when it is the problem.
 */
export function describeIssues(
  root: string,
  error: z.ZodError,
  whole = root,
): { field: string; line: string }[] {
  return error.issues.map((issue) => {
    const field = fieldPath(root, issue.path) || whole;
    return { field, line: `${field}: ${issue.message}` };
  });
}

function fieldPath(root: string, path: readonly PropertyKey[]): string {
  let field = root;
  for (const key of path) {
    if (typeof key === "number") field += `[${key}]`;
    else field += field === "" ? String(key) : `.${String(key)}`;
  }
  return field;
}
