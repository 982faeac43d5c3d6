/**
 * Batch progress on the terminal: a cli-progress bar with an ETA when stderr is a TTY, else a
 * line every 10% (CI logs).
 */
import cliProgress from "cli-progress";
import type { RunRow } from "../batch/row.ts";

/** Receives progress of a batch. */
export interface ProgressReporter {
  start(total: number): void;
  update(row: RunRow, finished: number, total: number): void;
  stop(): void;
}

/** A reporter that prints nothing. */
export const silentProgress: ProgressReporter = { start() {}, update() {}, stop() {} };

/** The reporter for this terminal. */
export function createProgress(stream: NodeJS.WriteStream = process.stderr): ProgressReporter {
  if (!stream.isTTY) return createLineProgress(stream);
  let errors = 0;
  const bar = new cliProgress.SingleBar(
    {
      stream,
      format:
        "eval |{bar}| {percentage}% | {value}/{total} runs | {errors} errors | elapsed {duration_formatted} | ETA {eta_formatted} | {last}",
      barCompleteChar: "█",
      barIncompleteChar: "░",
      hideCursor: true,
      etaBuffer: 50,
      fps: 5,
    },
    cliProgress.Presets.shades_classic,
  );
  return {
    start: (total) => bar.start(total, 0, { errors: 0, last: "" }),
    update: (row, finished) => {
      if (row.status === "error") errors += 1;
      bar.update(finished, {
        errors,
        last: `${row.configLabel} ${row.scenario} ${row.accurate ? "✓" : "✗"}`,
      });
    },
    stop: () => bar.stop(),
  };
}

function createLineProgress(stream: NodeJS.WriteStream): ProgressReporter {
  let started = 0;
  let nextReport = 0.1;
  let errors = 0;
  return {
    start: (total) => {
      started = performance.now();
      nextReport = 0.1;
      stream.write(`eval: ${total} runs to go\n`);
    },
    update: (row, finished, total) => {
      if (row.status === "error") errors += 1;
      if (finished / total + 1e-9 < nextReport && finished !== total) return;
      nextReport = Math.floor((finished / total) * 10 + 1) / 10;
      const elapsed = (performance.now() - started) / 1000;
      const eta = finished > 0 ? (elapsed / finished) * (total - finished) : 0;
      stream.write(
        `eval: ${finished}/${total} runs (${Math.round((finished / total) * 100)}%), ${errors} errors, elapsed ${elapsed.toFixed(0)} s, ETA ${eta.toFixed(0)} s\n`,
      );
    },
    stop: () => {},
  };
}
