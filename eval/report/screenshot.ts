/**
 * Render a report page in headless Chromium (Debian's `chromium` package, driven by
 * playwright-core): collect console errors and failed requests, and optionally save a PNG.
 */
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";

/** Where Debian's chromium package installs the browser. */
export const CHROMIUM_PATH = process.env.FORGE_CHROMIUM ?? "/usr/bin/chromium";

/** The flags the browser runs with (offline, no sandbox for containers). */
export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
];

/** True when the browser is installed. */
export function chromiumAvailable(): boolean {
  return existsSync(CHROMIUM_PATH);
}

/** What rendering a page showed. */
export interface RenderCheck {
  consoleErrors: string[];
  failedRequests: string[];
  /** SVG charts on the page. */
  charts: number;
  title: string;
}

/** Open local HTML files in one browser, wait for each to load, and report what each showed. */
export async function renderPages(files: readonly string[], pngPath?: string): Promise<RenderCheck[]> {
  const { chromium } = await import("playwright-core");
  const browser = await chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: CHROMIUM_ARGS,
    headless: true,
  });
  try {
    const checks: RenderCheck[] = [];
    for (const [index, file] of files.entries()) {
      const page = await browser.newPage({ viewport: { width: 1240, height: 900 } });
      const consoleErrors: string[] = [];
      const failedRequests: string[] = [];
      page.on("console", (message) => {
        if (message.type() === "error") consoleErrors.push(message.text());
      });
      page.on("pageerror", (error) => consoleErrors.push(error.message));
      page.on("requestfailed", (request) => failedRequests.push(request.url()));
      page.on("request", (request) => {
        if (!request.url().startsWith("file:")) failedRequests.push(`external: ${request.url()}`);
      });
      await page.goto(pathToFileURL(resolve(file)).href, { waitUntil: "load" });
      const charts = await page.locator("svg.chart").count();
      if (pngPath && index === 0) await page.screenshot({ path: pngPath, fullPage: true });
      checks.push({ consoleErrors, failedRequests, charts, title: await page.title() });
      await page.close();
    }
    return checks;
  } finally {
    await browser.close();
  }
}

/** Open one local HTML file (see `renderPages`), optionally saving a PNG of it. */
export async function renderPage(file: string, pngPath?: string): Promise<RenderCheck> {
  const [check] = await renderPages([file], pngPath);
  return check as RenderCheck;
}

/** Screenshot a page to a PNG. */
export async function screenshotPage(file: string, pngPath: string): Promise<void> {
  const check = await renderPage(file, pngPath);
  if (check.consoleErrors.length > 0) throw new Error(`console errors: ${check.consoleErrors.join("; ")}`);
}
