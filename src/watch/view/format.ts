/**
 * Text formatting shared by the watch pages and the eval's reports.
 */

/** Milliseconds as "840 ms", "3.2 s" or "2.5 min". */
export function duration(ms: number): string {
  return ms < 1000
    ? `${Math.round(ms)} ms`
    : ms < 120_000
      ? `${(ms / 1000).toFixed(1)} s`
      : `${(ms / 60_000).toFixed(1)} min`;
}

/** Escape text for HTML (element content and double-quoted attributes). */
export function escapeHtml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}
