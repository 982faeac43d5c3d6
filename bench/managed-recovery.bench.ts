/**
 * How long a managed llama-server takes to serve again through the proxy after `kill -9` (crash)
 * and after SIGSTOP (hang, noticed by the liveness probe), with the default backoff and a probe of
 * `--probe-interval`/`--probe-timeout` ms and `--probe-failures` failures. Each trial starts a fresh
 * proxy, so each recovery is a first restart. Tiny random-weight model; the time to load a real
 * model adds to every figure.
 *
 * Run: `npx tsx bench/managed-recovery.bench.ts [--trials 5] [--probe-interval 1000] [--probe-timeout 1000] [--probe-failures 3]`
 */
import { parseArgs } from "node:util";
import { startManagedBackend } from "../src/proxy/backend/managed-backend.ts";
import { startProxy } from "../src/proxy/server.ts";
import { ensureLlamaServer, ensureTestModel } from "../test/helpers/test-model.ts";

const { values } = parseArgs({
  options: {
    trials: { type: "string", default: "5" },
    "probe-interval": { type: "string", default: "1000" },
    "probe-timeout": { type: "string", default: "1000" },
    "probe-failures": { type: "string", default: "3" },
  },
});
const trials = Number(values.trials);
const supervision = {
  probeIntervalMs: Number(values["probe-interval"]),
  probeTimeoutMs: Number(values["probe-timeout"]),
  probeFailures: Number(values["probe-failures"]),
};
const KEY = "bench";
const [binaryPath, modelPath] = await Promise.all([ensureLlamaServer(), ensureTestModel()]);

async function recoveryMs(signal: "SIGKILL" | "SIGSTOP"): Promise<number> {
  const backend = await startManagedBackend({
    launch: { ggufPath: modelPath, ctx: 2048, slots: 1, threads: 2 },
    supervision,
    manager: { binaryPath, logger: () => {} },
  });
  const proxy = await startProxy({ backend, port: 0, apiKey: KEY });
  const headers = { authorization: `Bearer ${KEY}` };
  const detail = async () =>
    (
      (await (await fetch(`${proxy.url}/forge/health`, { headers })).json()) as {
        backend: { detail: { status: string; pid: number } };
      }
    ).backend.detail;
  try {
    const pid = (await detail()).pid;
    const started = performance.now();
    process.kill(pid, signal);
    for (;;) {
      const now = await detail();
      if (now.status === "healthy" && now.pid !== pid) {
        if ((await fetch(`${proxy.url}/props`, { headers })).status === 200) break;
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    return performance.now() - started;
  } finally {
    await proxy.close();
  }
}

for (const signal of ["SIGKILL", "SIGSTOP"] as const) {
  const times: number[] = [];
  for (let trial = 0; trial < trials; trial += 1) times.push(await recoveryMs(signal));
  times.sort((left, right) => left - right);
  const median = times[Math.floor(times.length / 2)] ?? Number.NaN;
  console.log(
    `${signal}: serving again after median ${median.toFixed(0)} ms (min ${times[0]?.toFixed(0)}, max ${times.at(-1)?.toFixed(0)}; ${trials} trials)`,
  );
}
