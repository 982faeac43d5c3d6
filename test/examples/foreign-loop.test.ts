import { describe, expect, it } from "vitest";
import {
  FINAL_ANSWER,
  main,
  misbehavingModel,
  runWithComponents,
  runWithGuardrails,
} from "../../examples/foreign-loop.ts";
import { ScriptedClient, text } from "../../src/testing/index.ts";

const expectedActions = [
  "retry",
  "execute search_docs (rescued from text)",
  "step_blocked respond",
  "execute read_doc",
  "execute respond",
];

describe("examples/foreign-loop", () => {
  it("drives the misbehaving model to the respond answer with both APIs", async () => {
    const lines: string[] = [];
    const outcome = await main((line) => lines.push(line));
    for (const report of [outcome.guardrails, outcome.granular]) {
      expect(report.answer).toBe(FINAL_ANSWER);
      expect(report.actions).toEqual(expectedActions);
      expect(report.llmCalls).toBe(5);
    }
    expect(lines.filter((line) => line.includes(`answer: ${FINAL_ANSWER}`))).toHaveLength(2);
  });

  it("routes each nudge on its channel and pairs every tool call id with a reply", async () => {
    const client = misbehavingModel();
    const report = await runWithGuardrails(client, () => {});
    // After the prose: the prose itself, then the retry nudge as a user message.
    expect(client.calls[1]?.messages.slice(2)).toEqual([
      { role: "assistant", content: "Sure! Let me search the documentation for that." },
      { role: "user", content: expect.stringContaining("not a valid tool call") },
    ]);
    // The premature respond is answered on the tool channel with the step nudge.
    const afterPremature = client.calls[3]?.messages.at(-1);
    expect(afterPremature).toMatchObject({
      role: "tool",
      content: expect.stringContaining("cannot call respond yet"),
    });
    const callIds = report.messages.flatMap((message) =>
      ((message.tool_calls as { id: string }[] | undefined) ?? []).map((call) => call.id),
    );
    const replyIds = report.messages
      .filter((message) => message.role === "tool")
      .map((message) => message.tool_call_id);
    expect(replyIds).toEqual(callIds);
  });

  it("gives up when the model never produces a tool call", async () => {
    const prose = () => new ScriptedClient(Array.from({ length: 4 }, () => text("I think so.")));
    await expect(runWithGuardrails(prose(), () => {})).rejects.toThrow(/Retries exhausted/);
    await expect(runWithComponents(prose(), () => {})).rejects.toThrow(/No valid tool call after 4 tries/);
  });
});
