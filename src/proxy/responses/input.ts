/**
 * Responses `instructions` and `input` → forge history. Consecutive assistant-side items (a
 * reasoning item, the assistant's message, its `function_call`s) make one assistant turn, as a
 * chat-completions assistant message with `tool_calls` would; `function_call_output` items become
 * tool results. The messages carry the types compaction needs, as on the other routes.
 */
import {
  createMessage,
  type Message,
  MessageRole,
  MessageType,
  type ToolCallInfo,
} from "../../core/messages.ts";
import { parseWith } from "../dialect.ts";
import { invalidField, type ProxyHttpError } from "../errors.ts";
import { type ImageTally, parseArguments, textOfParts } from "../proxy-request.ts";
import {
  functionCallItemSchema,
  functionCallOutputItemSchema,
  messageItemSchema,
  reasoningItemSchema,
} from "./schema.ts";

/** Part types that are text, whatever side of the conversation wrote them. */
const TEXT_PARTS: ReadonlySet<string> = new Set(["input_text", "output_text", "text"]);
const REASONING_PARTS: ReadonlySet<string> = new Set(["reasoning_text", "text"]);
const OUTPUT_PARTS: ReadonlySet<string> = new Set(["input_text", "text"]);

/** The assistant turn being gathered from consecutive assistant-side items. */
interface AssistantTurn {
  reasoning: string[];
  text: string[];
  calls: ToolCallInfo[];
}

/**
 * Convert `instructions` and `input` (a string, or a list of items). Throws `ProxyHttpError` (400)
 * naming an item the proxy cannot carry (`input[3].type`), or a malformed one. An `input_image`
 * part (in a message or a call's output) becomes a text placeholder, counted in `images`, as on
 * the other routes.
 */
export function historyFromResponses(
  input: string | readonly { type?: string | undefined }[],
  instructions: string | null | undefined,
  images: ImageTally = { omitted: 0 },
): Message[] {
  const history: Message[] = [];
  if (instructions) {
    history.push(createMessage(MessageRole.SYSTEM, instructions, { type: MessageType.SYSTEM_PROMPT }));
  }
  if (typeof input === "string") {
    history.push(createMessage(MessageRole.USER, input, { type: MessageType.USER_INPUT }));
    return history;
  }
  const callNames = new Map<string, string>();
  let turn: AssistantTurn | undefined;
  const assistantTurn = () => {
    turn ??= { reasoning: [], text: [], calls: [] };
    return turn;
  };
  const endTurn = () => {
    if (turn) history.push(...messagesOfTurn(turn));
    turn = undefined;
  };
  input.forEach((item, index) => {
    const param = `input[${index}]`;
    const kind = item.type ?? ("role" in item ? "message" : undefined);
    switch (kind) {
      case "message": {
        const message = parseWith(messageItemSchema, item, param);
        const text = contentText(message.content, `${param}.content`, images);
        if (message.role === "assistant") {
          assistantTurn().text.push(text);
          break;
        }
        endTurn();
        history.push(
          message.role === "user"
            ? createMessage(MessageRole.USER, text, { type: MessageType.USER_INPUT })
            : createMessage(MessageRole.SYSTEM, text, { type: MessageType.SYSTEM_PROMPT }),
        );
        break;
      }
      case "function_call": {
        const call = parseWith(functionCallItemSchema, item, param);
        callNames.set(call.call_id, call.name);
        assistantTurn().calls.push({
          name: call.name,
          args: parseArguments(call.arguments, `${param}.arguments`),
          callId: call.call_id,
        });
        break;
      }
      case "function_call_output": {
        const output = parseWith(functionCallOutputItemSchema, item, param);
        endTurn();
        const toolName = callNames.get(output.call_id);
        const content =
          typeof output.output === "string"
            ? output.output
            : textOfParts(output.output, `${param}.output`, OUTPUT_PARTS, images);
        history.push(
          createMessage(
            MessageRole.TOOL,
            content,
            { type: MessageType.TOOL_RESULT },
            { toolCallId: output.call_id, ...(toolName !== undefined && { toolName }) },
          ),
        );
        break;
      }
      case "reasoning": {
        // Readable reasoning only (the replay policy decides if it goes upstream); a summary or
        // encrypted content is not the model's own text and stays out.
        const reasoning = parseWith(reasoningItemSchema, item, param);
        const text = textOfParts(reasoning.content ?? [], `${param}.content`, REASONING_PARTS);
        if (text.trim().length > 0) assistantTurn().reasoning.push(text);
        break;
      }
      default:
        throw unsupportedItem(`${param}.type`, kind);
    }
  });
  endTurn();
  return history;
}

function messagesOfTurn(turn: AssistantTurn): Message[] {
  const messages: Message[] = [];
  if (turn.reasoning.length > 0) {
    messages.push(
      createMessage(MessageRole.ASSISTANT, turn.reasoning.join("\n\n"), { type: MessageType.REASONING }),
    );
  }
  const text = turn.text.join("\n");
  if (turn.calls.length > 0) {
    messages.push(
      createMessage(MessageRole.ASSISTANT, text, { type: MessageType.TOOL_CALL }, { toolCalls: turn.calls }),
    );
  } else if (turn.text.length > 0) {
    messages.push(createMessage(MessageRole.ASSISTANT, text, { type: MessageType.TEXT_RESPONSE }));
  }
  return messages;
}

function contentText(
  content: string | readonly { type: string; text?: string | undefined }[],
  param: string,
  images: ImageTally,
) {
  return typeof content === "string" ? content : textOfParts(content, param, TEXT_PARTS, images);
}

function unsupportedItem(param: string, kind: string | undefined): ProxyHttpError {
  const what = kind === undefined ? "an item without a type" : `items of type '${kind}'`;
  const why =
    kind === "item_reference"
      ? " (the proxy is stateless and stores no items: send the item itself, which clients do with `store: false`)"
      : " (the proxy carries message, function_call, function_call_output and reasoning items)";
  return invalidField(param, `${what} are not supported${why}`);
}
