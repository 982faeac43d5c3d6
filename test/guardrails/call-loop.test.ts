import { describe, expect, it } from "vitest";
import { createMessage, type Message, MessageType } from "../../src/core/messages.ts";
import { DEFAULT_CALL_LOOP_RULES, decideCallLoop, findCallStreak } from "../../src/guardrails/call-loop.ts";

const user = (text: string) => createMessage("user", text, { type: MessageType.USER_INPUT });
let ids = 0;

/** One round: an assistant message with the call and its tool result. */
function round(tool: string, args: Record<string, unknown>, result: string): Message[] {
  const callId = `call_${ids++}`;
  return [
    createMessage(
      "assistant",
      "",
      { type: MessageType.TOOL_CALL },
      { toolCalls: [{ name: tool, args, callId }] },
    ),
    createMessage("tool", result, { type: MessageType.TOOL_RESULT }, { toolName: tool, toolCallId: callId }),
  ];
}

const readA = () => round("read_file", { path: "src/a.ts" }, "export const a = 1;\n");
const rounds = (count: number, make: () => Message[]) => Array.from({ length: count }, make).flat();
const history = (...parts: Message[][]) => [user("fix the bug in src/a.ts"), ...parts.flat()];

describe("findCallStreak", () => {
  it("counts identical rounds at the end of the history", () => {
    expect(findCallStreak(history(rounds(4, readA)))?.repeats).toBe(4);
  });

  it("ignores key order but not a different result", () => {
    const reordered = round("grep", { b: 2, a: 1 }, "x");
    const same = round("grep", { a: 1, b: 2 }, "x");
    expect(findCallStreak(history(reordered, same))?.repeats).toBe(2);
    const changed = round("grep", { a: 1, b: 2 }, "y");
    expect(findCallStreak(history(reordered, same, changed))?.repeats).toBe(1);
  });

  it("is null when the history does not end with results", () => {
    expect(findCallStreak(history(rounds(4, readA), [user("now something else")]))).toBeNull();
    expect(findCallStreak([user("hi")])).toBeNull();
  });

  it("lets an agent's reminder stand, but a user turn breaks the streak", () => {
    const reminder = user("<system-reminder>todo list is empty</system-reminder>");
    expect(findCallStreak(history(readA(), [reminder], readA(), [reminder]))?.repeats).toBe(2);
    const answer = createMessage("assistant", "done", { type: MessageType.TEXT_RESPONSE });
    expect(findCallStreak(history(readA(), [answer, user("again")], readA()))?.repeats).toBe(1);
    expect(findCallStreak(history(readA(), [user("stop reading a.ts")], readA()))?.repeats).toBe(1);
  });

  it("compares whole batches", () => {
    const batch = (): Message[] => {
      const [a, b] = [`c${ids++}`, `c${ids++}`];
      return [
        createMessage(
          "assistant",
          "",
          { type: MessageType.TOOL_CALL },
          {
            toolCalls: [
              { name: "read_file", args: { path: "a" }, callId: a },
              { name: "read_file", args: { path: "b" }, callId: b },
            ],
          },
        ),
        createMessage("tool", "A", { type: MessageType.TOOL_RESULT }, { toolCallId: a }),
        createMessage("tool", "B", { type: MessageType.TOOL_RESULT }, { toolCallId: b }),
      ];
    };
    expect(findCallStreak(history(rounds(3, batch)))?.repeats).toBe(3);
    expect(findCallStreak(history(rounds(2, batch), readA()))?.repeats).toBe(1);
  });
});

describe("decideCallLoop", () => {
  const rules = DEFAULT_CALL_LOOP_RULES;

  it("does nothing below the threshold", () => {
    expect(decideCallLoop(history(rounds(2, readA)), rules).kind).toBe("none");
  });

  it("escalates: a [RepeatedCall] note, then narrowing, then a stop", () => {
    const note = decideCallLoop(history(rounds(3, readA)), rules, ["respond"]);
    expect(note).toMatchObject({ kind: "note", tools: ["read_file"], repeats: 3 });
    expect(note.kind === "note" && note.note).toContain("[RepeatedCall]");
    expect(note.kind === "note" && note.note).toContain("'respond'");
    const narrow = decideCallLoop(history(rounds(4, readA)), rules);
    expect(narrow).toMatchObject({ kind: "narrow", repeats: 4, tools: ["read_file"] });
    expect(narrow.kind === "narrow" && narrow.message).toContain("[LoopDetected]");
    const stop = decideCallLoop(history(rounds(5, readA)), rules);
    expect(stop).toMatchObject({ kind: "stop", tools: ["read_file"], repeats: 5 });
    expect(stop.kind === "stop" && stop.message).toContain("'read_file'");
    expect(decideCallLoop(history(rounds(25, readA)), rules).kind).toBe("stop");
  });

  it("follows the configured threshold", () => {
    expect(decideCallLoop(history(rounds(2, readA)), { ...rules, threshold: 2 }).kind).toBe("note");
    expect(decideCallLoop(history(rounds(5, readA)), { ...rules, threshold: 6 }).kind).toBe("none");
  });

  it("leaves a polling tool alone: changing results, or exempt by name", () => {
    let tick = 0;
    const poll = () => round("check_build", { id: 7 }, `running (${tick++}s)`);
    expect(decideCallLoop(history(rounds(10, poll)), rules).kind).toBe("none");
    const stuck = () => round("check_build", { id: 7 }, "running");
    expect(decideCallLoop(history(rounds(10, stuck)), rules).kind).toBe("stop");
    expect(decideCallLoop(history(rounds(10, stuck)), { ...rules, exemptTools: ["check_build"] }).kind).toBe(
      "none",
    );
  });
});
