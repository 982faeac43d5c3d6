/**
 * The writer of a batch's JSONL, safe for several processes on one file. Two `--resume` runs of the
 * same batch (or a queue collector and a local run) split its runs instead of each running all of
 * them: every run key is claimed before it runs, and a row is appended only when the file holds no
 * row with its key. Both happen under a lock on the file (proper-lockfile), held for the read and
 * the write only, never for a run.
 *
 * Claims live beside the rows, in `x.claims/` for `x.jsonl`: `claims.jsonl` (one line per claim:
 * key, owner, pid, host) and one lock per writing process (its owner id), refreshed while the
 * process lives. A claim counts while its owner's lock is fresh and, on this host, its process is
 * alive: the runs of a process killed mid-batch are free again at once on the same machine (10 s
 * after its last refresh elsewhere), and a process still running claims them when they are free.
 */
import { randomUUID } from "node:crypto";
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import lockfile from "proper-lockfile";
import { repairTail } from "./jsonl.ts";

/** A lock or claim file older than this (ms without a refresh) belongs to a dead process. */
const STALE_MS = 10_000;
/** How long to wait for the file's lock before giving up (another process holds it that long). */
const LOCK_WAIT_MS = 60_000;

/** The file's lock could not be taken: another process held it longer than a read and a write take. */
export class JsonlLockError extends Error {
  readonly path: string;
  constructor(path: string, detail: string) {
    super(
      `Cannot lock ${path} for writing (${detail}). Another eval writing this file holds the lock; if none runs, remove ${lockPathFor(path)}.`,
    );
    this.name = "JsonlLockError";
    this.path = path;
  }
}

/** The folder of claims beside a rows file (`x.jsonl` → `x.claims`). */
export function claimsDirFor(rowsFile: string): string {
  return `${rowsFile.replace(/\.jsonl$/, "")}.claims`;
}

function lockPathFor(rowsFile: string): string {
  return join(claimsDirFor(rowsFile), "write.lock");
}

/**
 * Run `action` while holding the rows file's lock (for a read that must not see a half-written
 * row, or cut one that a live writer is still writing).
 */
export async function withJsonlLock<T>(rowsFile: string, action: () => T | Promise<T>): Promise<T> {
  mkdirSync(claimsDirFor(rowsFile), { recursive: true });
  let release: () => Promise<void>;
  try {
    release = await lockfile.lock(rowsFile, {
      realpath: false,
      lockfilePath: lockPathFor(rowsFile),
      stale: STALE_MS,
      retries: { retries: LOCK_WAIT_MS / 50, minTimeout: 5, maxTimeout: 50, factor: 1.5 },
      // Held for milliseconds; a holder stalled past STALE_MS loses it, and the next write still
      // checks the file for the key before appending.
      onCompromised: () => {},
    });
  } catch (error) {
    throw new JsonlLockError(rowsFile, (error as Error).message);
  }
  try {
    return await action();
  } finally {
    await release().catch(() => {});
  }
}

/** What `claimNext` found. */
export type Claim =
  /** This process claimed `keys[index]`: run it. */
  | { kind: "claimed"; index: number }
  /** Every key left is claimed by another live process: ask again later (it may die). */
  | { kind: "wait" }
  /** Nothing left: every key has a row or is under way in this process. */
  | { kind: "done" };

/** A batch's writer: claims, then appends, one run key at a time. */
export interface BatchWriter {
  /** Claim the first of `keys` that has no row and no live claim. */
  claimNext(keys: readonly string[]): Promise<Claim>;
  /**
   * Append the trace (when there is a traces file) and then the row of `key`, unless the rows file
   * already holds a row with that key (another process ran it too): then nothing is written and
   * it resolves false.
   */
  append(key: string, row: unknown, trace: unknown): Promise<boolean>;
  /** `append`, then `claimNext(keys)`, under one hold of the lock (half the locking per run). */
  appendAndClaimNext(
    key: string,
    row: unknown,
    trace: unknown,
    keys: readonly string[],
  ): Promise<{ appended: boolean; claim: Claim }>;
  /** Keys the rows file holds now (as of the last claim or append). */
  readonly doneKeys: ReadonlySet<string>;
  /** Release this process's claims: the keys it claimed and did not finish are free again. */
  close(): Promise<void>;
}

interface ClaimLine {
  key: string;
  owner: string;
  pid: number;
  host: string;
}

/**
 * A reader of a file that only grows by whole lines under the lock: each call parses the lines
 * added since the last one.
 */
function tailReader(path: string, onLine: (line: string) => void): () => void {
  let offset = 0;
  let carry = "";
  return () => {
    if (!existsSync(path)) return;
    const size = statSync(path).size;
    if (size < offset) {
      // Cut by a repair (an interrupted line): read the whole file again.
      offset = 0;
      carry = "";
    }
    if (size === offset) return;
    const buffer = Buffer.alloc(size - offset);
    const fd = openSync(path, "r");
    try {
      readSync(fd, buffer, 0, buffer.length, offset);
    } finally {
      closeSync(fd);
    }
    offset = size;
    const lines = (carry + buffer.toString("utf8")).split("\n");
    carry = lines.pop() ?? "";
    for (const line of lines) if (line.trim() !== "") onLine(line);
  };
}

/** The key of a JSON line, or undefined for a line that is not a keyed object. */
function keyOf(line: string): string | undefined {
  try {
    const value = JSON.parse(line) as { key?: unknown };
    return typeof value?.key === "string" ? value.key : undefined;
  } catch {
    return undefined;
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, under another user.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Open `rowsFile` (and `tracesFile`, or null) for a batch: registers this process as a writer
 * whose claims count while it lives.
 */
export async function openBatchWriter(rowsFile: string, tracesFile: string | null): Promise<BatchWriter> {
  const dir = claimsDirFor(rowsFile);
  mkdirSync(dir, { recursive: true });
  const owner = randomUUID();
  const host = hostname();
  const ownerFile = join(dir, `${owner}.owner`);
  writeFileSync(ownerFile, `${JSON.stringify({ pid: process.pid, host })}\n`);
  let releaseOwner: () => Promise<void> = async () => {};
  const ownerLock: lockfile.LockOptions = {
    realpath: false,
    lockfilePath: `${ownerFile}.lock`,
    stale: STALE_MS,
    // Stalled past STALE_MS: other processes may take this one's claims (the append still never
    // duplicates a row); take the lock again so its later claims count.
    onCompromised: () => {
      void lockfile
        .lock(ownerFile, ownerLock)
        .then((release) => {
          releaseOwner = release;
        })
        .catch(() => {});
    },
  };
  releaseOwner = await lockfile.lock(ownerFile, ownerLock);

  const doneKeys = new Set<string>();
  const claims = new Map<string, ClaimLine>();
  const readRows = tailReader(rowsFile, (line) => {
    const key = keyOf(line);
    if (key !== undefined) doneKeys.add(key);
  });
  const claimsFile = join(dir, "claims.jsonl");
  const readClaims = tailReader(claimsFile, (line) => {
    try {
      const claim = JSON.parse(line) as ClaimLine;
      if (typeof claim.key === "string" && typeof claim.owner === "string") claims.set(claim.key, claim);
    } catch {
      // A line a killed process left half-written: no claim.
    }
  });
  const refresh = () => {
    // Under the lock: a line without its newline was left by a killed writer; cut it.
    repairTail(rowsFile);
    repairTail(claimsFile);
    readRows();
    readClaims();
  };
  // Writes queue here, so this process's lanes take the file's lock one at a time.
  let queue: Promise<unknown> = Promise.resolve();
  const serialized = <T>(action: () => T): Promise<T> => {
    const result = queue.then(() => withJsonlLock(rowsFile, action));
    queue = result.catch(() => {});
    return result;
  };

  /** Under the lock, after `refresh`: claim the first free key of `keys`. */
  const claimIn = (keys: readonly string[]): Claim => {
    const live = new Map<string, boolean>([[owner, true]]);
    const isLive = (claim: ClaimLine) => {
      let known = live.get(claim.owner);
      if (known === undefined) {
        const file = join(dir, `${claim.owner}.owner`);
        known =
          lockfile.checkSync(file, { realpath: false, lockfilePath: `${file}.lock`, stale: STALE_MS }) &&
          (claim.host !== host || processAlive(claim.pid));
        live.set(claim.owner, known);
      }
      return known;
    };
    let othersHold = false;
    for (const [index, key] of keys.entries()) {
      if (doneKeys.has(key)) continue;
      const claim = claims.get(key);
      if (claim && isLive(claim)) {
        if (claim.owner !== owner) othersHold = true;
        continue;
      }
      const line: ClaimLine = { key, owner, pid: process.pid, host };
      writeLine(claimsFile, line);
      claims.set(key, line);
      return { kind: "claimed", index };
    }
    return othersHold ? { kind: "wait" } : { kind: "done" };
  };
  /** Under the lock, after `refresh`: append the trace and row of `key` unless it has a row. */
  const appendIn = (key: string, row: unknown, trace: unknown): boolean => {
    if (doneKeys.has(key)) return false;
    // The trace goes first: a row is only ever written with its trace already on disk.
    if (tracesFile) {
      repairTail(tracesFile);
      writeLine(tracesFile, trace);
    }
    writeLine(rowsFile, row);
    readRows();
    return true;
  };

  return {
    doneKeys,
    claimNext(keys) {
      return serialized(() => {
        refresh();
        return claimIn(keys);
      });
    },
    append(key, row, trace) {
      return serialized(() => {
        refresh();
        return appendIn(key, row, trace);
      });
    },
    appendAndClaimNext(key, row, trace, keys) {
      return serialized(() => {
        refresh();
        const appended = appendIn(key, row, trace);
        return { appended, claim: claimIn(keys) };
      });
    },
    async close() {
      await queue;
      await releaseOwner().catch(() => {});
      rmSync(ownerFile, { force: true });
    },
  };
}

/** Append one JSON value as one line, in a single write. */
function writeLine(path: string, value: unknown): void {
  const fd = openSync(path, "a");
  try {
    writeSync(fd, `${JSON.stringify(value)}\n`);
  } finally {
    closeSync(fd);
  }
}
