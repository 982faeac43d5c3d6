import { describe, expect, it } from "vitest";
import { createNonceTask, decideNonceReply, shellArguments } from "./helpers/nonce-backend.ts";

const task = createNonceTask();
const shell = {
  type: "function",
  function: { name: "bash", parameters: { properties: { command: { type: "string" } } } },
};
const prompt = { role: "user", content: task.prompt };
const call = { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function" }] };

describe("decideNonceReply", () => {
  it("calls the shell tool for the task, with the command", () => {
    expect(decideNonceReply({ messages: [prompt], tools: [shell] }, task, "bash")).toEqual({
      kind: "tool_call",
      name: "bash",
      args: { command: task.command },
    });
  });

  it("gives the final nonce only for a tool result holding the reversed nonce", () => {
    const ran = { role: "tool", content: `${task.proof}\n` };
    const final = decideNonceReply({ messages: [prompt, call, ran], tools: [shell] }, task, "bash");
    expect(final).toMatchObject({ kind: "text", why: "final" });
    expect(final.kind === "text" && final.text).toContain(task.finalNonce);
  });

  it("answers an error without the final nonce when the result lacks the proof (the nonce itself is not enough)", () => {
    const echoed = { role: "tool", content: [{ type: "text", text: `${task.nonce} ${task.command}` }] };
    const answer = decideNonceReply({ messages: [prompt, call, echoed], tools: [shell] }, task, "bash");
    expect(answer).toMatchObject({ kind: "text", why: "no-proof" });
    expect(JSON.stringify(answer)).not.toContain(task.finalNonce);
  });

  it("answers side requests (no task id, or no tools) with text, and names the tools when the shell tool is missing", () => {
    expect(
      decideNonceReply({ messages: [{ role: "user", content: "title this" }], tools: [shell] }, task, "bash"),
    ).toMatchObject({ why: "side-request" });
    expect(decideNonceReply({ messages: [prompt] }, task, "bash")).toMatchObject({ why: "side-request" });
    const other = decideNonceReply({ messages: [prompt], tools: [shell] }, task, "Bash");
    expect(other).toMatchObject({ kind: "text", why: "no-shell-tool" });
    expect(JSON.stringify(other)).toContain("bash");
  });

  it("task nonces differ between tasks and the proof appears nowhere in the command or prompt", () => {
    const other = createNonceTask();
    expect(other.nonce).not.toBe(task.nonce);
    expect(task.command).not.toContain(task.proof);
    expect(task.prompt).not.toContain(task.nonce);
  });
});

describe("shellArguments", () => {
  it("fills cmd or command, an argv array when the schema says so, a description, and required booleans", () => {
    expect(shellArguments({ properties: { cmd: { type: "string" } } }, "ls")).toEqual({ cmd: "ls" });
    expect(shellArguments({ properties: { command: { type: "array" } } }, "ls")).toEqual({
      command: ["bash", "-lc", "ls"],
    });
    expect(
      shellArguments(
        {
          properties: {
            command: { type: "string" },
            description: { type: "string" },
            is_background: { type: "boolean" },
          },
          required: ["command", "is_background"],
        },
        "ls",
      ),
    ).toEqual({ command: "ls", description: expect.any(String), is_background: false });
  });
});
