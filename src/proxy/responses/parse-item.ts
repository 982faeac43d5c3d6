/** One input item or tool checked against its own kind's schema, and the 400 naming a field. */
import type { z } from "zod";
import { formatPath, ProxyErrorKind, ProxyHttpError } from "../errors.ts";

/**
 * Parse one item of a list with its own kind's schema; a failure is a 400 naming the field inside
 * it (`tools[1].name`), as a whole-body schema would.
 */
export function parseWith<T extends z.ZodType>(schema: T, value: unknown, param: string): z.infer<T> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const path = issue && issue.path.length > 0 ? formatPath(issue.path) : "";
  const where = path.length === 0 ? param : path.startsWith("[") ? `${param}${path}` : `${param}.${path}`;
  throw invalidField(where, issue?.message ?? "invalid item");
}

/** The 400 for a field the proxy cannot take, `param` naming it and opening the message. */
export function invalidField(param: string, message: string): ProxyHttpError {
  return new ProxyHttpError(400, ProxyErrorKind.INVALID_REQUEST, `${param}: ${message}`, { param });
}
