/**
 * The call-confidence gate (ADR 040) on the proxy's guarded path, against a scripted
 * OpenAI-compatible server on 127.0.0.1 (the proxy's own HTTP backend and forwarding client): the
 * probe asks the same prompt with `logprobs` and one token, a call the model was unlikely to open
 * with is declined and the request answered without tools, a likely one is taken; the gate leaves
 * prose, `respond`, answers that open with prose, forced tool choices and retries alone.
 */
import { afterEach, describe, expect, it } from "vitest";
import { callStartProbability, opensWithCall } from "../../src/proxy/call-confidence.ts";
import { ProxyConfigError } from "../../src/proxy/errors.ts";
import { createHttpBackend, createProxy, type ProxyOptions } from "../../src/proxy/index.ts";
import {
  type BackendReply,
  type BackendRequest,
  type ScriptedBackend,
  startScriptedBackend,
  textCompletion,
} from "./helpers/scripted-backend.ts";

const tools = [
  {
    type: "function",
    function: {
      name: "determine_body_mass_index",
      description: "Calculate body mass index given weight and height.",
      parameters: {
        type: "object",
        properties: { weight: { type: "number" }, height: { type: "number" } },
        required: ["weight", "height"],
      },
    },
  },
];

const QUESTION = "Calculate the area of a triangle with base 10 and height 5.";
const FENCED_CALL =
  '```json\n{"name": "determine_body_mass_index", "arguments": {"weight": 10, "height": 5}}\n```';

/** llama-server's answer to a one-token request with `logprobs` (the shape it sends, trimmed). */
function firstTokenCompletion(alternatives: [string, number][]): BackendReply {
  const [first] = alternatives;
  return {
    body: {
      choices: [
        {
          index: 0,
          message: { role: "assistant", content: first?.[0] ?? "" },
          finish_reason: "length",
          logprobs: {
            content: [
              {
                token: first?.[0],
                logprob: Math.log(first?.[1] ?? 1),
                top_logprobs: alternatives.map(([token, p]) => ({ token, logprob: Math.log(p) })),
              },
            ],
          },
        },
      ],
    },
  };
}

let backend: ScriptedBackend | undefined;
afterEach(async () => {
  await backend?.close();
  backend = undefined;
});

async function ask(
  steps: (BackendReply | ((request: BackendRequest) => BackendReply))[],
  options: Partial<ProxyOptions> = { callConfidence: 0.5 },
  body: Record<string, unknown> = {},
) {
  backend = await startScriptedBackend();
  backend.push(...steps);
  const lines: Record<string, unknown>[] = [];
  const warnings: string[] = [];
  const proxy = createProxy({
    backend: createHttpBackend({ url: backend.url }),
    accessLog: { format: "json", write: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) },
    ...options,
  });
  const original = console.warn;
  console.warn = (line: string) => warnings.push(line);
  try {
    const response = await proxy.request("/v1/chat/completions", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "m", messages: [{ role: "user", content: QUESTION }], tools, ...body }),
    });
    expect(response.status).toBe(200);
    const answer = (await response.json()) as {
      choices: {
        finish_reason: string;
        message: { content: string | null; tool_calls?: { function: { name: string } }[] };
      }[];
    };
    backend.assertDone();
    return { choice: answer.choices[0], log: lines.at(-1) ?? {}, requests: backend.chatRequests, warnings };
  } finally {
    console.warn = original;
  }
}

describe("the call-confidence gate", () => {
  it("declines a rescued call the model was unlikely to open with, and answers without tools", async () => {
    const { choice, log, requests } = await ask([
      textCompletion(FENCED_CALL),
      firstTokenCompletion([
        ["```", 0.3],
        ["The", 0.45],
        ["To", 0.15],
        ['{"', 0.05],
      ]),
      textCompletion("The area is 25 square units."),
    ]);
    expect(choice?.message.content).toBe("The area is 25 square units.");
    expect(choice?.message.tool_calls ?? []).toEqual([]);
    expect(choice?.finish_reason).toBe("stop");
    expect(log).toMatchObject({ declined: 1, confidence: 0.35, rescues: 0 });
    // The probe is the client's own prompt: the same messages, the client's tools without the
    // proxy's `respond`, one token, with logprobs.
    const [first, probe, plain] = requests.map((request) => request.body);
    expect(probe).toMatchObject({ max_tokens: 1, logprobs: true, top_logprobs: 20, stream: false });
    expect(probe?.messages).toEqual(first?.messages);
    const names = (body: Record<string, unknown> | undefined) =>
      ((body?.tools ?? []) as { function: { name: string } }[]).map((tool) => tool.function.name);
    expect(names(first)).toEqual(["determine_body_mass_index", "respond"]);
    expect(names(probe)).toEqual(["determine_body_mass_index"]);
    // The text answer is asked for without tools.
    expect(plain?.tools).toBeUndefined();
    expect(plain?.messages).toEqual([{ role: "user", content: QUESTION }]);
  });

  it("takes a rescued call the model was likely to open with", async () => {
    const { choice, log, requests } = await ask([
      textCompletion(FENCED_CALL),
      firstTokenCompletion([
        ["```", 0.7],
        ['{"', 0.1],
        ["The", 0.15],
      ]),
    ]);
    expect(choice?.message.tool_calls?.map((call) => call.function.name)).toEqual([
      "determine_body_mass_index",
    ]);
    expect(log).toMatchObject({ declined: 0, confidence: 0.8, rescues: 1 });
    expect(requests).toHaveLength(2);
  });

  it("takes the call, and says once why, when the backend answers without logprobs", async () => {
    const { choice, log, warnings } = await ask([textCompletion(FENCED_CALL), textCompletion("```")]);
    expect(choice?.message.tool_calls?.map((call) => call.function.name)).toEqual([
      "determine_body_mass_index",
    ]);
    expect(log).toMatchObject({ declined: 0, confidence: null, rescues: 1 });
    expect(warnings).toEqual([expect.stringContaining("without logprobs")]);
  });

  it("does not probe prose, an answer that opens with prose, or a forced tool choice", async () => {
    const prose = await ask([textCompletion("A triangle's area is half its base times its height.")]);
    expect(prose.log).toMatchObject({ prose: 1, confidence: null });
    const introduced = await ask([textCompletion(`I will compute it:\n${FENCED_CALL}`)]);
    expect(introduced.choice?.message.tool_calls).toHaveLength(1);
    expect(introduced.log).toMatchObject({ rescues: 1, confidence: null });
    const forced = await ask(
      [textCompletion(FENCED_CALL)],
      { callConfidence: 0.5 },
      { tool_choice: "required" },
    );
    expect(forced.choice?.message.tool_calls).toHaveLength(1);
    expect(forced.log).toMatchObject({ confidence: null });
  });

  it("does not probe an answer that came after a nudge", async () => {
    const { choice, log, requests } = await ask([
      textCompletion('```json\n{"name": "determine_body_mass_index", "arguments": {"weight": 10,'),
      textCompletion(FENCED_CALL),
    ]);
    expect(choice?.message.tool_calls).toHaveLength(1);
    expect(log).toMatchObject({ nudges: 1, confidence: null });
    expect(requests).toHaveLength(2);
  });

  it("is off unless asked for: no probe", async () => {
    const { log, requests } = await ask([textCompletion(FENCED_CALL)], {});
    expect(requests).toHaveLength(1);
    expect(log).toMatchObject({ rescues: 1, declined: 0, confidence: null });
  });

  it("refuses a threshold that is no probability, and a backend that cannot report logprobs", () => {
    const openai = createHttpBackend({ url: "http://127.0.0.1:9" });
    expect(() => createProxy({ backend: openai, callConfidence: 0 })).toThrow(ProxyConfigError);
    expect(() => createProxy({ backend: openai, callConfidence: 1.5 })).toThrow(/at most 1/);
    const ollama = createHttpBackend({ url: "http://127.0.0.1:9", format: "ollama", defaultModel: "m" });
    expect(() => createProxy({ backend: ollama, callConfidence: 0.5 })).toThrow(/ollama backend/);
  });
});

describe("callStartProbability and opensWithCall", () => {
  it("adds up the alternatives that open a call: markup, a fence, JSON, the answer's own start", () => {
    const answer = '<tool_call>\n{"name": "f"}';
    const p = callStartProbability(
      [
        { token: "<tool_call>", probability: 0.4 },
        { token: "```", probability: 0.1 },
        { token: " {", probability: 0.05 },
        { token: "<", probability: 0.05 },
        { token: "I", probability: 0.3 },
        { token: "\n", probability: 0.1 },
      ],
      answer,
    );
    expect(p).toBeCloseTo(0.6);
  });

  it("knows the template's own opening", () => {
    const format = {
      open: "<|call|>",
      close: "",
      nameKey: "name",
      argumentsKey: "arguments",
      doubledBraces: false,
    };
    expect(opensWithCall('  <|call|>{"name": "f"}', format)).toBe(true);
    expect(opensWithCall('  <|call|>{"name": "f"}')).toBe(false);
    expect(opensWithCall("Sure: ```json {}```")).toBe(false);
    expect(opensWithCall("\n```json\n{}\n```")).toBe(true);
    expect(callStartProbability([{ token: "<|call|>", probability: 0.9 }], "<|call|>{}", format)).toBeCloseTo(
      0.9,
    );
  });
});
