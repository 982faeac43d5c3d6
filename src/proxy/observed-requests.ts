/**
 * `ProxyOptions.observeRequest`: each guarded request's run told to an observer of its own (the
 * OpenTelemetry observer's request spans, `forge proxy --otel-endpoint`), which is told when the
 * request ends.
 */
import type { RunObserver } from "../core/run-observer.ts";
import type { ChatService } from "./chat-service.ts";
import { createRequestStats } from "./request-stats.ts";

/** One request's observer, and the end of the request. */
export interface ObservedProxyRequest {
  readonly observer: RunObserver;
  /** The request was answered (`error` null) or failed. */
  end(error: unknown): void;
}

/** Opens the observation of one guarded request (`otelObserver(…).observeRequest` is one). */
export type ObserveProxyRequest = (request: {
  requestId: string;
  model: string | undefined;
}) => ObservedProxyRequest;

/** A chat service whose requests are each observed by `observe`, answering exactly as `service` does. */
export function observeChatService(service: ChatService, observe: ObserveProxyRequest): ChatService {
  return {
    async answer(request, signal, stats = createRequestStats(), live) {
      const observed = observe({ requestId: stats.requestId ?? "", model: request.model });
      stats.runObserver = observed.observer;
      try {
        const answer = await service.answer(request, signal, stats, live);
        observed.end(null);
        return answer;
      } catch (error) {
        observed.end(error);
        throw error;
      } finally {
        stats.runObserver = undefined;
      }
    },
  };
}
