/**
 * Limits against a real local backend: a 300 MB answer is dropped at the response cap (502) and
 * the proxy keeps serving; full waiting lines (`--serialize`, `--max-in-flight`) answer 503 with
 * `Retry-After` while the requests already admitted complete; JSON nested past the depth limit is
 * a 400 naming where, on the tool path that used to overflow the call stack.
 */
import { afterEach, describe, expect, it } from "vitest";
import { createProxy } from "../../src/proxy/app.ts";
import { createHttpBackend } from "../../src/proxy/backend/http-backend.ts";
import { BodyReclaimer } from "../../src/proxy/http/reclaim.ts";
import type { RunningProxy } from "../../src/proxy/server.ts";
import {
  answerWhen,
  gate,
  hugeAnswer,
  type MisbehavingBackend,
  reply,
  startMisbehavingBackend,
} from "./helpers/misbehaving-backend.ts";
import { startTestProxy, weatherToolOpenAI } from "./helpers/proxy-fixture.ts";
import { textCompletion, toolCallCompletion } from "./helpers/scripted-backend.ts";

const MB = 1024 * 1024;

let backend: MisbehavingBackend | undefined;
let proxy: RunningProxy | undefined;

afterEach(async () => {
  await proxy?.close();
  await backend?.close();
  proxy = undefined;
  backend = undefined;
});

function chat(url: string, body: Record<string, unknown>, path = "/v1/chat/completions"): Promise<Response> {
  return fetch(`${url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

const PLAIN = { model: "m", messages: [{ role: "user", content: "hi" }] };
const GUARDED = { ...PLAIN, tools: [weatherToolOpenAI] };

describe("backend response cap", () => {
  it("drops a 300 MB answer at the default cap with 502, on the forwarded and the guarded path, and keeps serving", async () => {
    backend = await startMisbehavingBackend([
      hugeAnswer(300 * MB),
      hugeAnswer(300 * MB),
      hugeAnswer(300 * MB, { declareLength: true }),
      reply(textCompletion("still here")),
    ]);
    proxy = await startTestProxy({ backendUrl: backend.url, maxRetries: 0 });

    for (const body of [PLAIN, GUARDED, PLAIN]) {
      const response = await chat(proxy.url, body);
      expect(response.status).toBe(502);
      const { error } = (await response.json()) as { error: { message: string } };
      expect(error.message).toMatch(/exceeds 33554432 bytes \(--max-response-bytes\)/);
    }
    await backend.cut(3);
    // The proxy stopped reading: the backend wrote far less than the 900 MB it offered.
    expect(backend.bytesWritten).toBeLessThan(200 * MB);

    const after = await chat(proxy.url, PLAIN);
    expect(after.status).toBe(200);
    expect(await after.json()).toMatchObject({ choices: [{ message: { content: "still here" } }] });
  });

  it("ends a forwarded stream that outgrows the cap with an error event", async () => {
    backend = await startMisbehavingBackend([hugeAnswer(8 * MB, { contentType: "text/event-stream" })]);
    proxy = await startTestProxy({ backendUrl: backend.url, backend: { maxResponseBytes: MB } });
    const response = await chat(proxy.url, { ...PLAIN, stream: true });
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text.length).toBeLessThanOrEqual(MB + 1024);
    expect(text).toMatch(/data: \{"error":\{"message":"Backend answer exceeds 1048576 bytes/);
  });
});

describe("bounded waiting lines", () => {
  it("answers 503 with Retry-After when the --serialize line is full, and serves those admitted", async () => {
    const release = gate();
    backend = await startMisbehavingBackend([
      answerWhen(release.go, textCompletion("first")),
      reply(textCompletion("second")),
    ]);
    proxy = await startTestProxy({ backendUrl: backend.url, serialize: true, maxQueue: 1 });
    const first = chat(proxy.url, PLAIN);
    await backend.received(1);
    const second = chat(proxy.url, PLAIN);
    // The second waits for the slot; wait until the proxy has queued it.
    await waitFor(async () => (await health(proxy as RunningProxy)).proxy.queued === 1);

    const refused = await chat(proxy.url, PLAIN);
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toBe("1");
    expect(await refused.json()).toMatchObject({
      error: { code: "overloaded", message: expect.stringMatching(/--serialize queue is full/) },
    });
    const anthropicRefused = await chat(
      proxy.url,
      { model: "m", max_tokens: 16, messages: [{ role: "user", content: "hi" }], tools: [] },
      "/v1/messages",
    );
    expect(anthropicRefused.status).toBe(503);
    expect(await anthropicRefused.json()).toMatchObject({
      type: "error",
      error: { type: "overloaded_error" },
    });

    release.open();
    expect(await (await first).json()).toMatchObject({ choices: [{ message: { content: "first" } }] });
    expect(await (await second).json()).toMatchObject({ choices: [{ message: { content: "second" } }] });
    expect(backend.chatRequests).toBe(2);
  });

  it("answers 503 with Retry-After past --max-in-flight and --max-queue", async () => {
    const release = gate();
    backend = await startMisbehavingBackend([
      answerWhen(release.go, toolCallCompletion([{ name: "get_weather", args: { city: "Paris" } }])),
    ]);
    proxy = await startTestProxy({ backendUrl: backend.url, maxInFlight: 1, maxQueue: 0 });
    const first = chat(proxy.url, GUARDED);
    await backend.received(1);
    const refused = await chat(proxy.url, PLAIN);
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toBe("1");
    expect(await refused.json()).toMatchObject({
      error: { message: expect.stringMatching(/--max-in-flight queue is full/) },
    });
    // Health stays outside the cap.
    expect((await fetch(`${proxy.url}/health`)).status).toBe(200);
    release.open();
    expect((await first).status).toBe(200);
  });
});

describe("body memory budget", () => {
  it("lets request bodies past --max-body-memory wait (503 when the line is full) while small ones pass", async () => {
    const release = gate();
    backend = await startMisbehavingBackend([
      answerWhen(release.go, textCompletion("big")),
      reply(textCompletion("small")),
    ]);
    proxy = await startTestProxy({ backendUrl: backend.url, maxBodyMemoryBytes: 100_000, maxQueue: 0 });
    const big = { model: "m", messages: [{ role: "user", content: "x".repeat(60_000) }] };
    const first = chat(proxy.url, big);
    await backend.received(1);
    const refused = await chat(proxy.url, big);
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toBe("1");
    expect(await refused.json()).toMatchObject({
      error: { message: expect.stringMatching(/--max-body-memory queue is full/) },
    });
    const small = await chat(proxy.url, PLAIN);
    expect(await small.json()).toMatchObject({ choices: [{ message: { content: "small" } }] });
    release.open();
    expect(await (await first).json()).toMatchObject({ choices: [{ message: { content: "big" } }] });
  });
});

describe("reclaiming large bodies (--reclaim-after)", () => {
  async function collections(running: RunningProxy): Promise<number> {
    const text = await (await fetch(`${running.url}/forge/metrics`)).text();
    const line = text.split("\n").find((row) => row.startsWith("forge_proxy_garbage_collections_total "));
    return Number(line?.split(" ")[1]);
  }
  const large = {
    model: "m",
    messages: [{ role: "user", content: "x".repeat(1.2 * MB) }],
    tools: [weatherToolOpenAI],
  };

  it("asks for one full collection per --reclaim-after bytes of large bodies, none for small ones", async () => {
    const weather = toolCallCompletion([{ name: "get_weather", args: { city: "Paris" } }]);
    backend = await startMisbehavingBackend(Array.from({ length: 26 }, () => reply(weather)));
    proxy = await startTestProxy({ backendUrl: backend.url, reclaimAfterBytes: 2 * MB });
    for (let index = 0; index < 20; index += 1) expect((await chat(proxy.url, GUARDED)).status).toBe(200);
    expect(await collections(proxy)).toBe(0);
    expect((await chat(proxy.url, large)).status).toBe(200);
    expect(await collections(proxy)).toBe(0);
    // The second 1.2 MiB body passes 2 MiB: one collection, counted once the answer has been sent.
    expect((await chat(proxy.url, large)).status).toBe(200);
    await waitFor(async () => (await collections(proxy as RunningProxy)) === 1);
    for (let index = 0; index < 4; index += 1) expect((await chat(proxy.url, large)).status).toBe(200);
    await waitFor(async () => (await collections(proxy as RunningProxy)) === 3);
  });

  it("leaves collection to V8 with --reclaim-after 0", async () => {
    backend = await startMisbehavingBackend(Array.from({ length: 3 }, () => reply(textCompletion("ok"))));
    proxy = await startTestProxy({ backendUrl: backend.url, reclaimAfterBytes: 0 });
    for (let index = 0; index < 3; index += 1)
      expect((await chat(proxy.url, { ...large, tools: undefined })).status).toBe(200);
    expect(await collections(proxy)).toBe(0);
  });

  it("really collects: an unreachable object is gone after the collection it asks for", async () => {
    let asked = 0;
    const reclaimer = new BodyReclaimer(MB, () => {
      asked += 1;
    });
    const weak = (() => new WeakRef({ payload: "y".repeat(1000) }))();
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(reclaimer.served(MB - 1)).toBeUndefined(); // not a large body: never counted
    const collection = reclaimer.served(MB);
    expect(asked).toBe(1);
    // One collection at a time: served meanwhile, nothing more is asked for.
    expect(reclaimer.served(MB)).toBeUndefined();
    await collection;
    expect(weak.deref()).toBeUndefined();
    expect(asked).toBe(1);
  });

  it("refuses a bad --reclaim-after", () => {
    expect(() => new BodyReclaimer(-1)).toThrow(/reclaimAfterBytes must be a whole number of bytes/);
    expect(() => new BodyReclaimer(1.5)).toThrow(RangeError);
  });
});

describe("request body length", () => {
  it("refuses a body shorter than its content-length with a 400", async () => {
    backend = await startMisbehavingBackend([reply(textCompletion("never"))]);
    const app = createProxy({ backend: createHttpBackend({ url: backend.url }) });
    const raw = JSON.stringify(PLAIN);
    const response = await app.request("/v1/chat/completions", {
      method: "POST",
      headers: { "content-type": "application/json", "content-length": String(raw.length + 10) },
      body: raw,
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({
      error: { message: `Request body does not match its content-length (${raw.length + 10} bytes)` },
    });
    expect(backend.chatRequests).toBe(0);
  });
});

describe("JSON depth limit", () => {
  it("refuses 10 000 nested arrays with a 400 naming where, and keeps serving", async () => {
    backend = await startMisbehavingBackend([reply(toolCallCompletion([{ name: "get_weather", args: {} }]))]);
    proxy = await startTestProxy({ backendUrl: backend.url });
    const deep = `${"[".repeat(10_000)}${"]".repeat(10_000)}`;
    const tool = `{"type":"function","function":{"name":"deep","parameters":{"type":"object","default":${deep}}}}`;
    const raw = `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[${tool}]}`;
    expect(raw.length).toBeLessThan(25_000);
    const response = await fetch(`${proxy.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: raw,
    });
    expect(response.status).toBe(400);
    const { error } = (await response.json()) as { error: { message: string; param: string } };
    expect(error.message).toMatch(/nested deeper than 64 levels \(--max-json-depth\)/);
    expect(error.param).toMatch(/^tools\[0\]\.function\.parameters\.default\[0\]/);

    const anthropic = await fetch(`${proxy.url}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: `{"model":"m","max_tokens":8,"messages":[{"role":"user","content":${deep}}]}`,
    });
    expect(anthropic.status).toBe(400);
    expect(await anthropic.json()).toMatchObject({ error: { type: "invalid_request_error" } });
    expect(backend.chatRequests).toBe(0);

    const fine = await chat(proxy.url, GUARDED);
    expect(fine.status).toBe(200);
  });
});

async function health(running: RunningProxy): Promise<{ proxy: { queued: number } }> {
  return (await (await fetch(`${running.url}/forge/health`)).json()) as { proxy: { queued: number } };
}

async function waitFor(condition: () => Promise<boolean>): Promise<void> {
  while (!(await condition())) await new Promise((resolve) => setTimeout(resolve, 10));
}
