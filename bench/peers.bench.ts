/**
 * Peers benchmark (`npm run bench:peers`): the agent loop's own overhead per step in this project
 * and in the TypeScript agent frameworks people compare it with, side by side in one process. Each
 * loop runs the same scenario against a mock model that answers every step at once with one call
 * of a no-op tool, the last step a call of the terminal tool, so what is timed is the loop alone
 * (history, tool dispatch, validation, its own bookkeeping). Tracing and telemetry are off for every
 * peer. One adapter per peer under bench/peers/.
 *
 * Every loop is warmed up, then runs `BENCH_ROUNDS` rounds (default 3); in each round every loop
 * runs every length, the order of the loops rotating from round to round so that drift in the
 * machine's speed hits them alike. The tables give the median over the rounds, in µs per step, of
 * wall time (what the issue's figures are) and of this process's CPU time (user + system, V8's
 * helper threads included), which other processes taking the cores do not inflate.
 * `BENCH_PEERS=forge,langgraph` runs a subset (names: forge, ai7, ai6, langgraph, openai-agents,
 * mastra); `BENCH_STEPS=50,200` other lengths.
 */
import { readFileSync } from "node:fs";
import { cpus, loadavg, totalmem } from "node:os";
import { join } from "node:path";
import { aiSdk6Peer, aiSdk7Peer } from "./peers/ai-sdk.ts";
import { forgePeer } from "./peers/forge.ts";
import { langGraphPeer } from "./peers/langgraph.ts";
import { mastraPeer } from "./peers/mastra.ts";
import { openAIAgentsPeer } from "./peers/openai-agents.ts";
import type { LoopTime, PeerAdapter } from "./peers/peer.ts";

function versionOf(folder: string): string {
  const manifest = JSON.parse(
    readFileSync(join(process.cwd(), "node_modules", folder, "package.json"), "utf8"),
  ) as {
    name: string;
    version: string;
  };
  return `${manifest.name}@${manifest.version}`;
}

function projectVersion(): string {
  const manifest = JSON.parse(readFileSync(join(process.cwd(), "package.json"), "utf8")) as {
    name: string;
    version: string;
  };
  return `${manifest.name}@${manifest.version}`;
}

const adapters: Record<string, () => PeerAdapter> = {
  forge: () => forgePeer(projectVersion()),
  ai7: () => aiSdk7Peer(versionOf("ai7")),
  ai6: () => aiSdk6Peer(versionOf("ai")),
  langgraph: () => langGraphPeer(`${versionOf("@langchain/langgraph")}, ${versionOf("@langchain/core")}`),
  "openai-agents": () => openAIAgentsPeer(versionOf("@openai/agents")),
  mastra: () => mastraPeer(versionOf("@mastra/core")),
};

function listFrom(variable: string | undefined, fallback: string[]): string[] {
  return variable
    ? variable
        .split(",")
        .map((item) => item.trim())
        .filter((item) => item.length > 0)
    : fallback;
}

const selected = listFrom(process.env.BENCH_PEERS, Object.keys(adapters));
for (const name of selected) {
  if (!(name in adapters)) {
    throw new Error(`BENCH_PEERS: unknown peer '${name}'; the peers are ${Object.keys(adapters).join(", ")}`);
  }
}
const lengths = listFrom(process.env.BENCH_STEPS, ["50", "200", "800"]).map(Number);
if (lengths.some((steps) => !Number.isInteger(steps) || steps < 2)) {
  throw new Error(
    `BENCH_STEPS: each length must be a whole number of at least 2 steps, got ${process.env.BENCH_STEPS}`,
  );
}
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
if (!Number.isInteger(rounds) || rounds < 1)
  throw new Error(`BENCH_ROUNDS: a whole number of at least 1, got ${rounds}`);

const peers = selected.map((name) => (adapters[name] as () => PeerAdapter)());

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

const started = Date.now();
// Warm-up: every loop runs a short and a long scenario once, so that the JIT has seen each code
// path before anything is timed.
for (const peer of peers) {
  await peer.run(50);
  await peer.run(Math.min(200, Math.max(...lengths)));
}
const samples = new Map<string, LoopTime[]>();
const key = (peer: PeerAdapter, steps: number) => `${peer.name}\u0000${steps}`;
for (let round = 0; round < rounds; round += 1) {
  for (let offset = 0; offset < peers.length; offset += 1) {
    const peer = peers[(round + offset) % peers.length] as PeerAdapter;
    for (const steps of lengths) {
      const elapsed = await peer.run(steps);
      const list = samples.get(key(peer, steps)) ?? [];
      list.push({ wallMs: (elapsed.wallMs / steps) * 1000, cpuMs: (elapsed.cpuMs / steps) * 1000 });
      samples.set(key(peer, steps), list);
    }
  }
  process.stderr.write(
    `round ${round + 1}/${rounds} done (${((Date.now() - started) / 1000).toFixed(0)} s)\n`,
  );
}

const format = (value: number) => Math.round(value).toLocaleString("en-US");
const loadAtEnd = loadavg()
  .map((value) => value.toFixed(1))
  .join(" / ");
for (const [measure, label] of [
  ["wallMs", "wall time"],
  ["cpuMs", "CPU time of this process"],
] as const) {
  console.log(
    `## Loop overhead per step, µs of ${label} (mock model, one no-op tool call per step, last step terminal; medians of ${rounds} rounds)\n`,
  );
  console.log(`| loop | ${lengths.map((steps) => `${steps} steps`).join(" | ")} | version |`);
  console.log(`| --- | ${lengths.map(() => "---:").join(" | ")} | --- |`);
  for (const peer of peers) {
    const cells = lengths.map((steps) =>
      format(median((samples.get(key(peer, steps)) ?? []).map((sample) => sample[measure]))),
    );
    console.log(`| ${peer.name} | ${cells.join(" | ")} | ${peer.version} |`);
  }
  console.log("");
}
console.log(
  `Node ${process.version}, ${cpus().length} cores (${cpus()[0]?.model ?? "unknown"}), ${Math.round(totalmem() / 2 ** 30)} GiB, ${new Date().toISOString().slice(0, 16)} UTC, load average at the end ${loadAtEnd} (1 / 5 / 15 min); ${((Date.now() - started) / 1000).toFixed(0)} s in all.`,
);
