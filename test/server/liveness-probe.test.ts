/**
 * The liveness probe against real sockets on 127.0.0.1: a server that accepts connections but
 * never answers (what a SIGSTOPped llama-server looks like) is reported unresponsive even while
 * the garbage collector runs (an `AbortSignal.any` + `AbortSignal.timeout` deadline was collected
 * and never fired on Node 20); a server answering 200 never is, and every probe carries the key.
 */
import { createServer as createHttpServer, type IncomingHttpHeaders } from "node:http";
import { createServer as createTcpServer, type Server, type Socket } from "node:net";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { afterEach, describe, expect, it } from "vitest";
import { createActor, createMachine } from "xstate";
import { type LivenessProbeEvent, livenessProbeLogic } from "../../src/server/server-manager-actors.ts";
import { supervisionPolicySchema } from "../../src/server/supervision.ts";

setFlagsFromString("--expose-gc");
const collectGarbage = runInNewContext("gc") as () => void;

const servers: Server[] = [];
const sockets: Socket[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

async function listen(server: Server): Promise<string> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no port");
  return `http://127.0.0.1:${address.port}`;
}

/** Runs the probe under a parent that records what it reports. */
function probe(baseUrl: string) {
  const reports: LivenessProbeEvent[] = [];
  const policy = supervisionPolicySchema.parse({
    probeIntervalMs: 20,
    probeTimeoutMs: 150,
    probeFailures: 2,
  });
  const parent = createActor(
    createMachine({
      invoke: { src: livenessProbeLogic, input: { baseUrl, apiKey: "the-key", policy } },
      on: { "server.unresponsive": { actions: ({ event }) => reports.push(event as LivenessProbeEvent) } },
    }),
  ).start();
  return { parent, reports };
}

async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for: ${what}`);
    collectGarbage();
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe("liveness probe", () => {
  it("reports a server that accepts connections but never answers, while the GC runs", async () => {
    let connections = 0;
    const silent = createTcpServer((socket) => {
      connections += 1;
      sockets.push(socket);
    });
    const { parent, reports } = probe(await listen(silent));
    await until(() => reports.length > 0, "the probe to report the silent server");
    parent.stop();
    expect(connections).toBeGreaterThanOrEqual(2);
    expect(reports).toHaveLength(1);
    expect(reports[0]?.message).toMatch(
      /failed 2 liveness probes in a row \(GET \/health, last: no answer within 150 ms\)/,
    );
  });

  it("does not report a server that answers 200, and sends the key each time", async () => {
    const seen: IncomingHttpHeaders[] = [];
    const healthy = createHttpServer((request, response) => {
      seen.push(request.headers);
      response.writeHead(200, { "content-type": "application/json" }).end('{"status":"ok"}');
    });
    const { parent, reports } = probe(await listen(healthy));
    await until(() => seen.length >= 6, "six probes");
    parent.stop();
    expect(reports).toEqual([]);
    expect(seen.every((headers) => headers.authorization === "Bearer the-key")).toBe(true);
  });

  it("reports a server that answers 503 twice in a row", async () => {
    const failing = createHttpServer((_, response) => response.writeHead(503).end());
    const { parent, reports } = probe(await listen(failing));
    await until(() => reports.length > 0, "the probe to report HTTP 503");
    parent.stop();
    expect(reports[0]?.message).toMatch(/last: HTTP 503/);
  });
});
