/**
 * The watch server's runs: held in memory (the newest `maxRunEvents` events of each), each
 * appended to `<dir>/<runId>.jsonl` (one event a line, every event kept) so a run can be reopened
 * after a restart, and announced to live subscribers.
 */
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { ForgeError } from "../../core/errors.ts";
import { type WatchEvent, watchEventSchema } from "../report/index.ts";
import { applyWatchEvent, createRunRecord, DEFAULT_MAX_RUN_EVENTS, type RunRecord } from "../view/index.ts";

/** A line of a run file that is not a watch event: skipped (with this as the warning) when loading. */
export class WatchRunFileError extends ForgeError {
  constructor(
    readonly file: string,
    readonly line: number,
    detail: string,
  ) {
    super(
      `${file}, line ${line}: ${detail}; the line is skipped (each line of a run file is one watch event as JSON)`,
    );
    this.name = "WatchRunFileError";
  }
}

/** Called with a run after events were applied to it, and the index of the first new event. */
export type RunListener = (record: RunRecord, firstNew: number) => void;

/** Options of `RunStore`. */
export interface RunStoreOptions {
  /**
   * How many events of a run are held in memory (default 5,000); older ones are dropped from
   * memory (their totals kept) and served from the run's file.
   */
  maxRunEvents?: number;
  /** Told of a skipped line or a failed write (default: one line on stderr). */
  onWarning?: (message: string) => void;
}

/** Runs in memory, mirrored to a directory of JSONL files. */
export class RunStore {
  readonly dir: string;
  readonly maxRunEvents: number;
  readonly #runs = new Map<string, RunRecord>();
  readonly #listeners = new Set<RunListener>();
  readonly #warn: (message: string) => void;
  /** Run files whose last line may be torn: the next append starts on a line of its own. */
  readonly #torn = new Set<string>();

  /** Open (creating it if needed) a directory of run files and load every run in it. */
  constructor(dir: string, options: RunStoreOptions = {}) {
    this.dir = dir;
    this.maxRunEvents = options.maxRunEvents ?? DEFAULT_MAX_RUN_EVENTS;
    this.#warn = options.onWarning ?? ((message) => process.stderr.write(`forge watch: ${message}\n`));
    mkdirSync(dir, { recursive: true });
    for (const file of readdirSync(dir)
      .filter((name) => name.endsWith(".jsonl"))
      .sort()) {
      const runId = file.slice(0, -".jsonl".length);
      const record = createRunRecord(runId, this.maxRunEvents);
      let read: { events: WatchEvent[]; torn: boolean };
      try {
        read = readRunFile(join(dir, file), this.#warn);
      } catch (error) {
        this.#warn(`could not read ${join(dir, file)}: ${(error as Error).message}; the run is not shown`);
        continue;
      }
      const { events, torn } = read;
      for (const event of events) applyWatchEvent(record, event);
      if (torn) this.#torn.add(runId);
      this.#runs.set(runId, record);
    }
  }

  /** Every run, newest first. */
  list(): RunRecord[] {
    return [...this.#runs.values()].sort((a, b) => b.startedAt - a.startedAt);
  }

  get(runId: string): RunRecord | undefined {
    return this.#runs.get(runId);
  }

  /**
   * Apply events to a run (creating it), write them to its file, then tell the listeners. A failed
   * write (a full disk) is warned about and left in the record's `writeError`; the events are
   * still applied.
   */
  append(runId: string, events: readonly WatchEvent[]): RunRecord {
    let record = this.#runs.get(runId);
    if (record === undefined) {
      record = createRunRecord(runId, this.maxRunEvents);
      this.#runs.set(runId, record);
    }
    const firstNew = record.eventCount;
    const file = this.fileOf(runId);
    const lines = events.map((event) => `${JSON.stringify(event)}\n`).join("");
    try {
      // After a torn line (a write cut short), start on a line of its own.
      appendFileSync(file, this.#torn.has(runId) ? `\n${lines}` : lines);
      this.#torn.delete(runId);
      record.writeError = null;
    } catch (error) {
      this.#torn.add(runId);
      const detail = `could not write ${events.length} event(s) of run ${runId} to ${file}: ${(error as Error).message}`;
      if (record.writeError === null) this.#warn(`${detail} (shown, but not recorded)`);
      record.writeError = detail;
    }
    for (const event of events) applyWatchEvent(record, event);
    for (const listener of this.#listeners) listener(record, firstNew);
    return record;
  }

  /** Show a run read from elsewhere (an eval trace) without writing it to the directory; all kept in memory. */
  load(runId: string, events: readonly WatchEvent[]): RunRecord {
    const record = createRunRecord(runId);
    for (const event of events) applyWatchEvent(record, event);
    this.#runs.set(runId, record);
    return record;
  }

  /** A run's file. */
  fileOf(runId: string): string {
    return join(this.dir, `${runId}.jsonl`);
  }

  /**
   * Every event of a run: from memory when none was dropped, else read again from its file
   * (lines that are not events skipped).
   */
  allEvents(record: RunRecord): WatchEvent[] {
    const file = this.fileOf(record.runId);
    if (record.dropped === 0 || !existsSync(file)) return record.events;
    return readRunFile(file, () => {}).events;
  }

  /** Listen to every run's new events; returns the unsubscribe function. */
  subscribe(listener: RunListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}

/** A run file's events, each line that is not one warned about and skipped; `torn` when it does not end a line. */
function readRunFile(file: string, warn: (message: string) => void): { events: WatchEvent[]; torn: boolean } {
  const bytes = readFileSync(file);
  const events: WatchEvent[] = [];
  let start = 0;
  let line = 0;
  while (start < bytes.length) {
    const end = bytes.indexOf(10, start);
    const stop = end === -1 ? bytes.length : end;
    line += 1;
    const text = bytes.toString("utf8", start, stop);
    start = stop + 1;
    if (text.trim() === "") continue;
    const parsed = parseLine(file, line, text);
    if (parsed instanceof WatchRunFileError) warn(parsed.message);
    else events.push(parsed);
  }
  return { events, torn: bytes.length > 0 && bytes[bytes.length - 1] !== 10 };
}

function parseLine(file: string, line: number, text: string): WatchEvent | WatchRunFileError {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    return new WatchRunFileError(file, line, `not JSON (${(error as Error).message})`);
  }
  const parsed = watchEventSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return new WatchRunFileError(
      file,
      line,
      `not a watch event (${issue?.path.join(".") || "event"}: ${issue?.message})`,
    );
  }
  return parsed.data;
}
