/**
 * Anthropic Messages request → `ProxyRequest`: system and content blocks become a forge history,
 * tools become `ToolSpec`s, and Anthropic parameters get their OpenAI-compatible names.
 */
import {
  createMessage,
  type Message,
  MessageRole,
  MessageType,
  type ToolCallInfo,
} from "../../core/messages.ts";
import type { ToolSpec } from "../../core/tools.ts";
import type { Conversion } from "../dialect.ts";
import { invalidField } from "../errors.ts";
import {
  IMAGE_PLACEHOLDER,
  type ImageTally,
  isImagePart,
  type ProxyRequest,
  pickExtraBody,
  textOfParts,
} from "../proxy-request.ts";
import { toolSpecFromWire } from "../tool-specs.ts";
import {
  ANTHROPIC_HANDLED_FIELDS,
  type AnthropicBlock,
  type AnthropicMessage,
  type CountTokensRequest,
  isServerTool,
} from "./schema.ts";
import { refuseMessageThread } from "./threads.ts";

/**
 * Convert a validated Messages body (or a count_tokens body, which has no `max_tokens`). Throws
 * `ProxyHttpError` (400) naming a bad field, and for a message `thread` (the proxy keeps no
 * state: see `threads.ts`). A `system` turn inside `messages` becomes a system
 * message at its place; image blocks (in turns and tool results) become a text placeholder,
 * counted in `omittedImages`.
 */
export function convertAnthropic(body: CountTokensRequest): Conversion<undefined> {
  refuseMessageThread(body);
  const toolChoice = body.tool_choice?.type;
  // Server tools (web search, …) run at Anthropic; a local backend has none: dropped.
  const tools: ToolSpec[] = [];
  if (toolChoice !== "none") {
    (body.tools ?? []).forEach((tool, index) => {
      if (tool.input_schema === undefined || isServerTool(tool)) return;
      tools.push(
        toolSpecFromWire(
          { name: tool.name, description: tool.description, parameters: tool.input_schema },
          `tools[${index}].input_schema`,
        ),
      );
    });
  }
  const extraBody = pickExtraBody(body, ANTHROPIC_HANDLED_FIELDS);
  if (body.stop_sequences && body.stop_sequences.length > 0) extraBody.stop = body.stop_sequences;
  if (tools.length > 0 && body.tool_choice) {
    const named = body.tool_choice.name;
    if (toolChoice === "any") extraBody.tool_choice = "required";
    else if (toolChoice === "tool" && named && tools.some((tool) => tool.name === named)) {
      extraBody.tool_choice = { type: "function", function: { name: named } };
    }
  }
  const history: Message[] = [];
  const images: ImageTally = { omitted: 0 };
  if (body.system !== undefined) {
    const system = typeof body.system === "string" ? body.system : textOfParts(body.system, "system");
    if (system.length > 0) {
      history.push(createMessage(MessageRole.SYSTEM, system, { type: MessageType.SYSTEM_PROMPT }));
    }
  }
  const callNames = new Map<string, string>();
  body.messages.forEach((message, index) => {
    history.push(...historyFromTurn(message, `messages[${index}].content`, callNames, images));
  });
  const request: ProxyRequest = {
    ...(images.omitted > 0 && { omittedImages: images.omitted }),
    model: body.model,
    messages: history,
    tools,
    stream: body.stream === true,
    includeUsage: false,
    extraBody,
    callIdPrefix: "toolu_",
  };
  return { request, echo: undefined };
}

/**
 * One Anthropic turn → forge messages: tool results first (as role `tool`), then text and calls;
 * a system turn is one system message (its text blocks joined).
 */
function historyFromTurn(
  message: AnthropicMessage,
  param: string,
  callNames: Map<string, string>,
  images: ImageTally,
): Message[] {
  if (message.role === "system") {
    const text =
      typeof message.content === "string"
        ? message.content
        : textOfParts(message.content as { type: string; text?: string }[], param, undefined, images);
    return [createMessage(MessageRole.SYSTEM, text, { type: MessageType.SYSTEM_PROMPT })];
  }
  const isUser = message.role === "user";
  if (typeof message.content === "string") {
    return [
      isUser
        ? createMessage(MessageRole.USER, message.content, { type: MessageType.USER_INPUT })
        : createMessage(MessageRole.ASSISTANT, message.content, { type: MessageType.TEXT_RESPONSE }),
    ];
  }
  const results: Message[] = [];
  const texts: string[] = [];
  const thoughts: string[] = [];
  const calls: ToolCallInfo[] = [];
  message.content.forEach((block, index) => {
    const where = `${param}[${index}]`;
    switch (block.type) {
      case "text":
        texts.push((block as Extract<AnthropicBlock, { type: "text" }>).text);
        break;
      case "thinking": {
        // The replay policy decides whether it goes upstream (redacted thinking has no text to send).
        const thinking = (block as { thinking?: unknown }).thinking;
        if (!isUser && typeof thinking === "string" && thinking.trim().length > 0) thoughts.push(thinking);
        break;
      }
      case "redacted_thinking":
        break;
      case "tool_use": {
        if (isUser) throw invalidField(where, "tool_use blocks belong to assistant turns");
        const use = block as Extract<AnthropicBlock, { type: "tool_use" }>;
        calls.push({ name: use.name, args: use.input, callId: use.id });
        callNames.set(use.id, use.name);
        break;
      }
      case "tool_result": {
        if (!isUser) throw invalidField(where, "tool_result blocks belong to user turns");
        const result = block as Extract<AnthropicBlock, { type: "tool_result" }>;
        const content =
          result.content === undefined
            ? ""
            : typeof result.content === "string"
              ? result.content
              : textOfParts(result.content, `${where}.content`, undefined, images);
        results.push(
          createMessage(
            MessageRole.TOOL,
            result.is_error ? `[ToolError] ${content}` : content,
            { type: MessageType.TOOL_RESULT },
            { toolCallId: result.tool_use_id, ...toolNameOf(callNames, result.tool_use_id) },
          ),
        );
        break;
      }
      default:
        if (isImagePart(block)) {
          images.omitted += 1;
          texts.push(IMAGE_PLACEHOLDER);
          break;
        }
        throw invalidField(`${where}.type`, `content of type '${block.type}' is not supported (text only)`);
    }
  });
  const text = texts.join("\n");
  if (isUser) {
    if (text.length > 0 || results.length === 0) {
      results.push(createMessage(MessageRole.USER, text, { type: MessageType.USER_INPUT }));
    }
    return results;
  }
  const reasoning =
    thoughts.length > 0
      ? [createMessage(MessageRole.ASSISTANT, thoughts.join("\n\n"), { type: MessageType.REASONING })]
      : [];
  if (calls.length > 0) {
    return [
      ...reasoning,
      createMessage(MessageRole.ASSISTANT, text, { type: MessageType.TOOL_CALL }, { toolCalls: calls }),
    ];
  }
  return [...reasoning, createMessage(MessageRole.ASSISTANT, text, { type: MessageType.TEXT_RESPONSE })];
}

function toolNameOf(callNames: Map<string, string>, callId: string): { toolName?: string } {
  const toolName = callNames.get(callId);
  return toolName === undefined ? {} : { toolName };
}
