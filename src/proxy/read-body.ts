/**
 * Reading a request body: at most the size limit (413 beyond), JSON that parses, an object, and
 * its zod schema; each failure is a 400 naming the field.
 */
import type { IncomingMessage } from "node:http";
import type { Context } from "hono";
import type { z } from "zod";
import { invalidRequestFromZod, ProxyErrorKind, ProxyHttpError } from "./errors.ts";

/**
 * The body as text, refused with 413 past `maxBytes` (declared or streamed). Under
 * `@hono/node-server` it is read straight from the socket, skipping the web-stream `Request`.
 */
export async function readBodyText(c: Context, maxBytes: number): Promise<string> {
  const declared = Number(c.req.header("content-length") ?? Number.NaN);
  if (declared > maxBytes) throw tooLarge(maxBytes);
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
  const chunks: Uint8Array[] = [];
  let size = 0;
  const source: AsyncIterable<Uint8Array> | null =
    incoming && !incoming.readableDidRead
      ? incoming
      : (c.req.raw.body as unknown as AsyncIterable<Uint8Array> | null);
  if (source === null) return "";
  for await (const chunk of source) {
    size += chunk.byteLength;
    if (size > maxBytes) throw tooLarge(maxBytes);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size).toString("utf8");
}

function tooLarge(maxBytes: number): ProxyHttpError {
  return new ProxyHttpError(413, ProxyErrorKind.TOO_LARGE, `Request body exceeds ${maxBytes} bytes`);
}

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
