/**
 * A queued run's trace, across processes: the run's `invoke_agent` span continues the trace it was
 * enqueued in (`EnqueueOptions.traceparent`), and a run parked for approval by one worker and
 * resumed by another (its own observer and tracer provider, as another process has) continues the
 * parked attempt's span through the traceparent stored with the checkpoint. In-memory exporters;
 * the embedded queue on a temporary directory.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { afterEach, describe, expect, it } from "vitest";
import { WorkflowRunner } from "../../src/loop/runner.ts";
import { formatTraceparent, type OtelObserver, otelObserver } from "../../src/otel/index.ts";
import { createEmbeddedQueue, defineRegistry, type RunQueue, startWorker } from "../../src/queue/index.ts";
import { ScriptedClient } from "../../src/testing/index.ts";
import { paymentsScript, paymentsWorkflow } from "../fixtures/approval/payments.ts";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** One "process": a tracer provider with its own exporter, and an observer on it. */
function process() {
  const spans = new InMemorySpanExporter();
  const tracer = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] }).getTracer(
    "test",
  );
  return { spans, tracer, observer: otelObserver({ tracer }) };
}

const runSpans = (spans: InMemorySpanExporter): ReadableSpan[] =>
  spans.getFinishedSpans().filter((span) => span.name.startsWith("invoke_agent"));

async function queueIn(): Promise<{ queue: RunQueue; dir: string }> {
  const dir = mkdtempSync(join(tmpdir(), "forge-queue-trace-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const queue = await createEmbeddedQueue({ dir: join(dir, "queue") });
  cleanups.push(() => queue.close());
  return { queue, dir };
}

function workerOn(queue: RunQueue, dir: string, observer: OtelObserver, script = paymentsScript()) {
  const runner = new WorkflowRunner({
    client: new ScriptedClient(script),
    contextManager: { maybeCompact: (messages) => messages },
  });
  const worker = startWorker({
    queue,
    registry: defineRegistry({ workflows: [paymentsWorkflow(dir)], runner }),
    pollMs: 20,
    observers: () => [observer],
    tracing: observer,
  });
  cleanups.push(() => worker.close());
  return worker;
}

async function until<T>(read: () => Promise<T | undefined>): Promise<T> {
  for (let i = 0; i < 500; i++) {
    const value = await read();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error("timed out");
}

describe("a queued run's trace", () => {
  it("continues the trace it was enqueued in, and a resumed attempt in another process continues the parked one", async () => {
    const { queue, dir } = await queueIn();
    // The producer: a request span that enqueues the run.
    const producer = process();
    const request = producer.tracer.startSpan("POST /pay");
    const traceparent = formatTraceparent(request.spanContext());
    await queue.enqueue("payments", "Pay B2 250", { runId: "pay-1", traceparent });
    request.end();
    expect((await queue.get("pay-1"))?.traceparent).toBe(traceparent);

    // Worker A parks the run for approval (the transfer of 250 and the notify).
    const first = process();
    const workerA = workerOn(queue, dir, first.observer);
    const parked = await until(async () => {
      const run = await queue.get("pay-1");
      return run?.status === "awaiting_approval" ? run : undefined;
    });
    await workerA.close();
    const [attempt1] = runSpans(first.spans);
    expect(attempt1?.spanContext().traceId).toBe(request.spanContext().traceId);
    expect(attempt1?.parentSpanContext?.spanId).toBe(request.spanContext().spanId);
    // The parked checkpoint stores the first attempt's span.
    expect(parked.checkpoint?.meta.traceparent).toBe(
      formatTraceparent(attempt1?.spanContext() ?? request.spanContext()),
    );

    // Worker B, another "process" with its own provider, resumes it after the approvals.
    await queue.approve("pay-1");
    const second = process();
    // The resumed run's next LLM call is the script's last answer.
    workerOn(queue, dir, second.observer, paymentsScript().slice(1));
    expect(await queue.result("pay-1")).toBe("paid");
    const [attempt2] = runSpans(second.spans);
    expect(attempt2?.spanContext().traceId).toBe(request.spanContext().traceId);
    expect(attempt2?.parentSpanContext?.spanId).toBe(attempt1?.spanContext().spanId);
    expect(attempt2?.attributes["forge.run.resumed"]).toBe(true);
  });

  it("refuses a traceparent that is not one, naming the shape", async () => {
    const { queue } = await queueIn();
    await expect(queue.enqueue("payments", "x", { traceparent: "abc" })).rejects.toThrow(
      /traceparent must be a W3C traceparent such as 00-/,
    );
    expect(() => otelObserver().continueTrace("r", "00-zz")).toThrow(RangeError);
  });
});
