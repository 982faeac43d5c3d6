/**
 * The watch server's runs: held in memory, each appended to `<dir>/<runId>.jsonl` (one event a
 * line) so a finished run can be reopened after a restart, and announced to live subscribers.
 */
import { appendFileSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { ForgeError } from "../core/errors.ts";
import { type WatchEvent, watchEventSchema } from "./events.ts";
import { applyWatchEvent, createRunRecord, type RunRecord } from "./run-record.ts";

/** A run file in the watch directory that is not a run's events. */
export class WatchRunFileError extends ForgeError {
  constructor(
    readonly file: string,
    readonly line: number,
    detail: string,
  ) {
    super(
      `${file}, line ${line}: ${detail}. Each line of a run file is one watch event as JSON; move or delete the file to start the watch server.`,
    );
    this.name = "WatchRunFileError";
  }
}

/** Called with a run after events were applied to it, and the index of the first new event. */
export type RunListener = (record: RunRecord, firstNew: number) => void;

/** Runs in memory, mirrored to a directory of JSONL files. */
export class RunStore {
  readonly dir: string;
  readonly #runs = new Map<string, RunRecord>();
  readonly #listeners = new Set<RunListener>();

  /** Open (creating it if needed) a directory of run files and load every run in it. */
  constructor(dir: string) {
    this.dir = dir;
    mkdirSync(dir, { recursive: true });
    for (const file of readdirSync(dir)
      .filter((name) => name.endsWith(".jsonl"))
      .sort()) {
      const runId = file.slice(0, -".jsonl".length);
      const record = createRunRecord(runId);
      const lines = readFileSync(join(dir, file), "utf8").split("\n");
      lines.forEach((line, index) => {
        if (line.trim() === "") return;
        applyWatchEvent(record, parseLine(join(dir, file), index + 1, line));
      });
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

  /** Apply events to a run (creating it), write them to its file, then tell the listeners. */
  append(runId: string, events: readonly WatchEvent[]): RunRecord {
    let record = this.#runs.get(runId);
    if (record === undefined) {
      record = createRunRecord(runId);
      this.#runs.set(runId, record);
    }
    const firstNew = record.events.length;
    appendFileSync(
      join(this.dir, `${runId}.jsonl`),
      events.map((event) => `${JSON.stringify(event)}\n`).join(""),
    );
    for (const event of events) applyWatchEvent(record, event);
    for (const listener of this.#listeners) listener(record, firstNew);
    return record;
  }

  /** Show a run read from elsewhere (an eval trace) without writing it to the directory. */
  load(runId: string, events: readonly WatchEvent[]): RunRecord {
    const record = createRunRecord(runId);
    for (const event of events) applyWatchEvent(record, event);
    this.#runs.set(runId, record);
    return record;
  }

  /** Listen to every run's new events; returns the unsubscribe function. */
  subscribe(listener: RunListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}

function parseLine(file: string, line: number, text: string): WatchEvent {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new WatchRunFileError(file, line, `not JSON (${(error as Error).message})`);
  }
  const parsed = watchEventSchema.safeParse(json);
  if (!parsed.success) throw new WatchRunFileError(file, line, `not a watch event (${parsed.error.message})`);
  return parsed.data;
}
