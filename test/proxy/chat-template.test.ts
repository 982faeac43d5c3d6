/**
 * The call format read from the model's chat template (ADR 035) on the proxy's guarded path: in
 * process with a scripted backend for the path, and a real HTTP server on 127.0.0.1 answering
 * `/props` (llama-server's shape, with the real 1.5B GGUF's template) for `--chat-template auto`.
 */
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ChatTemplateError, callFormatFor, describeCallFormat } from "../../src/cli/chat-template-option.ts";
import { callFormatOfServer } from "../../src/clients/llama-server/call-format.ts";
import { ContextDiscoveryError } from "../../src/core/errors.ts";
import { callFormatFromTemplate } from "../../src/prompts/chat-template.ts";
import { createProxy, type ProxyOptions } from "../../src/proxy/app.ts";
import { createHttpBackend } from "../../src/proxy/backend/http-backend.ts";
import { text, toolCall } from "../../src/testing/index.ts";
import { createFakeBackend, type FakeBackend } from "./helpers/fake-backend.ts";

const fixtures = join(import.meta.dirname, "../fixtures/chat-templates");
const template15 = readFileSync(join(fixtures, "qwen2.5-coder-1.5b.jinja"), "utf8");
const format15 = callFormatFromTemplate(template15);
const doubled = '<tool_call>\n{{"name": "get_weather", "arguments": {"city": "Paris"}}}\n</tool_call>';
const tools = [
  {
    type: "function",
    function: {
      name: "get_weather",
      description: "Weather of a city",
      parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
    },
  },
];

async function post(backend: FakeBackend, options: Partial<ProxyOptions>) {
  const lines: Record<string, unknown>[] = [];
  const proxy = createProxy({
    backend,
    accessLog: { format: "json", write: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) },
    ...options,
  });
  const response = await proxy.request("/v1/chat/completions", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "Weather in Paris?" }], tools }),
  });
  expect(response.status).toBe(200);
  const answer = (await response.json()) as {
    choices: { message: { tool_calls?: { function: { name: string; arguments: string } }[] } }[];
  };
  return { calls: answer.choices[0]?.message.tool_calls ?? [], log: lines.at(-1) ?? {} };
}

describe("the proxy with the model's call format", () => {
  it("turns the 1.5B's doubled-brace call into a tool call at once, counted as a rescue", async () => {
    const backend = createFakeBackend([text(doubled)]);
    const { calls, log } = await post(backend, { callFormat: format15 });
    expect(calls.map((call) => [call.function.name, JSON.parse(call.function.arguments)])).toEqual([
      ["get_weather", { city: "Paris" }],
    ]);
    expect(backend.scripted.calls).toHaveLength(1);
    expect(log).toMatchObject({ rescues: 1, nudges: 0 });
  });

  it("without it, nudges the same answer (the behaviour before ADR 035)", async () => {
    const backend = createFakeBackend([text(doubled), toolCall("get_weather", { city: "Paris" })]);
    const { calls, log } = await post(backend, { callFormat: null });
    expect(calls.map((call) => call.function.name)).toEqual(["get_weather"]);
    expect(backend.scripted.calls).toHaveLength(2);
    expect(log).toMatchObject({ nudges: 1 });
  });
});

describe("--chat-template", () => {
  let server: Server;
  let url: string;
  let propsStatus = 200;
  beforeAll(async () => {
    server = createServer((request, response) => {
      if (request.url !== "/props" || propsStatus !== 200) {
        response.writeHead(propsStatus === 200 ? 404 : propsStatus).end("not found");
        return;
      }
      response.writeHead(200, { "content-type": "application/json" }).end(
        JSON.stringify({
          default_generation_settings: { n_ctx: 8192 },
          total_slots: 1,
          chat_template: template15,
        }),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it("auto reads the template from a llama-server backend's /props", async () => {
    const backend = createHttpBackend({ url });
    const format = await callFormatFor("auto", backend);
    expect(format).toEqual(format15);
    expect(describeCallFormat(format as NonNullable<typeof format>)).toBe("<tool_call>{{…}}</tool_call>");
    expect(await callFormatOfServer(`${url}/v1`)).toEqual(format15);
  });

  it("auto goes without on a backend with no /props, or of another wire format", async () => {
    propsStatus = 404;
    try {
      expect(await callFormatFor("auto", createHttpBackend({ url }))).toBeNull();
      await expect(callFormatOfServer(url)).rejects.toThrow(ContextDiscoveryError);
    } finally {
      propsStatus = 200;
    }
    expect(await callFormatFor("auto", createHttpBackend({ url, format: "ollama" }))).toBeNull();
  });

  it("off reads nothing; a file is read and must show a call", async () => {
    expect(await callFormatFor("off", createHttpBackend({ url }))).toBeNull();
    expect(await callFormatFor(join(fixtures, "qwen2.5-coder-1.5b.jinja"), {})).toEqual(format15);
    await expect(callFormatFor(join(fixtures, "pythonic.jinja"), {})).rejects.toThrow(
      /does not show a tool call as JSON between markers/,
    );
    await expect(callFormatFor(join(fixtures, "missing.jinja"), {})).rejects.toThrow(ChatTemplateError);
  });
});
