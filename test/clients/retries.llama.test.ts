/**
 * Client retries against the real llama-server (tiny test model, 127.0.0.1), reached through a
 * relay on 127.0.0.1 that misbehaves on purpose for the requests it is told to: it cuts a
 * streamed tool call after a few of llama-server's own events, or answers 503 with Retry-After
 * before passing the request on. Temperature 0 and a fixed seed: the retried answer must equal
 * the answer llama-server gives without the relay.
 */
import { createServer, request as httpRequest, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { OpenAICompatibleClient } from "../../src/clients/openai/compatible-client.ts";
import { defineTool } from "../../src/core/tools.ts";
import { ChunkType, type StreamChunk } from "../../src/core/types.ts";
import { beforeAllOrFail } from "../helpers/before-all-or-fail.ts";
import { startTestLlamaServer, type TestLlamaServer } from "../helpers/llama-server-process.ts";

const weather = defineTool({
  name: "get_weather",
  description: "Current weather for a city",
  parameters: z.object({ city: z.string() }),
  execute: () => "",
}).spec;
const question = [
  { role: "system", content: "You report the weather." },
  { role: "user", content: "Weather in Paris?" },
];

/** What the relay does with the next request: pass it on, cut its stream, or refuse it first. */
type Misbehaviour = "pass" | "cut-after-3-tool-events" | "503-retry-after-1";

let llama: TestLlamaServer | undefined;
let relay: Server | undefined;
let relayUrl = "";
const plan: Misbehaviour[] = [];
const seen: { misbehaviour: Misbehaviour; at: number }[] = [];

beforeAllOrFail(async () => {
  llama = await startTestLlamaServer({ ctx: 2048, slots: 1, threads: 2 });
  const upstream = new URL(llama.baseUrl);
  relay = createServer((incoming, outgoing) => {
    const misbehaviour = plan.shift() ?? "pass";
    seen.push({ misbehaviour, at: performance.now() });
    if (misbehaviour === "503-retry-after-1") {
      incoming.resume();
      outgoing.writeHead(503, { "content-type": "application/json", "retry-after": "1" });
      outgoing.end(
        JSON.stringify({ error: { code: 503, message: "Loading model", type: "unavailable_error" } }),
      );
      return;
    }
    const forwarded = httpRequest(
      {
        hostname: upstream.hostname,
        port: upstream.port,
        path: incoming.url,
        method: incoming.method,
        headers: incoming.headers,
      },
      (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        let toolEvents = 0;
        answer.on("data", (data: Buffer) => {
          if (outgoing.destroyed) return;
          outgoing.write(data);
          if (misbehaviour !== "cut-after-3-tool-events") return;
          toolEvents += data.toString("utf8").split('"tool_calls"').length - 1;
          if (toolEvents >= 3) {
            // Mid-call: the bytes so far leave, then the connection goes.
            answer.destroy();
            setTimeout(() => outgoing.socket?.destroy(), 20);
          }
        });
        answer.on("end", () => outgoing.end());
      },
    );
    forwarded.on("error", () => outgoing.socket?.destroy());
    incoming.pipe(forwarded);
  });
  await new Promise<void>((resolve) => relay?.listen(0, "127.0.0.1", resolve));
  relayUrl = `http://127.0.0.1:${(relay.address() as AddressInfo).port}`;
}, 900_000);

afterAll(async () => {
  relay?.closeAllConnections();
  await new Promise<void>((resolve) => (relay ? relay.close(() => resolve()) : resolve()));
  await llama?.stop();
});

function makeClient(baseUrl: string): OpenAICompatibleClient {
  return new OpenAICompatibleClient({
    baseUrl: `${baseUrl}/v1`,
    mode: "native",
    toolChoice: "required",
    temperature: 0,
    seed: 7,
    maxTokens: 64,
    retryBaseMs: 10,
    retryMaxMs: 50,
    logger: () => {},
  });
}

async function collect(stream: AsyncIterable<StreamChunk>): Promise<StreamChunk[]> {
  const chunks: StreamChunk[] = [];
  for await (const item of stream) chunks.push(item);
  return chunks;
}

describe("retries against the real llama-server", () => {
  it("retries a stream cut mid-tool-call: RETRY, then the same call llama-server gives directly", async () => {
    const direct = await makeClient(llama?.baseUrl ?? "").send(question, [weather]);
    expect(Array.isArray(direct), JSON.stringify(direct)).toBe(true);

    plan.push("cut-after-3-tool-events", "pass");
    seen.length = 0;
    const chunks = await collect(makeClient(relayUrl).sendStream(question, [weather]));

    const types = chunks.map((item) => item.type);
    const retryAt = types.indexOf(ChunkType.RETRY);
    // Deltas of the cut attempt, one RETRY, the whole second attempt.
    expect(retryAt).toBeGreaterThan(0);
    expect(types.filter((type) => type === ChunkType.RETRY)).toHaveLength(1);
    expect(types.slice(0, retryAt).every((type) => type === ChunkType.TOOL_CALL_DELTA)).toBe(true);
    expect(chunks.at(-1)).toEqual({ type: ChunkType.FINAL, response: direct });
    expect(seen.map((entry) => entry.misbehaviour)).toEqual(["cut-after-3-tool-events", "pass"]);
  });

  it("waits out a 503's Retry-After, then gets llama-server's answer", async () => {
    const direct = await makeClient(llama?.baseUrl ?? "").send(question, [weather]);

    plan.push("503-retry-after-1", "pass");
    seen.length = 0;
    const answer = await makeClient(relayUrl).send(question, [weather]);

    expect(answer).toEqual(direct);
    const [refused, passed] = seen as [(typeof seen)[number], (typeof seen)[number]];
    expect(seen.map((entry) => entry.misbehaviour)).toEqual(["503-retry-after-1", "pass"]);
    expect(passed.at - refused.at).toBeGreaterThanOrEqual(990);
  });
});
