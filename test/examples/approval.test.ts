import { describe, expect, it } from "vitest";
import { main } from "../../examples/approval.ts";

describe("examples/approval", () => {
  it("refunds A1 once after its approval, and never refunds B2, whose denial the model read", async () => {
    const lines: string[] = [];
    const { results, refunds, record } = await main((line) => lines.push(line));
    expect(results).toEqual(["Order A1: done.", "Order B2: done."]);
    expect(refunds).toHaveLength(1);
    expect(refunds[0]).toMatch(/^A1:250 \(/);
    expect(record?.status).toBe("completed");
    expect(record?.approval?.decisions).toEqual([
      {
        callId: record?.approval?.pending[0]?.callId,
        approved: false,
        reason: "refunds above 100 need a manager",
      },
    ]);
    expect(lines.slice(0, 3)).toEqual([
      'waiting: refund {"order":"A1","amount":250}',
      "Order A1: done.",
      "order-B2 is awaiting_approval",
    ]);
  });
});
