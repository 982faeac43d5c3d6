/**
 * The one OpenAI chat exchange: its request body on its own, and the same exchange seen from both
 * of its users, `OpenAICompatibleClient` (fetch, against a real local server) and the proxy's
 * `ForwardingChatClient` (the proxy's transport, here a recording stand-in).
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { chatRequestBody, ToolModeNegotiation } from "../../src/clients/openai/chat-exchange.ts";
import { OpenAICompatibleClient } from "../../src/clients/openai/compatible-client.ts";
import { BackendError } from "../../src/core/errors.ts";
import type { ForwardRequest } from "../../src/proxy/backend/backend.ts";
import { ForwardingChatClient, ForwardingTarget } from "../../src/proxy/backend/forwarding-client.ts";
import type { BufferedAnswer } from "../../src/proxy/backend/transport.ts";
import { CHAT, completion, errorBody, tools } from "./helpers/openai-shapes.ts";
import { json, ReplayServer } from "./helpers/replay-server.ts";

const history = [
  { role: "system", content: "You report the weather." },
  { role: "user", content: "Weather in Paris?" },
  {
    role: "assistant",
    content: "",
    tool_calls: [
      { id: "c1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } },
    ],
  },
  { role: "tool", tool_call_id: "c1", name: "get_weather", content: "22°C" },
];

describe("chatRequestBody", () => {
  const request = {
    messages: history,
    tools,
    model: "m",
    fields: { temperature: 0, tool_choice: "required" },
  };

  it("sends the tools and tool_choice natively", () => {
    const body = chatRequestBody(request, "native", false);
    expect(body).toMatchObject({ model: "m", temperature: 0, tool_choice: "required", stream: false });
    expect((body.tools as { function: { name: string } }[]).map((tool) => tool.function.name)).toEqual([
      "get_weather",
      "report_weather",
    ]);
    expect(body.messages).toBe(history);
  });

  it("rewrites the history in prompt mode and sends neither tools nor tool_choice", () => {
    const body = chatRequestBody(request, "prompt", true);
    expect(body).not.toHaveProperty("tools");
    expect(body).not.toHaveProperty("tool_choice");
    expect(body.stream).toBe(true);
    const messages = body.messages as { role: string; content: string }[];
    expect(messages.map((message) => message.role)).toEqual(["system", "user", "assistant", "user"]);
    expect(messages[0]?.content).toContain("get_weather");
    expect(messages[3]?.content).toBe("[Tool result for get_weather] 22°C");
  });

  it("drops tool_choice when there are no tools", () => {
    expect(chatRequestBody({ ...request, tools: [] }, "native", false)).not.toHaveProperty("tool_choice");
  });
});

describe("ToolModeNegotiation", () => {
  it("tries native while auto is undecided, then keeps what it learned", () => {
    const lines: string[] = [];
    const negotiation = new ToolModeNegotiation("auto", (line) => lines.push(line), "forge proxy");
    expect([negotiation.current, negotiation.resolved]).toEqual(["native", undefined]);
    negotiation.fallBack("http://x/v1/chat/completions", 500, '{"error":{"message":"tools need --jinja"}}');
    negotiation.settle("native");
    expect([negotiation.current, negotiation.resolved]).toEqual(["prompt", "prompt"]);
    expect(lines).toEqual([
      "forge proxy: http://x/v1/chat/completions rejected native tool calling (HTTP 500: tools need --jinja); using prompt-injected tool calling from now on.",
    ]);
  });

  it("starts decided for a fixed mode", () => {
    expect(new ToolModeNegotiation("prompt", () => {}).resolved).toBe("prompt");
  });
});

describe("one exchange for the client and the proxy", () => {
  let server: ReplayServer;
  beforeEach(async () => {
    server = await ReplayServer.start();
  });
  afterEach(async () => {
    await server.close();
  });

  /** A proxy target whose transport records each body and answers from `answers`, in order. */
  function proxyTarget(answers: BufferedAnswer[]) {
    const bodies: Record<string, unknown>[] = [];
    const target = new ForwardingTarget({
      url: "http://backend/v1/chat/completions",
      logger: () => {},
      exchange: async (request: ForwardRequest) => {
        bodies.push(JSON.parse(String(request.body)) as Record<string, unknown>);
        const answer = answers.shift();
        if (!answer) throw new Error("no answer scripted");
        return answer;
      },
    });
    return { target, bodies };
  }
  const answer = (status: number, body: unknown, retryAfter?: string): BufferedAnswer => ({
    status,
    contentType: "application/json",
    retryAfter,
    body: Buffer.from(JSON.stringify(body)),
  });
  const rejection = errorBody(500, "tools param requires --jinja flag");
  const text = completion({ content: '{"tool": "get_weather", "args": {"city": "Oslo"}}' });

  it("sends the same bodies and reads the same answer through the auto fallback", async () => {
    server.reply(CHAT, json(rejection, { status: 500 }), json(text));
    const client = new OpenAICompatibleClient({
      baseUrl: `${server.url}/v1`,
      model: "m",
      temperature: 0.2,
      cachePrompt: false,
      logger: () => {},
    });
    const clientAnswer = await client.send(history, tools);

    const { target, bodies } = proxyTarget([answer(500, rejection), answer(200, text)]);
    const proxyAnswer = await new ForwardingChatClient(target, "m", {
      temperature: 0.2,
      cache_prompt: false,
    }).send(history, tools);

    expect(proxyAnswer).toEqual(clientAnswer);
    expect(clientAnswer).toEqual([{ tool: "get_weather", args: { city: "Oslo" } }]);
    expect(bodies).toEqual([server.bodyOf(CHAT, 0), server.bodyOf(CHAT, 1)]);
    expect(client.resolvedMode).toBe("prompt");
    expect(target.resolvedMode).toBe("prompt");
  });

  it("maps an error answer to the same BackendError, Retry-After included", async () => {
    const busy = errorBody(429, "slow down", "rate_limit_error");
    const { target } = proxyTarget([answer(429, busy, "7")]);
    const error = await new ForwardingChatClient(target, "m", {})
      .send(history, tools)
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(BackendError);
    expect(error).toMatchObject({ statusCode: 429, retryAfterSeconds: 7, body: JSON.stringify(busy) });
  });

  it("rescues llama-server's parse failure the same way on both", async () => {
    const failure = errorBody(
      500,
      'Failed to parse input at pos 0: <tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n</tool_call>',
    );
    server.reply(CHAT, json(failure, { status: 500 }));
    const client = new OpenAICompatibleClient({
      baseUrl: `${server.url}/v1`,
      mode: "native",
      logger: () => {},
    });
    const { target } = proxyTarget([answer(500, failure)]);
    const expected = [{ tool: "get_weather", args: { city: "Rome" } }];
    expect(await client.send(history, tools)).toEqual(expected);
    expect(await new ForwardingChatClient(target, undefined, {}).send(history, tools)).toEqual(expected);
  });
});
