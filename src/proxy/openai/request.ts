/**
 * OpenAI chat-completions request → `ProxyRequest`: messages become a forge history (so the
 * runner's compaction, folding and nudges apply) and tools become `ToolSpec`s.
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
import {
  type ImageTally,
  type ProxyRequest,
  parseArguments,
  pickExtraBody,
  randomId,
  textOfParts,
} from "../proxy-request.ts";
import { toolSpecFromWire } from "../tool-specs.ts";
import { type ChatCompletionRequest, OPENAI_HANDLED_FIELDS, type OpenAIMessage } from "./schema.ts";

/** True when the request gives the model tools to call (and does not forbid calling them). */
export function openAIRequestHasTools(body: ChatCompletionRequest): boolean {
  return (body.tools?.length ?? 0) > 0 && body.tool_choice !== "none";
}

/** What a chat-completions answer repeats of its request: `stream_options.include_usage`. */
export interface OpenAIEcho {
  /** Add a usage chunk before `[DONE]`. */
  includeUsage: boolean;
}

/** Convert a validated chat-completions body. Throws `ProxyHttpError` (400) naming a bad field. */
export function convertOpenAI(body: ChatCompletionRequest): Conversion<OpenAIEcho> {
  const tools: ToolSpec[] = openAIRequestHasTools(body)
    ? (body.tools ?? []).map((tool, index) =>
        toolSpecFromWire(
          {
            name: tool.function.name,
            description: tool.function.description,
            parameters: tool.function.parameters,
          },
          `tools[${index}].function.parameters`,
        ),
      )
    : [];
  const images: ImageTally = { omitted: 0 };
  const messages = historyFromOpenAI(body.messages, images);
  const includeUsage = body.stream_options?.include_usage === true;
  const request: ProxyRequest = {
    ...(images.omitted > 0 && { omittedImages: images.omitted }),
    model: body.model,
    messages,
    tools,
    stream: body.stream === true,
    includeUsage,
    extraBody: pickExtraBody(body, tools.length > 0 ? OPENAI_HANDLED_FIELDS : WITHOUT_TOOL_CHOICE),
    callIdPrefix: "call_",
  };
  return { request, echo: { includeUsage } };
}

// Without tools the backend must not receive a tool_choice that names none of them.
const WITHOUT_TOOL_CHOICE: ReadonlySet<string> = new Set([...OPENAI_HANDLED_FIELDS, "tool_choice"]);

/**
 * OpenAI messages → forge history, tagging each message with the type compaction needs. Image
 * parts become a text placeholder, counted in `images` (default: not counted).
 */
export function historyFromOpenAI(
  messages: readonly OpenAIMessage[],
  images: ImageTally = { omitted: 0 },
): Message[] {
  const history: Message[] = [];
  const callNames = new Map<string, string>();
  messages.forEach((message, index) => {
    const param = `messages[${index}].content`;
    switch (message.role) {
      case "system":
      case "developer":
        history.push(
          createMessage(MessageRole.SYSTEM, contentText(message.content, param, images), {
            type: MessageType.SYSTEM_PROMPT,
          }),
        );
        break;
      case "user":
        history.push(
          createMessage(MessageRole.USER, contentText(message.content, param, images), {
            type: MessageType.USER_INPUT,
          }),
        );
        break;
      case "assistant": {
        const content = contentText(message.content, param, images);
        // The reasoning a client hands back (as this proxy answered it); the replay policy decides if it goes upstream.
        const reasoning = (message as { reasoning_content?: unknown }).reasoning_content;
        if (typeof reasoning === "string" && reasoning.trim().length > 0) {
          history.push(createMessage(MessageRole.ASSISTANT, reasoning, { type: MessageType.REASONING }));
        }
        const wireCalls = message.tool_calls ?? [];
        if (wireCalls.length === 0) {
          history.push(createMessage(MessageRole.ASSISTANT, content, { type: MessageType.TEXT_RESPONSE }));
          break;
        }
        const toolCalls: ToolCallInfo[] = wireCalls.map((call, callIndex) => {
          const callId = call.id ?? randomId("call_");
          callNames.set(callId, call.function.name);
          return {
            name: call.function.name,
            args: parseArguments(
              call.function.arguments,
              `messages[${index}].tool_calls[${callIndex}].function.arguments`,
            ),
            callId,
          };
        });
        history.push(
          createMessage(MessageRole.ASSISTANT, content, { type: MessageType.TOOL_CALL }, { toolCalls }),
        );
        break;
      }
      case "tool": {
        const toolName = message.name ?? callNames.get(message.tool_call_id);
        history.push(
          createMessage(
            MessageRole.TOOL,
            contentText(message.content, param, images),
            { type: MessageType.TOOL_RESULT },
            { toolCallId: message.tool_call_id, ...(toolName !== undefined && { toolName }) },
          ),
        );
        break;
      }
    }
  });
  return history;
}

function contentText(
  content: OpenAIMessage["content"] | undefined,
  param: string,
  images: ImageTally,
): string {
  if (typeof content === "string") return content;
  if (content === null || content === undefined) return "";
  return textOfParts(content, param, undefined, images);
}
