/**
 * The proxy's pure decisions, one by one: error mapping, field paths, the serial queue, sampling
 * mapping, request conversion edge cases and answer shaping.
 */
import { describe, expect, it } from "vitest";
import { BackendError, ToolCallError, WorkflowCancelledError } from "../../src/core/errors.ts";
import { MessageType } from "../../src/core/messages.ts";
import { answerFromCalls } from "../../src/proxy/answer.ts";
import { convertAnthropic } from "../../src/proxy/anthropic/request.ts";
import { messagesRequestSchema } from "../../src/proxy/anthropic/schema.ts";
import { samplingFromBody } from "../../src/proxy/backend/client-factories.ts";
import { withoutV1, withV1 } from "../../src/proxy/backend/forwarding-client.ts";
import { errorBody, formatPath, ProxyHttpError, toProxyHttpError } from "../../src/proxy/errors.ts";
import { SerialGate } from "../../src/proxy/http/admission-gate.ts";
import { SHUTDOWN_RETRY_AFTER_SECONDS, shuttingDownError } from "../../src/proxy/http/drain.ts";
import { convertOpenAI, historyFromOpenAI } from "../../src/proxy/openai/request.ts";
import { chatCompletionRequestSchema } from "../../src/proxy/openai/schema.ts";

describe("toProxyHttpError", () => {
  it("maps each failure to its status and kind", () => {
    const cases: [unknown, number, string][] = [
      [new BackendError(408, "slow"), 504, "backend_timeout"],
      [
        new BackendError(503, "connect ECONNREFUSED", "Cannot reach", {
          cause: new TypeError("fetch failed"),
        }),
        502,
        "backend_unreachable",
      ],
      [new BackendError(503, "Loading model"), 502, "backend_error"],
      [new BackendError(500, "boom"), 502, "backend_error"],
      [new BackendError(401, "bad key"), 502, "backend_error"],
      [new BackendError(400, '{"error":{"message":"too long"}}'), 400, "backend_error"],
      [new ToolCallError("Retries exhausted", "last words"), 422, "retries_exhausted"],
      [new WorkflowCancelledError([], [], 1), 499, "client_closed"],
      [Object.assign(new Error("connect"), { code: "ECONNREFUSED" }), 502, "backend_unreachable"],
      [new Error("surprise"), 500, "internal"],
    ];
    for (const [error, status, kind] of cases) {
      const mapped = toProxyHttpError(error);
      expect([mapped.status, mapped.kind], String(error)).toEqual([status, kind]);
    }
    expect(toProxyHttpError(new BackendError(400, '{"error":{"message":"too long"}}')).message).toContain(
      "too long",
    );
    expect(toProxyHttpError(new ToolCallError("x", "last words")).details).toEqual({
      raw_response: "last words",
    });
  });

  it("renders both APIs' error bodies", () => {
    const error = new ProxyHttpError(400, "invalid_request", "messages: too short", { param: "messages" });
    expect(errorBody("openai", error)).toEqual({
      error: {
        message: "messages: too short",
        type: "invalid_request_error",
        param: "messages",
        code: "invalid_request",
      },
    });
    expect(errorBody("anthropic", error)).toEqual({
      type: "error",
      error: { type: "invalid_request_error", message: "messages: too short" },
    });
  });
});

describe("small helpers", () => {
  it("formats zod paths as field names", () => {
    expect(formatPath(["messages", 0, "content", 2, "type"])).toBe("messages[0].content[2].type");
    expect(formatPath([])).toBe("");
  });

  it("normalizes backend URLs with or without /v1", () => {
    expect(withV1("http://h:8080")).toBe("http://h:8080/v1");
    expect(withV1("http://h:8080/v1/")).toBe("http://h:8080/v1");
    expect(withoutV1("http://h:8080/v1")).toBe("http://h:8080");
  });

  it("maps OpenAI sampling fields to client options and ignores the rest", () => {
    expect(
      samplingFromBody({
        temperature: 0.2,
        top_p: 0.9,
        top_k: 40,
        min_p: 0.05,
        max_completion_tokens: 9,
        seed: 1,
        foo: 2,
      }),
    ).toEqual({ temperature: 0.2, topP: 0.9, topK: 40, minP: 0.05, maxTokens: 9, seed: 1 });
    expect(samplingFromBody({ temperature: "hot" })).toEqual({});
  });
});

describe("SerialGate", () => {
  it("admits one job at a time in arrival order", async () => {
    const queue = new SerialGate();
    const order: string[] = [];
    let release!: () => void;
    const first = queue.run(
      () =>
        new Promise<void>((resolve) => {
          order.push("first");
          release = resolve;
        }),
    );
    const second = queue.run(async () => void order.push("second"));
    const third = queue.run(async () => void order.push("third"));
    await Promise.resolve();
    expect(order).toEqual(["first"]);
    expect(queue.pending).toBe(2);
    release();
    await Promise.all([first, second, third]);
    expect(order).toEqual(["first", "second", "third"]);
  });

  it("drops a waiter whose signal aborts, without running it", async () => {
    const queue = new SerialGate();
    const holder = await queue.acquire();
    const controller = new AbortController();
    let ran = false;
    const waiting = queue.run(async () => {
      ran = true;
    }, controller.signal);
    controller.abort(new Error("client left"));
    await expect(waiting).rejects.toThrow("client left");
    expect(queue.pending).toBe(0);
    holder();
    holder();
    await queue.run(async () => {});
    expect(ran).toBe(false);
  });

  it("on close refuses every waiter and every later request with the given 503; the job running keeps its slot", async () => {
    const queue = new SerialGate();
    const holder = await queue.acquire();
    let ran = 0;
    const job = async () => {
      ran += 1;
    };
    const waiting = [1, 2, 3].map(() => queue.run(job));
    queue.close(() => shuttingDownError());
    for (const refused of waiting) {
      await expect(refused).rejects.toMatchObject({
        status: 503,
        retryAfterSeconds: SHUTDOWN_RETRY_AFTER_SECONDS,
      });
    }
    expect(queue.pending).toBe(0);
    expect(queue.running).toBe(1);
    await expect(queue.acquire()).rejects.toMatchObject({ status: 503 });
    holder();
    expect(queue.running).toBe(0);
    await expect(queue.run(job)).rejects.toMatchObject({ status: 503 });
    expect(ran).toBe(0);
  });
});

describe("request conversion", () => {
  it("tags OpenAI messages for compaction and names tool results from their calls", () => {
    const history = historyFromOpenAI(
      chatCompletionRequestSchema.parse({
        messages: [
          { role: "developer", content: [{ type: "text", text: "rules" }] },
          { role: "user", content: "go" },
          {
            role: "assistant",
            content: "thinking",
            tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "" } }],
          },
          { role: "tool", tool_call_id: "c1", content: "done" },
          { role: "assistant", content: "final words" },
        ],
      }).messages,
    );
    expect(history.map((message) => message.metadata.type)).toEqual([
      MessageType.SYSTEM_PROMPT,
      MessageType.USER_INPUT,
      MessageType.TOOL_CALL,
      MessageType.TOOL_RESULT,
      MessageType.TEXT_RESPONSE,
    ]);
    expect(history[2]?.toolCalls).toEqual([{ name: "f", args: {}, callId: "c1" }]);
    expect(history[3]).toMatchObject({ toolCallId: "c1", toolName: "f" });
  });

  it("rejects tool-call arguments that are not a JSON object, naming them", () => {
    const body = chatCompletionRequestSchema.parse({
      messages: [
        {
          role: "assistant",
          tool_calls: [{ id: "c", type: "function", function: { name: "f", arguments: "[1]" } }],
        },
      ],
    });
    expect(() => convertOpenAI(body)).toThrow(
      expect.objectContaining({ status: 400, param: "messages[0].tool_calls[0].function.arguments" }),
    );
  });

  it("keeps unknown fields for the backend and drops tool_choice when no tools remain", () => {
    const { request: withTools } = convertOpenAI(
      chatCompletionRequestSchema.parse({
        messages: [{ role: "user", content: "x" }],
        tools: [{ type: "function", function: { name: "f" } }],
        tool_choice: "required",
        repeat_penalty: 1.1,
      }),
    );
    expect(withTools.extraBody).toEqual({ tool_choice: "required", repeat_penalty: 1.1 });
    expect(withTools.tools.map((tool) => tool.name)).toEqual(["f"]);
    const { request: none } = convertOpenAI(
      chatCompletionRequestSchema.parse({
        messages: [{ role: "user", content: "x" }],
        tools: [{ type: "function", function: { name: "f" } }],
        tool_choice: "none",
      }),
    );
    expect(none.tools).toEqual([]);
    expect(none.extraBody).toEqual({});
  });

  it("turns Anthropic tool results into tool messages (errors marked) and thinking into REASONING", () => {
    const { request } = convertAnthropic(
      messagesRequestSchema.parse({
        max_tokens: 5,
        metadata: { user_id: "u" },
        messages: [
          { role: "user", content: "go" },
          {
            role: "assistant",
            content: [
              { type: "thinking", thinking: "hmm" },
              { type: "tool_use", id: "t1", name: "f", input: { a: 1 } },
            ],
          },
          {
            role: "user",
            content: [
              {
                type: "tool_result",
                tool_use_id: "t1",
                content: [{ type: "text", text: "failed" }],
                is_error: true,
              },
              { type: "text", text: "try again" },
            ],
          },
        ],
      }),
    );
    expect(request.messages.map((message) => [message.role, message.content])).toEqual([
      ["user", "go"],
      ["assistant", "hmm"],
      ["assistant", ""],
      ["tool", "[ToolError] failed"],
      ["user", "try again"],
    ]);
    // The replay policy (--reasoning-replay) decides whether it goes upstream.
    expect(request.messages[1]?.metadata.type).toBe(MessageType.REASONING);
    expect(request.messages[3]).toMatchObject({ toolCallId: "t1", toolName: "f" });
    expect(request.extraBody).toEqual({ max_tokens: 5 });
  });

  it("rejects a tool_use block in a user turn and unknown block types, naming them", () => {
    const parse = (content: unknown[]) =>
      convertAnthropic(messagesRequestSchema.parse({ max_tokens: 5, messages: [{ role: "user", content }] }));
    expect(() => parse([{ type: "tool_use", id: "t", name: "f", input: {} }])).toThrow(
      expect.objectContaining({ status: 400, param: "messages[0].content[0]" }),
    );
    expect(() => parse([{ type: "document", source: {} }])).toThrow(
      expect.objectContaining({ status: 400, param: "messages[0].content[0].type" }),
    );
  });
});

describe("answerFromCalls", () => {
  const prompt = [{ role: "user" as const, content: "hi", metadata: { type: MessageType.USER_INPUT } }];

  it("turns injected respond calls into text and keeps other calls", () => {
    const answer = answerFromCalls(
      [
        { tool: "respond", args: { message: "one" }, reasoning: "why" },
        { tool: "respond", args: { message: "two" } },
      ],
      { model: "m", respondInjected: true, idPrefix: "call_", prompt },
    );
    expect(answer).toMatchObject({
      content: "one\n\ntwo",
      toolCalls: [],
      finishReason: "stop",
      reasoning: "why",
    });
  });

  it("returns respond as a tool call when the client defined it", () => {
    const answer = answerFromCalls([{ tool: "respond", args: { message: "x" } }], {
      model: "m",
      respondInjected: false,
      idPrefix: "toolu_",
      prompt,
    });
    expect(answer.finishReason).toBe("tool_calls");
    expect(answer.toolCalls[0]).toMatchObject({
      name: "respond",
      id: expect.stringMatching(/^toolu_[0-9a-f]{24}$/),
    });
  });
});
