/**
 * The shared shape of the SDK-path tests: a scripted backend and a proxy in front of it for a
 * test file (every test must use up its script), and the one tool turn they all run: a
 * `get_weather` call the model writes as Qwen `<tool_call>` text, then its answer as a respond call.
 */
import { afterAll, afterEach, beforeAll, expect } from "vitest";
import type { RunningProxy } from "../../../src/proxy/server.ts";
import { startTestProxy } from "./proxy-fixture.ts";
import {
  type ScriptedBackend,
  startScriptedBackend,
  textCompletion,
  toolCallCompletion,
} from "./scripted-backend.ts";

/** The backend and proxy of a test file, set once its `beforeAll` has run. */
export interface ScriptedProxy {
  backend: ScriptedBackend;
  proxy: RunningProxy;
}

/** Starts a scripted backend and a proxy for the calling test file, and checks each test's script. */
export function useScriptedProxy(): ScriptedProxy {
  const state = {} as ScriptedProxy;
  beforeAll(async () => {
    state.backend = await startScriptedBackend();
    state.proxy = await startTestProxy({ backendUrl: state.backend.url });
  });
  afterEach(() => {
    state.backend.assertDone();
    state.backend.requests.length = 0;
  });
  afterAll(async () => {
    await state.proxy.close();
    await state.backend.close();
  });
  return state;
}

/** The model's final answer in the weather turn. */
export const WEATHER_ANSWER = "It is 4°C in Oslo.";

/** Scripts the weather turn: the call as `<tool_call>` text (rescued by the proxy), then the answer. */
export function scriptWeatherTurn(backend: ScriptedBackend): void {
  backend.push(
    textCompletion('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'),
    toolCallCompletion([{ name: "respond", args: { message: WEATHER_ANSWER } }]),
  );
}

/** A chat message as the backend received it. */
export interface WireMessage {
  role: string;
  content: string | null;
  tool_calls?: { id: string; type: string; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
}

/** The messages of the backend's `index`-th chat request. */
export function sentMessages(backend: ScriptedBackend, index: number): WireMessage[] {
  return backend.chatRequests[index]?.body.messages as WireMessage[];
}

/**
 * The second backend request of the weather turn carried `roles`, the call the SDK ran (as the
 * assistant's `tool_calls`) and its result, holding `result`, as the tool message answering it.
 */
export function expectWeatherResultSent(backend: ScriptedBackend, roles: string[], result: string): void {
  const sent = sentMessages(backend, 1);
  expect(sent.map((message) => message.role)).toEqual(roles);
  const calls = sent[roles.indexOf("assistant")]?.tool_calls;
  expect(calls).toMatchObject([
    { type: "function", function: { name: "get_weather", arguments: '{"city":"Oslo"}' } },
  ]);
  const toolMessage = sent[roles.indexOf("tool")];
  expect(toolMessage?.tool_call_id).toBe(calls?.[0]?.id);
  expect(toolMessage?.content).toContain(result);
}
