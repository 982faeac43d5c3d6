import { describe, expect, it } from "vitest";
import { ContextManager, NoCompact } from "../../src/context/index.ts";
import { createMessage, MessageType } from "../../src/core/messages.ts";
import { toolSpecFromJsonSchema } from "../../src/core/tools.ts";
import type { LLMClient, LLMResponse, SendOptions } from "../../src/core/types.ts";
import { unusedValues } from "../../src/guardrails/grounding.ts";
import { callOpening, continuationOf, followUpCalls, isSameCall } from "../../src/loop/follow-up.ts";
import { runInference } from "../../src/loop/inference.ts";
import { RESPOND_TOOL_NAME, respondTool } from "../../src/tools/respond.ts";

const play = toolSpecFromJsonSchema("spotify_play", "Play", {
  type: "object",
  properties: { artist: { type: "string" }, duration: { type: "integer" } },
});
const call = (artist: string) =>
  `\`\`\`json\n{"name": "spotify_play", "arguments": {"artist": "${artist}", "duration": 1}}\n\`\`\``;

/** A client answering from a list, recording each request's last message and token cap. */
function listClient(answers: LLMResponse[]) {
  const seen: { last: unknown; maxTokens: number | undefined }[] = [];
  const client: LLMClient = {
    apiFormat: "openai",
    async send(messages, _tools, options?: SendOptions) {
      seen.push({ last: messages.at(-1), maxTokens: options?.sampling?.maxTokens });
      const next = answers.shift();
      if (!next) throw new Error("no answer left");
      return next;
    },
    async *sendStream() {
      yield* [];
    },
    getContextLength: async () => null,
  };
  return { client, seen };
}

describe("continuationOf", () => {
  it("reads only what follows the prefill, whether or not the server repeats it", () => {
    const sent = `${call("A")}\n\n`;
    expect(continuationOf({ content: `${sent}${call("B")}` }, sent, ["spotify_play"]).calls).toEqual([
      { tool: "spotify_play", args: { artist: "B", duration: 1 } },
    ]);
    expect(continuationOf({ content: call("B") }, sent, ["spotify_play"]).calls).toHaveLength(1);
  });

  it("keeps the complete calls when the token cap cut the last one short", () => {
    const text = `${call("B")}\n\n\`\`\`json\n{"name": "spotify_play", "arguments": {"artist": "C`;
    expect(
      continuationOf({ content: text }, "x", ["spotify_play"]).calls.map((item) => item.args.artist),
    ).toEqual(["B"]);
  });

  it("finds no call in prose", () => {
    expect(
      continuationOf({ content: "This JSON object represents the call." }, "x", ["spotify_play"]).calls,
    ).toEqual([]);
  });
});

describe("followUpCalls", () => {
  it("continues until a step adds nothing new, each step capped to about one call", async () => {
    const first = { content: call("A") };
    const { client, seen } = listClient([
      { content: `${call("A")}\n\n${call("B")}` },
      { content: `${call("A")}\n\n${call("B")}\n\nThat is all.` },
    ]);
    const result = await followUpCalls({
      client,
      wire: [{ role: "user", content: "play A and B" }],
      tools: [play],
      calls: [{ tool: "spotify_play", args: { artist: "A", duration: 1 } }],
      answer: first,
    });
    expect(result.calls.map((item) => item.args.artist)).toEqual(["A", "B"]);
    expect(result).toMatchObject({ steps: 2, added: 1 });
    expect(seen[0]?.last).toEqual({ role: "assistant", content: `${call("A")}\n\n` });
    expect(seen[0]?.maxTokens).toBe(Math.max(48, Math.ceil(call("A").length / 3)));
  });

  it("stops at maxCalls and at a stop tool", async () => {
    const { client } = listClient([{ content: `${call("B")}\n\n${call("C")}` }]);
    const result = await followUpCalls({
      client,
      wire: [],
      tools: [play],
      calls: [{ tool: "spotify_play", args: { artist: "A", duration: 1 } }],
      answer: { content: call("A") },
      maxCalls: 2,
    });
    expect(result.calls).toHaveLength(2);
  });

  it("compares calls by tool and arguments, key order aside", () => {
    expect(
      isSameCall(
        { tool: "t", args: { a: 1, b: [1, { c: 2 }] } },
        { tool: "t", args: { b: [1, { c: 2 }], a: 1 } },
      ),
    ).toBe(true);
    expect(isSameCall({ tool: "t", args: { a: 1 } }, { tool: "t", args: { a: 2 } })).toBe(false);
  });
});

describe("the opened call (values of the request left unused)", () => {
  it("opens a call the way the first one opened, and keeps it when it uses an unused value", async () => {
    const opening = "```json\n{";
    expect(callOpening(call("A"))).toBe(opening);
    expect(callOpening(`<tool_call>\n{"name": "x"}\n</tool_call>`)).toBe("<tool_call>\n{");
    expect(callOpening("no call here")).toBeNull();
    const { client, seen } = listClient([
      { content: "" },
      { content: call("Bea").slice(opening.length) },
      { content: "" },
    ]);
    const result = await followUpCalls({
      client,
      wire: [{ role: "user", content: "Play Al, then Bea." }],
      tools: [play],
      calls: [{ tool: "spotify_play", args: { artist: "Al", duration: 1 } }],
      answer: { content: call("Al") },
      request: "Play Al, then Bea.",
    });
    expect(result.calls.map((item) => item.args.artist)).toEqual(["Al", "Bea"]);
    expect(result).toMatchObject({ added: 1, opened: 1, steps: 2 });
    expect(seen[1]?.last).toEqual({ role: "assistant", content: `${call("Al")}\n\n${opening}` });
  });

  it("names the numbers and names a request holds that no call used", () => {
    const first = { tool: "book", args: { from: "San Francisco", to: "Tokyo", date: "2022-05-03" } };
    expect(
      unusedValues(
        "Book a flight from San Francisco to Tokyo on May 3rd 2022 and from Tokyo to Sydney on May 18th 2022.",
        [first],
      ),
    ).toEqual(["18", "may", "sydney"]);
  });
});

describe("runInference with followUpMaxCalls (the guarded loop's follow-up)", () => {
  const ask = (text: string) => [createMessage("user", text, { type: MessageType.USER_INPUT })];
  const infer = (client: LLMClient, text: string, followUpMaxCalls?: number) =>
    runInference({
      client,
      contextManager: new ContextManager({ strategy: new NoCompact(), budgetTokens: 100_000 }),
      messages: ask(text),
      tools: [play, respondTool().spec],
      proseAnswerTool: RESPOND_TOOL_NAME,
      ...(followUpMaxCalls !== undefined && { followUpMaxCalls }),
    });

  it("continues the rescued answer, opens the call for a value left unused, and counts its steps", async () => {
    const { client, seen } = listClient([
      { content: call("Al") },
      { content: "" },
      { content: call("Bea").slice("```json\n{".length) },
    ]);
    const result = await infer(client, "Play Al, then Bea.", 4);
    expect(result.toolCalls.map((item) => item.args.artist)).toEqual(["Al", "Bea"]);
    // The opened call used the request's last unused value: the answer ends there.
    expect(result.followUp).toEqual({ steps: 2, added: 1, opened: 1 });
    expect(result.iterations).toBe(3);
    // Each step continues the model's own answer, sent back as the start of its turn.
    expect(seen[1]?.last).toEqual({ role: "assistant", content: `${call("Al")}\n\n` });
    expect(seen[2]?.last).toEqual({ role: "assistant", content: `${call("Al")}\n\n\`\`\`json\n{` });
  });

  it("is off by default and never continues a prose answer", async () => {
    const once = listClient([{ content: call("Al") }]);
    const plain = await infer(once.client, "Play Al, then Bea.");
    expect(plain.toolCalls).toHaveLength(1);
    expect(plain.followUp).toBeUndefined();
    expect(once.seen).toHaveLength(1);

    const prose = listClient([{ content: "Nothing to play today." }]);
    const answered = await infer(prose.client, "Anything new?", 4);
    expect(answered.toolCalls).toEqual([
      { tool: RESPOND_TOOL_NAME, args: { message: "Nothing to play today." } },
    ]);
    expect(prose.seen).toHaveLength(1);
  });

  it("rejects a cap below one before any call", async () => {
    const { client, seen } = listClient([]);
    await expect(infer(client, "Play Al.", 0)).rejects.toThrow(
      /followUpMaxCalls must be an integer of at least 1/,
    );
    expect(seen).toHaveLength(0);
  });
});
