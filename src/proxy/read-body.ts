/**
 * Reading a request body: JSON that parses, an object, and its zod schema; each failure is a 400
 * naming the field.
 */
import type { z } from "zod";
import { invalidRequestFromZod, ProxyErrorKind, ProxyHttpError } from "./errors.ts";

/** The body text, parsed and validated. */
export interface ReadBody<T> {
  text: string;
  value: T;
}

/** Parse and validate `text` with `schema`. Throws `ProxyHttpError` (400). */
export function parseBody<Schema extends z.ZodType>(
  text: string,
  schema: Schema,
): ReadBody<z.output<Schema>> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new ProxyHttpError(
      400,
      ProxyErrorKind.INVALID_REQUEST,
      `Malformed JSON body: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    throw new ProxyHttpError(400, ProxyErrorKind.INVALID_REQUEST, "The request body must be a JSON object");
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) throw invalidRequestFromZod(parsed.error);
  return { text, value: parsed.data };
}
