/**
 * Live text on the guarded path (ADR 014): a client around the request's backend client that
 * passes the model's text to the client as it is generated, up to where it could still become a
 * tool call (`gateText`), and holds the rest of the attempt for validation. Text that went out is
 * the answer: an attempt whose text reached the client and holds nothing that reads as a call is
 * handed to the loop as a `respond` call with that text, so it is never nudged away. One that
 * does is the loop's to validate (and to nudge); later attempts are then held whole.
 */

import type { ToolSpec } from "../core/tools.ts";
import {
  ChunkType,
  type LLMClient,
  type LLMResponse,
  type SendOptions,
  type StreamChunk,
} from "../core/types.ts";
import type { TemplateCallFormat } from "../prompts/chat-template.ts";
import { detectToolCalls } from "../prompts/rescue/index.ts";
import { gateText } from "./stream-gate.ts";

/** Where live text goes: each piece once, in order. */
export interface LiveText {
  text(delta: string): void;
}

/** Options of `LiveTextClient`. */
export interface LiveTextOptions {
  /** The tools the request offers (the rescue's known names, pythonic calls at a line start). */
  toolNames: readonly string[];
  /** The injected `respond` tool that carries a text answer. */
  respondName: string;
  /** Off: no call is read out of text, so text that went out is always the answer. */
  rescueEnabled: boolean;
  /** How the model writes a call, read from its chat template: such text is a call, not an answer. */
  callFormat?: TemplateCallFormat | undefined;
  sink: LiveText;
}

/** Streams `inner`'s text to a `LiveText` sink as far as the gate allows; see the module comment. */
export class LiveTextClient implements LLMClient {
  readonly apiFormat: LLMClient["apiFormat"];
  readonly #inner: LLMClient;
  readonly #options: LiveTextOptions;
  #sent = "";
  /** Text went out in an attempt the loop then discarded: later attempts are held whole. */
  #frozen = false;
  #attemptSent = 0;
  /** The last attempt's committed prose became a `respond` call. */
  committedProse = false;

  constructor(inner: LLMClient, options: LiveTextOptions) {
    this.apiFormat = inner.apiFormat;
    this.#inner = inner;
    this.#options = options;
  }

  /** Everything sent to the sink so far. */
  get sent(): string {
    return this.#sent;
  }

  send(messages: Record<string, unknown>[], tools?: ToolSpec[], options?: SendOptions): Promise<LLMResponse> {
    return this.#inner.send(messages, tools, options);
  }

  async *sendStream(
    messages: Record<string, unknown>[],
    tools?: ToolSpec[],
    options?: SendOptions,
  ): AsyncIterable<StreamChunk> {
    // A new attempt after one that sent text: the loop discarded it (a nudge).
    if (this.#attemptSent > 0) this.#frozen = true;
    this.#attemptSent = 0;
    this.committedProse = false;
    let text = "";
    let respondArgs = "";
    let held = this.#frozen;
    for await (const chunk of this.#inner.sendStream(messages, tools, options)) {
      if (chunk.type === ChunkType.TEXT_DELTA && chunk.content) {
        text += chunk.content;
        if (!held) held = this.#release(text);
      } else if (chunk.type === ChunkType.TOOL_CALL_DELTA) {
        // The message of a native respond call, the answer's first call, is text too.
        const respondFirst =
          chunk.toolCall?.position === 0 && chunk.toolCall.name === this.#options.respondName;
        if (!held && respondFirst && text.length === 0) {
          respondArgs += chunk.content ?? "";
          this.#sendMessage(respondArgs);
        } else {
          held = true;
        }
      } else if (chunk.type === ChunkType.RETRY) {
        // The client starts the answer again: what it sent so far is gone.
        if (this.#attemptSent > 0) this.#frozen = true;
        held = this.#frozen;
        text = "";
        respondArgs = "";
        this.#attemptSent = 0;
      } else if (chunk.type === ChunkType.FINAL && chunk.response !== undefined) {
        yield { type: ChunkType.FINAL, response: this.#settle(chunk.response, text) };
        continue;
      }
      yield chunk;
    }
  }

  getContextLength(): Promise<number | null> {
    return this.#inner.getContextLength();
  }

  /** Send what the gate allows of `text`; true once the rest of the attempt must be held. */
  #release(text: string): boolean {
    const decision = gateText(text, this.#options.toolNames, this.#attemptSent);
    if (decision.sendable > this.#attemptSent) {
      const delta = text.slice(this.#attemptSent, decision.sendable);
      this.#attemptSent = decision.sendable;
      this.#sent += delta;
      this.#options.sink.text(delta);
    }
    return decision.marked;
  }

  /** Send what is new of the message decoded so far from a respond call's arguments. */
  #sendMessage(args: string): void {
    const message = partialMessage(args);
    if (message === null || message.length <= this.#attemptSent) return;
    const delta = message.slice(this.#attemptSent);
    this.#attemptSent = message.length;
    this.#sent += delta;
    this.#options.sink.text(delta);
  }

  /**
   * The attempt's answer as the loop sees it: unchanged while none of its text went out; once
   * some did, prose without a call the rescue can read is the answer, as a `respond` call.
   */
  #settle(response: LLMResponse, text: string): LLMResponse {
    if (this.#attemptSent === 0 || Array.isArray(response)) return response;
    // Held text that reads as a call (valid, garbled or of an unknown tool) is the loop's to judge.
    const { rescueEnabled, toolNames, callFormat } = this.#options;
    if (rescueEnabled && detectToolCalls(text, toolNames, callFormat).status !== "absent") return response;
    this.committedProse = true;
    return [{ tool: this.#options.respondName, args: { message: text } }];
  }
}

const MESSAGE_START = /^\s*\{\s*"message"\s*:\s*"/;
const ESCAPES: Record<string, string> = {
  n: "\n",
  t: "\t",
  r: "\r",
  b: "\b",
  f: "\f",
  '"': '"',
  "\\": "\\",
  "/": "/",
};

/**
 * The `message` string of a respond call's arguments as far as they came (`{"message": "Hel`
 * gives `Hel`): null unless `message` is the first key and a string. An escape cut in half, and a
 * high surrogate whose pair has not come, wait for the rest.
 * @example
 * partialMessage('{"message": "Hi\\nthe') // "Hi\nthe"
 */
export function partialMessage(args: string): string | null {
  const start = MESSAGE_START.exec(args);
  if (start === null) return null;
  let message = "";
  for (let index = start[0].length; index < args.length; ) {
    const char = args[index] as string;
    if (char === '"') return message;
    if (char !== "\\") {
      message += char;
      index += 1;
      continue;
    }
    const escaped = args[index + 1];
    if (escaped === undefined) break;
    if (escaped === "u") {
      const hex = args.slice(index + 2, index + 6);
      if (hex.length < 4) break;
      message += String.fromCharCode(Number.parseInt(hex, 16));
      index += 6;
      continue;
    }
    message += ESCAPES[escaped] ?? escaped;
    index += 2;
  }
  const last = message.charCodeAt(message.length - 1);
  return last >= 0xd800 && last <= 0xdbff ? message.slice(0, -1) : message;
}
