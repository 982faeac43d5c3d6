/**
 * The proxy's guarded path with the forced tool choice on a retry and the repair hook
 * (`createProxy({ forceToolChoiceOnRetry, repairToolCall })`), in-process with a ScriptedClient.
 */
import { describe, expect, it } from "vitest";
import { toolSpecFromJsonSchema } from "../../src/core/tools.ts";
import { createProxy } from "../../src/proxy/app.ts";
import { ForwardingChatClient, ForwardingTarget } from "../../src/proxy/backend/forwarding-client.ts";
import { text, toolCall } from "../../src/testing/index.ts";
import { createFakeBackend } from "./helpers/fake-backend.ts";

const tools = [
  {
    type: "function",
    function: {
      name: "search",
      description: "Search the web",
      parameters: { type: "object", properties: { query: { type: "string" } }, required: ["query"] },
    },
  },
];
const request = {
  method: "POST",
  headers: { "content-type": "application/json" },
  body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "find xstate" }], tools }),
};
const prose = "Maybe I could look that up somewhere.";

async function toolCallsOf(response: Response): Promise<{ function: { name: string; arguments: string } }[]> {
  const body = (await response.json()) as {
    choices: { message: { tool_calls?: { function: { name: string; arguments: string } }[] } }[];
  };
  return body.choices[0]?.message.tool_calls ?? [];
}

// The prose policy "nudge" (every text answer nudged): these walk the retry that follows a prose
// answer; the default policy takes clean prose as the answer (test/proxy/prose-policy.test.ts).
describe("the proxy's retry after a prose answer", () => {
  it("asks the backend for a required tool call", async () => {
    const backend = createFakeBackend([text(prose), toolCall("search", { query: "xstate" })]);
    const response = await createProxy({ backend, prosePolicy: "nudge" }).request(
      "/v1/chat/completions",
      request,
    );
    expect(response.status).toBe(200);
    expect((await toolCallsOf(response)).map((call) => call.function.name)).toEqual(["search"]);
    expect(backend.scripted.calls.map((call) => call.toolChoice)).toEqual([undefined, "required"]);
  });

  it("leaves the choice to the model with forceToolChoiceOnRetry: false", async () => {
    const backend = createFakeBackend([text(prose), toolCall("search", { query: "xstate" })]);
    await createProxy({ backend, forceToolChoiceOnRetry: false, prosePolicy: "nudge" }).request(
      "/v1/chat/completions",
      request,
    );
    expect(backend.scripted.calls.map((call) => call.toolChoice)).toEqual([undefined, undefined]);
  });

  it("lets repairToolCall turn the prose into the call, with no retry", async () => {
    const backend = createFakeBackend([text(prose)]);
    const proxy = createProxy({
      backend,
      repairToolCall: ({ text: raw }) =>
        raw.includes("look that up") ? [{ tool: "search", args: { query: "xstate" } }] : null,
    });
    const response = await proxy.request("/v1/chat/completions", request);
    expect(response.status).toBe(200);
    const [call] = await toolCallsOf(response);
    expect(call?.function.name).toBe("search");
    expect(JSON.parse(call?.function.arguments ?? "{}")).toEqual({ query: "xstate" });
    backend.scripted.assertDone();
  });
});

describe("ForwardingChatClient on the wire", () => {
  it("sends a call's toolChoice over the caller's own tool_choice", async () => {
    const bodies: Record<string, unknown>[] = [];
    const target = new ForwardingTarget({
      url: "fake://backend",
      mode: "native",
      exchange: async (forwarded) => {
        bodies.push(JSON.parse(forwarded.body ?? "{}") as Record<string, unknown>);
        const completion = {
          id: "c",
          object: "chat.completion",
          choices: [{ index: 0, message: { role: "assistant", content: "hi" }, finish_reason: "stop" }],
        };
        return {
          status: 200,
          contentType: "application/json",
          retryAfter: undefined,
          body: Buffer.from(JSON.stringify(completion)),
        };
      },
    });
    const client = new ForwardingChatClient(target, "m", { tool_choice: "auto", temperature: 0.1 });
    const messages = [{ role: "user", content: "q" }];
    const spec = toolSpecFromJsonSchema("search", "Search", { type: "object", properties: {} });
    await client.send(messages, [spec]);
    await client.send(messages, [spec], { toolChoice: "required" });
    await client.send(messages, [spec], { toolChoice: { name: "search" } });
    expect(bodies.map((body) => body.tool_choice)).toEqual([
      "auto",
      "required",
      { type: "function", function: { name: "search" } },
    ]);
    expect(bodies.every((body) => body.temperature === 0.1)).toBe(true);
  });
});
