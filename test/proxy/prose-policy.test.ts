/**
 * The prose policy (ADR 024), `respond` kept off the wire (ADR 042) and the parallel follow-up
 * (ADR 026) on the proxy's guarded path, in process with a scripted backend.
 */
import { describe, expect, it } from "vitest";
import { createProxy, type ProxyOptions } from "../../src/proxy/app.ts";
import { text, toolCall } from "../../src/testing/index.ts";
import { createFakeBackend, type FakeBackend } from "./helpers/fake-backend.ts";

const tools = [
  {
    type: "function",
    function: {
      name: "spotify_play",
      description: "Play songs of an artist for a while",
      parameters: {
        type: "object",
        properties: { artist: { type: "string" }, duration: { type: "integer" } },
        required: ["artist", "duration"],
      },
    },
  },
];

async function post(
  backend: FakeBackend,
  options: Partial<ProxyOptions> = {},
  body: Record<string, unknown> = {},
) {
  const lines: Record<string, unknown>[] = [];
  const proxy = createProxy({
    backend,
    accessLog: { format: "json", write: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) },
    ...options,
  });
  const response = await proxy.request("/v1/chat/completions", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model: "m",
      messages: [{ role: "user", content: "Play Taylor Swift and Maroon 5" }],
      tools,
      ...body,
    }),
  });
  expect(response.status).toBe(200);
  const answer = (await response.json()) as {
    choices: {
      message: { content: string | null; tool_calls?: { function: { name: string; arguments: string } }[] };
    }[];
  };
  return { message: answer.choices[0]?.message, log: lines.at(-1) ?? {} };
}

describe("the prose policy under tool_choice auto", () => {
  it("answers clean prose at once: one backend call, no nudge, counted", async () => {
    const backend = createFakeBackend([text("I can't play music, but both are great artists.")]);
    const { message, log } = await post(backend);
    expect(message?.content).toBe("I can't play music, but both are great artists.");
    expect(message?.tool_calls ?? []).toEqual([]);
    expect(backend.scripted.calls).toHaveLength(1);
    expect(log).toMatchObject({ prose: 1, nudges: 0, retries: 0 });
  });

  it("still nudges prose that names a tool, and returns the call that follows", async () => {
    const backend = createFakeBackend([
      text("I will use spotify_play for that."),
      toolCall("spotify_play", { artist: "Taylor Swift", duration: 20 }),
    ]);
    const { message, log } = await post(backend);
    expect(message?.tool_calls?.map((call) => call.function.name)).toEqual(["spotify_play"]);
    expect(log).toMatchObject({ prose: 0, nudges: 1 });
  });

  it("nudges every text answer with prosePolicy: nudge", async () => {
    const backend = createFakeBackend([
      text("Both are great artists."),
      toolCall("spotify_play", { artist: "Taylor Swift", duration: 20 }),
    ]);
    const { message } = await post(backend, { prosePolicy: "nudge" });
    expect(message?.tool_calls).toHaveLength(1);
    expect(backend.scripted.calls).toHaveLength(2);
  });

  it("leaves tool_choice required alone: prose is nudged", async () => {
    const backend = createFakeBackend([
      text("Both are great artists."),
      toolCall("spotify_play", { artist: "Taylor Swift", duration: 20 }),
    ]);
    const { message } = await post(backend, {}, { tool_choice: "required" });
    expect(message?.tool_calls).toHaveLength(1);
  });

  it("reads a near-miss tool name as the offered tool, counted", async () => {
    const backend = createFakeBackend([toolCall("Spotify-Play", { artist: "Taylor Swift", duration: 20 })]);
    const { message, log } = await post(backend);
    expect(message?.tool_calls?.map((call) => call.function.name)).toEqual(["spotify_play"]);
    expect(log).toMatchObject({ renamed: 1, nudges: 0 });
  });
});

describe("respondUpstream: false (ADR 042)", () => {
  const sentTools = (backend: FakeBackend, index = 0) =>
    backend.scripted.calls[index]?.tools.map((tool) => tool.name);

  it("sends the client's tools alone where a text answer is taken, and the text is the answer", async () => {
    const backend = createFakeBackend([text("Both are great artists.")]);
    const { message, log } = await post(backend, { respondUpstream: false });
    expect(sentTools(backend)).toEqual(["spotify_play"]);
    expect(message?.content).toBe("Both are great artists.");
    expect(log).toMatchObject({ prose: 1, nudges: 0, retries: 0 });
  });

  it("offers respond by default, and under tool_choice required or prosePolicy nudge", async () => {
    const byDefault = createFakeBackend([text("Both are great artists.")]);
    await post(byDefault);
    expect(sentTools(byDefault)).toEqual(["spotify_play", "respond"]);
    const required = createFakeBackend([toolCall("spotify_play", { artist: "Taylor Swift", duration: 20 })]);
    await post(required, { respondUpstream: false }, { tool_choice: "required" });
    expect(sentTools(required)).toEqual(["spotify_play", "respond"]);
    const nudged = createFakeBackend([toolCall("spotify_play", { artist: "Taylor Swift", duration: 20 })]);
    await post(nudged, { respondUpstream: false, prosePolicy: "nudge" });
    expect(sentTools(nudged)).toEqual(["spotify_play", "respond"]);
  });

  it("still takes a respond call the model makes anyway, and a rescued call, with the retry off the wire too", async () => {
    const answered = createFakeBackend([toolCall("respond", { message: "Both are great artists." })]);
    const { message } = await post(answered, { respondUpstream: false });
    expect(message?.content).toBe("Both are great artists.");
    expect(message?.tool_calls ?? []).toEqual([]);
    const nudged = createFakeBackend([
      text("I will use spotify_play for that."),
      toolCall("spotify_play", { artist: "Taylor Swift", duration: 20 }),
    ]);
    const { message: called, log } = await post(nudged, { respondUpstream: false });
    expect(called?.tool_calls?.map((call) => call.function.name)).toEqual(["spotify_play"]);
    expect(log).toMatchObject({ nudges: 1 });
    expect(sentTools(nudged, 1)).toEqual(["spotify_play"]);
  });
});

describe("the parallel follow-up", () => {
  const first =
    '```json\n{"name": "spotify_play", "arguments": {"artist": "Taylor Swift", "duration": 20}}\n```';
  const second =
    '```json\n{"name": "spotify_play", "arguments": {"artist": "Maroon 5", "duration": 15}}\n```';

  it("lets the model continue its turn after a call and adds the next call", async () => {
    // llama-server answers a prefill with the prefill and what follows.
    const backend = createFakeBackend([
      text(first),
      text(`${first}\n\n${second}`),
      text(`${first}\n\n${second}\n\nDone.`),
    ]);
    const { message, log } = await post(backend, { followUpMaxCalls: 8 });
    expect(message?.tool_calls?.map((call) => JSON.parse(call.function.arguments))).toEqual([
      { artist: "Taylor Swift", duration: 20 },
      { artist: "Maroon 5", duration: 15 },
    ]);
    // Its two steps are backend calls past the first, as the access log counts them.
    expect(log).toMatchObject({ follow_up: 1, rescues: 1, retries: 2 });
    // The follow-up's request ends with the answer so far as the assistant's own turn.
    const continued = backend.scripted.calls[1]?.messages.at(-1);
    expect(continued).toEqual({ role: "assistant", content: `${first}\n\n` });
  });

  it("adds nothing when the model repeats its call, even once the next call is opened for it", async () => {
    // The request names Maroon 5, which no call used: after the repeat the follow-up opens a call.
    const backend = createFakeBackend([
      text(first),
      text(`${first}\n\n${first}`),
      text(`${first}\n\n${first}`),
    ]);
    const { message, log } = await post(backend, { followUpMaxCalls: 8 });
    expect(message?.tool_calls).toHaveLength(1);
    expect(log).toMatchObject({ follow_up: 0 });
    expect(backend.scripted.calls).toHaveLength(3);
    expect(backend.scripted.calls[2]?.messages.at(-1)).toEqual({
      role: "assistant",
      content: `${first}\n\n\`\`\`json\n{`,
    });
  });

  it("opens the next call when the model ends its turn with a value of the request unused", async () => {
    const rest = second.slice("```json\n{".length);
    const backend = createFakeBackend([
      text(first),
      text(`${first}\n\n`),
      // llama-server answers with the prefill (the opened call) and what the model wrote after it.
      text(`${first}\n\n\`\`\`json\n{${rest}`),
    ]);
    const { message, log } = await post(backend, { followUpMaxCalls: 8 });
    expect(message?.tool_calls?.map((call) => JSON.parse(call.function.arguments))).toEqual([
      { artist: "Taylor Swift", duration: 20 },
      { artist: "Maroon 5", duration: 15 },
    ]);
    expect(log).toMatchObject({ follow_up: 1 });
    // Every value the request names is used now: no further step.
    expect(backend.scripted.calls).toHaveLength(3);
  });

  it("does not open a call when every value of the request is used", async () => {
    const both = createFakeBackend([text(`${first}\n\n${second}`), text(`${first}\n\n${second}\n\n`)]);
    const { message } = await post(both, { followUpMaxCalls: 8 });
    expect(message?.tool_calls).toHaveLength(2);
    expect(both.scripted.calls).toHaveLength(2);
  });

  it("drops an opened call that uses no unused value", async () => {
    const other =
      '```json\n{"name": "spotify_play", "arguments": {"artist": "Taylor Swift", "duration": 30}}\n```';
    const backend = createFakeBackend([text(first), text(`${first}\n\n`), text(`${first}\n\n${other}`)]);
    const { message, log } = await post(backend, { followUpMaxCalls: 8 });
    expect(message?.tool_calls).toHaveLength(1);
    expect(log).toMatchObject({ follow_up: 0 });
  });

  it("is off by default and with parallel_tool_calls: false", async () => {
    const off = createFakeBackend([text(first)]);
    expect((await post(off)).message?.tool_calls).toHaveLength(1);
    expect(off.scripted.calls).toHaveLength(1);
    const refused = createFakeBackend([text(first)]);
    await post(refused, { followUpMaxCalls: 8 }, { parallel_tool_calls: false });
    expect(refused.scripted.calls).toHaveLength(1);
  });
});
