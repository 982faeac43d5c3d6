/**
 * Property: whatever body a client sends (random text, random JSON, valid requests cut short,
 * valid requests with random fields), the proxy answers without crashing, never with a 5xx for
 * the client's mistake, and keeps answering afterwards.
 */
import { connect } from "node:net";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunningProxy } from "../../src/proxy/server.ts";
import { startTestProxy } from "./helpers/proxy-fixture.ts";
import {
  type ScriptedBackend,
  startScriptedBackend,
  toolCallCompletion,
} from "./helpers/scripted-backend.ts";

let backend: ScriptedBackend;
let proxy: RunningProxy;

beforeAll(async () => {
  // A healthy backend: any 5xx below can only be the proxy's.
  backend = await startScriptedBackend([], {
    fallback: toolCallCompletion([{ name: "respond", args: { message: "ok" } }]),
  });
  proxy = await startTestProxy({ backendUrl: backend.url, maxBodyBytes: 16 * 1024 });
});

afterAll(async () => {
  await proxy.close();
  await backend.close();
});

const PATHS = ["/v1/chat/completions", "/chat/completions", "/v1/messages"] as const;

const validOpenAI = {
  model: "m",
  messages: [
    { role: "system", content: "sys" },
    { role: "user", content: "Weather?" },
  ],
  tools: [
    {
      type: "function",
      function: {
        name: "get_weather",
        parameters: { type: "object", properties: { city: { type: "string" } } },
      },
    },
  ],
  stream: false,
};

const validAnthropic = {
  model: "m",
  max_tokens: 16,
  system: "sys",
  messages: [{ role: "user", content: [{ type: "text", text: "Weather?" }] }],
  tools: [{ name: "get_weather", input_schema: { type: "object", properties: {} } }],
};

const role = fc.constantFrom("system", "developer", "user", "assistant", "tool", "wizard", 7, null);
const content = fc.oneof(
  fc.string(),
  fc.constant(null),
  fc.array(
    fc.record({ type: fc.constantFrom("text", "image_url", "tool_result", "tool_use"), text: fc.string() }),
  ),
  fc.integer(),
);
const message = fc.record(
  {
    role,
    content,
    tool_calls: fc.array(
      fc.record({
        id: fc.string(),
        type: fc.constant("function"),
        function: fc.record({ name: fc.string(), arguments: fc.string() }),
      }),
      { maxLength: 2 },
    ),
    tool_call_id: fc.string(),
    tool_use_id: fc.string(),
  },
  { requiredKeys: ["role"] },
);
const tool = fc.oneof(
  fc.record({
    type: fc.constantFrom("function", "other"),
    function: fc.record({
      name: fc.oneof(fc.constantFrom("get_weather", "respond", ""), fc.string()),
      parameters: fc.oneof(fc.constant({ type: "object" }), fc.jsonValue(), fc.constant({ type: "string" })),
    }),
  }),
  fc.record({ name: fc.string(), input_schema: fc.oneof(fc.jsonValue(), fc.constant({ type: "object" })) }),
);
const randomRequest = fc
  .record(
    {
      model: fc.oneof(fc.string(), fc.integer()),
      max_tokens: fc.oneof(fc.integer(), fc.string()),
      messages: fc.oneof(fc.array(message, { maxLength: 4 }), fc.string()),
      tools: fc.oneof(fc.array(tool, { maxLength: 3 }), fc.constant(null)),
      tool_choice: fc.oneof(
        fc.constantFrom("auto", "none", "required"),
        fc.record({ type: fc.constantFrom("any", "tool", "none") }),
      ),
      stream: fc.oneof(fc.boolean(), fc.string()),
      system: fc.oneof(fc.string(), fc.array(fc.record({ type: fc.constant("text"), text: fc.string() }))),
      extra: fc.jsonValue(),
    },
    { requiredKeys: [] },
  )
  .map((body) => JSON.stringify(body));

const truncated = (valid: object) =>
  fc.nat({ max: JSON.stringify(valid).length - 1 }).map((cut) => JSON.stringify(valid).slice(0, cut));

const body = fc.oneof(
  fc.string(),
  fc.string({ unit: "binary" }),
  fc.jsonValue().map((value) => JSON.stringify(value)),
  truncated(validOpenAI),
  truncated(validAnthropic),
  randomRequest,
  fc.constant(JSON.stringify(validOpenAI)),
  fc.constant(JSON.stringify(validAnthropic)),
  fc.nat({ max: 40_000 }).map((size) => JSON.stringify({ ...validOpenAI, pad: "x".repeat(size) })),
);

const responsesItem = fc.record(
  {
    type: fc.constantFrom(
      "message",
      "function_call",
      "function_call_output",
      "reasoning",
      "item_reference",
      "x",
    ),
    role: role,
    content: fc.oneof(
      content,
      fc.array(
        fc.record({
          type: fc.constantFrom("input_text", "output_text", "input_image", "reasoning_text"),
          text: fc.oneof(fc.string(), fc.integer()),
        }),
      ),
    ),
    call_id: fc.oneof(fc.string(), fc.integer()),
    name: fc.oneof(fc.constantFrom("get_weather", "respond"), fc.string()),
    arguments: fc.oneof(fc.constant('{"city":"Oslo"}'), fc.string(), fc.jsonValue()),
    output: fc.oneof(fc.string(), fc.jsonValue()),
  },
  { requiredKeys: [] },
);
const responsesTool = fc.record(
  {
    type: fc.constantFrom("function", "namespace", "web_search", "custom", 3),
    name: fc.oneof(fc.constantFrom("get_weather", "respond", ""), fc.string()),
    parameters: fc.oneof(fc.constant({ type: "object" }), fc.jsonValue(), fc.constant(null)),
    tools: fc.array(fc.record({ type: fc.constantFrom("function", "custom"), name: fc.string() }), {
      maxLength: 2,
    }),
  },
  { requiredKeys: [] },
);
const randomResponsesRequest = fc
  .record(
    {
      model: fc.oneof(fc.string(), fc.integer()),
      input: fc.oneof(fc.string(), fc.array(responsesItem, { maxLength: 4 }), fc.jsonValue()),
      instructions: fc.oneof(fc.string(), fc.integer(), fc.constant(null)),
      tools: fc.oneof(fc.array(responsesTool, { maxLength: 3 }), fc.constant(null)),
      tool_choice: fc.oneof(
        fc.constantFrom("auto", "none", "required", "any"),
        fc.record({ type: fc.constantFrom("function", "allowed_tools", "web_search"), name: fc.string() }),
      ),
      max_output_tokens: fc.oneof(fc.integer(), fc.string()),
      text: fc.oneof(
        fc.jsonValue(),
        fc.record({ format: fc.record({ type: fc.constantFrom("json_schema", "json_object", "x") }) }),
      ),
      previous_response_id: fc.oneof(fc.string(), fc.constant(null)),
      stream: fc.oneof(fc.boolean(), fc.string()),
      extra: fc.jsonValue(),
    },
    { requiredKeys: [] },
  )
  .map((body) => JSON.stringify(body));

describe("random and truncated bodies", () => {
  it("never crash the proxy, never get a 5xx, and leave it answering", async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...PATHS), body, async (path, payload) => {
        const response = await fetch(`${proxy.url}${path}`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: payload,
        });
        const text = await response.text();
        expect(response.status, `${path} ${payload.slice(0, 300)} → ${text.slice(0, 300)}`).toBeLessThan(500);
        if (response.status >= 400) {
          const parsed = JSON.parse(text) as Record<string, unknown>;
          expect(path === "/v1/messages" ? parsed.type : typeof parsed.error).toBe(
            path === "/v1/messages" ? "error" : "object",
          );
        }
      }),
      { numRuns: 400 },
    );
    const health = await fetch(`${proxy.url}/health`);
    expect(health.status).toBe(200);
    const answer = await fetch(`${proxy.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(validOpenAI),
    });
    expect(answer.status).toBe(200);
  });

  it("never get a 5xx from /v1/responses, and every refusal is an OpenAI error body", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          randomResponsesRequest,
          truncated({ input: [{ role: "user", content: "q" }] }),
          fc.jsonValue().map((value) => JSON.stringify(value)),
        ),
        async (payload) => {
          const response = await fetch(`${proxy.url}/v1/responses`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: payload,
          });
          const text = await response.text();
          expect(response.status, `${payload.slice(0, 300)} → ${text.slice(0, 300)}`).toBeLessThan(500);
          if (response.status >= 400)
            expect(typeof (JSON.parse(text) as { error?: unknown }).error).toBe("object");
        },
      ),
      { numRuns: 300 },
    );
  });

  it("survives a connection that promises a longer body than it sends and hangs up", async () => {
    const url = new URL(proxy.url);
    await new Promise<void>((resolve, reject) => {
      const socket = connect(Number(url.port), url.hostname, () => {
        socket.write(
          "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n",
        );
        socket.write('{"model": "m", "messages": [{"role": "us');
        setTimeout(() => socket.destroy(), 50);
      });
      socket.on("close", () => resolve());
      socket.on("error", reject);
    });
    const health = await fetch(`${proxy.url}/health`);
    expect(health.status).toBe(200);
  });
});
