/**
 * `runInference` as the proxy uses it: one workflow machine for every call, with each call's
 * client, compactor and callbacks reaching only its own actor, however the calls interleave.
 */
import { describe, expect, it } from "vitest";
import { BackendError, ToolCallError, WorkflowCancelledError } from "../../src/core/errors.ts";
import { createMessage, type Message, MessageRole, MessageType } from "../../src/core/messages.ts";
import type { LLMResponse } from "../../src/core/types.ts";
import { runInference } from "../../src/loop/inference.ts";
import {
  hangUntilAborted,
  ScriptedClient,
  type ScriptStep,
  text,
  toolCall,
} from "../../src/testing/index.ts";
import { respondTool } from "../../src/tools/respond.ts";

const TOOLS = [respondTool().spec];

function historyFor(index: number): Message[] {
  return [createMessage(MessageRole.USER, `question ${index}`, { type: MessageType.USER_INPUT })];
}

/** A step that answers (or fails) after `delayMs`, so concurrent calls finish out of order. */
function later(delayMs: number, response: LLMResponse | Error): ScriptStep {
  return () => new Promise((resolve) => setTimeout(() => resolve(response), delayMs));
}

describe("runInference with one machine for all calls", () => {
  it("keeps each concurrent call's client, compactor, messages and result apart", async () => {
    const runs = Array.from({ length: 12 }, (_, index) => {
      // Even calls get a text answer first (a retry nudge), odd calls answer at once.
      const answer = toolCall("respond", { message: `answer ${index}` });
      const script =
        index % 2 === 0
          ? [later(12 - index, text(`chatter ${index}`)), later(index, answer)]
          : [later(12 - index, answer)];
      const client = new ScriptedClient(script);
      const compacted: number[] = [];
      const appended: Message[] = [];
      const promise = runInference({
        client,
        contextManager: {
          maybeCompact: (messages, stepIndex) => {
            compacted.push(stepIndex ?? -1);
            return messages;
          },
        },
        messages: historyFor(index),
        tools: TOOLS,
        onMessage: (message) => appended.push(message),
      });
      return { index, client, compacted, appended, promise };
    });
    for (const run of runs) {
      const result = await run.promise;
      const retried = run.index % 2 === 0;
      expect(result.toolCalls).toEqual([{ tool: "respond", args: { message: `answer ${run.index}` } }]);
      expect(result.iterations).toBe(retried ? 2 : 1);
      expect(run.compacted).toEqual(retried ? [0, 1] : [0]);
      expect(run.appended.map((message) => message.content)).toEqual(
        retried ? [`chatter ${run.index}`, expect.stringContaining("not a valid tool call")] : [],
      );
      run.client.assertDone();
      for (const call of run.client.calls) {
        expect(call.messages[0]).toMatchObject({ role: "user", content: `question ${run.index}` });
      }
    }
  });

  it("gives each call its own failure: a backend error, exhausted retries, a cancellation", async () => {
    const backendError = new BackendError(500, "backend down");
    const controller = new AbortController();
    const failing = runInference({
      client: new ScriptedClient([later(5, backendError)]),
      contextManager: { maybeCompact: (messages) => messages },
      messages: historyFor(1),
      tools: TOOLS,
    });
    const chatty = runInference({
      client: new ScriptedClient([text("one"), text("two")]),
      contextManager: { maybeCompact: (messages) => messages },
      messages: historyFor(2),
      tools: TOOLS,
      maxRetries: 1,
    });
    const hanging = new ScriptedClient([hangUntilAborted(() => controller.abort())]);
    const cancelled = runInference({
      client: hanging,
      contextManager: { maybeCompact: (messages) => messages },
      messages: historyFor(3),
      tools: TOOLS,
      signal: controller.signal,
    });
    const healthy = runInference({
      client: new ScriptedClient([later(10, toolCall("respond", { message: "fine" }))]),
      contextManager: { maybeCompact: (messages) => messages },
      messages: historyFor(4),
      tools: TOOLS,
    });
    const [failed, exhausted, aborted, answered] = await Promise.allSettled([
      failing,
      chatty,
      cancelled,
      healthy,
    ]);
    expect(failed).toEqual({ status: "rejected", reason: backendError });
    expect(exhausted.status === "rejected" && exhausted.reason).toBeInstanceOf(ToolCallError);
    expect(exhausted.status === "rejected" && (exhausted.reason as ToolCallError).rawResponse).toBe("two");
    expect(aborted.status === "rejected" && aborted.reason).toBeInstanceOf(WorkflowCancelledError);
    expect(hanging.calls[0]?.signal?.aborted).toBe(true);
    expect(answered.status === "fulfilled" && answered.value.toolCalls).toEqual([
      { tool: "respond", args: { message: "fine" } },
    ]);
  });
});
