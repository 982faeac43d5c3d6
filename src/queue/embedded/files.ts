/**
 * The embedded queue's files: durable writes (temp file, fsync, rename, fsync of the directory),
 * run files read back through a zod schema, unreadable ones moved aside to `quarantine/`, and the
 * directory's epoch (bumped by every process that takes the directory's lock; writes are fenced on it).
 */
import { randomUUID } from "node:crypto";
import {
  closeSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { basename, dirname, join } from "node:path";
import { z } from "zod";
import { approvalStateSchema } from "../../core/approval.ts";
import { RunIdSchema, type RunRecord } from "../run-queue.ts";

/** What the queue keeps beside a run's public record: who holds it. */
export interface StoredRun extends RunRecord {
  /** The holder's lease token while active. */
  lease?: string;
  /** The directory's epoch of the worker that wrote it (its writes are fenced on that epoch). */
  epoch?: number;
}

const ErrorSchema = z.object({ name: z.string(), message: z.string() });

/** A run file's content: checked on every read (a torn write, a hand-edited file, a hostile runId). */
const StoredRunSchema = z
  .object({
    runId: RunIdSchema,
    workflow: z.string(),
    message: z.string(),
    priority: z.number().int(),
    promptVars: z.record(z.string(), z.string()).optional(),
    traceparent: z.string().optional(),
    status: z.enum(["waiting", "active", "awaiting_approval", "completed", "failed", "cancelled"]),
    attempts: z.number().int().min(0),
    checkpoint: z
      .object({ snapshot: z.unknown(), meta: z.object({ seq: z.number(), runId: z.string() }).passthrough() })
      .optional(),
    result: z.unknown().optional(),
    error: ErrorSchema.optional(),
    approval: approvalStateSchema.optional(),
    enqueuedAt: z.number(),
    finishedAt: z.number().optional(),
    lease: z.string().optional(),
    epoch: z.number().int().optional(),
  })
  .passthrough();

/** A run file read back: the run, no file (deleted meanwhile), or why it cannot be used. */
export type RunFileRead = { run: StoredRun } | { missing: true } | { unreadable: string };

/** Read `runs/<runId>.json`: parsed, checked, and its `runId` the one its name says. */
export function readRunFile(path: string, expectedRunId: string): RunFileRead {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return { missing: true };
    return { unreadable: (error as Error).message };
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    return { unreadable: `not JSON (${(error as Error).message}; ${text.length} bytes)` };
  }
  const parsed = StoredRunSchema.safeParse(json);
  if (!parsed.success) {
    const issues = parsed.error.issues.map(
      (issue) => `${issue.path.join(".") || "(file)"}: ${issue.message}`,
    );
    return { unreadable: `not a run record (${issues.join("; ")})` };
  }
  if (parsed.data.runId !== expectedRunId) {
    return { unreadable: `its runId ${JSON.stringify(parsed.data.runId)} is not its file name's` };
  }
  return { run: parsed.data as StoredRun };
}

/** Whether `name` (a file name, not a path) is a valid run id. */
export function isRunId(name: string): boolean {
  return RunIdSchema.safeParse(name).success;
}

/**
 * Write `text` to a temp file beside `path`, fsync it, rename it over `path` and fsync the
 * directory: after a crash or power loss the file is the old one or the new one, whole. On any
 * failure (a full disk) the temp file is removed and the error thrown; `path` is untouched.
 */
export function writeFileDurably(path: string, text: string): void {
  const temporary = temporaryBeside(path);
  try {
    writeAndSync(temporary, text);
    renameSync(temporary, path);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw error;
  }
  // The rename is done: readers see the new file, so the write has happened and is not reported
  // as failed (the caller would believe the old content); a disk failing this far fails the next write.
  try {
    syncDirectory(dirname(path));
  } catch {}
}

/**
 * Create `path` with `text` only if it does not exist (an atomic exclusive create: the whole file
 * is linked to its name): true when created, false when it existed. No temp file is left either way.
 */
export function createFileDurably(path: string, text: string): boolean {
  const temporary = temporaryBeside(path);
  try {
    writeAndSync(temporary, text);
    linkSync(temporary, path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw error;
  } finally {
    rmSync(temporary, { force: true });
  }
  try {
    syncDirectory(dirname(path)); // as in writeFileDurably: the file is in place either way
  } catch {}
  return true;
}

/** A hidden name beside `path` that no reader takes for a run or a request (they skip dot files). */
function temporaryBeside(path: string): string {
  return join(dirname(path), `.${basename(path)}.${randomUUID()}.tmp`);
}

function writeAndSync(path: string, text: string): void {
  const fd = openSync(path, "wx");
  try {
    const bytes = Buffer.from(text);
    for (let offset = 0; offset < bytes.length; ) offset += writeSync(fd, bytes, offset);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Make a rename or unlink in `dir` durable. Platforms that cannot fsync a directory skip it. */
export function syncDirectory(dir: string): void {
  let fd: number;
  try {
    fd = openSync(dir, "r");
  } catch {
    return; // Windows cannot open a directory
  }
  try {
    fsyncSync(fd);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== "EISDIR" && code !== "EINVAL" && code !== "EPERM") throw error;
  } finally {
    closeSync(fd);
  }
}

/** An unreadable file moved aside, as `quarantined()` and `forge runs ls` report it. */
export interface QuarantinedFile {
  /** Its path now, under `<queue dir>/quarantine/`. */
  path: string;
  /** Where it was, relative to the queue directory (`runs/x.json`). */
  from: string;
  reason: string;
  quarantinedAt: number;
}

/**
 * Move `path` (under `queueDir`) aside to `queueDir/quarantine/`, with a `.reason.json` beside it.
 * Returns what it moved, or undefined when the file was gone already (another process moved it).
 */
export function quarantineFile(queueDir: string, path: string, reason: string): QuarantinedFile | undefined {
  const dir = join(queueDir, "quarantine");
  mkdirSync(dir, { recursive: true });
  const quarantinedAt = Date.now();
  const from = join(basename(dirname(path)), basename(path));
  const target = join(dir, `${quarantinedAt}-${randomUUID().slice(0, 8)}-${basename(path)}`);
  try {
    renameSync(path, target);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  const entry = { path: target, from, reason, quarantinedAt };
  // The reason is a help, not the point: the file is aside even if the disk is too full for it.
  try {
    writeFileSync(`${target}.reason.json`, JSON.stringify({ from, reason, quarantinedAt }));
  } catch {}
  return entry;
}

/** The files in `queueDir/quarantine/`, oldest first. */
export function listQuarantined(queueDir: string): QuarantinedFile[] {
  const dir = join(queueDir, "quarantine");
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names
    .filter((name) => !name.endsWith(".reason.json"))
    .map((name) => {
      const path = join(dir, name);
      try {
        const { from, reason, quarantinedAt } = JSON.parse(readFileSync(`${path}.reason.json`, "utf8"));
        return { path, from: String(from), reason: String(reason), quarantinedAt: Number(quarantinedAt) };
      } catch {
        return { path, from: name, reason: "unknown", quarantinedAt: statSync(path).mtimeMs };
      }
    })
    .sort((a, b) => a.quarantinedAt - b.quarantinedAt);
}

/**
 * The directory's epoch: how many times its lock was taken (0 before the first). Undefined when
 * the file cannot be read as a number (a process that holds an epoch treats that as lost).
 */
export function readEpoch(queueDir: string): number | undefined {
  try {
    const epoch = Number(readFileSync(join(queueDir, "epoch"), "utf8"));
    return Number.isSafeInteger(epoch) && epoch >= 0 ? epoch : undefined;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ENOENT" ? 0 : undefined;
  }
}

/**
 * Bump the epoch, durably, by a process that just took the directory's lock; returns the new one.
 * An unreadable epoch file is replaced by the time in ms, above any count a holder could have.
 */
export function bumpEpoch(queueDir: string): number {
  const current = readEpoch(queueDir);
  const epoch = current === undefined ? Date.now() : current + 1;
  writeFileDurably(join(queueDir, "epoch"), String(epoch));
  return epoch;
}
