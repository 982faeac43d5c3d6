/**
 * Vitest global setup of `npm run test:tiny-model`: what `npm test` needs plus Debian's Python
 * with jinja2, which forge-tiny's conversation generator runs on.
 */
import { prepareTests, tinyModelRequirements } from "../../scripts/prepare-tests.ts";

export default async function setup(): Promise<void> {
  await prepareTests({ requirements: tinyModelRequirements() });
}
