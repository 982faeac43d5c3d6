/**
 * Every fault the proxy answers, checked through the official SDKs (their typed errors, status
 * and parsed body) and raw fetch (the body shape), against real servers on 127.0.0.1.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { RunningProxy } from "../../src/proxy/server.ts";
import {
  anthropicClientFor,
  openAIClientFor,
  startTestProxy,
  weatherToolAnthropic,
  weatherToolOpenAI,
} from "./helpers/proxy-fixture.ts";
import {
  type ScriptedBackend,
  startScriptedBackend,
  streamedTextCompletion,
  textCompletion,
  toolCallCompletion,
} from "./helpers/scripted-backend.ts";

const ask = [{ role: "user" as const, content: "Weather in Paris?" }];

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected the call to fail");
}

describe("credentials", () => {
  let backend: ScriptedBackend;
  let proxy: RunningProxy;

  beforeAll(async () => {
    backend = await startScriptedBackend([], {
      fallback: toolCallCompletion([{ name: "respond", args: { message: "ok" } }]),
    });
    proxy = await startTestProxy({
      backendUrl: backend.url,
      apiKey: "proxy-secret",
      backend: { apiKey: "backend-secret" },
    });
  });
  afterEach(() => {
    backend.requests.length = 0;
  });
  afterAll(async () => {
    await proxy.close();
    await backend.close();
  });

  it("rejects a wrong key with OpenAI.AuthenticationError (401) and never reaches the backend", async () => {
    const error = await rejection(
      openAIClientFor(proxy, "wrong").chat.completions.create({ model: "m", messages: ask }),
    );
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(401);
    expect((error as InstanceType<typeof OpenAI.APIError>).type).toBe("authentication_error");
    expect(backend.requests).toHaveLength(0);
  });

  it("rejects a missing key in Anthropic's shape (Anthropic.AuthenticationError)", async () => {
    const response = await fetch(`${proxy.url}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "m", max_tokens: 5, messages: ask }),
    });
    expect(response.status).toBe(401);
    expect(await response.json()).toMatchObject({ type: "error", error: { type: "authentication_error" } });
    const error = await rejection(
      anthropicClientFor(proxy, "wrong").messages.create({ model: "m", max_tokens: 5, messages: ask }),
    );
    expect(error).toBeInstanceOf(Anthropic.AuthenticationError);
  });

  it("accepts Bearer (OpenAI) and x-api-key (Anthropic), and forwards only the backend's credential", async () => {
    await openAIClientFor(proxy, "proxy-secret").chat.completions.create({
      model: "m",
      messages: ask,
      tools: [weatherToolOpenAI],
    });
    await anthropicClientFor(proxy, "proxy-secret").messages.create({
      model: "m",
      max_tokens: 5,
      messages: ask,
      tools: [weatherToolAnthropic],
    });
    await openAIClientFor(proxy, "proxy-secret").chat.completions.create({ model: "m", messages: ask });
    const chats = backend.chatRequests;
    expect(chats).toHaveLength(3);
    for (const request of chats) {
      expect(request.headers.authorization).toBe("Bearer backend-secret");
      expect(request.headers["x-api-key"]).toBeUndefined();
      expect(JSON.stringify(request.headers)).not.toContain("proxy-secret");
    }
  });

  it("keeps /health open without a key", async () => {
    expect((await fetch(`${proxy.url}/health`)).status).toBe(200);
  });
});

describe("client mistakes (400, 404, 413)", () => {
  let backend: ScriptedBackend;
  let proxy: RunningProxy;

  beforeAll(async () => {
    backend = await startScriptedBackend();
    proxy = await startTestProxy({ backendUrl: backend.url, maxBodyBytes: 64 * 1024 });
  });
  afterEach(() => backend.assertDone());
  afterAll(async () => {
    await proxy.close();
    await backend.close();
  });

  const post = (path: string, body: string) =>
    fetch(`${proxy.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body });

  it("answers malformed JSON with 400 in OpenAI's shape", async () => {
    const response = await post("/v1/chat/completions", '{"model": "m", "messages": [');
    expect(response.status).toBe(400);
    const body = (await response.json()) as { error: { type: string; message: string } };
    expect(body.error.type).toBe("invalid_request_error");
    expect(body.error.message).toMatch(/Malformed JSON/);
  });

  it("answers malformed JSON with 400 in Anthropic's shape", async () => {
    const response = await post("/v1/messages", "{nope");
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ type: "error", error: { type: "invalid_request_error" } });
  });

  it("names the offending field (OpenAI.BadRequestError with param)", async () => {
    const error = await rejection(
      openAIClientFor(proxy).chat.completions.create({
        model: "m",
        messages: [{ role: "wizard", content: "hi" } as unknown as OpenAI.Chat.ChatCompletionMessageParam],
      }),
    );
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.APIError>).param).toBe("messages[0].role");
    const empty = await rejection(
      openAIClientFor(proxy).chat.completions.create({ model: "m", messages: [] }),
    );
    expect((empty as InstanceType<typeof OpenAI.APIError>).param).toBe("messages");
  });

  it("names a bad tool schema field", async () => {
    const response = await post(
      "/v1/chat/completions",
      JSON.stringify({
        model: "m",
        messages: ask,
        tools: [{ type: "function", function: { name: "bad name!", parameters: {} } }],
      }),
    );
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: { param: "tools[0].function.name" } });
    const notObject = await post(
      "/v1/chat/completions",
      JSON.stringify({
        model: "m",
        messages: ask,
        tools: [{ type: "function", function: { name: "ok", parameters: { type: "string" } } }],
      }),
    );
    expect(notObject.status).toBe(400);
    expect(await notObject.json()).toMatchObject({ error: { param: "tools[0].function.parameters" } });
  });

  it("raises Anthropic.BadRequestError naming a missing max_tokens", async () => {
    const error = await rejection(
      anthropicClientFor(proxy).messages.create({
        model: "m",
        messages: ask,
      } as unknown as Anthropic.MessageCreateParamsNonStreaming),
    );
    expect(error).toBeInstanceOf(Anthropic.BadRequestError);
    expect((error as InstanceType<typeof Anthropic.APIError>).message).toContain("max_tokens");
  });

  it("rejects a content part it cannot turn into text on a guarded request with 400 naming the part", async () => {
    const response = await post(
      "/v1/chat/completions",
      JSON.stringify({
        model: "m",
        tools: [weatherToolOpenAI],
        messages: [{ role: "user", content: [{ type: "input_audio", input_audio: { data: "" } }] }],
      }),
    );
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: { param: "messages[0].content[0].type" } });
  });

  it("answers a body over the limit with 413 (OpenAI.APIError status 413)", async () => {
    const huge = "x".repeat(100 * 1024);
    const error = await rejection(
      openAIClientFor(proxy).chat.completions.create({
        model: "m",
        messages: [{ role: "user", content: huge }],
      }),
    );
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(413);
    const anthropicError = await rejection(
      anthropicClientFor(proxy).messages.create({
        model: "m",
        max_tokens: 5,
        messages: [{ role: "user", content: huge }],
      }),
    );
    expect((anthropicError as InstanceType<typeof Anthropic.APIError>).status).toBe(413);
    expect((anthropicError as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({
      type: "error",
      error: { type: "request_too_large" },
    });
  });

  it("answers an unknown route with 404 (OpenAI.NotFoundError)", async () => {
    const error = await rejection(openAIClientFor(proxy).embeddings.create({ model: "m", input: "x" }));
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
  });

  it("passes a backend 400 through with its message", async () => {
    backend.push({
      status: 400,
      body: { error: { message: "context length exceeded", type: "invalid_request_error" } },
    });
    const error = await rejection(
      openAIClientFor(proxy).chat.completions.create({
        model: "m",
        messages: ask,
        tools: [weatherToolOpenAI],
      }),
    );
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as Error).message).toContain("context length exceeded");
  });
});

describe("backend faults (502, 504) and exhausted retries", () => {
  it("answers 502 when the backend is unreachable (both SDKs raise InternalServerError)", async () => {
    const gone = await startScriptedBackend();
    await gone.close();
    const proxy = await startTestProxy({ backendUrl: gone.url });
    try {
      const guarded = await rejection(
        openAIClientFor(proxy).chat.completions.create({
          model: "m",
          messages: ask,
          tools: [weatherToolOpenAI],
        }),
      );
      expect(guarded).toBeInstanceOf(OpenAI.InternalServerError);
      expect((guarded as InstanceType<typeof OpenAI.APIError>).status).toBe(502);
      expect((guarded as InstanceType<typeof OpenAI.APIError>).code).toBe("backend_unreachable");
      const plain = await rejection(
        openAIClientFor(proxy).chat.completions.create({ model: "m", messages: ask }),
      );
      expect((plain as InstanceType<typeof OpenAI.APIError>).status).toBe(502);
      const anthropic = await rejection(
        anthropicClientFor(proxy).messages.create({ model: "m", max_tokens: 5, messages: ask }),
      );
      expect(anthropic).toBeInstanceOf(Anthropic.InternalServerError);
      expect((anthropic as InstanceType<typeof Anthropic.APIError>).status).toBe(502);
      const health = await fetch(`${proxy.url}/forge/health`);
      expect(await health.json()).toMatchObject({ status: "degraded", backend: { status: "unreachable" } });
      expect((await fetch(`${proxy.url}/health`)).status).toBe(503);
    } finally {
      await proxy.close();
    }
  });

  it("answers 504 when the backend does not answer in time", async () => {
    const backend = await startScriptedBackend([], { fallback: { hang: true } });
    const proxy = await startTestProxy({ backendUrl: backend.url, backend: { timeoutMs: 300 } });
    try {
      const guarded = await rejection(
        openAIClientFor(proxy).chat.completions.create({
          model: "m",
          messages: ask,
          tools: [weatherToolOpenAI],
        }),
      );
      expect((guarded as InstanceType<typeof OpenAI.APIError>).status).toBe(504);
      const plain = await rejection(
        anthropicClientFor(proxy).messages.create({ model: "m", max_tokens: 5, messages: ask }),
      );
      expect((plain as InstanceType<typeof Anthropic.APIError>).status).toBe(504);
      const forwarded = await rejection(
        openAIClientFor(proxy).chat.completions.create({ model: "m", messages: ask }),
      );
      expect((forwarded as InstanceType<typeof OpenAI.APIError>).status).toBe(504);
    } finally {
      await proxy.close();
      await backend.close();
    }
  });

  it("answers 502 when the backend drops the connection mid-answer", async () => {
    // Headers and half a body, then the connection is cut.
    const backend = createServer((request, response) => {
      request.resume();
      request.on("end", () => {
        response.writeHead(200, { "content-type": "application/json", "content-length": 1000 });
        response.write('{"id":"chatcmpl-1","choices":[');
        setTimeout(() => response.socket?.destroy(), 20);
      });
    });
    await new Promise<void>((resolve) => backend.listen(0, "127.0.0.1", resolve));
    const { port } = backend.address() as AddressInfo;
    const proxy = await startTestProxy({ backendUrl: `http://127.0.0.1:${port}` });
    try {
      const guarded = await rejection(
        openAIClientFor(proxy).chat.completions.create({
          model: "m",
          messages: ask,
          tools: [weatherToolOpenAI],
        }),
      );
      expect((guarded as InstanceType<typeof OpenAI.APIError>).status).toBe(502);
      expect((guarded as InstanceType<typeof OpenAI.APIError>).code).toBe("backend_unreachable");
      expect((guarded as Error).message).toContain("lost mid-response");
      const forwarded = await rejection(
        openAIClientFor(proxy).chat.completions.create({ model: "m", messages: ask }),
      );
      expect((forwarded as InstanceType<typeof OpenAI.APIError>).status).toBe(502);
      expect((forwarded as InstanceType<typeof OpenAI.APIError>).code).toBe("backend_unreachable");
    } finally {
      await proxy.close();
      await new Promise((resolve) => backend.close(resolve));
    }
  });

  it("answers 422 (not retried by the SDKs) with the last raw output when retries run out, after max-retries + 1 calls", async () => {
    const backend = await startScriptedBackend([
      textCompletion("first prose"),
      textCompletion("second prose"),
      textCompletion("third prose"),
    ]);
    const proxy = await startTestProxy({ backendUrl: backend.url, maxRetries: 2 });
    try {
      // tool_choice demands a call: prose is no answer (with "auto" it would be, see claude-code.test.ts).
      const error = await rejection(
        openAIClientFor(proxy).chat.completions.create({
          model: "m",
          messages: ask,
          tools: [weatherToolOpenAI],
          tool_choice: "required",
        }),
      );
      expect(error).toBeInstanceOf(OpenAI.UnprocessableEntityError);
      const apiError = error as InstanceType<typeof OpenAI.APIError>;
      expect(apiError.status).toBe(422);
      expect(apiError.headers?.get("x-should-retry")).toBe("false");
      expect(apiError.code).toBe("retries_exhausted");
      expect(apiError.error).toMatchObject({ raw_response: "third prose" });
      expect(backend.chatRequests).toHaveLength(3);
      backend.assertDone();

      backend.push(textCompletion("a"), textCompletion("b"), textCompletion("c"));
      const anthropic = await rejection(
        anthropicClientFor(proxy).messages.create({
          model: "m",
          max_tokens: 5,
          messages: ask,
          tools: [weatherToolAnthropic],
          tool_choice: { type: "any" },
        }),
      );
      expect(anthropic).toBeInstanceOf(Anthropic.UnprocessableEntityError);
      expect((anthropic as InstanceType<typeof Anthropic.APIError>).status).toBe(422);
      expect((anthropic as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({
        type: "error",
        error: { type: "api_error", raw_response: "c" },
      });
    } finally {
      await proxy.close();
      await backend.close();
    }
  });
});

describe("disconnects and serialization", () => {
  it("aborts the backend request when the client goes away", async () => {
    const backend = await startScriptedBackend([{ hang: true }, { hang: true }]);
    const proxy = await startTestProxy({ backendUrl: backend.url });
    try {
      for (const tools of [[weatherToolOpenAI], undefined]) {
        const controller = new AbortController();
        const before = backend.aborted;
        const pending = openAIClientFor(proxy).chat.completions.create(
          { model: "m", messages: ask, ...(tools && { tools }) },
          { signal: controller.signal },
        );
        await waitFor(() => backend.chatRequests.length > (tools ? 0 : 1));
        controller.abort();
        await expect(pending).rejects.toThrow();
        await waitFor(() => backend.aborted > before);
        expect(backend.aborted).toBe(before + 1);
      }
      backend.assertDone();
    } finally {
      await proxy.close();
      await backend.close();
    }
  });

  it("sends one request at a time with serialize, several without", async () => {
    let running = 0;
    let most = 0;
    const slowRespond = async () => {
      running++;
      most = Math.max(most, running);
      await new Promise((resolve) => setTimeout(resolve, 60));
      running--;
      return toolCallCompletion([{ name: "respond", args: { message: "ok" } }]);
    };
    const backend = await startScriptedBackend([], { fallback: slowRespond });
    const serial = await startTestProxy({ backendUrl: backend.url, serialize: true });
    const parallel = await startTestProxy({ backendUrl: backend.url });
    try {
      const fire = (proxy: RunningProxy) =>
        Promise.all(
          Array.from({ length: 4 }, () =>
            openAIClientFor(proxy).chat.completions.create({
              model: "m",
              messages: ask,
              tools: [weatherToolOpenAI],
            }),
          ),
        );
      const answers = await fire(serial);
      expect(answers.map((answer) => answer.choices[0]?.message.content)).toEqual(["ok", "ok", "ok", "ok"]);
      expect(most).toBe(1);
      most = 0;
      await fire(parallel);
      expect(most).toBeGreaterThan(1);
    } finally {
      await serial.close();
      await parallel.close();
      await backend.close();
    }
  });
});

describe("serialize with forwarded streams", () => {
  it("releases the slot once a forwarded stream has been sent, so the next request runs", async () => {
    const backend = await startScriptedBackend([
      streamedTextCompletion(["a", "b"]),
      streamedTextCompletion(["c", "d"]),
      toolCallCompletion([{ name: "respond", args: { message: "after" } }]),
    ]);
    const proxy = await startTestProxy({ backendUrl: backend.url, serialize: true });
    try {
      const client = openAIClientFor(proxy);
      const collect = async () => {
        const stream = await client.chat.completions.create({ model: "m", messages: ask, stream: true });
        let text = "";
        for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
        return text;
      };
      expect((await Promise.all([collect(), collect()])).sort()).toEqual(["ab", "cd"]);
      const after = await client.chat.completions.create({
        model: "m",
        messages: ask,
        tools: [weatherToolOpenAI],
      });
      expect(after.choices[0]?.message.content).toBe("after");
      backend.assertDone();
    } finally {
      await proxy.close();
      await backend.close();
    }
  });
});

async function waitFor(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
