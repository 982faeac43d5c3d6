/**
 * A BFCL run: every sampled case sent to every target, one at a time (a local server has one
 * slot), each answer appended to a JSONL file as soon as it comes, so `--resume` skips the cases a
 * file already holds. A multi-turn case is answered turn by turn on BFCL's simulated APIs (one
 * `bridge.py serve` process for the run) and its row records every step. Progress goes to stderr
 * with cli-progress.
 */
import cliProgress from "cli-progress";
import { z } from "zod";
import { appendJsonLine, latestByKey, readJsonl, repairTail } from "../batch/jsonl.ts";
import { type BfclCase, isMultiTurnCase } from "./cases.ts";
import {
  answerMultiTurn,
  emptyMultiTurnAnswer,
  type MultiTurnAnswer,
  multiTurnStepSchema,
} from "./multi-turn.ts";
import type { BfclInstall } from "./setup.ts";
import { type SimulatedApis, startSimulatedApis } from "./simulated-apis.ts";
import {
  type BfclServer,
  type BfclTarget,
  type BfclTargetName,
  firstTurnRequest,
  startTarget,
} from "./targets.ts";

/** One answered case. */
export const bfclRowSchema = z.object({
  /** `${model}|${target}|${id}`. */
  key: z.string(),
  model: z.string(),
  target: z.string(),
  id: z.string(),
  category: z.string(),
  calls: z.array(z.object({ name: z.string(), arguments: z.string() })),
  text: z.string(),
  ms: z.number(),
  llmCalls: z.number(),
  nudges: z.number(),
  rescues: z.number(),
  gaveUp: z.boolean(),
  prose: z.boolean().default(false),
  renamed: z.number().default(0),
  /** Rescued calls declined and answered in text: by the call-confidence gate (ADR 040) or as invented (ADR 041). */
  declined: z.number().default(0),
  /** Of `declined`, the calls declined as invented (ADR 041). */
  ungrounded: z.number().optional(),
  /** The model's probability of opening its first answer with a call, when the gate asked (ADR 040). */
  callConfidence: z.number().optional(),
  /** Set when the request failed (the case then counts as failed). */
  error: z.string().nullable(),
  at: z.string(),
  /**
   * Multi-turn cases only: per turn, each step's answer and tool results (`calls` then holds every
   * call of the case, `text` the last step's text). Absent on single-turn rows.
   */
  turns: z.array(z.array(multiTurnStepSchema)).optional(),
  /** Multi-turn cases only: BFCL's step limit ended the case (its later turns were not asked). */
  forceQuit: z.boolean().optional(),
});

/** A row of a BFCL results file. */
export type BfclRow = z.infer<typeof bfclRowSchema>;

/** The key of a case's row. */
export function rowKey(model: string, target: string, id: string): string {
  return `${model}|${target}|${id}`;
}

/** Options of {@link runBfcl}. */
export interface BfclRunOptions {
  cases: readonly BfclCase[];
  targets: readonly BfclTargetName[];
  server: BfclServer;
  out: string;
  /** Skip the cases `out` already answers. */
  resume: boolean;
  /** A case's deadline, all LLM calls together. */
  caseTimeoutMs: number;
  /** BFCL's install: needed when `cases` holds a multi-turn case (its simulated APIs run there). */
  install?: BfclInstall;
  progress?: boolean;
}

/** Thrown when a run is asked for what it cannot do. */
export class BfclRunError extends Error {
  override name = "BfclRunError";
}

/** Run the cases (see the module comment); returns the rows written. */
export async function runBfcl(options: BfclRunOptions): Promise<number> {
  const { server, out } = options;
  let done = new Set<string>();
  if (options.resume) {
    repairTail(out);
    done = new Set(latestByKey(readJsonl(out, bfclRowSchema).rows).rows.map((row) => row.key));
  }
  const work = options.targets.flatMap((target) =>
    options.cases
      .filter((item) => !done.has(rowKey(server.model, target, item.id)))
      .map((item) => ({ target, item })),
  );
  const bar = options.progress
    ? new cliProgress.SingleBar(
        { format: "bfcl {bar} {value}/{total} {target} {id} eta {eta_formatted}", hideCursor: true },
        cliProgress.Presets.shades_classic,
      )
    : undefined;
  let apis: SimulatedApis | undefined;
  if (work.some((entry) => isMultiTurnCase(entry.item))) {
    if (!options.install)
      throw new BfclRunError("multi-turn cases need BFCL's install (pass `install` from setupBfcl())");
    apis = startSimulatedApis(options.install);
  }
  bar?.start(work.length, 0, { target: "", id: "" });
  let written = 0;
  try {
    // Targets one after another, so a target's cases share a warm server and the file reads in order.
    for (const name of options.targets) {
      const mine = work.filter((entry) => entry.target === name);
      if (mine.length === 0) continue;
      const target = await startTarget(name, server);
      try {
        for (const { item } of mine) {
          bar?.update(written, { target: name, id: item.id });
          const started = performance.now();
          const signal = AbortSignal.timeout(options.caseTimeoutMs);
          let row: BfclRow;
          // Filled step by step, so a multi-turn case cut short still shows what it did and cost.
          const progress = emptyMultiTurnAnswer();
          try {
            const answer = await answerCase(item, target, apis, signal, progress);
            row = { ...base(), ...answer, ms: performance.now() - started, error: null };
          } catch (error) {
            // A multi-turn case keeps the steps it took and what they cost.
            const { turns, forceQuit, ...answered } = progress;
            row = {
              ...base(),
              ...answered,
              ...(isMultiTurnCase(item) && { turns, forceQuit }),
              ms: performance.now() - started,
              error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
            };
          }
          appendJsonLine(out, row);
          written += 1;
          function base() {
            return {
              key: rowKey(server.model, name, item.id),
              model: server.model,
              target: name,
              id: item.id,
              category: item.category,
              at: new Date().toISOString(),
            };
          }
        }
      } finally {
        await target.close();
      }
    }
  } finally {
    await apis?.close();
  }
  bar?.update(written, { target: "done", id: "" });
  bar?.stop();
  return written;
}

/** What `target` answered to `item`, in the row's terms (a multi-turn case on `apis`). */
async function answerCase(
  item: BfclCase,
  target: BfclTarget,
  apis: SimulatedApis | undefined,
  signal: AbortSignal,
  progress: MultiTurnAnswer,
): Promise<Omit<BfclRow, "key" | "model" | "target" | "id" | "category" | "at" | "ms" | "error">> {
  if (!isMultiTurnCase(item)) {
    const {
      callIds: _callIds,
      message: _message,
      ...answer
    } = await target.ask(firstTurnRequest(item), signal);
    return answer;
  }
  if (!apis) throw new BfclRunError(`${item.id}: a multi-turn case without BFCL's simulated APIs`);
  return answerMultiTurn(item, target, apis, signal, progress);
}
