/**
 * What an operator sees of a proxy left running: one access log line per request (request id,
 * route, model, status, times, retries, rescues, nudges, compactions), an `x-request-id` on every
 * answer, and `/forge/metrics` in Prometheus text format whose counts move with the requests.
 * Against a scripted OpenAI-compatible backend on 127.0.0.1, through real sockets.
 */
import { request as httpRequest } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import type { AccessLogFormat } from "../../src/proxy/access-log.ts";
import type { RunningProxy } from "../../src/proxy/server.ts";
import { spawnForge } from "../helpers/forge-cli.ts";
import { openAIClientFor, startTestProxy, weatherToolOpenAI } from "./helpers/proxy-fixture.ts";
import {
  type BackendStep,
  type ScriptedBackend,
  startScriptedBackend,
  streamedTextCompletion,
  textCompletion,
  toolCallCompletion,
} from "./helpers/scripted-backend.ts";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((cleanup) => cleanup()));
});

/** Access log lines as they are written; `next()` waits for the next one not yet taken. */
class LogLines {
  readonly lines: string[] = [];
  #taken = 0;
  #waiting: (() => void) | undefined;

  write = (line: string) => {
    this.lines.push(line);
    this.#waiting?.();
  };

  async next(): Promise<string> {
    while (this.lines.length <= this.#taken) {
      await new Promise<void>((resolve) => (this.#waiting = resolve));
    }
    return this.lines[this.#taken++] as string;
  }
}

async function observedProxy(
  script: BackendStep[],
  options: { format?: AccessLogFormat; apiKey?: string; budgetTokens?: number } = {},
): Promise<{ proxy: RunningProxy; backend: ScriptedBackend; log: LogLines }> {
  const backend = await startScriptedBackend(script);
  const log = new LogLines();
  const { format = "text", ...rest } = options;
  const proxy = await startTestProxy({
    backendUrl: backend.url,
    accessLog: { format, write: log.write },
    ...rest,
  });
  cleanups.push(async () => {
    await proxy.close();
    await backend.close();
  });
  return { proxy, backend, log };
}

/** `key=value` pairs of a text line (values JSON-quoted when they hold spaces). */
function fieldsOf(line: string): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const match of line.matchAll(/(\w+)=("(?:[^"\\]|\\.)*"|\S+)/g)) {
    const [, key, raw] = match as unknown as [string, string, string];
    fields[key] = raw.startsWith('"') ? (JSON.parse(raw) as string) : raw;
  }
  return fields;
}

const weatherRequest = {
  model: "qwen3:8b",
  messages: [{ role: "user" as const, content: "Weather in Paris?" }],
  tools: [weatherToolOpenAI],
};

function postChat(
  proxy: RunningProxy,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Response> {
  return fetch(`${proxy.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
}

describe("access log", () => {
  it("writes one text line per request with its id, route, model, status and the nudged retry", async () => {
    const { proxy, log } = await observedProxy([
      textCompletion("Let me check the weather for you."),
      toolCallCompletion([{ name: "get_weather", args: { city: "Paris" } }]),
    ]);
    const answer = await postChat(proxy, weatherRequest, { "x-request-id": "client-chosen-42" });
    expect(answer.status).toBe(200);
    await answer.text();
    const fields = fieldsOf(await log.next());
    expect(fields).toMatchObject({
      id: "client-chosen-42",
      method: "POST",
      path: "/v1/chat/completions",
      status: "200",
      model: "qwen3:8b",
      retries: "1",
      nudges: "1",
      rescues: "0",
      compactions: "0",
    });
    expect(Number(fields.backend_ms)).toBeGreaterThan(0);
    expect(Number(fields.backend_ms)).toBeLessThanOrEqual(Number(fields.ms));
    expect(log.lines).toHaveLength(1);
  });

  it("counts a tool call rescued from text, as JSON lines", async () => {
    const { proxy, log } = await observedProxy(
      [textCompletion('<tool_call>{"name": "get_weather", "arguments": {"city": "Lima"}}</tool_call>')],
      { format: "json" },
    );
    await openAIClientFor(proxy).chat.completions.create(weatherRequest);
    const record = JSON.parse(await log.next()) as Record<string, unknown>;
    expect(record).toMatchObject({
      path: "/v1/chat/completions",
      status: 200,
      model: "qwen3:8b",
      retries: 0,
      rescues: 1,
      nudges: 0,
    });
    expect(record.id).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("counts a compaction", async () => {
    const { proxy, log } = await observedProxy(
      [toolCallCompletion([{ name: "respond", args: { message: "done" } }])],
      { budgetTokens: 1000 },
    );
    const long = "result ".repeat(400);
    const messages: Record<string, unknown>[] = [
      { role: "system", content: "sys" },
      { role: "user", content: "go" },
    ];
    for (let index = 0; index < 6; index++) {
      messages.push({
        role: "assistant",
        content: "",
        tool_calls: [
          {
            id: `c${index}`,
            type: "function",
            function: { name: "get_weather", arguments: `{"city":"c${index}"}` },
          },
        ],
      });
      messages.push({ role: "tool", tool_call_id: `c${index}`, content: long });
    }
    const answer = await postChat(proxy, { messages, tools: [weatherToolOpenAI] });
    expect(answer.status).toBe(200);
    await answer.text();
    expect(fieldsOf(await log.next())).toMatchObject({ compactions: "1", model: "-" });
  });

  it("logs a streamed forwarded answer once it has ended, and a refusal too", async () => {
    const { proxy, log } = await observedProxy([streamedTextCompletion(["Hel", "lo"])]);
    const streamed = await postChat(proxy, {
      model: "m",
      messages: [{ role: "user", content: "Hi" }],
      stream: true,
    });
    await streamed.text();
    expect(fieldsOf(await log.next())).toMatchObject({ status: "200", model: "m", retries: "0" });
    const missing = await fetch(`${proxy.url}/nowhere`);
    await missing.text();
    expect(fieldsOf(await log.next())).toMatchObject({ path: "/nowhere", status: "404", model: "-" });
  });
});

describe("x-request-id", () => {
  it("is on every answer: the client's when sane, a fresh UUID otherwise", async () => {
    const { proxy } = await observedProxy([textCompletion("plain")]);
    const models = await fetch(`${proxy.url}/v1/models`, { headers: { "x-request-id": "abc-123" } });
    expect(models.headers.get("x-request-id")).toBe("abc-123");
    const forwarded = await postChat(proxy, { model: "m", messages: [{ role: "user", content: "Hi" }] });
    const generated = forwarded.headers.get("x-request-id");
    expect(generated).toMatch(/^[0-9a-f-]{36}$/);
    for (const insane of ["has space", "x".repeat(200), "semi;colon"]) {
      const answer = await fetch(`${proxy.url}/health`, { headers: { "x-request-id": insane } });
      expect(answer.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    }
    const refused = await new Promise<string | undefined>((resolve, reject) => {
      const outgoing = httpRequest(
        { host: "127.0.0.1", port: proxy.port, path: "/v1/models", headers: { host: "attacker.example" } },
        (incoming) => {
          incoming.resume();
          expect(incoming.statusCode).toBe(421);
          resolve(incoming.headers["x-request-id"] as string | undefined);
        },
      );
      outgoing.on("error", reject);
      outgoing.end();
    });
    expect(refused).toMatch(/^[0-9a-f-]{36}$/);
  });
});

/** Parse Prometheus text exposition: every sample line, checked against its `# TYPE`. */
function parsePrometheus(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  const typed = new Set<string>();
  for (const line of text.split("\n")) {
    if (line === "") continue;
    const type = /^# TYPE (\w+) (counter|gauge|histogram|summary|untyped)$/.exec(line);
    if (type) {
      typed.add(type[1] as string);
      continue;
    }
    if (line.startsWith("# HELP ")) continue;
    const sample = /^(\w+)(\{[^}]*\})? (-?[\d.e+]+|NaN|\+Inf|-Inf)$/.exec(line);
    if (!sample) throw new Error(`not a Prometheus sample line: ${line}`);
    const name = sample[1] as string;
    const family = name.replace(/_(bucket|sum|count)$/, "");
    if (!typed.has(name) && !typed.has(family)) throw new Error(`sample before its # TYPE: ${line}`);
    samples.set(`${name}${sample[2] ?? ""}`, Number(sample[3]));
  }
  return samples;
}

async function scrape(
  proxy: RunningProxy,
  headers: Record<string, string> = {},
): Promise<Map<string, number>> {
  const answer = await fetch(`${proxy.url}/forge/metrics`, { headers });
  expect(answer.status).toBe(200);
  expect(answer.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
  return parsePrometheus(await answer.text());
}

describe("/forge/metrics", () => {
  it("counts requests by route and status, latencies, retries, rescues, nudges and in-flight", async () => {
    const { proxy, log } = await observedProxy([
      textCompletion("Let me check."),
      toolCallCompletion([{ name: "get_weather", args: { city: "Paris" } }]),
      textCompletion('<tool_call>{"name": "get_weather", "arguments": {"city": "Lima"}}</tool_call>'),
    ]);
    const chat = '{route="/v1/chat/completions"}';
    const before = await scrape(proxy);
    expect(
      before.get('forge_proxy_requests_total{route="/v1/chat/completions",status="200"}'),
    ).toBeUndefined();
    await (await postChat(proxy, weatherRequest)).text();
    await (await postChat(proxy, weatherRequest)).text();
    await (await fetch(`${proxy.url}/nowhere`)).text();
    // The metrics are counted when each answer's connection closes, as the log line is written.
    for (let index = 0; index < 4; index++) await log.next();
    const after = await scrape(proxy);
    expect(after.get('forge_proxy_requests_total{route="/v1/chat/completions",status="200"}')).toBe(2);
    expect(after.get('forge_proxy_requests_total{route="other",status="404"}')).toBe(1);
    expect(after.get('forge_proxy_requests_total{route="/forge/metrics",status="200"}')).toBe(1);
    expect(after.get(`forge_proxy_retries_total${chat}`)).toBe(1);
    expect(after.get(`forge_proxy_nudges_total${chat}`)).toBe(1);
    expect(after.get(`forge_proxy_rescues_total${chat}`)).toBe(1);
    expect(after.get(`forge_proxy_request_duration_seconds_count${chat}`)).toBe(2);
    expect(after.get(`forge_proxy_backend_duration_seconds_count${chat}`)).toBe(2);
    expect(
      after.get('forge_proxy_request_duration_seconds_bucket{le="+Inf",route="/v1/chat/completions"}'),
    ).toBe(2);
    // The scrape itself is in flight while it is answered.
    expect(after.get("forge_proxy_requests_in_flight")).toBe(1);
  });

  it("sits behind --api-key when one is set", async () => {
    const { proxy } = await observedProxy([], { apiKey: "operator-key" });
    const refused = await fetch(`${proxy.url}/forge/metrics`);
    expect(refused.status).toBe(401);
    const samples = await scrape(proxy, { authorization: "Bearer operator-key" });
    expect(samples.get('forge_proxy_requests_total{route="/forge/metrics",status="401"}')).toBe(1);
  });
});

/** Run `forge proxy` with `flags`, send it `requests` once it listens, SIGTERM it, and return its stderr. */
async function stderrOfCli(
  backendUrl: string,
  flags: string[],
  requests: (url: string, port: number) => Promise<void>,
): Promise<string> {
  const { child, stdout, stderr } = spawnForge([
    "proxy",
    "--backend-url",
    backendUrl,
    "--port",
    "0",
    ...flags,
  ]);
  const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
  try {
    const url = await new Promise<string>((resolve, reject) => {
      const look = () => {
        const match = /listening on (http:\/\/127\.0\.0\.1:(\d+))/.exec(stdout());
        if (match?.[1]) resolve(match[1]);
      };
      child.stdout.on("data", look);
      void exited.then(() =>
        reject(new Error(`forge proxy exited before listening:\n${stdout()}${stderr()}`)),
      );
    });
    await requests(url, Number(new URL(url).port));
  } finally {
    child.kill("SIGTERM");
  }
  expect(await exited).toBe(0);
  return stderr();
}

describe("forge proxy access log (CLI)", () => {
  it("writes JSON lines on stderr with --log-format json, and serves an --allow-host name", async () => {
    const backend = await startScriptedBackend([textCompletion("hello")]);
    cleanups.push(() => backend.close());
    const stderr = await stderrOfCli(
      backend.url,
      ["--log-format", "json", "--allow-host", "proxy.lan"],
      async (url, port) => {
        const answer = await postChat({ url } as RunningProxy, {
          model: "m",
          messages: [{ role: "user", content: "Hi" }],
        });
        expect(answer.status).toBe(200);
        await answer.text();
        const status = await new Promise<number | undefined>((resolve, reject) => {
          const outgoing = httpRequest(
            { host: "127.0.0.1", port, path: "/health", headers: { host: `proxy.lan:${port}` } },
            (incoming) => {
              incoming.resume();
              incoming.once("end", () => resolve(incoming.statusCode));
            },
          );
          outgoing.on("error", reject);
          outgoing.end();
        });
        expect(status).toBe(200);
      },
    );
    const records = stderr
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(records).toHaveLength(2);
    expect(records).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ method: "POST", path: "/v1/chat/completions", status: 200, model: "m" }),
        expect.objectContaining({ method: "GET", path: "/health", status: 200 }),
      ]),
    );
  });

  it("writes no access line with --quiet", async () => {
    const backend = await startScriptedBackend([textCompletion("hello")]);
    cleanups.push(() => backend.close());
    const stderr = await stderrOfCli(backend.url, ["--quiet"], async (url) => {
      const answer = await postChat({ url } as RunningProxy, {
        model: "m",
        messages: [{ role: "user", content: "Hi" }],
      });
      expect(answer.status).toBe(200);
      await answer.text();
    });
    expect(stderr).not.toMatch(/path=|"path"/);
    backend.assertDone();
  });
});
