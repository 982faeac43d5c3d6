/**
 * BFCL's simulated APIs (its file system, trading bot, travel booking, …) for the multi-turn
 * categories, held by one `bridge.py serve` process for a whole run. BFCL's code stays in that
 * Python process: this side sends a step's answer as the FC handler records it and gets back what
 * the handler would do with it — the tool results of the executed calls, or that the turn ends.
 */
import { createInterface, type Interface } from "node:readline";
import { execa, type ResultPromise } from "execa";
import { z } from "zod";
import type { MultiTurnCase } from "./cases.ts";
import type { BfclInstall } from "./setup.ts";

/**
 * A step's answer as BFCL's FC handler records it (`model_responses`): the calls as
 * `{name: arguments-json}` when the model called, else its text.
 */
export type StepResponses = Record<string, string>[] | string;

const replySchema = z.discriminatedUnion("ok", [
  z.object({ ok: z.literal(false), error: z.string() }),
  z.object({
    ok: z.literal(true),
    status: z.enum(["executed", "empty", "undecodable"]).optional(),
    results: z.array(z.string()).optional(),
    decoded: z.array(z.string()).optional(),
    error: z.string().optional(),
  }),
]);

/**
 * What the FC handler does with a step's answer: `executed` (the calls ran on the case's APIs;
 * `results` go back to the model, one tool message per call) or, when the answer holds no call
 * (`empty`) or none it can decode (`undecodable`: text, or arguments that are not a JSON object),
 * the turn ends.
 */
export type StepOutcome =
  | { status: "executed"; results: string[] }
  | { status: "empty" }
  | { status: "undecodable"; error: string };

/** Thrown when the bridge process fails or answers what it should not. */
export class BfclBridgeError extends Error {
  override name = "BfclBridgeError";
}

/** The simulated APIs of the case being answered (one case at a time). */
export interface SimulatedApis {
  /** Make the case's API instances from its `initial_config`, as BFCL does before its first turn. */
  begin(item: MultiTurnCase): Promise<void>;
  /** Decode and execute one step's answer on the case's instances. */
  step(id: string, responses: StepResponses): Promise<StepOutcome>;
  /** Drop the case's instances (the next target starts from `initial_config` again). */
  end(id: string): Promise<void>;
  close(): Promise<void>;
}

/** Start `bridge.py serve` in BFCL's venv. */
export function startSimulatedApis(install: BfclInstall): SimulatedApis {
  const child: ResultPromise = execa(
    install.python,
    [install.bridge, "--bfcl-root", install.packageRoot, "serve"],
    {
      env: { BFCL_PROJECT_ROOT: install.projectRoot },
      stdin: "pipe",
      stdout: "pipe",
      stderr: "pipe",
      buffer: false,
      reject: false,
    },
  );
  const stderr: string[] = [];
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr.push(chunk.toString());
    if (stderr.length > 50) stderr.shift();
  });
  const lines: Interface = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  const waiting: { resolve: (line: string) => void; reject: (error: Error) => void }[] = [];
  let exited: BfclBridgeError | undefined;
  lines.on("line", (line) => waiting.shift()?.resolve(line));
  void child.then((result) => {
    exited = new BfclBridgeError(
      `bridge serve exited (${result.exitCode ?? result.signal}): ${stderr.join("").trim().split("\n").slice(-3).join(" ")}; check the BFCL install (npm run setup:bfcl)`,
    );
    for (const pending of waiting.splice(0)) pending.reject(exited);
  });

  async function request(body: Record<string, unknown>) {
    if (exited) throw exited;
    const line = new Promise<string>((resolve, reject) => waiting.push({ resolve, reject }));
    child.stdin?.write(`${JSON.stringify(body)}\n`);
    const reply = replySchema.parse(JSON.parse(await line));
    if (!reply.ok) throw new BfclBridgeError(`bridge serve ${String(body.op)}: ${reply.error}`);
    return reply;
  }

  return {
    async begin(item) {
      await request({
        op: "begin",
        id: item.id,
        initial_config: item.initial_config,
        involved_classes: item.involved_classes,
      });
    },
    async step(id, responses) {
      const reply = await request({ op: "step", id, responses });
      switch (reply.status) {
        case "executed":
          return { status: "executed", results: reply.results ?? [] };
        case "empty":
          return { status: "empty" };
        case "undecodable":
          return { status: "undecodable", error: reply.error ?? "" };
        default:
          throw new BfclBridgeError(`bridge serve step ${id}: a reply without a status`);
      }
    },
    async end(id) {
      await request({ op: "end", id });
    },
    async close() {
      child.stdin?.end();
      await child;
    },
  };
}
