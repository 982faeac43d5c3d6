/**
 * The API-neutral request the proxy serves: a forge history, the client's tools, and the fields
 * forwarded to the backend untouched. All three routes (chat completions, Responses, Messages) produce one.
 */
import { randomUUID } from "node:crypto";
import type { Message } from "../core/messages.ts";
import type { ToolSpec } from "../core/tools.ts";
import { ProxyErrorKind, ProxyHttpError } from "./errors.ts";

/** One chat request, whatever API it arrived on. */
export interface ProxyRequest {
  /** The model the client asked for, forwarded as-is (unknown names included). */
  model: string | undefined;
  messages: Message[];
  /** The client's tools, without the injected `respond` tool. */
  tools: ToolSpec[];
  stream: boolean;
  /** OpenAI `stream_options.include_usage`: add a usage chunk before `[DONE]`. */
  includeUsage: boolean;
  /** Request fields forwarded to the backend untouched: sampling parameters, tool_choice, unknown fields. */
  extraBody: Record<string, unknown>;
  /** Prefix of the ids given to returned tool calls, as the client's API spells them (`call_`, `toolu_`). */
  callIdPrefix: string;
  /** Image parts replaced by {@link IMAGE_PLACEHOLDER} (the guarded path is text-only); absent: none. */
  omittedImages?: number;
}

/** What an image part becomes on the guarded path: forge histories are text, so no backend gets images through it. */
export const IMAGE_PLACEHOLDER = "[image omitted: the backend takes no images]";

/** Counts the image parts a conversion replaced with {@link IMAGE_PLACEHOLDER}. */
export interface ImageTally {
  omitted: number;
}

const IMAGE_PART_TYPES: ReadonlySet<string> = new Set(["image", "image_url", "input_image"]);

/** Whether a content part is an image (Anthropic `image`, OpenAI `image_url`, Responses `input_image`). */
export function isImagePart(part: { type: string }): boolean {
  return IMAGE_PART_TYPES.has(part.type);
}

/** Every field of `body` the proxy does not interpret itself. */
export function pickExtraBody(
  body: Record<string, unknown>,
  handled: ReadonlySet<string>,
): Record<string, unknown> {
  const extra: Record<string, unknown> = {};
  for (const key in body) {
    if (!handled.has(key) && body[key] !== undefined) extra[key] = body[key];
  }
  return extra;
}

/**
 * The text of content parts; a non-text part cannot enter a forge history (400 naming it), except
 * an image when `images` is given: it becomes {@link IMAGE_PLACEHOLDER}, counted there.
 */
export function textOfParts(
  parts: readonly { type: string; text?: string | undefined }[],
  param: string,
  textTypes: ReadonlySet<string> = TEXT_PART_TYPES,
  images?: ImageTally,
): string {
  let text = "";
  for (let index = 0; index < parts.length; index++) {
    const part = parts[index] as { type: string; text?: string | undefined };
    if (images && isImagePart(part)) {
      images.omitted += 1;
      text = text.length === 0 ? IMAGE_PLACEHOLDER : `${text}\n${IMAGE_PLACEHOLDER}`;
      continue;
    }
    if (!textTypes.has(part.type) || typeof part.text !== "string") {
      throw new ProxyHttpError(
        400,
        ProxyErrorKind.INVALID_REQUEST,
        `${param}[${index}].type: content of type '${part.type}' is not supported on requests with tools (text only)`,
        { param: `${param}[${index}].type` },
      );
    }
    text = text.length === 0 ? part.text : `${text}\n${part.text}`;
  }
  return text;
}

const TEXT_PART_TYPES: ReadonlySet<string> = new Set(["text", "input_text"]);

/** Parse tool-call arguments from the wire: a JSON object string, an object, or nothing. */
export function parseArguments(raw: unknown, param: string): Record<string, unknown> {
  if (raw === undefined || raw === null || raw === "") return {};
  if (typeof raw === "object" && !Array.isArray(raw)) return raw as Record<string, unknown>;
  if (typeof raw === "string") {
    try {
      const parsed: unknown = JSON.parse(raw);
      if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)) {
        return parsed as Record<string, unknown>;
      }
    } catch {
      // Reported below.
    }
  }
  throw new ProxyHttpError(
    400,
    ProxyErrorKind.INVALID_REQUEST,
    `${param}: tool-call arguments must be a JSON object`,
    { param },
  );
}

/** A random id with a prefix, as the APIs use for messages and calls (`call_…`, `toolu_…`). */
export function randomId(prefix: string): string {
  return `${prefix}${randomUUID().replaceAll("-", "").slice(0, 24)}`;
}
