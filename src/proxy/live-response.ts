/**
 * The HTTP answer of a streamed request on the guarded path (ADR 014). The request runs with a
 * live-text sink; while no text has gone out, it ends as before (the whole SSE body, or an error
 * status). Once the first text comes, the answer starts: status 200, the dialect's opening events
 * and the text so far, then text as it comes, then the rest of the validated answer, or an error
 * event when the request fails after it began.
 */
import type { ProxyAnswer } from "./answer.ts";
import { type ProxyHttpError, toProxyHttpError } from "./errors.ts";
import { RequestDeadline } from "./http/index.ts";
import type { LiveText } from "./live-text.ts";

/** One dialect's event stream, written as the answer comes. */
export interface StreamWriter {
  /** The opening events. */
  start(): string;
  /** A piece of live text. */
  text(delta: string): string;
  /** The rest of the validated `answer` after the live text `sent`, and the closing events. */
  finish(answer: ProxyAnswer, sent: string): string;
  /** The last event of a stream that failed after it began. */
  fail(error: ProxyHttpError): string;
}

/** Options of `answerLive`. */
export interface LiveAnswerOptions {
  /** The client's request signal. */
  clientSignal: AbortSignal;
  /** The request's total deadline (0: none). */
  deadlineMs: number;
  /** Aborts (with a 503) when the proxy's drain deadline passes on shutdown. */
  drainSignal?: AbortSignal | undefined;
  /** Run the request with the live sink under `signal`. */
  run: (signal: AbortSignal, live: LiveText) => Promise<ProxyAnswer>;
  writer: StreamWriter;
  /** The answer when nothing went out live: today's whole SSE body. */
  whole: (answer: ProxyAnswer) => Response;
  headers: Record<string, string>;
}

/** Answer a streamed request, live once the first text comes. See the module comment. */
export async function answerLive(options: LiveAnswerOptions): Promise<Response> {
  const { writer } = options;
  // A client that stops reading the stream stops the request, as one that leaves.
  const cancel = new AbortController();
  const deadline = new RequestDeadline(
    AbortSignal.any([options.clientSignal, cancel.signal]),
    options.deadlineMs,
    options.drainSignal,
  );
  let started = false;
  let sent = "";
  let pending = "";
  let write: ((text: string) => void) | undefined;
  let firstText: () => void = () => {};
  const first = new Promise<null>((resolve) => {
    firstText = () => resolve(null);
  });
  const live: LiveText = {
    text(delta) {
      if (delta.length === 0) return;
      let events = "";
      if (!started) {
        started = true;
        events = writer.start();
      }
      events += writer.text(delta);
      sent += delta;
      if (write) write(events);
      else {
        pending += events;
        firstText();
      }
    },
  };
  const job = deadline.run((signal) => options.run(signal, live));
  const whole = await Promise.race([job.then((answer) => ({ answer })), first]);
  if (whole !== null) return options.whole(whole.answer);
  const encoder = new TextEncoder();
  let closed = false;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      const enqueue = (text: string) => {
        if (closed) return;
        controller.enqueue(encoder.encode(text));
      };
      const close = () => {
        if (closed) return;
        closed = true;
        controller.close();
      };
      enqueue(pending);
      pending = "";
      write = enqueue;
      job.then(
        (answer) => {
          enqueue(writer.finish(answer, sent));
          close();
        },
        (error: unknown) => {
          enqueue(writer.fail(toProxyHttpError(error)));
          close();
        },
      );
    },
    cancel() {
      closed = true;
      cancel.abort(new DOMException("The client stopped reading the stream", "AbortError"));
    },
  });
  return new Response(body, { status: 200, headers: options.headers });
}
