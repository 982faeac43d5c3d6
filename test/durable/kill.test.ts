/**
 * A real crash: a child process runs the shop workflow with a checkpoint file and is killed with
 * SIGKILL while a tool hangs; the run is resumed here from the file. Finished calls are not run
 * again, an interrupted unsafe call never twice, an interrupted idempotent one again with the
 * same idempotency key; the history ends as an uninterrupted run's does.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { Message } from "../../src/core/messages.ts";
import { WorkflowRunner } from "../../src/loop/runner.ts";
import { ScriptedClient } from "../../src/testing/index.ts";
import { shopScript, shopWorkflow } from "../fixtures/durable/shop.ts";

const CHILD = new URL("../fixtures/durable/crash-child.ts", import.meta.url).pathname;
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const readLog = (dir: string) =>
  readFileSync(join(dir, "effects.log"), "utf8")
    .split("\n")
    .filter((line) => line.length > 0);

/** Start the child, wait until `tool` logged its start, kill -9 it. */
async function crashIn(tool: string): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), "forge-crash-"));
  dirs.push(dir);
  const child = spawn(process.execPath, ["--import", "tsx", CHILD, dir, tool], { stdio: "inherit" });
  const exited = new Promise<NodeJS.Signals | null>((resolve) =>
    child.on("exit", (_code, signal) => resolve(signal)),
  );
  const deadline = Date.now() + 30_000;
  while (!readLogSafe(dir).some((line) => line.startsWith(`start ${tool}`))) {
    if (Date.now() > deadline) throw new Error(`the child never started ${tool}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  child.kill("SIGKILL");
  expect(await exited).toBe("SIGKILL");
  return dir;
}

function readLogSafe(dir: string): string[] {
  try {
    return readLog(dir);
  } catch {
    return [];
  }
}

async function resume(dir: string) {
  const { snapshot, meta } = JSON.parse(readFileSync(join(dir, "checkpoint.json"), "utf8"));
  const messages: Message[] = [];
  const runner = new WorkflowRunner({
    // The model's remaining answer; the batch is not asked for again.
    client: new ScriptedClient(shopScript().slice(1)),
    contextManager: { maybeCompact: (history) => history },
    onMessage: (message) => messages.push(message),
  });
  const result = await runner.resume(shopWorkflow(dir), snapshot, { meta }).catch((error: unknown) => error);
  return { result, messages };
}

/** The same run, uninterrupted, for comparing histories. */
async function uninterrupted(): Promise<Message[]> {
  const dir = mkdtempSync(join(tmpdir(), "forge-clean-"));
  dirs.push(dir);
  const runner = new WorkflowRunner({
    client: new ScriptedClient(shopScript()),
    contextManager: { maybeCompact: (history) => history },
  });
  let history: Message[] = [];
  await runner.run(shopWorkflow(dir), "Buy A1", {
    runId: "run-1",
    checkpoint: (snapshot) => {
      history = (snapshot as { context: { messages: Message[] } }).context.messages;
    },
  });
  return history;
}

const effects = (log: string[], tool: string) => log.filter((line) => line.startsWith(`effect ${tool} `));
const keysOf = (lines: string[]) => new Set(lines.map((line) => line.split(" ")[2]));

describe("kill -9 mid-run, resume from the checkpoint file", () => {
  it("during the idempotent call after the unsafe one finished: the charge is not repeated", async () => {
    const dir = await crashIn("send_receipt");
    const { result } = await resume(dir);
    expect(result).toBe("ok");
    const log = readLog(dir);
    expect(effects(log, "charge_card")).toHaveLength(1);
    const receipts = log.filter((line) => line.startsWith("start send_receipt"));
    expect(receipts).toHaveLength(2);
    // One idempotency key for both attempts: the receipt service applies it once.
    expect(keysOf(receipts).size).toBe(1);
    expect(effects(log, "send_receipt")).toHaveLength(1);
  }, 60_000);

  it("during the unsafe call: it is never run again and the model is told the outcome is unknown", async () => {
    const dir = await crashIn("charge_card");
    // The model then calls finish, which the step rule refuses (charge_card never completed); the
    // scripted model has nothing more to say, so the run stops there. What matters is the history.
    const { messages } = await resume(dir);
    const log = readLog(dir);
    expect(log.filter((line) => line.startsWith("start charge_card"))).toHaveLength(1);
    expect(effects(log, "charge_card")).toHaveLength(0);
    expect(messages.some((message) => message.content.startsWith("[ToolError] OutcomeUnknown"))).toBe(true);
  }, 60_000);

  it("leaves a history equal to an uninterrupted run's once the batch finished", async () => {
    const dir = await crashIn("send_receipt");
    const { snapshot } = JSON.parse(readFileSync(join(dir, "checkpoint.json"), "utf8"));
    await resume(dir);
    const clean = await uninterrupted();
    const strip = (history: Message[]) =>
      history.map(({ role, content, toolCallId, toolCalls }) => ({ role, content, toolCallId, toolCalls }));
    const resumed = (snapshot as { context: { messages: Message[] } }).context.messages;
    // The checkpoint before the crash holds the prefix of the clean history.
    expect(strip(clean).slice(0, resumed.length)).toEqual(strip(resumed));
  }, 60_000);
});
