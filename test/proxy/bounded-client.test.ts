import { describe, expect, it } from "vitest";
import { ChunkType, type LLMClient, type SendOptions, type StreamChunk } from "../../src/core/types.ts";
import { DEFAULT_RETRY_BOUNDS } from "../../src/guardrails/bounded-retry.ts";
import { BoundedRetryClient } from "../../src/proxy/bounded-client.ts";

/** A backend that streams the same phrase until it is aborted (at most `limit` chunks). */
function loopingClient(phrase: string, limit = 10_000): LLMClient & { seen: SendOptions[]; chunks: number } {
  const client = {
    apiFormat: "openai" as const,
    seen: [] as SendOptions[],
    chunks: 0,
    async send() {
      return { content: phrase };
    },
    async *sendStream(
      _messages: unknown,
      _tools: unknown,
      options: SendOptions = {},
    ): AsyncIterable<StreamChunk> {
      client.seen.push(options);
      for (let index = 0; index < limit; index++) {
        if (options.signal?.aborted) throw new Error("aborted");
        client.chunks += 1;
        yield { type: ChunkType.TEXT_DELTA, content: phrase };
        await Promise.resolve();
      }
      yield { type: ChunkType.FINAL, response: { content: phrase.repeat(limit) } };
    },
    async getContextLength() {
      return null;
    },
  };
  return client;
}

async function collect(stream: AsyncIterable<StreamChunk>): Promise<StreamChunk[]> {
  const chunks: StreamChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

describe("BoundedRetryClient", () => {
  it("aborts a looping stream early and ends it with one copy of the loop", async () => {
    const inner = loopingClient("Let me check again. ");
    let degenerate = 0;
    const client = new BoundedRetryClient(inner, {
      bounds: DEFAULT_RETRY_BOUNDS,
      askedReply: undefined,
      onDegenerate: () => (degenerate += 1),
    });
    const chunks = await collect(client.sendStream([{ role: "user", content: "go" }]));
    expect(inner.seen[0]?.signal?.aborted).toBe(true);
    expect(inner.chunks).toBeLessThan(40);
    expect(degenerate).toBe(1);
    const final = chunks.at(-1);
    expect(final?.type).toBe(ChunkType.FINAL);
    expect(final?.response).toEqual({ content: "Let me check again. " });
    const streamed = chunks
      .map((chunk) => (chunk.type === ChunkType.TEXT_DELTA ? chunk.content : ""))
      .join("");
    // What streamed before the loop was long enough to tell: about `minChars`, then nothing more.
    expect(streamed.length).toBeLessThanOrEqual(
      DEFAULT_RETRY_BOUNDS.minChars + "Let me check again. ".length,
    );
  });

  it("caps the second call from the first answer's reported tokens", async () => {
    const seen: SendOptions[] = [];
    const inner: LLMClient = {
      apiFormat: "openai",
      async send(_messages, _tools, options = {}) {
        seen.push(options);
        options.onUsage?.({ promptTokens: 500, completionTokens: 30 });
        return { content: "short" };
      },
      sendStream: () => {
        throw new Error("not streamed");
      },
      getContextLength: async () => null,
    };
    const client = new BoundedRetryClient(inner, {
      bounds: { ...DEFAULT_RETRY_BOUNDS, retryFloorTokens: 64 },
      askedReply: 4096,
      onDegenerate: () => {},
    });
    let reported = 0;
    await client.send([], undefined, { onUsage: (usage) => (reported = usage.promptTokens) });
    await client.send([], undefined, {});
    expect(reported).toBe(500);
    expect(seen[0]?.sampling?.maxTokens).toBeUndefined();
    expect(seen[1]?.sampling?.maxTokens).toBe(120);
  });

  it("lifts the cap for the rest of the request once a retry used it up", async () => {
    const seen: SendOptions[] = [];
    const answers = [30, 120, 500];
    const inner: LLMClient = {
      apiFormat: "openai",
      async send(_messages, _tools, options = {}) {
        seen.push(options);
        options.onUsage?.({ promptTokens: 500, completionTokens: answers[seen.length - 1] ?? 0 });
        return [{ tool: "Write", args: { file_path: "a.ts", content: "…" } }];
      },
      sendStream: () => {
        throw new Error("not streamed");
      },
      getContextLength: async () => null,
    };
    const client = new BoundedRetryClient(inner, {
      bounds: { ...DEFAULT_RETRY_BOUNDS, retryFloorTokens: 64 },
      askedReply: 4096,
      onDegenerate: () => {},
    });
    for (let call = 0; call < 3; call++) await client.send([], undefined, {});
    expect(seen.map((options) => options.sampling?.maxTokens)).toEqual([undefined, 120, undefined]);
  });
});
