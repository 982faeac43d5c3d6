/**
 * ScriptedClient: an LLMClient test double that replays a script of responses, records every
 * call, and fails loudly on an unexpected extra call or leftover responses.
 */
import { ForgeError } from "../core/errors.ts";
import type { ApiFormat } from "../core/messages.ts";
import { type ToolSpec, toolJsonSchema } from "../core/tools.ts";
import {
  ChunkType,
  type LLMClient,
  type LLMResponse,
  type SendOptions,
  type StreamChunk,
  type ToolChoice,
} from "../core/types.ts";
import { MessageTape } from "./message-tape.ts";

/** One recorded call: the serialized messages and the tools (as JSON Schema) it was sent. */
export interface RecordedCall {
  messages: Record<string, unknown>[];
  tools: { name: string; description: string; parameters: Record<string, unknown> }[];
  streamed: boolean;
  signal: AbortSignal | undefined;
  /** The call's `SendOptions.toolChoice`, when it had one (the loop forces a call on a retry). */
  toolChoice?: ToolChoice;
  /** The call's `SendOptions.parallelToolCalls`, when it had one (the loop sets it with `toolConcurrency` > 1). */
  parallelToolCalls?: boolean;
}

/** A scripted step: a response, an error to throw, or a function computing either. */
export type ScriptStep =
  | LLMResponse
  | Error
  | ((call: RecordedCall, index: number) => LLMResponse | Error | Promise<LLMResponse | Error>);

/** Options of `ScriptedClient`. */
export interface ScriptedClientOptions {
  apiFormat?: ApiFormat;
  contextLength?: number | null;
}

/** Raised by a ScriptedClient used outside its script. */
export class ScriptedClientError extends ForgeError {
  constructor(message: string) {
    super(message);
  }
}

/**
 * Replays `script`, one step per call. Streaming sends one TEXT_DELTA (the text, or the calls as
 * JSON) and then the FINAL chunk.
 * @example
 * const client = new ScriptedClient([toolCall("get_weather", { city: "Paris" }), toolCall("report", { text: "sunny" })]);
 * await runner.run(workflow, "Weather in Paris?");
 * client.assertDone();
 */
export class ScriptedClient implements LLMClient {
  readonly apiFormat: ApiFormat;
  readonly calls: RecordedCall[] = [];
  readonly #script: ScriptStep[];
  readonly #contextLength: number | null;
  readonly #tape = new MessageTape<Record<string, unknown>>();

  constructor(script: ScriptStep[], options: ScriptedClientOptions = {}) {
    this.#script = [...script];
    this.apiFormat = options.apiFormat ?? "openai";
    this.#contextLength = options.contextLength ?? null;
  }

  /** Steps not consumed yet. */
  get remaining(): number {
    return this.#script.length - this.calls.length;
  }

  async send(
    messages: Record<string, unknown>[],
    tools?: ToolSpec[],
    options: SendOptions = {},
  ): Promise<LLMResponse> {
    return this.#next(messages, tools, options, false);
  }

  async *sendStream(
    messages: Record<string, unknown>[],
    tools?: ToolSpec[],
    options: SendOptions = {},
  ): AsyncIterable<StreamChunk> {
    const response = await this.#next(messages, tools, options, true);
    const content = Array.isArray(response) ? JSON.stringify(response) : response.content;
    yield { type: Array.isArray(response) ? ChunkType.TOOL_CALL_DELTA : ChunkType.TEXT_DELTA, content };
    yield { type: ChunkType.FINAL, response };
  }

  async getContextLength(): Promise<number | null> {
    return this.#contextLength;
  }

  /** Throw unless every scripted step was used. */
  assertDone(): void {
    if (this.remaining !== 0) {
      throw new ScriptedClientError(
        `ScriptedClient has ${this.remaining} unused scripted response(s) after ${this.calls.length} call(s)`,
      );
    }
  }

  async #next(
    messages: Record<string, unknown>[],
    tools: ToolSpec[] | undefined,
    options: SendOptions,
    streamed: boolean,
  ): Promise<LLMResponse> {
    const index = this.calls.length;
    const call = {
      tools: (tools ?? []).map((tool) => ({
        name: tool.name,
        description: tool.description,
        parameters: toolJsonSchema(tool),
      })),
      streamed,
      signal: options.signal,
      ...(options.toolChoice !== undefined && { toolChoice: options.toolChoice }),
      ...(options.parallelToolCalls !== undefined && { parallelToolCalls: options.parallelToolCalls }),
    } as RecordedCall;
    // The loop hands over frozen wire objects, so keeping references records them faithfully; the
    // list itself is copied when first read, so recording a long run is not O(n²).
    withLazyMessages(call, this.#tape.record(messages));
    this.calls.push(call);
    const step = this.#script[index];
    if (step === undefined) {
      throw new ScriptedClientError(
        `Unexpected call #${index + 1}: the script has only ${this.#script.length} response(s)`,
      );
    }
    const resolved = typeof step === "function" ? await step(call, index) : step;
    if (resolved instanceof Error) throw resolved;
    return structuredClone(resolved);
  }
}

/** A one-call response. */
export function toolCall(tool: string, args: Record<string, unknown> = {}, reasoning?: string): LLMResponse {
  return [{ tool, args, ...(reasoning !== undefined && { reasoning }) }];
}

/** A text response. */
export function text(content: string): LLMResponse {
  return { content };
}

/** A step that waits until the request is aborted, then rejects like a real client (for cancellation tests). */
export function hangUntilAborted(onStart?: () => void): ScriptStep {
  return (call) =>
    new Promise<LLMResponse>((_, reject) => {
      onStart?.();
      const signal = call.signal;
      if (!signal) return reject(new ScriptedClientError("hangUntilAborted needs a request signal"));
      if (signal.aborted) return reject(signal.reason);
      signal.addEventListener("abort", () => reject(signal.reason), { once: true });
    });
}

/** Give `call` a `messages` property read (and then kept) from its recorded list on first access. */
function withLazyMessages(call: RecordedCall, read: () => Record<string, unknown>[]): void {
  Object.defineProperty(call, "messages", {
    enumerable: true,
    configurable: true,
    get() {
      const messages = read();
      Object.defineProperty(call, "messages", {
        value: messages,
        enumerable: true,
        writable: true,
        configurable: true,
      });
      return messages;
    },
    set(messages: Record<string, unknown>[]) {
      Object.defineProperty(call, "messages", {
        value: messages,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    },
  });
}
