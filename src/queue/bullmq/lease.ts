/**
 * One held BullMQ job (`LiveLease`): renews the job's lock every `lockMs / 2`, fences every write on
 * the lock token through the store under BullMQ (`JobStore`), and settles through BullMQ's own token
 * checks; a lost lock aborts the lease's signal with `LeaseLostError`.
 */
import type { Job } from "bullmq";
import type { ApprovalState } from "../../core/approval.ts";
import { LeaseLostError, type RunJob, type RunLease, type StoredCheckpoint } from "../run-queue.ts";
import type { JobData, JobStore } from "./job-store.ts";

/**
 * How far ahead a parked run's job is delayed: BullMQ keeps it in its delayed set, which no
 * worker takes from, until `approve` / `deny` promote it. About five years; never reached.
 */
const PARKED_DELAY_MS = 5 * 365 * 24 * 3_600_000;

/** One held job: renews its lock, fences its writes, and settles through BullMQ's token checks. */
export class LiveLease implements RunLease {
  readonly job: RunJob;
  readonly checkpoint: StoredCheckpoint | undefined;
  readonly attempts: number;
  readonly approval: ApprovalState | undefined;
  readonly #controller = new AbortController();
  readonly #bullJob: Job<JobData>;
  readonly #token: string;
  readonly #store: JobStore;
  readonly #lockMs: number;
  readonly #onEnd: () => void;
  readonly #renewal: NodeJS.Timeout;
  #data: JobData;
  #renewedAt = Date.now();
  #renewing = false;
  #ended = false;

  constructor(input: {
    job: Job<JobData>;
    token: string;
    store: JobStore;
    lockMs: number;
    onEnd: () => void;
  }) {
    this.#bullJob = input.job;
    this.#token = input.token;
    this.#store = input.store;
    this.#lockMs = input.lockMs;
    this.#onEnd = input.onEnd;
    this.#data = input.job.data;
    // The run's job and nothing else of the data (not its enqueue time, nor a store's cancel mark).
    const { runId, workflow, message, priority, promptVars, traceparent } = input.job.data;
    this.job = {
      runId,
      workflow,
      message,
      priority,
      ...(promptVars && { promptVars }),
      ...(traceparent && { traceparent }),
    };
    this.checkpoint = input.job.data.checkpoint;
    this.approval = input.job.data.approval;
    this.attempts = input.job.attemptsStarted ?? 1;
    this.#renewal = setInterval(() => void this.#renew(), Math.max(50, Math.floor(this.#lockMs / 2)));
    this.#renewal.unref();
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  async saveCheckpoint(checkpoint: StoredCheckpoint): Promise<void> {
    await this.#write({ ...this.#data, checkpoint });
  }

  async complete(result: unknown): Promise<void> {
    await this.#write(undefined);
    await this.#settle(() => this.#bullJob.moveToCompleted(result ?? null, this.#token, false));
  }

  async fail(
    error: { name: string; message: string },
    options: { retry: boolean } = { retry: false },
  ): Promise<void> {
    await this.#write({ ...this.#data, error });
    if (options.retry) {
      await this.#settle(() => this.#bullJob.moveToWait(this.#token));
      return;
    }
    await this.#settle(() =>
      this.#bullJob.moveToFailed(
        Object.assign(new Error(error.message), { name: error.name }),
        this.#token,
        false,
      ),
    );
  }

  async release(): Promise<void> {
    await this.#write(undefined);
    await this.#settle(() => this.#bullJob.moveToWait(this.#token));
  }

  /** Park: the approval kept in the data, the job moved to BullMQ's delayed set (no worker takes it). */
  async park(approval: ApprovalState): Promise<void> {
    await this.#write({ ...this.#data, approval });
    await this.#settle(() => this.#bullJob.moveToDelayed(Date.now() + PARKED_DELAY_MS, this.#token));
  }

  /** The run was cancelled: stop it, and settle the job as failed while this lease holds its lock. */
  async cancelled(): Promise<void> {
    if (this.#ended) return;
    this.abort(new LeaseLostError(this.job.runId, "the run was cancelled"));
    await this.#bullJob
      .moveToFailed(new Error(`Run ${this.job.runId} was cancelled`), this.#token, false)
      .catch(() => {});
  }

  abort(reason: Error): void {
    this.#end();
    this.#controller.abort(reason);
  }

  /** Write `data` (or only check the lease with undefined), fenced on the lock token. */
  async #write(data: JobData | undefined): Promise<void> {
    if (this.#ended) throw this.#lostError("this lease already ended");
    const outcome = await this.#store.save(
      this.job.runId,
      this.#token,
      data === undefined ? undefined : JSON.stringify(data),
    );
    if (outcome === "ok") {
      if (data) this.#data = data;
      return;
    }
    if (outcome === "cancelled") {
      await this.cancelled();
      throw this.#lostError("the run was cancelled");
    }
    const error = this.#lostError("its lock expired or another worker holds it");
    this.abort(error);
    throw error;
  }

  async #settle(move: () => Promise<unknown>): Promise<void> {
    try {
      await move();
    } catch (error) {
      // BullMQ's token check refused: the lock moved on between the check and the move.
      if ((await this.#store.lockHolder(this.job.runId)) !== this.#token) {
        const lost = this.#lostError(`BullMQ refused: ${(error as Error).message}`);
        this.abort(lost);
        throw lost;
      }
      throw error;
    }
    this.#end();
  }

  async #renew(): Promise<void> {
    // While the store is away, commands wait for the reconnection: one renewal at a time.
    if (this.#ended || this.#renewing) return;
    this.#renewing = true;
    try {
      const outcome = await this.#store.renew(this.job.runId, this.#token, this.#lockMs);
      if (this.#ended) return;
      if (outcome === "ok") this.#renewedAt = Date.now();
      else if (outcome === "cancelled") await this.cancelled();
      else this.abort(this.#lostError("its lock expired or another worker holds it"));
    } catch (error) {
      if (!this.#ended && Date.now() - this.#renewedAt >= this.#lockMs) {
        this.abort(this.#lostError(`the lock could not be renewed: ${(error as Error).message}`));
      }
    } finally {
      this.#renewing = false;
    }
  }

  #lostError(detail: string): LeaseLostError {
    const reason = this.#controller.signal.reason;
    return reason instanceof LeaseLostError ? reason : new LeaseLostError(this.job.runId, detail);
  }

  #end(): void {
    if (this.#ended) return;
    this.#ended = true;
    clearInterval(this.#renewal);
    this.#onEnd();
  }
}
