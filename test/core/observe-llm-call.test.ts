/**
 * observeLLMCall leaves the caller's options as they are: the call gets a copy whose `onUsage`
 * hears the usage for the observer and still passes it to the caller's own `onUsage`.
 */
import { describe, expect, it } from "vitest";
import { createObserverSet, type LLMCallEndEvent, observeLLMCall } from "../../src/core/run-observer.ts";
import type { SendOptions, TokenUsage } from "../../src/core/types.ts";

const start = { runId: "r", iteration: 1, messages: [], tools: undefined };
const usage: TokenUsage = { promptTokens: 12, completionTokens: 3 };

describe("observeLLMCall", () => {
  it("sends with a copy of the options and leaves the caller's, its onUsage included, untouched", async () => {
    const heard: TokenUsage[] = [];
    const onUsage = (reported: TokenUsage) => void heard.push(reported);
    const controller = new AbortController();
    const options: SendOptions = Object.freeze({ signal: controller.signal, rank: 2, onUsage });
    const ends: LLMCallEndEvent[] = [];
    const observer = createObserverSet([{ onLLMCallEnd: (event) => ends.push(event) }]);
    let sent: SendOptions | undefined;
    const response = await observeLLMCall(
      observer,
      async (sendOptions) => {
        sent = sendOptions;
        sendOptions.onUsage?.(usage);
        return { content: "hi" };
      },
      options,
      start,
    );
    expect(response).toEqual({ content: "hi" });
    expect(options).toEqual({ signal: controller.signal, rank: 2, onUsage });
    expect(options.onUsage).toBe(onUsage);
    expect(sent).not.toBe(options);
    expect(sent).toMatchObject({ signal: controller.signal, rank: 2 });
    expect(heard).toEqual([usage]);
    expect(ends.map((event) => event.usage)).toEqual([usage]);
  });

  it("adds an onUsage to the copy only, when the caller has none", async () => {
    const options: SendOptions = {};
    const ends: LLMCallEndEvent[] = [];
    const observer = createObserverSet([{ onLLMCallEnd: (event) => ends.push(event) }]);
    await observeLLMCall(
      observer,
      async (sendOptions) => {
        sendOptions.onUsage?.(usage);
        return { content: "hi" };
      },
      options,
      start,
    );
    expect(options).toEqual({});
    expect(ends[0]?.usage).toEqual(usage);
  });

  it("hands the options as they are to the call when nothing observes it", async () => {
    const options: SendOptions = { rank: 1 };
    let sent: SendOptions | undefined;
    await observeLLMCall(
      undefined,
      async (sendOptions) => {
        sent = sendOptions;
        return { content: "hi" };
      },
      options,
      start,
    );
    expect(sent).toBe(options);
  });
});
