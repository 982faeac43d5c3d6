/**
 * Vitest global setup: before any test file runs, checks the system packages, builds llama-server
 * (once, with progress, however long it takes) and writes the test models, so no test hook waits
 * on a build and `npx vitest run <file>` works on a fresh clone too. A failure stops the run here.
 */
import { prepareTests } from "../scripts/prepare-tests.ts";

export default async function setup(): Promise<void> {
  await prepareTests();
}
