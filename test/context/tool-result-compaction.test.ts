import { describe, expect, it } from "vitest";
import {
  DROPPED_RESULT_CONTENT,
  stubToolResult,
  truncateToolResult,
} from "../../src/context/tool-result-compaction.ts";
import { MessageType } from "../../src/core/messages.ts";
import { deepFreeze, executedBatch } from "./history-fixtures.ts";

const resultWith = (content: string) => {
  const [, result] = executedBatch(3, [content]);
  return deepFreeze({ ...result!, metadata: { ...result!.metadata, tokenEstimate: 99 } });
};

describe("truncateToolResult", () => {
  it("keeps the first chars and reports how many were removed", () => {
    const truncated = truncateToolResult(resultWith("a".repeat(250)), 200);
    expect(truncated.content).toBe(`${"a".repeat(200)}\n[Truncated — 50 chars removed]`);
    expect(truncated.metadata).toEqual({
      type: MessageType.TOOL_RESULT,
      stepIndex: 3,
      originalType: MessageType.TOOL_RESULT,
    });
    expect(truncated.toolCallId).toBe("call_3_0");
  });

  it("returns the message itself when truncating would not shorten it or was done before", () => {
    const short = resultWith("a".repeat(220));
    expect(truncateToolResult(short, 200)).toBe(short);
    const once = deepFreeze(truncateToolResult(resultWith("b".repeat(1000)), 200));
    expect(truncateToolResult(once, 200)).toBe(once);
  });

  it("never splits a surrogate pair", () => {
    const content = `${"a".repeat(199)}😀${"b".repeat(100)}`;
    const truncated = truncateToolResult(resultWith(content), 200);
    expect(truncated.content.startsWith(`${"a".repeat(199)}\n`)).toBe(true);
    expect(truncated.content).toContain("102 chars removed");
  });
});

describe("stubToolResult", () => {
  it("replaces the content and keeps the call answered", () => {
    const stub = stubToolResult(resultWith("x".repeat(500)));
    expect(stub).toMatchObject({ role: "tool", content: DROPPED_RESULT_CONTENT, toolCallId: "call_3_0" });
    expect(stub.metadata.originalType).toBe(MessageType.TOOL_RESULT);
    expect(stub.metadata.tokenEstimate).toBeUndefined();
  });

  it("keeps results already shorter than the stub", () => {
    const tiny = resultWith("ok");
    expect(stubToolResult(tiny)).toBe(tiny);
  });
});
