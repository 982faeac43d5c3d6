/**
 * Live text (ADR 014) as a property: for any script of attempts (prose, calls in the rescue's
 * formats, calls of unknown tools that are nudged away) cut into any deltas, the text that went
 * out live is the beginning of the answer, comes from one attempt and holds no call marker; and a
 * request whose stream sent no live text ends with the answer the non-streamed request gives.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createMessage, type Message, MessageRole, MessageType } from "../../src/core/messages.ts";
import type { ToolSpec } from "../../src/core/tools.ts";
import { ChunkType, type LLMClient, type LLMResponse, type StreamChunk } from "../../src/core/types.ts";
import type { ProxyAnswer } from "../../src/proxy/answer.ts";
import type { ProxyBackend } from "../../src/proxy/backend/backend.ts";
import { createChatService } from "../../src/proxy/chat-service.ts";
import type { ProxyRequest } from "../../src/proxy/proxy-request.ts";
import { gateText } from "../../src/proxy/stream-gate.ts";

const weatherTool: ToolSpec = {
  name: "get_weather",
  description: "Weather of a city",
  parameters: z.object({ city: z.string() }),
};

/** One attempt: its text (or a native respond call's message) and where it is cut into deltas. */
interface Attempt {
  text: string;
  cuts: number[];
  /** Sent as a native `respond` call whose arguments carry `text` as the message. */
  respond?: boolean;
}

/** A client that streams each scripted attempt in its deltas (or answers it whole). */
class ChunkedClient implements LLMClient {
  readonly apiFormat = "openai" as const;
  readonly #attempts: Attempt[];
  calls = 0;

  constructor(attempts: Attempt[]) {
    this.#attempts = attempts;
  }

  #next(): Attempt {
    // Past the script the model keeps repeating its last attempt.
    const attempt = this.#attempts[Math.min(this.calls, this.#attempts.length - 1)] as Attempt;
    this.calls += 1;
    return attempt;
  }

  async send(): Promise<LLMResponse> {
    return responseOf(this.#next());
  }

  async *sendStream(): AsyncIterable<StreamChunk> {
    const attempt = this.#next();
    const wire = attempt.respond ? JSON.stringify({ message: attempt.text }) : attempt.text;
    const points = [...new Set(attempt.cuts.map((cut) => cut % (wire.length + 1)))].sort((a, b) => a - b);
    let from = 0;
    for (const point of [...points, wire.length]) {
      if (point > from) {
        const content = wire.slice(from, point);
        yield attempt.respond
          ? { type: ChunkType.TOOL_CALL_DELTA, content, toolCall: { position: 0, name: "respond" } }
          : { type: ChunkType.TEXT_DELTA, content };
      }
      from = Math.max(from, point);
    }
    yield { type: ChunkType.FINAL, response: responseOf(attempt) };
  }

  async getContextLength(): Promise<number | null> {
    return null;
  }
}

function responseOf(attempt: Attempt): LLMResponse {
  return attempt.respond ? [{ tool: "respond", args: { message: attempt.text } }] : { content: attempt.text };
}

function backendOf(client: LLMClient): ProxyBackend {
  return {
    format: "openai",
    url: "fake://backend",
    client: () => client,
    forward: async () => new Response(null),
    contextLength: async () => null,
    health: async () => ({ status: "ok", url: "fake://backend", format: "openai" }),
  };
}

const messages: Message[] = [
  createMessage(MessageRole.USER, "Weather in Paris?", { type: MessageType.USER_INPUT }),
];

function request(stream: boolean): ProxyRequest {
  return {
    model: "m",
    messages,
    tools: [weatherTool],
    stream,
    includeUsage: false,
    extraBody: {},
    callIdPrefix: "call_",
  };
}

/** The request answered, streamed with a live sink or not: the answer (or error) and the live text. */
async function run(attempts: Attempt[], stream: boolean) {
  const client = new ChunkedClient(attempts);
  const service = createChatService({ backend: backendOf(client), maxRetries: 2, rescueEnabled: true });
  const live: string[] = [];
  const sink = stream ? { text: (delta: string) => live.push(delta) } : undefined;
  let answer: ProxyAnswer | undefined;
  let error: string | undefined;
  try {
    answer = await service.answer(request(stream), new AbortController().signal, undefined, sink);
  } catch (thrown) {
    error = (thrown as Error).name;
  }
  return { answer, error, live: live.join(""), calls: client.calls };
}

/** An answer without its random ids. */
function shape(answer: ProxyAnswer | undefined) {
  if (answer === undefined) return undefined;
  const { content, finishReason, gaveUp } = answer;
  return { content, finishReason, gaveUp, calls: answer.toolCalls.map(({ name, args }) => ({ name, args })) };
}

const word = fc.constantFrom(
  "It",
  " is",
  " sunny",
  " in",
  " Paris",
  ".",
  "\n",
  " a < b",
  " [1]",
  " {x}",
  " `x`",
);
const prose = fc.array(word, { minLength: 1, maxLength: 8 }).map((words) => words.join(""));
const city = fc.constantFrom("Paris", "Oslo", "Lima");
const call = fc.oneof(
  city.map((name) => `<tool_call>{"name": "get_weather", "arguments": {"city": "${name}"}}</tool_call>`),
  city.map((name) => `\`\`\`json\n{"name": "get_weather", "arguments": {"city": "${name}"}}\n\`\`\``),
  city.map((name) => `[get_weather(city="${name}")]`),
  city.map((name) => `{"name": "get_weather", "arguments": {"city": "${name}"}}`),
  fc.constant('<tool_call>{"name": "get_forecast", "arguments": {}}</tool_call>'),
);
const attemptText = fc.oneof(
  prose,
  call,
  fc.tuple(prose, call).map(([before, after]) => `${before}\n${after}`),
);
const cuts = fc.array(fc.nat({ max: 200 }), { maxLength: 12 });
const attempt: fc.Arbitrary<Attempt> = fc.oneof(
  fc.record({ text: attemptText, cuts }),
  // A native respond call, its message with characters JSON escapes.
  fc.record({
    text: fc.tuple(prose, fc.constantFrom("", '"q"', "\\", "é😀", "\n\t")).map(([a, b]) => a + b),
    cuts,
    respond: fc.constant(true),
  }),
);
const script = fc.array(attempt, { minLength: 1, maxLength: 3 });

describe("live text, as a property", () => {
  it("streams the beginning of the answer, from one attempt, never a held call; no live text, same answer", async () => {
    await fc.assert(
      fc.asyncProperty(script, async (attempts) => {
        const streamed = await run(attempts, true);
        expect(streamed.calls).toBeGreaterThan(0);
        if (streamed.live.length > 0) {
          // What went out is the answer's beginning (or the stream ends in an error event after it).
          if (streamed.answer) expect(streamed.answer.content.startsWith(streamed.live)).toBe(true);
          // It came from one attempt, and (in text) from before anything that could be a call.
          const from = attempts.find((one) => one.text.startsWith(streamed.live));
          expect(from).toBeDefined();
          if (!from?.respond) expect(gateText(streamed.live, ["get_weather", "respond"]).marked).toBe(false);
          return;
        }
        const whole = await run(attempts, false);
        expect(shape(streamed.answer)).toEqual(shape(whole.answer));
        expect(streamed.error).toEqual(whole.error);
        expect(streamed.calls).toBe(whole.calls);
      }),
      { numRuns: 150 },
    );
  });

  it("a prose answer streamed whole is the answer, with no retry", async () => {
    await fc.assert(
      fc.asyncProperty(
        prose.filter((text) => gateText(text, ["get_weather", "respond"]).sendable > 0),
        fc.array(fc.nat({ max: 200 }), { maxLength: 12 }),
        async (text, cuts) => {
          const streamed = await run([{ text, cuts }], true);
          expect(streamed.calls).toBe(1);
          expect(streamed.answer?.content).toBe(text);
          expect(streamed.answer?.finishReason).toBe("stop");
          expect(text.startsWith(streamed.live)).toBe(true);
        },
      ),
      { numRuns: 100 },
    );
  });
});
