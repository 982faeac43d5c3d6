/**
 * Batch progress on the terminal: a cli-progress bar with an ETA when stderr is a TTY, else a
 * line every 10% (CI logs). A batch of several targets adds an overall bar (or line) with an ETA
 * from the mean time per run so far.
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

/** Lines every 10%; `after` (the overall line of a multi-target batch) follows each one. */
function createLineProgress(stream: NodeJS.WriteStream, after?: () => string): ProgressReporter {
  let started = 0;
  let nextReport = 0.1;
  let errors = 0;
  return {
    start: (total) => {
      started = performance.now();
      nextReport = 0.1;
      stream.write(`eval: ${total} runs to go\n`);
      if (after) stream.write(`${after()}\n`);
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
      if (after) stream.write(`${after()}\n`);
    },
    stop: () => {},
  };
}

/** Where a multi-target batch stands, for {@link overallEta}. */
export interface OverallState {
  /** Runs finished, in this process or already in the file. */
  done: number;
  /** Runs planned over every target. */
  total: number;
  /** Runs made in this process (the ones timed). */
  ran: number;
  /** Time spent making those runs (targets' running time, not server starts), ms. */
  runningMs: number;
}

/**
 * The overall ETA in seconds: the mean time per run made so far times the runs left; `null`
 * before the first run of this process finished (nothing to take a mean of).
 * @example
 * overallEta({ done: 14, total: 40, ran: 4, runningMs: 8_000 }) // 52
 */
export function overallEta(state: OverallState): number | null {
  if (state.ran === 0) return null;
  return (state.runningMs / state.ran / 1000) * Math.max(0, state.total - state.done);
}

/** Seconds as `1h02m`, `3m05s` or `42s`; `--` when unknown. */
export function formatEta(seconds: number | null): string {
  if (seconds === null) return "--";
  const whole = Math.round(seconds);
  if (whole >= 3600)
    return `${Math.floor(whole / 3600)}h${String(Math.floor((whole % 3600) / 60)).padStart(2, "0")}m`;
  if (whole >= 60) return `${Math.floor(whole / 60)}m${String(whole % 60).padStart(2, "0")}s`;
  return `${whole}s`;
}

/** The progress of a batch of several targets: an overall bar, and one bar per target. */
export interface BatchProgress {
  /** The reporter for the next target, which plans `planned` runs (some may be in the file already). */
  forTarget(label: string, planned: number): ProgressReporter;
  /** The overall state so far. */
  state(): OverallState;
  /** Write a line (or several) to the stream without tearing the bars (above them on a TTY). */
  log(text: string): void;
  stop(): void;
}

/**
 * Progress of a multi-target batch of `total` planned runs. On a TTY: a cli-progress MultiBar, the
 * overall bar (done/total runs and an ETA from the mean time per run so far) above one bar per
 * target. Elsewhere: each target's lines as in {@link createProgress}, each followed by an
 * `overall:` line. `now` is the clock (tests pass a fake one).
 */
export function createBatchProgress(
  total: number,
  stream: NodeJS.WriteStream = process.stderr,
  now: () => number = () => performance.now(),
): BatchProgress {
  const overall: OverallState = { done: 0, total, ran: 0, runningMs: 0 };
  let targetStarted: number | null = null;
  const settle = () => {
    if (targetStarted === null) return;
    const at = now();
    overall.runningMs += at - targetStarted;
    targetStarted = at;
  };
  const overallLine = () =>
    `overall: ${overall.done}/${overall.total} runs (${Math.round((overall.done / Math.max(1, overall.total)) * 100)}%), ETA ${formatEta(overallEta(overall))}`;
  const track = (planned: number) => ({
    start: (pending: number) => {
      overall.done += planned - pending;
      targetStarted = now();
    },
    update: () => {
      settle();
      overall.done += 1;
      overall.ran += 1;
    },
    stop: () => {
      settle();
      targetStarted = null;
    },
  });

  if (!stream.isTTY) {
    return {
      forTarget: (_label, planned) => {
        const tracked = track(planned);
        const lines = createLineProgress(stream, overallLine);
        return {
          start: (pending) => {
            tracked.start(pending);
            lines.start(pending);
          },
          update: (row, finished, targetTotal) => {
            tracked.update();
            lines.update(row, finished, targetTotal);
          },
          stop: () => tracked.stop(),
        };
      },
      state: () => ({ ...overall }),
      log: (text) => {
        stream.write(text);
      },
      stop: () => {},
    };
  }

  const multibar = new cliProgress.MultiBar(
    {
      stream,
      format: "{name} |{bar}| {value}/{total} runs | {errors} errors | {last}",
      barCompleteChar: "█",
      barIncompleteChar: "░",
      hideCursor: true,
      fps: 5,
    },
    cliProgress.Presets.shades_classic,
  );
  const overallBar = multibar.create(
    total,
    0,
    { overallEta: "--" },
    {
      format: "overall |{bar}| {value}/{total} runs | ETA {overallEta}",
    },
  );
  const showOverall = () => overallBar.update(overall.done, { overallEta: formatEta(overallEta(overall)) });
  return {
    forTarget: (label, planned) => {
      const tracked = track(planned);
      let bar: cliProgress.SingleBar | null = null;
      let errors = 0;
      return {
        start: (pending) => {
          tracked.start(pending);
          bar = multibar.create(planned, planned - pending, { name: label, errors: 0, last: "" });
          showOverall();
        },
        update: (row) => {
          tracked.update();
          if (row.status === "error") errors += 1;
          bar?.increment(1, {
            errors,
            last: `${row.configLabel} ${row.scenario} ${row.accurate ? "✓" : "✗"}`,
          });
          showOverall();
        },
        stop: () => {
          tracked.stop();
          showOverall();
        },
      };
    },
    state: () => ({ ...overall }),
    log: (text) => multibar.log(text),
    stop: () => {
      multibar.update(); // flush lines logged since the last redraw; stop() drops them
      multibar.stop();
    },
  };
}
