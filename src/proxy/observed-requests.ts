/**
 * `ProxyOptions.observeRequest`: each guarded request's run told to an observer of its own (the
 * OpenTelemetry observer's request spans, `forge proxy --otel-endpoint`), which is told when the
 * request ends.
 */
import type { RunObserver } from "../core/run-observer.ts";
import type { ChatService } from "./chat-service.ts";
import { createRequestStats, type RequestStats } from "./request-stats.ts";

/** One request's observer, and the end of the request. */
export interface ObservedProxyRequest {
  readonly observer: RunObserver;
  /** The request was answered (`error` null) or failed; `stats`, the request's counts so far. */
  end(error: unknown, stats?: RequestStats): void;
}

/** Opens the observation of one guarded request (`otelObserver(…).observeRequest` is one). */
export type ObserveProxyRequest = (request: {
  requestId: string;
  model: string | undefined;
  /** The client's W3C `traceparent` header, when it sent one: the request's span continues its trace. */
  traceparent?: string | undefined;
}) => ObservedProxyRequest;

/** A chat service whose requests are each observed by `observe`, answering exactly as `service` does. */
export function observeChatService(service: ChatService, observe: ObserveProxyRequest): ChatService {
  return {
    async answer(request, signal, stats = createRequestStats(), live) {
      const observed = observe({
        requestId: stats.requestId ?? "",
        model: request.model,
        ...(stats.traceparent !== undefined && { traceparent: stats.traceparent }),
      });
      stats.runObserver = observed.observer;
      try {
        const answer = await service.answer(request, signal, stats, live);
        observed.end(null, stats);
        return answer;
      } catch (error) {
        observed.end(error, stats);
        throw error;
      } finally {
        stats.runObserver = undefined;
      }
    },
  };
}
