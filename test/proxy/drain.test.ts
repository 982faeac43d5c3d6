/**
 * Draining on shutdown over real sockets on 127.0.0.1: requests waiting in the `--serialize` line
 * get a complete 503 with `Retry-After` in their API's error shape, the request running finishes
 * (or gets the same 503 at the drain deadline), new requests are refused alike, and no client sees
 * a reset.
 */
import { request as httpRequest } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { createProxy } from "../../src/proxy/app.ts";
import { ProxyDrain, SHUTDOWN_RETRY_AFTER_SECONDS } from "../../src/proxy/http/drain.ts";
import type { RunningProxy } from "../../src/proxy/server.ts";
import { createFakeBackend } from "./helpers/fake-backend.ts";
import {
  answerWhen,
  gate,
  type MisbehavingBackend,
  startMisbehavingBackend,
} from "./helpers/misbehaving-backend.ts";
import { startTestProxy, weatherToolAnthropic, weatherToolOpenAI } from "./helpers/proxy-fixture.ts";
import { toolCallCompletion } from "./helpers/scripted-backend.ts";

let backend: MisbehavingBackend | undefined;
let proxy: RunningProxy | undefined;

afterEach(async () => {
  await proxy?.close();
  await backend?.close();
  proxy = undefined;
  backend = undefined;
});

const CALL = toolCallCompletion([{ name: "get_weather", args: { city: "Paris" } }]);
/**
 * Requests sent behind the one running: past the default --max-in-flight (64), so 63 wait in the
 * --serialize line and the rest in the --max-in-flight line, as in the probe that found the resets.
 */
const QUEUED = 100;

/** What a client saw: a complete answer (status, headers, body) or the socket error it got instead. */
type Outcome =
  | { kind: "answer"; status: number; retryAfter: string | undefined; body: string }
  | { kind: "error"; code: string };

/** One POST over its own connection, reporting a reset as an outcome rather than a throw. */
function post(url: string, path: string, body: unknown): Promise<Outcome> {
  return new Promise((resolve) => {
    const payload = JSON.stringify(body);
    const outgoing = httpRequest(
      `${url}${path}`,
      {
        method: "POST",
        agent: false,
        headers: {
          "content-type": "application/json",
          "content-length": Buffer.byteLength(payload),
          authorization: "Bearer client-key",
        },
      },
      (incoming) => {
        let text = "";
        incoming.setEncoding("utf8");
        incoming.on("data", (chunk: string) => {
          text += chunk;
        });
        incoming.on("end", () =>
          resolve({
            kind: "answer",
            status: incoming.statusCode ?? 0,
            retryAfter: incoming.headers["retry-after"],
            body: text,
          }),
        );
        incoming.on("error", (error: NodeJS.ErrnoException) =>
          resolve({ kind: "error", code: error.code ?? error.message }),
        );
      },
    );
    outgoing.on("error", (error: NodeJS.ErrnoException) =>
      resolve({ kind: "error", code: error.code ?? error.message }),
    );
    outgoing.end(payload);
  });
}

function openAIChat(url: string): Promise<Outcome> {
  return post(url, "/v1/chat/completions", {
    model: "m",
    messages: [{ role: "user", content: "Weather in Paris?" }],
    tools: [weatherToolOpenAI],
  });
}

function anthropicMessages(url: string): Promise<Outcome> {
  return post(url, "/v1/messages", {
    model: "m",
    max_tokens: 64,
    messages: [{ role: "user", content: "Weather in Paris?" }],
    tools: [weatherToolAnthropic],
  });
}

/**
 * Wait until `count` requests besides this one are in the proxy (`forge_proxy_requests_in_flight`
 * counts them from arrival, waiting ones included, and this metrics request itself).
 */
async function arrived(url: string, count: number): Promise<void> {
  for (;;) {
    const text = await (await fetch(`${url}/forge/metrics`)).text();
    const inFlight = Number(/^forge_proxy_requests_in_flight(?:\{[^}]*\})? (\d+)/m.exec(text)?.[1] ?? 0);
    if (inFlight >= count + 1) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function expectShuttingDown(outcome: Outcome, api: "openai" | "anthropic"): void {
  expect(outcome).toMatchObject({
    kind: "answer",
    status: 503,
    retryAfter: String(SHUTDOWN_RETRY_AFTER_SECONDS),
  });
  const body = JSON.parse((outcome as { body: string }).body) as Record<string, unknown>;
  if (api === "anthropic")
    expect(body).toMatchObject({
      type: "error",
      error: { type: "overloaded_error", message: expect.stringContaining("shutting down") },
    });
  else
    expect(body).toMatchObject({
      error: { type: "server_error", code: "overloaded", message: expect.stringContaining("shutting down") },
    });
}

describe("draining the proxy on close", () => {
  it("answers every request waiting in the --serialize line 503 with Retry-After; the one running finishes", async () => {
    const release = gate();
    backend = await startMisbehavingBackend([answerWhen(release.go, CALL)]);
    proxy = await startTestProxy({
      backendUrl: backend.url,
      serialize: true,
      maxRetries: 0,
      drainTimeoutMs: 10_000,
    });
    const url = proxy.url;
    const running = openAIChat(url);
    await backend.received(1);
    const waiting = Array.from({ length: QUEUED }, (_, index) =>
      index % 2 === 0 ? openAIChat(url) : anthropicMessages(url),
    );
    await arrived(url, QUEUED + 1);

    const closed = proxy.close();
    const refused = await Promise.all(waiting);
    // Refused while the request ahead of them still runs: at once, not at the deadline.
    expect(backend.chatRequests).toBe(1);
    for (const [index, outcome] of refused.entries())
      expectShuttingDown(outcome, index % 2 === 0 ? "openai" : "anthropic");

    release.open();
    const first = await running;
    expect(first).toMatchObject({ kind: "answer", status: 200 });
    expect(JSON.parse((first as { body: string }).body)).toMatchObject({
      choices: [{ message: { tool_calls: [{ function: { name: "get_weather" } }] } }],
    });
    await closed;
    expect(backend.chatRequests).toBe(1);
  });

  it("answers the waiting line at once, and the request still running at the drain deadline, with 503", async () => {
    backend = await startMisbehavingBackend([answerWhen(new Promise(() => {}), CALL)]);
    proxy = await startTestProxy({
      backendUrl: backend.url,
      serialize: true,
      maxRetries: 0,
      drainTimeoutMs: 2_000,
    });
    const url = proxy.url;
    const running = openAIChat(url);
    await backend.received(1);
    const waiting = Array.from({ length: QUEUED }, () => openAIChat(url));
    await arrived(url, QUEUED + 1);

    const startedAt = Date.now();
    const closed = proxy.close();
    const refused = await Promise.all(waiting);
    expect(Date.now() - startedAt).toBeLessThan(1_500);
    for (const outcome of refused) expectShuttingDown(outcome, "openai");
    // The one running is answered, not reset, once the deadline passes; its backend call is aborted.
    const last = await running;
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(1_900);
    expectShuttingDown(last, "openai");
    expect((last as { body: string }).body).toContain("drain timeout");
    await closed;
    await backend.cut(1);
  });

  it("refuses every new request once the drain has begun, in its API's shape", async () => {
    const drain = new ProxyDrain();
    const app = createProxy({ backend: createFakeBackend([]), drain });
    drain.begin();
    const openai = await app.request("/v1/chat/completions", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] }),
    });
    expect(openai.status).toBe(503);
    expect(openai.headers.get("retry-after")).toBe(String(SHUTDOWN_RETRY_AFTER_SECONDS));
    expect(openai.headers.get("connection")).toBe("close");
    expect(await openai.json()).toMatchObject({ error: { code: "overloaded", type: "server_error" } });
    const anthropic = await app.request("/v1/messages", { method: "POST", body: "{}" });
    expect(anthropic.status).toBe(503);
    expect(await anthropic.json()).toMatchObject({ type: "error", error: { type: "overloaded_error" } });
  });
});
