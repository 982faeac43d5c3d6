/**
 * Reading a request body: at most the size limit (413 beyond), JSON that parses, an object, no
 * deeper than the depth limit, and its zod schema; each failure is a 400 naming the field.
 */
import type { IncomingMessage } from "node:http";
import type { Context } from "hono";
import type { z } from "zod";
import { formatPath, invalidRequestFromZod, ProxyErrorKind, ProxyHttpError } from "../errors.ts";

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
  if (Number.isSafeInteger(declared) && declared >= 0) {
    // One buffer of the declared size, filled as chunks arrive: no list of chunks and no second
    // copy when they are joined (a 9 MiB body otherwise holds 18 MiB until it is text).
    const body = Buffer.allocUnsafe(declared);
    for await (const chunk of source) {
      if (size + chunk.byteLength > declared) throw lengthMismatch(declared);
      body.set(chunk, size);
      size += chunk.byteLength;
    }
    if (size !== declared) throw lengthMismatch(declared);
    return body.toString("utf8");
  }
  for await (const chunk of source) {
    size += chunk.byteLength;
    if (size > maxBytes) throw tooLarge(maxBytes);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size).toString("utf8");
}

function lengthMismatch(declared: number): ProxyHttpError {
  return new ProxyHttpError(
    400,
    ProxyErrorKind.INVALID_REQUEST,
    `Request body does not match its content-length (${declared} bytes)`,
  );
}

function tooLarge(maxBytes: number): ProxyHttpError {
  return new ProxyHttpError(413, ProxyErrorKind.TOO_LARGE, `Request body exceeds ${maxBytes} bytes`);
}

/** The body text, parsed and validated. */
export interface ReadBody<T> {
  text: string;
  value: T;
}

/** Default deepest nesting of arrays and objects in a request body. */
export const DEFAULT_MAX_JSON_DEPTH = 64;

/**
 * Parse and validate `text` with `schema`; arrays and objects nested deeper than `maxDepth` are
 * refused before anything recurses into them. Throws `ProxyHttpError` (400).
 */
export function parseBody<Schema extends z.ZodType>(
  text: string,
  schema: Schema,
  maxDepth = DEFAULT_MAX_JSON_DEPTH,
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
  checkDepth(json, maxDepth);
  const parsed = schema.safeParse(json);
  if (!parsed.success) throw invalidRequestFromZod(parsed.error);
  return { text, value: parsed.data };
}

/** A value still to walk, and how it was reached (the path is only spelled out for an error). */
interface Nested {
  value: object;
  depth: number;
  parent: Nested | undefined;
  key: string | number;
}

/**
 * Refuse JSON nested deeper than `maxDepth` with a 400 naming where, walking with an explicit
 * stack: the schema, the history code and the tool-schema code all recurse, and 10 000 nested
 * arrays (20 KB) overflowed the call stack (a 500).
 */
function checkDepth(root: object, maxDepth: number): void {
  const stack: Nested[] = [{ value: root, depth: 1, parent: undefined, key: "" }];
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    const { value, depth } = item;
    if (depth > maxDepth) {
      const param = pathOf(item);
      throw new ProxyHttpError(
        400,
        ProxyErrorKind.INVALID_REQUEST,
        `${param}: JSON nested deeper than ${maxDepth} levels (--max-json-depth)`,
        { param },
      );
    }
    if (Array.isArray(value)) {
      for (let index = 0; index < value.length; index += 1) {
        const child: unknown = value[index];
        if (typeof child === "object" && child !== null) {
          stack.push({ value: child, depth: depth + 1, parent: item, key: index });
        }
      }
      continue;
    }
    for (const key in value) {
      const child: unknown = (value as Record<string, unknown>)[key];
      if (typeof child === "object" && child !== null) {
        stack.push({ value: child, depth: depth + 1, parent: item, key });
      }
    }
  }
}

function pathOf(item: Nested): string {
  const keys: (string | number)[] = [];
  for (let current: Nested | undefined = item; current?.parent !== undefined; current = current.parent) {
    keys.push(current.key);
  }
  return formatPath(keys.reverse());
}
