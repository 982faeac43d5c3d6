/** The shared exit codes and the one-line runtime error of forge's command lines. */
import { CommanderError } from "commander";
import { describe, expect, it } from "vitest";
import { ExitStatusError, exitCodeOf, formatRuntimeError } from "../../src/cli/run-program.ts";
import { LlamaServerNotFoundError } from "../../src/server/llama-server-path.ts";

describe("exitCodeOf", () => {
  it("keeps 0 for help and version", () => {
    expect(exitCodeOf(new CommanderError(0, "commander.helpDisplayed", "(outputHelp)"))).toBe(0);
    expect(exitCodeOf(new CommanderError(0, "commander.version", "0.1.0"))).toBe(0);
  });

  it("gives 2 for commander's usage errors, whatever code commander suggests", () => {
    expect(exitCodeOf(new CommanderError(1, "commander.unknownOption", "error: unknown option"))).toBe(2);
    expect(exitCodeOf(new CommanderError(2, "commander.error", "error: --port: too big"))).toBe(2);
  });

  it("gives an ExitStatusError's own status (127: forge launch's agent is not installed)", () => {
    expect(exitCodeOf(new ExitStatusError(127, "codex is not installed"))).toBe(127);
    expect(exitCodeOf(new ExitStatusError(126, "codex is not executable"))).toBe(126);
  });

  it("gives 1 for anything else an action throws", () => {
    expect(exitCodeOf(new LlamaServerNotFoundError("llama-server not found"))).toBe(1);
    expect(exitCodeOf("a string")).toBe(1);
  });
});

describe("formatRuntimeError", () => {
  const error = new Error("llama-server exited with code 1 before it became healthy.\nLast output:\nE load");

  it("prints the first line of the message after the program's name, without a stack", () => {
    expect(formatRuntimeError("forge", error, false)).toBe(
      "forge: llama-server exited with code 1 before it became healthy.",
    );
    expect(formatRuntimeError("forge", "plain", false)).toBe("forge: plain");
  });

  it("prints the stack and the causes' when verbose", () => {
    const wrapped = new Error("port 8081 on 127.0.0.1 is already in use", {
      cause: new Error("listen EADDRINUSE"),
    });
    const text = formatRuntimeError("forge", wrapped, true);
    expect(text).toMatch(/^forge: Error: port 8081 on 127\.0\.0\.1 is already in use\n {4}at /);
    expect(text).toContain("Caused by: Error: listen EADDRINUSE");
  });
});
