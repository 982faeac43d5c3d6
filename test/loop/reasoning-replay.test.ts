/**
 * The reasoning replay policy: which earlier reasoning blocks a request re-sends. The history
 * always keeps them; only the wire changes. Checked on the runner (scripted client, serialized
 * wire), `applyReasoningReplay` itself, and the proxy with the real `openai` SDK in front of a
 * scripted OpenAI-compatible backend on 127.0.0.1.
 */
import type OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Message, MessageType } from "../../src/core/messages.ts";
import { applyReasoningReplay, type ReasoningReplay } from "../../src/core/reasoning-replay.ts";
import { WorkflowRunner } from "../../src/loop/runner.ts";
import type { RunningProxy } from "../../src/proxy/server.ts";
import { ScriptedClient, toolCall } from "../../src/testing/index.ts";
import { createPassthrough, weatherWorkflow } from "../helpers/workflows.ts";
import { openAIClientFor, startTestProxy, weatherToolOpenAI } from "../proxy/helpers/proxy-fixture.ts";
import {
  type ScriptedBackend,
  startScriptedBackend,
  textCompletion,
  toolCallCompletion,
} from "../proxy/helpers/scripted-backend.ts";

const vars = { promptVars: { user: "Ada" } };

/** Three turns, each with its own reasoning; returns what the third request carried. */
async function thirdRequest(policy?: ReasoningReplay) {
  const { workflow } = weatherWorkflow();
  const client = new ScriptedClient([
    toolCall("get_weather", { city: "Paris" }, "THOUGHT-ONE"),
    toolCall("get_weather", { city: "Oslo" }, "THOUGHT-TWO"),
    toolCall("report_weather", { city: "Oslo", weather: "cold" }, "THOUGHT-THREE"),
  ]);
  const messages: Message[] = [];
  const runner = new WorkflowRunner({
    client,
    contextManager: createPassthrough(),
    onMessage: (message) => messages.push(message),
    ...(policy && { reasoningReplay: policy }),
  });
  await runner.run(workflow, "Weather?", vars);
  const wire = JSON.stringify(client.calls[2]?.messages);
  const kept = messages.filter((message) => message.metadata.type === MessageType.REASONING).length;
  return { wire, kept };
}

describe("reasoningReplay on the runner", () => {
  it("full (the default) re-sends every block", async () => {
    const { wire, kept } = await thirdRequest();
    expect(wire).toContain("THOUGHT-ONE");
    expect(wire).toContain("THOUGHT-TWO");
    expect(kept).toBe(3);
  });

  it("keep-last re-sends only the latest block; the history keeps all", async () => {
    const { wire, kept } = await thirdRequest("keep-last");
    expect(wire).not.toContain("THOUGHT-ONE");
    expect(wire).toContain("THOUGHT-TWO");
    expect(kept).toBe(3);
  });

  it("none re-sends no reasoning", async () => {
    const { wire, kept } = await thirdRequest("none");
    expect(wire).not.toContain("THOUGHT");
    expect(kept).toBe(3);
  });

  it("rejects an unknown policy at construction, naming the choices", () => {
    expect(
      () =>
        new WorkflowRunner({
          client: new ScriptedClient([]),
          contextManager: createPassthrough(),
          reasoningReplay: "last" as ReasoningReplay,
        }),
    ).toThrow(/reasoningReplay must be one of "full", "keep-last", "none", got "last"/);
  });
});

describe("applyReasoningReplay", () => {
  const reasoning = (content: string) =>
    ({ role: "assistant", content, metadata: { type: MessageType.REASONING } }) as Message;
  const other = (content: string) =>
    ({ role: "user", content, metadata: { type: MessageType.USER_INPUT } }) as Message;
  const history = [other("u1"), reasoning("r1"), reasoning("r1b"), other("u2"), reasoning("r2"), other("u3")];

  it("keep-last keeps the whole latest run of REASONING messages", () => {
    expect(applyReasoningReplay(history, "keep-last").map((message) => message.content)).toEqual([
      "u1",
      "u2",
      "r2",
      "u3",
    ]);
    const lastRun = [other("u1"), reasoning("a"), reasoning("b")];
    expect(applyReasoningReplay(lastRun, "keep-last")).toBe(lastRun);
  });

  it("returns the very array when nothing is dropped", () => {
    expect(applyReasoningReplay(history, "full")).toBe(history);
    const plain = [other("u1")];
    expect(applyReasoningReplay(plain, "none")).toBe(plain);
  });
});

describe("reasoningReplay on the proxy (openai SDK → proxy → scripted backend)", () => {
  let backend: ScriptedBackend;
  const proxies: Partial<Record<ReasoningReplay, RunningProxy>> = {};

  beforeAll(async () => {
    backend = await startScriptedBackend();
    for (const policy of ["none", "full"] as const) {
      proxies[policy] = await startTestProxy({ backendUrl: backend.url, reasoningReplay: policy });
    }
  });

  afterAll(async () => {
    for (const proxy of Object.values(proxies)) await proxy?.close();
    await backend.close();
  });

  async function upstreamOf(policy: ReasoningReplay): Promise<string> {
    backend.requests.length = 0;
    backend.push(toolCallCompletion([{ name: "get_weather", args: { city: "Oslo" } }]));
    const client: OpenAI = openAIClientFor(proxies[policy] as RunningProxy);
    await client.chat.completions.create({
      model: "qwen3",
      tools: [weatherToolOpenAI],
      messages: [
        { role: "user", content: "Weather in Paris, then Oslo?" },
        {
          role: "assistant",
          content: null,
          // What the proxy itself answered last turn, handed back by the client.
          reasoning_content: "EARLIER-THOUGHT",
          tool_calls: [
            {
              id: "call_1",
              type: "function",
              function: { name: "get_weather", arguments: '{"city":"Paris"}' },
            },
          ],
        } as OpenAI.ChatCompletionAssistantMessageParam,
        { role: "tool", tool_call_id: "call_1", content: "sunny" },
      ],
    });
    backend.assertDone();
    return JSON.stringify(backend.chatRequests.at(-1));
  }

  it("none (the default) keeps the client's reasoning out of the upstream request", async () => {
    expect(await upstreamOf("none")).not.toContain("EARLIER-THOUGHT");
  });

  it("full sends it upstream with its tool call", async () => {
    expect(await upstreamOf("full")).toContain("EARLIER-THOUGHT");
  });

  it("does not touch a request without tools: it is forwarded as the client sent it", async () => {
    backend.requests.length = 0;
    backend.push(textCompletion("Oslo is cold."));
    const client: OpenAI = openAIClientFor(proxies.none as RunningProxy);
    await client.chat.completions.create({
      model: "qwen3",
      messages: [
        { role: "user", content: "Weather?" },
        {
          role: "assistant",
          content: "Sunny.",
          reasoning_content: "EARLIER-THOUGHT",
        } as OpenAI.ChatCompletionAssistantMessageParam,
        { role: "user", content: "And Oslo?" },
      ],
    });
    backend.assertDone();
    expect(JSON.stringify(backend.chatRequests.at(-1))).toContain("EARLIER-THOUGHT");
  });
});
