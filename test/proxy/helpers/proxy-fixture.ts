/**
 * Reusable proxy test fixtures: a proxy on 127.0.0.1 in front of any backend URL (the scripted
 * backend here, a real llama-server later), and the official SDK clients pointed at it.
 */
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { createHttpBackend, type HttpBackendOptions } from "../../../src/proxy/backend/http-backend.ts";
import { type RunningProxy, type StartProxyOptions, startProxy } from "../../../src/proxy/server.ts";

/** Options of `startTestProxy`: the backend's URL and format, then any proxy option. */
export interface TestProxyOptions extends Omit<StartProxyOptions, "backend" | "host" | "port"> {
  backendUrl: string;
  backend?: Omit<HttpBackendOptions, "url">;
}

/**
 * A proxy on 127.0.0.1 with a free port, in front of `backendUrl`. Its prose policy is `nudge`
 * unless given: the SDK suites script a prose answer to walk the nudge path through each SDK; the
 * default policy (`answer`) has its own tests (test/proxy/prose-policy.test.ts).
 */
export function startTestProxy(options: TestProxyOptions): Promise<RunningProxy> {
  const { backendUrl, backend, ...rest } = options;
  return startProxy({
    prosePolicy: "nudge",
    ...rest,
    host: "127.0.0.1",
    port: 0,
    backend: createHttpBackend({ url: backendUrl, toolMode: "native", ...backend }),
  });
}

/** The official OpenAI SDK pointed at the proxy; no SDK retries, so each call is one request. */
export function openAIClientFor(proxy: RunningProxy, apiKey = "client-key"): OpenAI {
  return new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey, maxRetries: 0, timeout: 20_000 });
}

/** The official Anthropic SDK pointed at the proxy; no SDK retries. */
export function anthropicClientFor(proxy: RunningProxy, apiKey = "client-key"): Anthropic {
  return new Anthropic({ baseURL: proxy.url, apiKey, maxRetries: 0, timeout: 20_000 });
}

/** A weather tool in OpenAI's shape. */
export const weatherToolOpenAI = {
  type: "function" as const,
  function: {
    name: "get_weather",
    description: "Current weather for a city",
    parameters: {
      type: "object",
      properties: { city: { type: "string" } },
      required: ["city"],
    },
  },
};

/** The same tool in Anthropic's shape. */
export const weatherToolAnthropic = {
  name: "get_weather",
  description: "Current weather for a city",
  input_schema: {
    type: "object" as const,
    properties: { city: { type: "string" } },
    required: ["city"],
  },
};
