/**
 * How OpenAICompatibleClient.send fails, against a real local HTTP server: HTTP errors, bodies
 * that are not the wire shape, timeouts, an unreachable server, dropped connections and aborts.
 * Retries are off here (each error is that of one attempt); test/clients/retries.test.ts has them.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { OpenAICompatibleClient } from "../../src/clients/openai/compatible-client.ts";
import { BackendError } from "../../src/core/errors.ts";
import { CHAT, completion, errorBody, tools } from "./helpers/openai-shapes.ts";
import { drop, hang, json, ReplayServer, raw, unusedPort } from "./helpers/replay-server.ts";

let server: ReplayServer;

beforeEach(async () => {
  server = await ReplayServer.start();
});
afterEach(async () => {
  await server.close();
});

function client(options: ConstructorParameters<typeof OpenAICompatibleClient>[0] = {}) {
  return new OpenAICompatibleClient({
    baseUrl: `${server.url}/v1`,
    mode: "native",
    logger: () => {},
    retries: 0,
    streamRetries: 0,
    ...options,
  });
}

const history = [{ role: "user", content: "Weather in Paris?" }];

async function failure(promise: Promise<unknown>): Promise<Error & Record<string, unknown>> {
  const error = await promise.then(
    () => {
      throw new Error("expected a failure");
    },
    (caught: unknown) => caught,
  );
  return error as Error & Record<string, unknown>;
}

describe("HTTP errors", () => {
  it("is BackendError(500) with the body, after exactly one request (clients never retry)", async () => {
    const body = errorBody(500, "CUDA error: out of memory");
    server.reply(CHAT, json(body, { status: 500 }));
    const error = await failure(client().send(history, tools));

    expect(error).toBeInstanceOf(BackendError);
    expect(error).toMatchObject({ name: "BackendError", statusCode: 500, body: JSON.stringify(body) });
    expect(error.message).toContain("CUDA error");
    expect(server.requests).toHaveLength(1);
  });

  it("keeps a plain-text body", async () => {
    server.reply(CHAT, raw("Service Unavailable", { status: 503 }));
    expect(await failure(client().send(history, tools))).toMatchObject({
      statusCode: 503,
      body: "Service Unavailable",
    });
  });
});

describe("bodies that are not the wire shape", () => {
  it("is BackendError(502) with the raw body for malformed JSON", async () => {
    server.reply(CHAT, raw('{"choices": [{"message": {"content": "hi"', { contentType: "application/json" }));
    const error = await failure(client().send(history, tools));
    expect(error).toMatchObject({ statusCode: 502, body: '{"choices": [{"message": {"content": "hi"' });
    expect(error.message).toMatch(/Malformed JSON/);
  });

  it("is BackendError(502) naming the problem when the JSON has the wrong shape", async () => {
    server.reply(CHAT, json({ choices: [] }), json({ result: "hi" }));
    expect((await failure(client().send(history, tools))).message).toMatch(/Unexpected response shape/);
    expect(await failure(client().send(history, tools))).toMatchObject({
      statusCode: 502,
      body: '{"result":"hi"}',
    });
  });
});

describe("timeouts", () => {
  it("is BackendError(408) when the server does not answer within timeoutMs", async () => {
    server.reply(CHAT, hang());
    const started = Date.now();
    const error = await failure(client({ timeoutMs: 150 }).send(history, tools));
    expect(error).toMatchObject({ name: "BackendError", statusCode: 408 });
    expect(error.body).toContain("150 ms");
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it("is BackendError(408) when the answer is slower than timeoutMs", async () => {
    server.reply(CHAT, json(completion({ content: "late" }), { delayMs: 400 }));
    expect(await failure(client({ timeoutMs: 100 }).send(history, tools))).toMatchObject({ statusCode: 408 });
  });

  it("waits for a slow answer within timeoutMs", async () => {
    server.reply(CHAT, json(completion({ content: "slow but fine" }), { delayMs: 100 }));
    expect(await client({ timeoutMs: 2_000 }).send(history, tools)).toEqual({ content: "slow but fine" });
  });
});

describe("transport failures", () => {
  it("is BackendError(503) whose body is the transport message when nothing listens", async () => {
    const port = await unusedPort();
    const unreachable = new OpenAICompatibleClient({
      baseUrl: `http://127.0.0.1:${port}/v1`,
      logger: () => {},
      retries: 0,
    });
    const error = await failure(unreachable.send(history, tools));
    expect(error).toMatchObject({ name: "BackendError", statusCode: 503 });
    expect(error.body).toMatch(/ECONNREFUSED/);
    expect(error.message).toContain(`127.0.0.1:${port}`);
  });

  it("is BackendError(503) when the server drops the connection without answering", async () => {
    server.reply(CHAT, drop());
    expect(await failure(client().send(history, tools))).toMatchObject({ statusCode: 503 });
  });

  it("is BackendError(502) naming the redirect, which it does not follow, after one request", async () => {
    server.reply(CHAT, raw("moved", { status: 307, headers: { location: "/v2/chat/completions" } }));
    const error = await failure(client().send(history, tools));
    expect(error).toMatchObject({ name: "BackendError", statusCode: 502 });
    expect(error.message).toContain(`${server.url}/v1/chat/completions answered with a redirect`);
    expect(error.message).toContain("base URL");
    expect(server.requests).toHaveLength(1);
  });

  it("is BackendError(503) for getContextLength too", async () => {
    const port = await unusedPort();
    const unreachable = new OpenAICompatibleClient({
      baseUrl: `http://127.0.0.1:${port}/v1`,
      logger: () => {},
      retries: 0,
    });
    expect(await failure(unreachable.getContextLength())).toMatchObject({ statusCode: 503 });
  });
});

describe("abort", () => {
  it("rethrows the AbortError, not a BackendError", async () => {
    server.reply(CHAT, hang());
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    const error = await failure(client().send(history, tools, { signal: controller.signal }));
    expect(error).not.toBeInstanceOf(BackendError);
    expect(error.name).toBe("AbortError");
  });

  it("rethrows the caller's abort reason", async () => {
    server.reply(CHAT, hang());
    const controller = new AbortController();
    const reason = new Error("run cancelled");
    setTimeout(() => controller.abort(reason), 50);
    expect(await failure(client().send(history, tools, { signal: controller.signal }))).toBe(reason);
  });

  it("rejects at once with an already-aborted signal", async () => {
    const reason = new Error("too late");
    const error = await failure(client().send(history, tools, { signal: AbortSignal.abort(reason) }));
    expect(error).toBe(reason);
  });
});
