/**
 * Package benchmark (`npm run bench:package`): what a user installs and loads. Packs the package,
 * installs the tarball offline into a fresh ESM project (no optional peer), then reports the
 * tarball's size and file count, the project's install size by package, and the cold import time
 * of each entry point: a fresh `node` process per run that imports it, against the same process
 * importing nothing. Prints Markdown; figures go to docs/benchmarks.md.
 *
 * Options: `--runs N` cold imports per entry (default 21).
 */
import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { execa } from "execa";
import { z } from "zod";
import { installConsumer, manifest, packInto } from "../scripts/consumer-project.ts";

const options = z
  .object({ runs: z.coerce.number().int().min(3).default(21) })
  .parse(parseArgs({ options: { runs: { type: "string" } } }).values);

/** Bytes under `path`, as `du -sb` counts them. */
async function diskBytes(path: string): Promise<number> {
  const { stdout } = await execa("du", ["-sb", path]);
  return Number(stdout.split("\t")[0]);
}

const megabytes = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;
const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;

/** Wall time of `node -e <code>` in `cwd`, `runs` times (after one warm-up run for the file cache). */
async function coldRuns(cwd: string, code: string, runs: number): Promise<number[]> {
  await execa(process.execPath, ["--input-type=module", "-e", code], { cwd });
  const times: number[] = [];
  for (let run = 0; run < runs; run += 1) {
    const started = performance.now();
    await execa(process.execPath, ["--input-type=module", "-e", code], { cwd });
    times.push(performance.now() - started);
  }
  return times;
}

const work = mkdtempSync(join(tmpdir(), "forge-bench-package-"));
try {
  process.stderr.write("packing (builds dist/)…\n");
  const tarball = await packInto(work);
  const files = (await execa("tar", ["-tzf", tarball])).stdout.split("\n").filter(Boolean);
  const app = join(work, "app");
  process.stderr.write("installing the tarball offline into a fresh project…\n");
  const installed = await installConsumer(app, tarball);
  const modules = join(app, "node_modules");
  const packages = readdirSync(modules)
    .filter((name) => !name.startsWith("."))
    .flatMap((name) =>
      name.startsWith("@") ? readdirSync(join(modules, name)).map((sub) => `${name}/${sub}`) : [name],
    );
  const sizes = await Promise.all(
    packages.map(async (name) => [name, await diskBytes(join(modules, name))] as const),
  );
  sizes.sort((a, b) => b[1] - a[1]);

  console.log(`## Package (\`npm run bench:package -- --runs ${options.runs}\`)\n`);
  console.log(`| | figure |\n| --- | --- |`);
  console.log(
    `| tarball (\`npm pack\`) | ${(statSync(tarball).size / 1024).toFixed(0)} kB, ${files.length} files |`,
  );
  console.log(`| unpacked package | ${megabytes(await diskBytes(installed))} |`);
  console.log(
    `| consumer install, no optional peer (\`node_modules\`) | ${megabytes(await diskBytes(modules))}, ${packages.length} packages |`,
  );
  console.log(
    `| largest installed packages | ${sizes
      .slice(0, 5)
      .map(([name, bytes]) => `${name} ${megabytes(bytes)}`)
      .join(", ")} |`,
  );

  console.log(`\n### Cold import (fresh \`node\` per run, median of ${options.runs}; min–max)\n`);
  console.log("| entry | process + import ms | import alone ms |\n| --- | ---: | ---: |");
  const baseline = await coldRuns(app, "", options.runs);
  console.log(
    `| (\`node\` importing nothing) | ${median(baseline).toFixed(0)} (${Math.min(...baseline).toFixed(0)}–${Math.max(...baseline).toFixed(0)}) | — |`,
  );
  for (const subpath of Object.keys(manifest.exports).filter((key) => key !== "./package.json")) {
    const specifier = subpath === "." ? manifest.name : `${manifest.name}/${subpath.slice(2)}`;
    const times = await coldRuns(app, `await import(${JSON.stringify(specifier)});`, options.runs);
    const range = `${Math.min(...times).toFixed(0)}–${Math.max(...times).toFixed(0)}`;
    console.log(
      `| \`${specifier}\` | ${median(times).toFixed(0)} (${range}) | ${(median(times) - median(baseline)).toFixed(0)} |`,
    );
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
