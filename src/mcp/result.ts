/** What an MCP tool result becomes on the loop's tool channel. */
import { McpToolError } from "./errors.ts";

/** One content block of an MCP tool result, as far as this module reads it. */
export interface McpContentBlock {
  type: string;
  text?: string;
  mimeType?: string;
  data?: string;
  uri?: string;
  name?: string;
  resource?: { uri?: string; mimeType?: string; text?: string; blob?: string };
}

/** An MCP `tools/call` result, as far as this module reads it. */
export interface McpCallResult {
  content?: McpContentBlock[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
  /** A legacy (2024-10-07) result. */
  toolResult?: unknown;
}

/**
 * The text the model reads for a list of content blocks: text as it is, text resources as their
 * text, everything a text model cannot read (images, audio, binary resources) as a short
 * placeholder naming its type, and resource links as their URI. Blocks are joined by newlines.
 */
export function contentText(content: readonly McpContentBlock[]): string {
  return content.map(blockText).join("\n");
}

function blockText(block: McpContentBlock): string {
  switch (block.type) {
    case "text":
      return block.text ?? "";
    case "image":
    case "audio":
      return `[${block.type}: ${block.mimeType ?? "unknown type"}, ${block.data?.length ?? 0} base64 characters, not shown]`;
    case "resource_link":
      return `[resource: ${block.uri ?? ""}${block.name ? ` (${block.name})` : ""}]`;
    case "resource": {
      const resource = block.resource ?? {};
      if (typeof resource.text === "string") return resource.text;
      return `[resource: ${resource.uri ?? ""}, ${resource.mimeType ?? "binary"}, not shown]`;
    }
    default:
      return `[${block.type} content, not shown]`;
  }
}

/**
 * The value a tool call returns to the loop: the result's `structuredContent` when it has one (the
 * loop serializes it as JSON; a terminal tool's run resolves with the object), otherwise the text
 * of its content blocks.
 *
 * @throws {McpToolError} for an `isError` result, with its text as the message, so the loop feeds
 *   it back to the model as a tool error.
 */
export function callResultValue(server: string, tool: string, result: McpCallResult): unknown {
  if ("toolResult" in result && result.content === undefined) return result.toolResult ?? null;
  const text = contentText(result.content ?? []);
  if (result.isError === true) {
    const message =
      text.length > 0
        ? text
        : result.structuredContent
          ? JSON.stringify(result.structuredContent)
          : "the tool reported an error without a message";
    throw new McpToolError(server, tool, message, result.structuredContent);
  }
  return result.structuredContent ?? text;
}
