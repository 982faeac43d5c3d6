/**
 * Graceful shutdown of the real CLI (`forge proxy` from the sources): on SIGTERM it stops
 * accepting connections, the requests in flight complete, and the process exits; requests still
 * running at the drain deadline are answered 503 with `Retry-After` and it exits all the same.
 */
import { connect } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import {
  exitOf,
  type ForgeChild,
  type ForgeProcess,
  spawnForge,
  waitForOutput,
} from "../helpers/forge-cli.ts";
import {
  answerWhen,
  gate,
  type MisbehavingBackend,
  startMisbehavingBackend,
} from "./helpers/misbehaving-backend.ts";
import { weatherToolOpenAI } from "./helpers/proxy-fixture.ts";
import { toolCallCompletion } from "./helpers/scripted-backend.ts";

let backend: MisbehavingBackend | undefined;
let child: ForgeChild | undefined;

afterEach(async () => {
  if (child && child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  await backend?.close();
  backend = undefined;
  child = undefined;
});

function startForge(args: string[]): ForgeProcess {
  const started = spawnForge(["proxy", ...args]);
  child = started.child;
  return started;
}

/** Whether a new TCP connection to `port` is refused. */
function connectionRefused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(false);
    });
    socket.once("error", (error: NodeJS.ErrnoException) => resolve(error.code === "ECONNREFUSED"));
  });
}

function guardedRequest(url: string): Promise<Response> {
  return fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model: "m",
      messages: [{ role: "user", content: "Weather in Paris?" }],
      tools: [weatherToolOpenAI],
    }),
  });
}

const CALL = toolCallCompletion([{ name: "get_weather", args: { city: "Paris" } }]);

describe("forge proxy on SIGTERM", () => {
  it("refuses new connections, completes the requests in flight, then exits", async () => {
    const release = gate();
    backend = await startMisbehavingBackend([answerWhen(release.go, CALL), answerWhen(release.go, CALL)]);
    const forge = startForge(["--backend-url", backend.url, "--port", "0", "--drain-timeout", "20000"]);
    const [, url, port] = await waitForOutput(forge.output, /listening on (http:\/\/127\.0\.0\.1:(\d+))/);
    const inFlight = [guardedRequest(url as string), guardedRequest(url as string)];
    await backend.received(2);

    forge.child.kill("SIGTERM");
    await waitForOutput(forge.output, /not accepting new connections/);
    expect(await connectionRefused(Number(port))).toBe(true);
    // Held past the 2 s grace the proxy used to give before cutting requests in flight.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(forge.child.exitCode).toBeNull();

    release.open();
    for (const response of await Promise.all(inFlight)) {
      expect(response.status).toBe(200);
      expect(await response.json()).toMatchObject({
        choices: [{ message: { tool_calls: [{ function: { name: "get_weather" } }] } }],
      });
    }
    expect(await exitOf(forge.child)).toBe(0);
  });

  it("answers a request still running at the drain deadline 503 with Retry-After, and exits", async () => {
    backend = await startMisbehavingBackend([answerWhen(new Promise(() => {}), CALL)]);
    const forge = startForge(["--backend-url", backend.url, "--port", "0", "--drain-timeout", "300"]);
    const [, url] = await waitForOutput(forge.output, /listening on (http:\/\/127\.0\.0\.1:\d+)/);
    const stuck = guardedRequest(url as string).then(
      async (response) => ({
        status: response.status,
        retryAfter: response.headers.get("retry-after"),
        body: await response.text(),
      }),
      () => "cut",
    );
    await backend.received(1);
    forge.child.kill("SIGTERM");
    expect(await exitOf(forge.child)).toBe(0);
    expect(await stuck).toMatchObject({
      status: 503,
      retryAfter: "5",
      body: expect.stringContaining("drain timeout"),
    });
    await backend.cut(1);
  });
});
